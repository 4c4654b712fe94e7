//! Which webhook URLs may be registered and reached: the registrar referral's SSRF guards
//! (`workers/src/engine/registration/referral.rs`), applied at registration and again at every
//! attempt.
//!
//! * the URL is `https`, without credentials, at most [`MAX_URL_BYTES`](super::MAX_URL_BYTES);
//! * its host is resolved once and **every** address must be public unicast (no loopback,
//!   private, link-local, CGNAT, multicast, documentation or reserved ranges); an IP literal is
//!   checked the same way;
//! * the connection is pinned to the checked address (no second resolution: a DNS rebinding
//!   answer cannot swap it), redirects are not followed, no proxy is used.
//!
//! Tests deliver to a receiver on loopback through
//! [`WebhookConfig::test_only_allow_loopback`](super::WebhookConfig::test_only_allow_loopback),
//! which admits loopback addresses (and `http://` to them) and nothing else.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use url::Url;
use workers::engine::registration::referral::is_public_unicast;

use super::MAX_URL_BYTES;

/// A URL that passed the checks, and the address to connect to.
#[derive(Debug, Clone)]
pub struct Target {
    /// The URL.
    pub url: Url,
    /// Its host, lower-cased (without brackets for IPv6).
    pub host: String,
    /// The checked address the connection is pinned to.
    pub addr: SocketAddr,
}

/// Checks a URL's form (scheme, credentials, length, host) without resolving it.
///
/// # Errors
/// A sentence for the API user saying what is wrong.
pub fn check_form(raw: &str, allow_loopback: bool) -> Result<Url, String> {
    if raw.len() > MAX_URL_BYTES {
        return Err(format!("The webhook URL is longer than {MAX_URL_BYTES} bytes."));
    }
    let url = Url::parse(raw.trim()).map_err(|e| format!("The webhook URL is not a valid URL: {e}."))?;
    match url.scheme() {
        "https" => {}
        "http" if allow_loopback => {}
        _ => return Err("The webhook URL must use https.".into()),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("The webhook URL must not carry a user name or password.".into());
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("The webhook URL has no host.".into());
    }
    Ok(url)
}

/// Whether an address may be reached: public unicast, or loopback when allowed (tests).
fn reachable(ip: IpAddr, allow_loopback: bool) -> bool {
    is_public_unicast(ip) || (allow_loopback && ip.is_loopback())
}

/// Checks a URL and resolves its host once; every address must be reachable.
///
/// # Errors
/// A sentence saying which guard refused, or that the host could not be resolved.
pub async fn resolve(raw: &str, allow_loopback: bool, timeout: Duration) -> Result<Target, String> {
    let url = check_form(raw, allow_loopback)?;
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    let bare = host.trim_start_matches('[').trim_end_matches(']').to_owned();
    let port = url.port_or_known_default().unwrap_or(443);
    let addrs: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::time::timeout(timeout, tokio::net::lookup_host((bare.as_str(), port)))
            .await
            .map_err(|_| format!("Resolving the webhook host {bare} timed out."))?
            .map_err(|_| format!("The webhook host {bare} could not be resolved."))?
            .collect(),
    };
    let first = *addrs.first().ok_or_else(|| format!("The webhook host {bare} has no address."))?;
    if let Some(bad) = addrs.iter().find(|a| !reachable(a.ip(), allow_loopback)) {
        return Err(format!(
            "The webhook host {bare} resolves to {}, which is not a public address; webhooks are delivered to public addresses only.",
            bad.ip()
        ));
    }
    if url.scheme() == "http" && !first.ip().is_loopback() {
        return Err("The webhook URL must use https.".into());
    }
    Ok(Target { url, host: bare, addr: first })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hostile_urls_are_refused() {
        let t = Duration::from_secs(2);
        for (url, why) in [
            ("http://example.com/hook", "https"),
            ("ftp://example.com/hook", "https"),
            ("https://user:pw@example.com/hook", "user name"),
            ("https://127.0.0.1/hook", "not a public address"),
            ("https://[::1]/hook", "not a public address"),
            ("https://10.0.0.8/hook", "not a public address"),
            ("https://192.168.1.1/hook", "not a public address"),
            ("https://169.254.169.254/latest/meta-data", "not a public address"),
            ("https://[fe80::1]/hook", "not a public address"),
            ("https://[::ffff:127.0.0.1]/hook", "not a public address"),
            ("https://localhost/hook", "not a public address"),
            ("not a url", "not a valid URL"),
        ] {
            let e = resolve(url, false, t).await.expect_err(url);
            assert!(e.contains(why), "{url}: {e}");
        }
        // The test setting admits loopback, and nothing else.
        assert!(resolve("http://127.0.0.1:9/hook", true, t).await.is_ok());
        let e = resolve("http://10.0.0.8/hook", true, t).await.expect_err("private");
        assert!(e.contains("not a public address"), "{e}");
        let e = resolve("https://169.254.169.254/", true, t).await.expect_err("link-local");
        assert!(e.contains("not a public address"), "{e}");
        // A public literal passes.
        assert!(resolve("https://93.184.215.14/hook", false, t).await.is_ok());
    }
}
