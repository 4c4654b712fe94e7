//! Origin control (spec §5.3–5.4): an embed key only from its allowed origins, a server key never
//! from a browser.
//!
//! An `Origin` header is forgeable by non-browser clients: this protects keys from other
//! websites; the rate limits protect the service.

use axum::http::HeaderMap;
use axum::http::header::ORIGIN;

use crate::front::error::ApiError;
use crate::front::keys::{KeyKind, KeyRecord};

/// Checks the request's `Origin` against the key.
///
/// # Errors
/// [`ApiError::Forbidden`] for a server key with an `Origin` header, or an embed key whose
/// allowed list does not contain the origin.
/// `empty_allows_all` is the `policy.empty_origins_allow_all` setting: whether an embed key with
/// an empty list works from any origin (development) or from none (production default).
pub fn check(key: &KeyRecord, headers: &HeaderMap, empty_allows_all: bool) -> Result<(), ApiError> {
    let Some(origin) = headers.get(ORIGIN) else { return Ok(()) };
    let origin = origin.to_str().unwrap_or("null");
    match key.kind {
        KeyKind::Server => Err(ApiError::Forbidden(
            "Server keys must stay secret and out of front-end code; use an embed key in browsers.".into(),
        )),
        KeyKind::Embed if key.allowed_origins.is_empty() && empty_allows_all => Ok(()),
        KeyKind::Embed => {
            if key.allowed_origins.iter().any(|allowed| matches(allowed, origin)) {
                Ok(())
            } else {
                Err(ApiError::Forbidden(format!("Origin {origin} is not in this key's allowed origins.")))
            }
        }
    }
}

/// Whether `origin` (`scheme://host[:port]`) matches an allowed entry: exact (case-insensitive),
/// or `scheme://*.example.com[:port]` for any subdomain of example.com (not example.com itself).
pub fn matches(allowed: &str, origin: &str) -> bool {
    let allowed = allowed.trim_end_matches('/').to_ascii_lowercase();
    let origin = origin.to_ascii_lowercase();
    if allowed == origin {
        return true;
    }
    let (Some((a_scheme, a_rest)), Some((o_scheme, o_rest))) = (allowed.split_once("://"), origin.split_once("://"))
    else {
        return false;
    };
    let Some(a_suffix) = a_rest.strip_prefix("*.") else { return false };
    a_scheme == o_scheme && o_rest.len() > a_suffix.len() + 1 && o_rest.ends_with(&format!(".{a_suffix}"))
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn origin_matching() {
        assert!(matches("https://shop.example", "https://shop.example"));
        assert!(matches("https://Shop.example/", "https://shop.example"));
        assert!(!matches("https://shop.example", "http://shop.example"));
        assert!(!matches("https://shop.example", "https://shop.example:8443"));
        assert!(matches("https://*.example.com", "https://a.example.com"));
        assert!(matches("https://*.example.com", "https://a.b.example.com"));
        assert!(!matches("https://*.example.com", "https://example.com"));
        assert!(!matches("https://*.example.com", "https://evilexample.com"));
        assert!(!matches("https://*.example.com", "null"));
    }
}
