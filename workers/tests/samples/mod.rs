//! The labelled WHOIS and RDAP samples of `tests/data/whois/` and `tests/data/rdap/` (see
//! `tests/data/PROVENANCE.md` §4 and §5), loaded once for every sample test of this crate, and
//! what each label asks of a reader.
//!
//! The data directory is `DSA_TEST_DATA`: the repository's `tests/data` (set in
//! `.cargo/config.toml`), or a newer copy of the data set named in the environment. A missing
//! directory fails the test: these samples are the evidence that the readers work.

#![allow(dead_code, reason = "each test binary uses only some of the loaders")]

use std::path::{Path, PathBuf};

use serde_json::Value;
use workers::parse::rdap::RdapClass;
use workers::parse::whois::WhoisClass;

/// The data directory, checked to hold both labelled sets.
pub fn data_dir() -> PathBuf {
    let dir = PathBuf::from(env!("DSA_TEST_DATA"));
    for index in ["whois/index.jsonl", "rdap/index.jsonl"] {
        assert!(
            dir.join(index).is_file(),
            "labelled samples not found at {}/{index}; DSA_TEST_DATA names the data directory",
            dir.display()
        );
    }
    dir
}

/// The rows of `<dir>/<set>/index.jsonl`.
fn index(dir: &Path, set: &str) -> Vec<Value> {
    let path = dir.join(set).join("index.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("index line is JSON"))
        .collect()
}

fn text(row: &Value, key: &str) -> Option<String> {
    row.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// One labelled WHOIS answer.
pub struct WhoisSample {
    /// The index's `id`.
    pub id: String,
    /// The answer's file, relative to `whois/` (unique per sample).
    pub file: String,
    /// The WHOIS server that answered, when the source recorded it.
    pub server: Option<String>,
    /// The index's `tld` (which may be a second level such as `co.pl`).
    pub tld: Option<String>,
    /// The name asked, when the index gives it.
    pub domain: Option<String>,
    /// The registry suffix: `tld`, else the queried domain's last label, else empty.
    pub suffix: String,
    /// `available`, `registered`, `reserved` or `other`.
    pub label: String,
    /// The index's `status_detail` (`throttled`, `redemption`…).
    pub detail: Option<String>,
    /// The answer's bytes.
    pub raw: Vec<u8>,
    /// The source's expected fields (`normalized`), when it has them.
    pub expected: Option<Value>,
}

/// Every labelled WHOIS sample under `dir` (the shared data directory).
pub fn whois_samples(dir: &Path) -> Vec<WhoisSample> {
    let base = dir.join("whois");
    index(dir, "whois")
        .into_iter()
        .map(|v| {
            let s = |k: &str| text(&v, k);
            let file = s("response_file").expect("response_file");
            let suffix = s("tld")
                .or_else(|| s("domain").and_then(|d| d.rsplit('.').next().map(str::to_owned)))
                .unwrap_or_default();
            let raw = std::fs::read(base.join(&file)).expect("read response");
            let expected = s("expected_file").map(|f| {
                let text = std::fs::read_to_string(base.join(f)).expect("read expected");
                serde_json::from_str::<Value>(&text).expect("expected is JSON")["normalized"].clone()
            });
            WhoisSample {
                id: s("id").expect("id"),
                file,
                server: s("server"),
                tld: s("tld"),
                domain: s("domain"),
                suffix,
                label: s("label").expect("label"),
                detail: s("status_detail"),
                raw,
                expected,
            }
        })
        .collect()
}

/// Whether a WHOIS sample's `status_detail` says the server throttled the query.
pub fn is_throttled(detail: Option<&str>) -> bool {
    matches!(detail, Some("throttled" | "rate_limited"))
}

/// The class a WHOIS label calls for; `None` for answers that must simply not be definitive
/// (then `Unknown` or `RateLimited` is right).
pub fn whois_expected(label: &str, detail: Option<&str>) -> Option<WhoisClass> {
    match label {
        "available" => Some(WhoisClass::Available),
        "registered" => Some(WhoisClass::Registered),
        "reserved" => Some(WhoisClass::Reserved),
        _ if is_throttled(detail) => Some(WhoisClass::RateLimited),
        _ => None,
    }
}

/// Is `class` the right reading of a WHOIS answer with this label?
pub fn whois_right(label: &str, detail: Option<&str>, class: WhoisClass) -> bool {
    match whois_expected(label, detail) {
        Some(want) => class == want,
        None => matches!(class, WhoisClass::Unknown | WhoisClass::RateLimited),
    }
}

/// One labelled RDAP answer.
pub struct RdapSample {
    /// The index's `id`.
    pub id: String,
    /// The answer's file, relative to `rdap/` (unique per sample).
    pub file: String,
    /// `registered`, `available` or another label.
    pub label: String,
    /// The HTTP status the server answered with.
    pub http_status: u16,
    /// The answer's body.
    pub body: Vec<u8>,
    /// The path of the source's expected fields, when it has them.
    pub expected_file: Option<PathBuf>,
}

/// Every labelled RDAP sample under `dir` (the shared data directory).
pub fn rdap_samples(dir: &Path) -> Vec<RdapSample> {
    let base = dir.join("rdap");
    index(dir, "rdap")
        .into_iter()
        .map(|row| {
            let s = |k: &str| text(&row, k);
            let file = s("response_file").expect("response_file");
            let http_status = u16::try_from(row["http_status"].as_u64().expect("http_status")).expect("u16 status");
            RdapSample {
                id: s("id").expect("id"),
                body: std::fs::read(base.join(&file)).expect("read body"),
                file,
                label: s("label").expect("label"),
                http_status,
                expected_file: s("expected_file").map(|f| base.join(f)),
            }
        })
        .collect()
}

/// The class an RDAP label calls for.
pub fn rdap_expected(label: &str) -> RdapClass {
    match label {
        "registered" => RdapClass::Registered,
        "available" => RdapClass::NotFound,
        _ => RdapClass::Unknown,
    }
}

/// Is `class` the right reading of an RDAP answer with this label? A registered label also
/// admits `PendingDelete` (the statuses say so).
pub fn rdap_right(label: &str, class: RdapClass) -> bool {
    let want = rdap_expected(label);
    class == want || (want == RdapClass::Registered && class == RdapClass::PendingDelete)
}
