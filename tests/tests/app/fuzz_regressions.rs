//! The fuzz targets' invariants (`fuzz/checks.rs`) in CI, without the fuzzer: every input a
//! fuzzer ever crashed on (saved in `fuzz/regressions/TARGET/`), plus every recorded registry
//! answer and a sample of real domain names from `tests/data`, framed as `fuzz/run.sh` frames
//! its seeds.

#[path = "../../../fuzz/checks.rs"]
mod checks;

use std::path::{Path, PathBuf};

fn test_data() -> PathBuf {
    let dir = PathBuf::from(env!("DSA_TEST_DATA"));
    assert!(dir.is_dir(), "test data not found at {} (DSA_TEST_DATA)", dir.display());
    dir
}

/// Replays `fuzz/regressions/<target>/*` through `check`; returns how many inputs ran.
fn replay(target: &str, check: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions").join(target);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("entry").path();
        if path.is_file() {
            check(&std::fs::read(&path).expect("read"));
            n += 1;
        }
    }
    n
}

fn index(kind: &str) -> Vec<serde_json::Value> {
    let path = test_data().join(kind).join("index.jsonl");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("index line"))
        .collect()
}

#[test]
fn whois_regressions_and_every_recorded_answer() {
    // The fuzz target reads its bytes as choices; inputs saved by hand may be framed answers:
    // every saved input is replayed both ways.
    replay("whois", checks::whois);
    replay("whois", checks::whois_structured);
    let entries = index("whois");
    assert!(entries.len() > 100);
    for e in entries {
        let raw =
            std::fs::read(test_data().join("whois").join(e["response_file"].as_str().expect("file"))).expect("sample");
        let mut framed = format!(
            "{}\n{}\n{}\n",
            e["server"].as_str().unwrap_or(""),
            e["tld"].as_str().unwrap_or(""),
            e["charset"].as_str().unwrap_or("")
        )
        .into_bytes();
        framed.extend_from_slice(&raw);
        checks::whois(&framed);
        // The same answer attributed to no server and a wrong suffix must not turn available either.
        let mut anonymous = b"\nexample\n\n".to_vec();
        anonymous.extend_from_slice(&raw);
        checks::whois(&anonymous);
    }
}

/// The structure-aware WHOIS generator can spell the answer of issue 32 (the class it exists to
/// find): a status line with U+0130 and U+2126 around `until`.
#[test]
fn the_whois_generator_spells_the_case_shifting_status_line() {
    // server "", suffix "com", charset none; then key "Domain Status", İ, space, "until", Ω,
    // space, a date, a newline (opcodes: 1 key, 4 shifter, 8 space, 2 word, 6 date, 0 newline).
    let choices = [0, 0, 0, 1, 5, 4, 0, 8, 2, 0, 4, 1, 8, 6, 0, 0];
    let (server, suffix, charset, answer) = checks::whois_structured_answer(&choices);
    assert_eq!((server, suffix, charset), ("", "com", ""));
    assert_eq!(String::from_utf8_lossy(&answer), "Domain Status: \u{130} until\u{2126} 2026-01-01\n");
    checks::whois_structured(&choices);
}

#[test]
fn rdap_regressions_and_every_recorded_answer() {
    replay("rdap", checks::rdap);
    for e in index("rdap") {
        let body =
            std::fs::read(test_data().join("rdap").join(e["response_file"].as_str().expect("file"))).expect("sample");
        for status in [e["http_status"].as_u64().unwrap_or(200), 200, 404, 429, 500] {
            let mut framed = format!("{status}\n").into_bytes();
            framed.extend_from_slice(&body);
            checks::rdap(&framed);
        }
    }
}

#[test]
fn domain_regressions_and_real_names() {
    replay("domain", checks::domain);
    let csv = std::fs::read_to_string(test_data().join("domains/majestic-million-top15000.csv")).expect("csv");
    let mut n = 0;
    for line in csv.lines().skip(1).step_by(7) {
        let columns: Vec<&str> = line.split(',').collect();
        for input in [columns[2].to_owned(), columns[4].to_owned(), format!("https://WWW.{}/x?y#z", columns[2])] {
            checks::domain(input.as_bytes());
            n += 1;
        }
    }
    assert!(n > 5_000);
}

#[test]
fn query_regressions() {
    replay("query", checks::query);
    for q in [
        "domain=example.com&redirect_url=https%3A%2F%2Fshop.example%2Fcart%3Fdomain%3Dx%26a%3D1%23top",
        "domain=b%C3%BCcher.de&commission_percent=1000&redirect_checkout=1",
        "domain=%00&commission_percent=NaN&redirect_url=javascript%3Aalert(1)",
        "%zz=%&&&=&domain",
    ] {
        checks::query(q.as_bytes());
    }
}
