//! `dsa check --file F --server URL --key K`: the names submitted as a bulk job to a running dsa
//! (`POST /v1/jobs/bulk-check`), its results printed as they arrive (`GET /v1/jobs/{id}/results`
//! page by page), a progress bar on standard error.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use serde_json::Value;

use super::read_input;

/// Results asked per page.
const PAGE: usize = 1000;
/// Wait between two polls when no new result came.
const POLL: Duration = Duration::from_millis(500);

/// Runs the job; exit status 2 when any entry was invalid or any name got no definitive verdict.
pub(crate) async fn run(
    server: url::Url,
    key: String,
    domains: Vec<String>,
    file: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut body = Vec::new();
    if let Some(file) = file {
        body = read_input(Some(file))?;
        if !body.is_empty() && !body.ends_with(b"\n") {
            body.push(b'\n');
        }
    }
    for domain in domains {
        body.extend_from_slice(domain.as_bytes());
        body.push(b'\n');
    }
    anyhow::ensure!(!body.is_empty(), "dsa check: no domain names given (arguments or --file)");
    let http = reqwest::Client::builder().build()?;
    let url = |path: &str, query: &[(&str, String)]| -> anyhow::Result<url::Url> {
        let mut url = server.join(path)?;
        url.query_pairs_mut().append_pair("client_key", &key).extend_pairs(query);
        Ok(url)
    };
    let response = http
        .post(url("/v1/jobs/bulk-check", &[])?)
        .header("content-type", "text/plain")
        .body(body)
        .send()
        .await
        .map_err(|e| anyhow::anyhow!("{server}: {e}"))?;
    let status = response.status();
    let accepted: Value = response.json().await.unwrap_or(Value::Null);
    anyhow::ensure!(status.as_u16() == 202, "{server} refused the job ({status}): {}", error_text(&accepted));
    let id = accepted["id"].as_str().unwrap_or_default().to_owned();
    let total = accepted["total"].as_u64().unwrap_or(0);
    let invalid = accepted["invalid"].as_u64().unwrap_or(0);
    eprintln!(
        "job {id}: {total} names to check, {invalid} entries rejected; {} credits held",
        accepted["credits_held"]
    );
    for entry in accepted["invalid_entries"].as_array().into_iter().flatten() {
        eprintln!("  rejected {}: {}", entry["input"], entry["error"].as_str().unwrap_or(""));
    }
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} names  {per_sec}  ETA {eta}  {msg}")
    {
        bar.set_style(style);
    }
    let (mut cursor, mut seen, mut unknown) = (0_i64, 0_u64, 0_u64);
    let mut stdout = std::io::stdout().lock();
    loop {
        let response = http
            .get(url(
                &format!("/v1/jobs/{id}/results"),
                &[("cursor", cursor.to_string()), ("limit", PAGE.to_string())],
            )?)
            .send()
            .await?;
        anyhow::ensure!(response.status().is_success(), "results: {}", response.status());
        let next = response
            .headers()
            .get("x-next-cursor")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(cursor);
        let state = response.headers().get("x-job-state").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
        let text = response.text().await?;
        let mut lines = 0;
        for line in text.lines().filter(|l| !l.is_empty()) {
            lines += 1;
            let row: Value = serde_json::from_str(line).unwrap_or(Value::Null);
            if row["success"] != true {
                unknown += 1;
            }
            let printed = if json { line.to_owned() } else { row_text(&row) };
            bar.suspend(|| writeln!(stdout, "{printed}"))?;
        }
        seen += lines;
        bar.set_position(seen);
        bar.set_message(state.clone());
        cursor = next;
        if lines == 0 {
            if matches!(state.as_str(), "done" | "cancelled" | "failed") {
                break;
            }
            tokio::time::sleep(POLL).await;
        }
    }
    bar.finish_and_clear();
    eprintln!("job {id}: {seen} results, {unknown} without a definitive verdict");
    Ok(if unknown == 0 && invalid == 0 { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

fn error_text(body: &Value) -> String {
    body["error"].as_str().map_or_else(|| body.to_string(), str::to_owned)
}

/// A result as one line of text: `name  status  via method`, or the reason there is none.
fn row_text(row: &Value) -> String {
    let domain = row["domain"].as_str().unwrap_or("?");
    if row["success"] == true {
        let verdict = &row["verdict"];
        format!(
            "{domain}  {}  via {}",
            verdict["status"].as_str().unwrap_or("?"),
            verdict["method"].as_str().unwrap_or("?")
        )
    } else {
        format!("{domain}  unknown  ({})", row["error"].as_str().unwrap_or("no verdict"))
    }
}
