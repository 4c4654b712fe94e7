//! Purchase (checkout) links for an available domain: the `purchase` object of an availability
//! result.
//!
//! Spec: §2.1 (a key has `show_purchase_button` and a configured purchase URL), §2.2 (the
//! `purchase` object: `show_button`, `url`, `source`), §4.1 (`redirect_url` and
//! `redirect_checkout` request parameters).
//!
//! ```text
//! redirect_url (request) ─┐
//! platform checkout URL ──┤ CheckoutUrl::parse ─▶ resolve_purchase(inputs, available, domain…)
//! key's purchase URL ─────┘                          └─ checkout_url(base, domain, sld, tld) ─▶ Purchase
//! ```
//!
//! Every URL that may end up in `purchase.url` goes through [`CheckoutUrl::parse`], because a
//! browser widget will navigate to it: only absolute `http`/`https` URLs with a host and without
//! credentials are accepted.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};
use url::{Url, form_urlencoded};

/// Longest checkout URL accepted, in bytes. Browsers and proxies handle far longer ones, but a
/// checkout link has no reason to be long and the value is echoed in every response.
pub const MAX_CHECKOUT_URL_LEN: usize = 2048;

/// Errors of this module.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PurchaseError {
    /// The URL is not an acceptable checkout URL. The message is fit for a 400 response to a bad
    /// `redirect_url` (spec §4.1, §7 "malformed input"); for a configured URL the caller adds
    /// which setting it was.
    #[error("redirect_url must be an absolute http(s) URL: {reason}")]
    InvalidCheckoutUrl {
        /// What is wrong, e.g. "must start with http:// or https://".
        reason: &'static str,
    },
}

fn invalid(reason: &'static str) -> PurchaseError {
    PurchaseError::InvalidCheckoutUrl { reason }
}

/// An absolute `http`/`https` URL with a host, safe to hand to a browser as a checkout link.
///
/// Only [`CheckoutUrl::parse`] builds one. Refused, on purpose:
/// * other schemes (`javascript:`, `data:`, `ftp:`) and anything that does not literally start
///   with `http://` or `https://` (relative URLs, scheme-relative `//host`, the lenient
///   `https:host` and `https:///host` forms that WHATWG parsers "repair");
/// * white space and control characters anywhere (the URL standard strips or skips some of them,
///   so `java\nscript:` or a leading space would mean something other than what a reviewer
///   reads), and backslashes (`https://evil\@good` is host `evil` to a browser);
/// * user-info (`https://paypal.com@evil.example/`): a classic phishing disguise, and never
///   needed by a checkout page;
/// * URLs longer than [`MAX_CHECKOUT_URL_LEN`].
///
/// Used for the request's `redirect_url`, the server's platform checkout URL and a key's
/// configured purchase URL (spec §2.1, §4.1). (De)serializes as a string with the same checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CheckoutUrl(Url);

impl CheckoutUrl {
    /// Checks `text` as a checkout URL (see the type's documentation for what is refused).
    pub fn parse(text: &str) -> Result<Self, PurchaseError> {
        if text.len() > MAX_CHECKOUT_URL_LEN {
            return Err(invalid("longer than 2048 characters"));
        }
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(invalid("contains white space or control characters"));
        }
        if text.contains('\\') {
            return Err(invalid("contains a backslash"));
        }
        let rest = strip_prefix_ignore_case(text, "https://")
            .or_else(|| strip_prefix_ignore_case(text, "http://"))
            .ok_or_else(|| invalid("must start with http:// or https://"))?;
        if rest.starts_with('/') {
            return Err(invalid("has no host"));
        }
        let url = Url::parse(text).map_err(|_| invalid("is not a valid URL"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid("must start with http:// or https://"));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(invalid("has no host"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(invalid("must not contain user:password@ credentials"));
        }
        Ok(Self(url))
    }

    /// The parsed URL.
    pub fn as_url(&self) -> &Url {
        &self.0
    }

    /// The URL in serialized (normalised) form.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &text[prefix.len()..])
}

impl fmt::Display for CheckoutUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl TryFrom<String> for CheckoutUrl {
    type Error = PurchaseError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        Self::parse(&text)
    }
}

impl From<CheckoutUrl> for String {
    fn from(url: CheckoutUrl) -> Self {
        url.0.into()
    }
}

