//! Client keys (spec §2.1, §5): kinds, states, plans, generation and hashing.
//!
//! A key is `dsa_<kind>_<32 random base62 characters>` (≈190 bits): the prefix lets a human tell
//! an embed key (`dsa_embed_…`, browser-side) from a server key (`dsa_server_…`, secret). Only the
//! SHA-256 of the key is stored; logs carry an 8-hex-digit fingerprint, never the key.

use rand::Rng;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::pricing::purchase::CheckoutUrl;

/// Browser-side or secret key (spec §2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum KeyKind {
    /// For browser-side use; its allowed-origins list protects it.
    Embed,
    /// Secret; must never appear in front-end code.
    Server,
}

impl KeyKind {
    /// Lower-case name as stored (`embed`, `server`); the same names as serde's.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Parses a stored or typed name.
    pub fn parse(s: &str) -> Option<Self> {
        s.parse().ok()
    }
}

/// Key state (spec §3): only active keys are accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum KeyState {
    /// Accepted.
    Active,
    /// Turned off by its owner or the operator.
    Disabled,
    /// Turned off by the operator (abuse, unpaid).
    Suspended,
}

impl KeyState {
    /// Lower-case name as stored; the same names as serde's.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Parses a stored or typed name.
    pub fn parse(s: &str) -> Option<Self> {
        s.parse().ok()
    }
}

/// Plans and their monthly allowances in credits (spec §8), ordered from Free to Reseller.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case", ascii_case_insensitive)]
pub enum Plan {
    /// Free Developer: 500 credits a month.
    #[strum(to_string = "free", serialize = "developer", serialize = "free_developer")]
    Free,
    /// Starter: 5,000 credits a month.
    Starter,
    /// PRO: 25,000 credits a month.
    Pro,
    /// Reseller: 50,000 credits a month.
    Reseller,
}

impl Plan {
    /// Monthly allowance, credits (spec §8).
    pub fn monthly_credits(self) -> i64 {
        match self {
            Plan::Free => 500,
            Plan::Starter => 5_000,
            Plan::Pro => 25_000,
            Plan::Reseller => 50_000,
        }
    }

    /// Stored name; the same names as serde's.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Parses a stored or typed name, case-insensitive; `developer` and `free_developer` are
    /// `free`.
    pub fn parse(s: &str) -> Option<Self> {
        s.parse().ok()
    }
}

/// A key record as stored, with the settings responses depend on (spec §2.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyRecord {
    /// Stable id (UUID v7).
    pub id: String,
    /// Short fingerprint for logs and the CLI.
    pub fingerprint: String,
    /// Embed or server.
    pub kind: KeyKind,
    /// Active, disabled or suspended.
    pub state: KeyState,
    /// Plan name.
    pub plan: Plan,
    /// Monthly allowance, credits.
    pub monthly_allowance: i64,
    /// Whether responses carry `pricing` (spec §2.2).
    pub pricing_enabled: bool,
    /// Whether responses carry `purchase` for available names.
    pub show_purchase_button: bool,
    /// Admin-configured default commission, percent.
    pub default_commission_percent: Option<f64>,
    /// Configured purchase (checkout) URL.
    pub purchase_url: Option<String>,
    /// Allowed origins (`https://shop.example`, `https://*.example.com`).
    pub allowed_origins: Vec<String>,
    /// Free-text label.
    pub label: String,
    /// When the key was created (RFC 3339, UTC). Empty in records serialised before the field
    /// existed.
    #[serde(default)]
    pub created_at: String,
    /// The portal account that owns the key; `None` for an operator key (`dsa keys create`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// `purchase_url` checked as a checkout URL, on first use ([`KeyRecord::purchase_checkout`]).
    /// Not stored, not serialised, not compared.
    #[serde(skip)]
    pub parsed_purchase_url: ParsedPurchaseUrl,
}

impl KeyRecord {
    /// The key's purchase URL as a checkout URL ([`CheckoutUrl::parse`]); `None` when the key has
    /// none or it is not an acceptable checkout URL. Parsed once per record (every available
    /// answer of a key with a purchase button asks for it), again only if `purchase_url` changed.
    pub fn purchase_checkout(&self) -> Option<std::borrow::Cow<'_, CheckoutUrl>> {
        let text = self.purchase_url.as_deref()?;
        let (source, parsed) =
            self.parsed_purchase_url.0.get_or_init(|| (text.to_owned(), CheckoutUrl::parse(text).ok()));
        if source == text {
            parsed.as_ref().map(std::borrow::Cow::Borrowed)
        } else {
            CheckoutUrl::parse(text).ok().map(std::borrow::Cow::Owned)
        }
    }
}

/// The cache behind [`KeyRecord::purchase_checkout`]: the text parsed and its parse. Every
/// record's cache equals every other's, so that records compare by their settings alone.
#[derive(Debug, Clone, Default)]
pub struct ParsedPurchaseUrl(std::sync::OnceLock<(String, Option<CheckoutUrl>)>);

