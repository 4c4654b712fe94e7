//! The dashboard's usage chart: a stacked bar per day of the month, one colour per endpoint,
//! rendered on the server as SVG (no script, no CDN; the page's CSP allows neither). The same
//! numbers are in a table next to it for screen readers and text browsers.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Colours of the endpoints, in order of first appearance (colour-blind-safe Okabe–Ito palette).
const PALETTE: &[&str] = &["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"];

/// One endpoint's colour in the legend.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Legend {
    /// Endpoint name.
    pub endpoint: String,
    /// CSS colour.
    pub colour: &'static str,
    /// Credits this month.
    pub total: i64,
}

/// A rendered chart.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Chart {
    /// The `<svg>` element (escaped; safe to insert).
    pub svg: String,
    /// Legend entries.
    pub legend: Vec<Legend>,
    /// Rows of the data table: day, then credits per endpoint in legend order, then the total.
    pub rows: Vec<(String, Vec<i64>, i64)>,
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Renders `usage` (`(YYYY-MM-DD, endpoint, credits)`) for a month of `days` days whose days
/// are named `period-DD`.
pub fn render(period: &str, days: u8, usage: &[(String, String, i64)], title: &str) -> Chart {
    let mut endpoints: Vec<String> = Vec::new();
    let mut per_day: BTreeMap<u8, BTreeMap<usize, i64>> = BTreeMap::new();
    for (day, endpoint, credits) in usage {
        let Some(d) = day.get(8..10).and_then(|d| d.parse::<u8>().ok()) else { continue };
        let index = match endpoints.iter().position(|e| e == endpoint) {
            Some(i) => i,
            None => {
                endpoints.push(endpoint.clone());
                endpoints.len() - 1
            }
        };
        *per_day.entry(d).or_default().entry(index).or_default() += credits;
    }
    let max = per_day.values().map(|m| m.values().sum::<i64>()).max().unwrap_or(0).max(1);
    // A round top for the axis: 1, 2, 5 × 10^n.
    let mut top = 1_i64;
    while top < max {
        top = match top.to_string().chars().next() {
            Some('1') => top * 2,
            Some('2') => top / 2 * 5,
            _ => top * 2,
        };
    }
    let (width, height, left, bottom, top_pad) = (720.0_f64, 240.0_f64, 44.0, 24.0, 10.0);
    let plot_h = height - bottom - top_pad;
    let slot = (width - left - 8.0) / f64::from(days.max(1));
    let bar_w = (slot * 0.7).max(2.0);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" aria-labelledby="chart-title" xmlns="http://www.w3.org/2000/svg"><title id="chart-title">{}</title>"#,
        escape(title)
    );
    let mut ticks: Vec<i64> = (0..=4).map(|step| top * step / 4).collect();
    ticks.dedup();
    for value in ticks {
        let y = top_pad + plot_h - plot_h * (value as f64) / (top as f64);
        let _ = write!(
            svg,
            r##"<line x1="{left}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#d0d4da" stroke-width="1"/><text x="{}" y="{:.1}" font-size="11" text-anchor="end" fill="#444">{value}</text>"##,
            width - 4.0,
            left - 6.0,
            y + 4.0
        );
    }
    for d in 1..=days {
        let x = left + slot * f64::from(d - 1) + (slot - bar_w) / 2.0;
        let mut y = top_pad + plot_h;
        if let Some(stack) = per_day.get(&d) {
            for (index, credits) in stack {
                let h = plot_h * (*credits as f64) / (top as f64);
                y -= h;
                let _ = write!(
                    svg,
                    r#"<rect x="{x:.1}" y="{y:.1}" width="{bar_w:.1}" height="{h:.1}" fill="{}"><title>{period}-{d:02} {}: {credits}</title></rect>"#,
                    PALETTE[index % PALETTE.len()],
                    escape(&endpoints[*index])
                );
            }
        }
        if d == 1 || d % 5 == 0 {
            let _ = write!(
                svg,
                r##"<text x="{:.1}" y="{}" font-size="11" text-anchor="middle" fill="#444">{d}</text>"##,
                x + bar_w / 2.0,
                height - 6.0
            );
        }
    }
    svg.push_str("</svg>");
    let legend = endpoints
        .iter()
        .enumerate()
        .map(|(i, e)| Legend {
            endpoint: e.clone(),
            colour: PALETTE[i % PALETTE.len()],
            total: per_day.values().filter_map(|m| m.get(&i)).sum(),
        })
        .collect();
    let rows = per_day
        .iter()
        .map(|(d, m)| {
            let cells: Vec<i64> = (0..endpoints.len()).map(|i| m.get(&i).copied().unwrap_or(0)).collect();
            let total = cells.iter().sum();
            (format!("{period}-{d:02}"), cells, total)
        })
        .collect();
    Chart { svg, legend, rows }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_days_and_escapes() {
        let usage = vec![
            ("2026-11-03".to_owned(), "check".to_owned(), 4),
            ("2026-11-03".to_owned(), "whois<x>".to_owned(), 2),
            ("2026-11-20".to_owned(), "check".to_owned(), 1),
        ];
        let chart = render("2026-11", 30, &usage, "Credits & days");
        assert!(chart.svg.starts_with("<svg") && chart.svg.ends_with("</svg>"));
        assert!(chart.svg.contains("Credits &amp; days"));
        assert!(chart.svg.contains("whois&lt;x&gt;"));
        assert!(!chart.svg.contains("<x>"));
        assert_eq!(chart.svg.matches("<rect").count(), 3);
        assert_eq!(chart.legend.len(), 2);
        assert_eq!(chart.legend[0].total, 5);
        assert_eq!(chart.rows, vec![("2026-11-03".into(), vec![4, 2], 6), ("2026-11-20".into(), vec![1, 0], 1)]);
    }
}
