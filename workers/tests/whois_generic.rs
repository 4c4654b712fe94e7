//! Leave-one-registry-out over the labelled WHOIS samples in `tests/data/whois/`: every answer is
//! read with its registry family's own rules switched off (no server, an unknown suffix), so only
//! the generic layer — the cross-registry markers and the multilingual lexicon of
//! `workers/data/whois-lexicon.json` plus registration evidence — decides. A right answer or
//! `unknown` is acceptable there; a wrong definitive answer is not, and a wrong "available" never.
//! Prints the per-family table (right / unknown / wrong) and the totals.

mod samples;

use std::collections::BTreeMap;

use workers::parse::whois::{WhoisClass, read_whois_generic};

#[derive(Default)]
struct Row {
    right: usize,
    unknown: usize,
    wrong: usize,
    wrong_available: usize,
}

#[test]
fn generic_layer_alone_is_never_wrong_about_available() {
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let mut wrong_examples = Vec::new();
    let mut unknown_examples = Vec::new();
    for sample in samples::whois_samples(&samples::data_dir()) {
        let family = sample.server.clone().unwrap_or_else(|| "(no server)".into());
        let label = &sample.label;
        // The family's own wording rules off; which suffixes its server answers for is kept.
        let suffix = sample.tld.as_deref().unwrap_or_default();
        let reading = read_whois_generic(&sample.raw, sample.server.as_deref(), suffix, None);
        let row = rows.entry(family.clone()).or_default();
        let want = samples::whois_expected(label, sample.detail.as_deref());
        match (want, reading.class) {
            (Some(w), got) if w == got => row.right += 1,
            (None, WhoisClass::Unknown | WhoisClass::RateLimited) => row.right += 1,
            (_, WhoisClass::Unknown) => {
                row.unknown += 1;
                unknown_examples.push(format!("{} {label} ({:?})", sample.file, reading.marker));
            }
            (_, got) => {
                row.wrong += 1;
                if got == WhoisClass::Available {
                    row.wrong_available += 1;
                }
                wrong_examples.push(format!("{} {label} → {got:?} ({:?})", sample.file, reading.marker));
            }
        }
    }
    let (mut right, mut unknown, mut wrong, mut wrong_available) = (0, 0, 0, 0);
    println!("{:<40} {:>6} {:>8} {:>6}", "family (server)", "right", "unknown", "wrong");
    for (family, r) in &rows {
        println!("{family:<40} {:>6} {:>8} {:>6}", r.right, r.unknown, r.wrong);
        right += r.right;
        unknown += r.unknown;
        wrong += r.wrong;
        wrong_available += r.wrong_available;
    }
    let total = right + unknown + wrong;
    println!(
        "TOTAL {total}: right {right} ({:.1}%), unknown {unknown} ({:.1}%), wrong {wrong} ({:.1}%), wrong available {wrong_available}",
        100.0 * right as f64 / total as f64,
        100.0 * unknown as f64 / total as f64,
        100.0 * wrong as f64 / total as f64
    );
    for w in wrong_examples.iter().take(40) {
        println!("  wrong: {w}");
    }
    for u in unknown_examples.iter().take(40) {
        println!("  unknown: {u}");
    }
    assert_eq!(wrong_available, 0, "the generic layer said available where the registry did not");
    assert!(right * 1000 >= total * 975, "with family rules off, at least 97.5% right: {right}/{total}");
}