impl PartialEq for ParsedPurchaseUrl {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Generates a new key of `kind`; returns the key (show once) and its stored hash.
pub fn generate(kind: KeyKind) -> (String, String) {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut rng = rand::rng();
    let body: String = (0..32).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect();
    let key = format!("dsa_{}_{body}", kind.as_str());
    let hash = hash_key(&key);
    (key, hash)
}

/// Hex SHA-256 of a key (what is stored and looked up).
pub fn hash_key(key: &str) -> String {
    // Into a buffer, then one string: `hex::encode` pushes its 64 digits one char at a time
    // (1,800 instructions of every keyed request, issue 29).
    let digest = Sha256::digest(key.as_bytes());
    let mut digits = [0_u8; 64];
    match hex::encode_to_slice(digest, &mut digits).map(|()| std::str::from_utf8(&digits)) {
        Ok(Ok(digits)) => digits.to_owned(),
        _ => hex::encode(digest),
    }
}

/// Short fingerprint of a key hash for logs (first 8 hex digits).
pub fn fingerprint(hash: &str) -> String {
    hash.chars().take(8).collect()
}

/// What the store looks a key up by, for a key as an operator types it on the command line: a
/// full key (`dsa_…`) becomes its hash, anything else (an id or an 8-hex fingerprint) is
/// lower-cased, as ids and fingerprints are stored.
pub fn lookup_ref(typed: &str) -> String {
    let typed = typed.trim();
    if typed.starts_with("dsa_") { hash_key(typed) } else { typed.to_ascii_lowercase() }
}

/// Checks an allowed-origin entry (spec §5.3) and returns it normalised: lower case, a trailing
/// `/` dropped, a default port (`:443` for https, `:80` for http) dropped and a Unicode host turned
/// into its `xn--` form, because that is how browsers write the `Origin` header
/// ([RFC 6454 §6.1]) and [`crate::front::origin::matches`] compares strings.
///
/// The URL is parsed by the `url` crate (WHATWG URL: scheme, user-info, host with IDNA, port);
/// only the `*.` wildcard form and the "an origin has no path" rule are ours.
///
/// Accepted: `scheme://host[:port]` or `scheme://*.domain[:port]` (any subdomain of `domain`, not
/// `domain` itself), scheme `http` or `https`. Refused, with a message saying why: a path, query
/// or fragment, user-info, a bad port, a host that is not a DNS name or IP address, a wildcard over
/// a whole TLD (`https://*.com`) and a wildcard over any other public suffix of the Public Suffix
/// List (`https://*.co.uk`, `https://*.github.io`), which would admit every unrelated site under it.
///
/// [RFC 6454 §6.1]: https://www.rfc-editor.org/rfc/rfc6454#section-6.1
pub fn parse_origin(text: &str) -> Result<String, String> {
    let trimmed = text.trim();
    let fail = |why: &str| Err(format!("{trimmed:?} is not an origin (scheme://host[:port]): {why}"));
    let Some((scheme, rest)) = trimmed.split_once("://") else {
        return fail("missing scheme, e.g. https://");
    };
    // The WHATWG parser drops inner tabs and newlines and reads `\` as `/`: refuse them first.
    if rest.chars().any(|c| c == '\\' || c.is_whitespace() || c.is_control()) {
        return fail("contains white space, a control character or a backslash");
    }
    let (wildcard, rest) = match rest.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, rest),
    };
    if rest.split(['/', '?', '#']).next().is_some_and(|authority| authority.contains('*')) {
        return fail("a wildcard is allowed only as the first label (https://*.example.com)");
    }
    let url = match url::Url::parse(&format!("{scheme}://{rest}")) {
        Ok(url) => url,
        Err(url::ParseError::EmptyHost) => return fail("missing host"),
        Err(url::ParseError::InvalidPort) => return fail("the port must be a number from 1 to 65535"),
        Err(e) => return fail(&format!("bad host: {e}")),
    };
    if !matches!(url.scheme(), "http" | "https") {
        return fail("the scheme must be http or https");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return fail("an origin has no user:password@");
    }
    if url.path() != "/" {
        return fail("an origin has no path");
    }
    if url.query().is_some() {
        return fail("an origin has no query");
    }
    if url.fragment().is_some() {
        return fail("an origin has no fragment");
    }
    // `url` already dropped a default port.
    let port = match url.port() {
        Some(0) => return fail("the port must be a number from 1 to 65535"),
        port => port,
    };
    let host = match url.host() {
        Some(url::Host::Domain(name)) => {
            let name = name.strip_suffix('.').unwrap_or(name).to_owned();
            if let Err(why) = check_host_name(&name) {
                return fail(why);
            }
            if wildcard && !name.contains('.') {
                return fail("a wildcard must cover a domain, not a whole TLD");
            }
            if wildcard && psl::suffix_str(&name) == Some(name.as_str()) {
                return fail(&format!(
                    "a wildcard cannot cover {name}, a public suffix (Public Suffix List): name a domain under it"
                ));
            }
            name
        }
        Some(_) if wildcard => return fail("a wildcard cannot cover an IP address"),
        Some(ip) => ip.to_string(),
        None => return fail("missing host"),
    };
    let (scheme, star) = (url.scheme(), if wildcard { "*." } else { "" });
    Ok(match port {
        Some(port) => format!("{scheme}://{star}{host}:{port}"),
        None => format!("{scheme}://{star}{host}"),
    })
}

