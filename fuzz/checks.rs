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

// The checks that need only the parsers (`common`, `workers`): the domain, whois and rdap
// targets include that file alone, so they build without the API crate, an optional dependency
// of the fuzz crate that only the query target enables (`--features query`, fuzz/run.sh).
include!("checks_parsers.rs");

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