/// The query parameters appended to a checkout URL (spec §2.2 `purchase.url`).
const PURCHASE_PARAMS: [&str; 3] = ["domain", "sld", "tld"];

/// The ready-to-use checkout URL (spec §2.2 `purchase.url`): `base` with the query parameters
/// `domain` (`example.com.af`), `sld` (`example`) and `tld` (`.com.af`, with its leading dot as the
/// spec writes TLDs; one is added if missing), form-URL-encoded. Names should be A-labels (as
/// `common::domain::DomainName` gives them); anything else is percent-encoded as UTF-8.
///
/// The base's other query parameters are kept byte for byte and in order, and its fragment is
/// kept. A `domain`, `sld` or `tld` parameter already in the base is replaced in place (further
/// copies dropped) rather than duplicated, so a checkout page never sees two values.
pub fn checkout_url(base: &CheckoutUrl, domain: &str, sld: &str, tld: &str) -> String {
    let tld: Cow<'_, str> = if tld.starts_with('.') { Cow::Borrowed(tld) } else { Cow::Owned(format!(".{tld}")) };
    let values = [domain, sld, tld.as_ref()];
    if base.0.query().is_none() && base.0.fragment().is_none() {
        return appended(base, values);
    }
    rebuilt(base, values)
}

/// [`checkout_url`] of a base without query nor fragment (`https://shop.example/checkout`, the
/// common case): the three pairs appended to its text, without re-parsing the URL. Form-URL-encoded
/// text is all in the query's allowed set, so this is byte for byte what [`rebuilt`] writes.
fn appended(base: &CheckoutUrl, values: [&str; 3]) -> String {
    let mut pairs = form_urlencoded::Serializer::new(String::with_capacity(64));
    for (name, value) in PURCHASE_PARAMS.iter().zip(values) {
        pairs.append_pair(name, value);
    }
    [base.0.as_str(), "?", &pairs.finish()].concat()
}

/// [`checkout_url`] of any base: its query rebuilt with the purchase parameters replaced or
/// appended, then set on a copy of the URL.
fn rebuilt(base: &CheckoutUrl, values: [&str; 3]) -> String {
    let encoded =
        |i: usize| form_urlencoded::Serializer::new(String::new()).append_pair(PURCHASE_PARAMS[i], values[i]).finish();

    let mut segments: Vec<String> = Vec::new();
    let mut emitted = [false; PURCHASE_PARAMS.len()];
    for segment in base.0.query().unwrap_or("").split('&') {
        let Some((key, _)) = form_urlencoded::parse(segment.as_bytes()).next() else {
            continue; // empty segment (`a=1&&b=2`, trailing `&`)
        };
        match PURCHASE_PARAMS.iter().position(|p| *p == key) {
            Some(i) if !emitted[i] => {
                segments.push(encoded(i));
                emitted[i] = true;
            }
            Some(_) => {}
            None => segments.push(segment.to_owned()),
        }
    }
    for (i, done) in emitted.iter().enumerate() {
        if !done {
            segments.push(encoded(i));
        }
    }

    let mut url = base.0.clone();
    url.set_query(Some(&segments.join("&")));
    url.into()
}

/// Where `purchase.url` came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PurchaseSource {
    /// `"client_url"`: the request's `redirect_url`.
    ClientUrl,
    /// `"url"`: a configured checkout URL — the key's purchase URL, or the platform checkout URL
    /// forced by `redirect_checkout=1`. The spec names only these two values, so the platform
    /// URL reports `url` too (it is configured, not client-supplied).
    Url,
}

/// Where to buy an available name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Purchase {
    /// Always true when the object is present.
    pub show_button: bool,
    /// Checkout URL with `domain`, `sld` and `tld` appended.
    pub url: String,
    /// Where the URL came from.
    pub source: PurchaseSource,
}

