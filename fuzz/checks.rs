//! Invariants of the parsers under hostile input (issue 9), shared by the fuzz targets
//! (`fuzz/fuzz_targets/*.rs`) and the regression test (`tests/tests/app/fuzz_regressions.rs`, run by
//! CI over every saved crashing input and every recorded registry sample). Each function panics
//! when an invariant breaks; returning means the input is fine.
//!
//! Input framing (the fuzzers mutate all of it):
//! - `domain`: the bytes as user input (UTF-8, lossy);
//! - `whois`: `server\nsuffix\ncharset\n` then the raw answer (empty server/charset = none);
//! - `rdap`: `status\n` then the body (a status that does not parse is 200);
//! - `query`: the raw query string of a check (`domain=…&commission_percent=…`).

#![allow(dead_code)]

use std::sync::OnceLock;

use common::catalogue::Catalogue;
use common::domain::DomainName;
use workers::parse::rdap::{RdapClass, read_rdap};
use workers::parse::whois::{WhoisClass, decode, read_whois};

/// The catalogue compiled into dsa.
pub fn catalogue() -> &'static Catalogue {
    static CATALOGUE: OnceLock<Catalogue> = OnceLock::new();
    CATALOGUE.get_or_init(|| Catalogue::embedded().expect("embedded catalogue"))
}

fn is_ldh_name(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

/// The domain normaliser: accepted output is a lower-case LDH name within RFC 1035 limits,
/// normalising it again gives the same name (idempotence), and its U-label form gives the same
/// name too.
pub fn domain(data: &[u8]) {
    let input = String::from_utf8_lossy(data);
    let Ok(d) = DomainName::parse(&input, catalogue()) else { return };
    assert!(is_ldh_name(d.as_str()), "{input:?} → {:?} is not an LDH name", d.as_str());
    let again = DomainName::parse(d.as_str(), catalogue()).expect("normalised output parses");
    assert_eq!(again.as_str(), d.as_str(), "normalise(normalise(x)) ≠ normalise(x) for {input:?}");
    let unicode = DomainName::parse(d.unicode(), catalogue()).expect("the U-label form parses");
    assert_eq!(unicode.as_str(), d.as_str(), "U-label and A-label differ for {input:?}");
    assert!(d.suffix().len() < d.as_str().len() && d.as_str().ends_with(d.suffix()));
}

/// Lower-case letters and digits only, folded as the reader folds (diacritics, Arabic letter
/// forms: `workers::parse::lexicon::fold`): the oracle below compares on these, so dot leaders,
/// punctuation, white space and spelling variants in the answer cannot hide a marker from it.
fn alnum(text: &str) -> String {
    workers::parse::lexicon::fold(text).chars().filter(|c| c.is_alphanumeric()).collect()
}

/// Every `available` rule of the WHOIS marker data (generic and every family) and every
/// not-found phrase of the generic lexicon (registries' own wordings in many languages, e.g.
/// `.hu`'s "Nincs találat"), as `*`-separated parts reduced by [`alnum`].
fn available_rules() -> &'static Vec<Vec<String>> {
    static RULES: OnceLock<Vec<Vec<String>>> = OnceLock::new();
    RULES.get_or_init(|| {
        let data: serde_json::Value =
            serde_json::from_str(include_str!("../workers/data/whois-markers.json")).expect("marker data");
        let lexicon: serde_json::Value =
            serde_json::from_str(include_str!("../workers/data/whois-lexicon.json")).expect("lexicon data");
        // The lexicon's not-found phrases and its status words that alone say "free".
        let mut lists = vec![&data["generic"]["available"], &lexicon["not_found"], &lexicon["free_status"]];
        lists.extend(data["families"].as_object().expect("families").values().map(|f| &f["available"]));
        lists
            .into_iter()
            .filter_map(serde_json::Value::as_array)
            .flatten()
            .filter_map(serde_json::Value::as_str)
            .map(|rule| rule.trim_start_matches(['=', '^']).split('*').map(alnum).filter(|p| !p.is_empty()).collect())
            .filter(|parts: &Vec<String>| !parts.is_empty())
            .collect()
    })
}

/// Negation words the reader's "negated presence" reading starts from ("There is *no* record
/// for x", "*nothing* matched", "existiert *nicht*"): an answer read available without a listed
/// not-found phrase must at least hold one of them as a word.
const NEGATION_WORDS: &[&str] = &[
    "no", "not", "non", "never", "nothing", "none", "nada", "rien", "nichts", "niente", "nicht", "kein", "keine",
    "niet", "geen", "nie", "ne", "pas", "nao", "inte", "ikke", "nem", "nu", "tidak", "bukan", "khong", "δεν", "לא",
    "не", "ні", "нет", "غير", "لا", "ليس",
];