/// Letters, digits and hyphens, labels of 1–63 characters not starting or ending with a hyphen,
/// 253 characters at most (RFC 1123 §2.1, RFC 1035 §2.3.4).
fn check_host_name(name: &str) -> Result<(), &'static str> {
    if name.len() > 253 {
        return Err("the host name is longer than 253 characters");
    }
    for label in name.split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err("each label of the host must be 1 to 63 characters");
        }
        if !label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err("the host may contain only letters, digits, hyphens and dots");
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err("a label of the host cannot start or end with a hyphen");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_prefixed_random_and_hashed() {
        let (a, ha) = generate(KeyKind::Embed);
        let (b, _) = generate(KeyKind::Server);
        assert!(a.starts_with("dsa_embed_") && a.len() == 42, "{a}");
        assert!(b.starts_with("dsa_server_"));
        assert_ne!(a, b);
        assert_eq!(ha, hash_key(&a));
        assert_eq!(ha.len(), 64);
        assert!(!ha.contains(&a[10..]));
        // The stored form: lower-case hex of SHA-256 (FIPS 180-4's "abc" and empty vectors).
        assert_eq!(hash_key("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(hash_key(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }

    #[test]
    fn names_match_serde_and_parse_back() {
        for kind in [KeyKind::Embed, KeyKind::Server] {
            assert_eq!(serde_json::to_value(kind).expect("json"), kind.as_str());
            assert_eq!(KeyKind::parse(kind.as_str()), Some(kind));
        }
        for state in [KeyState::Active, KeyState::Disabled, KeyState::Suspended] {
            assert_eq!(serde_json::to_value(state).expect("json"), state.as_str());
            assert_eq!(KeyState::parse(state.as_str()), Some(state));
        }
        for plan in [Plan::Free, Plan::Starter, Plan::Pro, Plan::Reseller] {
            assert_eq!(serde_json::to_value(plan).expect("json"), plan.as_str());
            assert_eq!(Plan::parse(&plan.as_str().to_ascii_uppercase()), Some(plan));
        }
        assert_eq!(Plan::parse("Developer"), Some(Plan::Free));
        assert_eq!(Plan::parse("free_developer"), Some(Plan::Free));
        assert_eq!((KeyKind::parse("Embed"), KeyState::parse("gone"), Plan::parse("gold")), (None, None, None));
    }

    #[test]
    fn lookup_refs() {
        let (key, hash) = generate(KeyKind::Server);
        assert_eq!(lookup_ref(&key), hash);
        assert_eq!(lookup_ref(&format!(" {key}\n")), hash);
        assert_eq!(lookup_ref("3FA2B9C1"), "3fa2b9c1");
    }

    #[test]
    fn origins_are_checked_and_normalised() {
        let ok = |s: &str| parse_origin(s).expect(s);
        assert_eq!(ok("https://Shop.Example"), "https://shop.example");
        assert_eq!(ok("https://shop.example/"), "https://shop.example");
        assert_eq!(ok("https://shop.example:443"), "https://shop.example");
        assert_eq!(ok("http://shop.example:80"), "http://shop.example");
        assert_eq!(ok("https://shop.example:8443"), "https://shop.example:8443");
        assert_eq!(ok("https://*.Example.com"), "https://*.example.com");
        assert_eq!(ok("https://*.shop.co.uk"), "https://*.shop.co.uk");
        assert_eq!(ok("https://shop.co.uk"), "https://shop.co.uk");
        assert_eq!(ok("http://localhost:3000"), "http://localhost:3000");
        assert_eq!(ok("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
        assert_eq!(ok("http://[::1]:8080"), "http://[::1]:8080");
        assert_eq!(ok("https://bücher.de"), "https://xn--bcher-kva.de");
        for (bad, why) in [
            ("shop.example", "missing scheme"),
            ("ftp://shop.example", "http or https"),
            ("https://shop.example/buy", "no path"),
            ("https://shop.example?x=1", "no query"),
            ("https://shop.example#top", "no fragment"),
            ("https://user@shop.example", "user:password"),
            ("https://shop.example:0", "port"),
            ("https://shop.example:99999", "port"),
            ("https://shop.example:abc", "port"),
            ("https://", "missing host"),
            ("https://*.com", "whole TLD"),
            ("https://*.co.uk", "co.uk, a public suffix"),
            ("https://*.CO.UK:8443", "co.uk, a public suffix"),
            ("https://*.github.io", "github.io, a public suffix"),
            ("https://a.*.example.com", "first label"),
            ("https://*.127.0.0.1", "IP address"),
            ("https://shop_x.example", "letters, digits"),
            ("https://-shop.example", "hyphen"),
            ("https://shop..example", "1 to 63"),
            ("https://shop example", "white space"),
        ] {
            let err = parse_origin(bad).expect_err(bad);
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}