/// What decides the `purchase` object besides the checked domain: request parameters, server
/// configuration and key settings. Named fields, so the two flags cannot be swapped silently.
#[derive(Debug, Clone, Copy, Default)]
pub struct PurchaseInputs<'a> {
    /// The request's `redirect_url` (spec §4.1), already parsed (a bad one is a 400 before this).
    pub redirect_url: Option<&'a CheckoutUrl>,
    /// The request's `redirect_checkout=1` (spec §4.1).
    pub redirect_checkout: bool,
    /// The platform's own checkout URL from the server configuration.
    pub platform_checkout: Option<&'a CheckoutUrl>,
    /// The key's configured purchase URL (spec §2.1).
    pub key_purchase_url: Option<&'a CheckoutUrl>,
    /// The key's `show_purchase_button` setting (spec §2.1).
    pub show_purchase_button: bool,
}

/// Decides the `purchase` object (spec §2.2 "Presence", §4.1).
///
/// `None` unless the domain is `available` **and** the key's `show_purchase_button` is on (the
/// caller turns it off when the key's pricing is disabled: spec §4.1 "pricing disabled for the
/// key (no pricing, no purchase)"). Then:
/// 1. with `redirect_checkout=1`, the platform checkout URL, always (spec §4.1: it *forces* the
///    platform URL, over a `redirect_url` too) → source `url`; with none configured, `None` (the
///    front refuses such a request with a 400 before this);
/// 2. else the request's `redirect_url` → source `client_url`;
/// 3. else the key's configured purchase URL → source `url`.
///
/// If none exists, `None` ("a purchase URL resolves" fails). `domain`, `sld`, `tld` are appended
/// by [`checkout_url`].
pub fn resolve_purchase(
    inputs: &PurchaseInputs<'_>,
    available: bool,
    domain: &str,
    sld: &str,
    tld: &str,
) -> Option<Purchase> {
    if !available || !inputs.show_purchase_button {
        return None;
    }
    let (base, source) = if inputs.redirect_checkout {
        (inputs.platform_checkout?, PurchaseSource::Url)
    } else if let Some(url) = inputs.redirect_url {
        (url, PurchaseSource::ClientUrl)
    } else {
        (inputs.key_purchase_url?, PurchaseSource::Url)
    };
    Some(Purchase { show_button: true, url: checkout_url(base, domain, sld, tld), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> CheckoutUrl {
        CheckoutUrl::parse(text).expect("valid checkout URL")
    }

    #[test]
    fn empty_query_segments_are_dropped() {
        assert_eq!(
            checkout_url(&url("https://shop.example/buy?a=1&&b=2&"), "x.com", "x", "com"),
            "https://shop.example/buy?a=1&b=2&domain=x.com&sld=x&tld=.com"
        );
        assert_eq!(
            checkout_url(&url("https://shop.example/buy?"), "x.com", "x", ".com"),
            "https://shop.example/buy?domain=x.com&sld=x&tld=.com"
        );
    }

    #[test]
    fn repeated_purchase_params_collapse_to_one() {
        assert_eq!(
            checkout_url(&url("https://shop.example/?tld=.net&tld=.org&ref=1"), "x.com", "x", ".com"),
            "https://shop.example/?tld=.com&ref=1&domain=x.com&sld=x"
        );
    }

    #[test]
    fn a_base_without_query_gets_the_same_url_either_way() {
        let bases = [
            "https://shop.example/checkout",
            "http://Shop.Example:8080/a/b%20c/",
            "https://xn--bcher-kva.de",
            "https://[::1]/x",
        ];
        let names = [
            ("example.com.af", "example", ".com.af"),
            ("xn--bcher-kva.de", "xn--bcher-kva", ".de"),
            ("bücher.de", "bücher", ".de"),
            ("a b&c=d#e+f%g.com", "a b&c=d#e+f%g", ".com"),
            ("", "", "."),
        ];
        for base in bases {
            let base = url(base);
            assert!(base.as_url().query().is_none() && base.as_url().fragment().is_none());
            for (domain, sld, tld) in names {
                let values = [domain, sld, tld];
                assert_eq!(appended(&base, values), rebuilt(&base, values), "{base} {domain}");
                assert_eq!(checkout_url(&base, domain, sld, tld), rebuilt(&base, values));
            }
        }
    }

    #[test]
    fn serde_round_trip_checks() {
        let u: CheckoutUrl = serde_json::from_str("\"https://shop.example/buy\"").expect("valid");
        assert_eq!(serde_json::to_string(&u).expect("serializes"), "\"https://shop.example/buy\"");
        assert!(serde_json::from_str::<CheckoutUrl>("\"javascript:alert(1)\"").is_err());
    }
}