/// Whether `text` holds, in order, every part of some registry's not-found rule (or status
/// word), or a negation word.
fn has_not_found_answer(text: &str) -> bool {
    let folded = workers::parse::lexicon::fold(text);
    let negated = folded
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| NEGATION_WORDS.iter().any(|n| workers::parse::lexicon::fold(n) == w));
    if negated {
        return true;
    }
    let text = alnum(text);
    available_rules().iter().any(|parts| {
        let mut rest = text.as_str();
        parts.iter().all(|part| match rest.find(part.as_str()) {
            Some(at) => {
                rest = &rest[at + part.len()..];
                true
            }
            None => false,
        })
    })
}

fn split_line(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[]),
    }
}

/// The WHOIS reader: never panics, and never says "available" for an answer that does not hold
/// a registry's not-found text.
pub fn whois(data: &[u8]) {
    let (server, rest) = split_line(data);
    let (suffix, rest) = split_line(rest);
    let (charset, raw) = split_line(rest);
    let server = String::from_utf8_lossy(server);
    let suffix = String::from_utf8_lossy(suffix);
    let charset = String::from_utf8_lossy(charset);
    let server = Some(server.trim()).filter(|s| !s.is_empty());
    let charset = Some(charset.trim()).filter(|s| !s.is_empty());
    let reading = read_whois(raw, server, &suffix, charset);
    if reading.class == WhoisClass::Available {
        let text = decode(raw, charset);
        assert!(
            has_not_found_answer(&text),
            "WHOIS read as available without a not-found answer (server {server:?}, suffix {suffix:?}, marker {:?}): {text:?}",
            reading.marker
        );
    }
    if reading.pending_delete {
        assert_eq!(reading.class, WhoisClass::Registered, "pending delete is a kind of registered");
    }
}

/// The RDAP reader: never panics; "not found" only for an HTTP 404, or an HTTP 200 carrying an
/// RFC 9083 §6 error object with `errorCode` 404 (the registry's not-found answer); "registered"
/// and "reserved" only for an HTTP 200.
pub fn rdap(data: &[u8]) {
    let (status, body) = split_line(data);
    let status = std::str::from_utf8(status).ok().and_then(|s| s.trim().parse::<u16>().ok()).unwrap_or(200);
    let reading = read_rdap(status, body);
    match reading.class {
        RdapClass::NotFound if status == 200 => {
            let v: serde_json::Value = serde_json::from_slice(body).expect("a 200 not-found is a JSON error object");
            let code = &v["errorCode"];
            assert!(
                code.as_u64() == Some(404) || code.as_str().is_some_and(|c| c.trim() == "404"),
                "RDAP 200 not-found without errorCode 404: {}",
                reading.detail
            );
        }
        RdapClass::NotFound => assert_eq!(status, 404, "RDAP not-found without a 404: {}", reading.detail),
        RdapClass::Registered | RdapClass::PendingDelete | RdapClass::Reserved => {
            assert_eq!(status, 200, "RDAP registered without a 200: {}", reading.detail)
        }
        RdapClass::Unknown => {}
    }
}

/// The query string of a check: parsing never panics and answers a value or a reason; options
/// that parse are within their documented bounds; a redirect URL that is accepted stays a valid
/// URL on its own origin once the name is appended; the keyed prelude's parameter reader agrees
/// with the typed one on `domain`.
pub fn query(data: &[u8]) {
    let raw = String::from_utf8_lossy(data);
    let params = api::routes::Params::parse(Some(&raw));
    let Ok(q) = serde_urlencoded::from_str::<api::routes::check::CheckQuery>(&raw) else { return };
    let _ = api::routes::required(&q.domain, "domain");
    if let (Some(typed), Some(loose)) = (api::routes::optional(&q.domain), params.get("domain")) {
        assert_eq!(typed, loose, "the prelude and the handler read different domains from {raw:?}");
    }
    let Ok(options) = api::routes::check::CheckOptions::from_query(&q) else { return };
    if let Some(c) = options.commission {
        assert!((0.0..=1000.0).contains(&c.value()), "commission {} out of bounds from {raw:?}", c.value());
    }
    if let Some(base) = &options.redirect_url {
        let out = api::purchase::checkout_url(base, "example.com", "example", ".com");
        let url = url::Url::parse(&out).unwrap_or_else(|e| panic!("{out} from {raw:?}: {e}"));
        assert_eq!(url.origin(), base.as_url().origin(), "{out} left the origin of {raw:?}");
    }
}
