//! Following a thin registry's referral once (registrar RDAP `related` link, WHOIS
//! `Registrar WHOIS Server`), with SSRF guards.
//!
//! A referral URL comes from an upstream's answer, so it is untrusted input that makes dsa open a
//! connection. The guards:
//! * RDAP referrals must be `https` (RFC 7481 §3);
//! * the host is resolved once and **every** address must be public unicast — no loopback,
//!   private (RFC 1918, RFC 4193), link-local, CGNAT (RFC 6598), multicast, broadcast,
//!   documentation, benchmarking or reserved ranges; an IP literal is checked the same way;
//! * the connection is pinned to the address that was checked (no second resolution, so a DNS
//!   rebinding answer cannot swap it), redirects are not followed (one hop);
//! * the answer is capped in bytes and the exchange in time.
//!
//! The registry simulator lives on loopback, so tests allow it through
//! [`ReferralConfig::test_only_allow`], an explicit host → address map that production leaves
//! empty.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use url::Url;

use crate::config::ReferralConfig;

/// Whether `ip` is a public unicast address (the only kind a referral may reach).
pub fn is_public_unicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return public_v4(v4);
            }
            let s = v6.segments();
            let global_unicast = (s[0] & 0xe000) == 0x2000; // 2000::/3
            let documentation = s[0] == 0x2001 && s[1] == 0x0db8; // 2001:db8::/32
            let six_to_four_or_teredo = s[0] == 0x2002 || (s[0] == 0x2001 && s[1] == 0);
            global_unicast && !documentation && !six_to_four_or_teredo && v6 != Ipv6Addr::UNSPECIFIED
        }
    }
}

fn public_v4(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || o[0] == 0
        || o[0] >= 240
        || (o[0] == 100 && (o[1] & 0xc0) == 64) // 100.64.0.0/10 CGNAT
        || (o[0] == 192 && o[1] == 0 && o[2] == 0) // 192.0.0.0/24 IETF protocol assignments
        || (o[0] == 198 && (o[1] & 0xfe) == 18)) // 198.18.0.0/15 benchmarking
}

/// Resolves `host:port` and checks every address; returns the one to connect to.
///
/// # Errors
/// A message naming the refused address, or the resolution failure.
async fn checked_address(host: &str, port: u16, config: &ReferralConfig) -> Result<SocketAddr, String> {
    if let Some(addr) = config.test_only_allow.get(&host.to_ascii_lowercase()) {
        return addr.parse::<SocketAddr>().map_err(|e| format!("test_only_allow {host}: {e}"));
    }
    let addrs: Vec<SocketAddr> = match host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => {
            let lookup = tokio::time::timeout(secs(config.timeout_secs), tokio::net::lookup_host((host, port)))
                .await
                .map_err(|_| format!("resolving {host} timed out"))?
                .map_err(|e| format!("resolving {host}: {e}"))?;
            lookup.collect()
        }
    };
    let first = *addrs.first().ok_or_else(|| format!("{host} has no address"))?;
    if let Some(bad) = addrs.iter().find(|a| !is_public_unicast(a.ip())) {
        return Err(format!("referral host {host} resolves to {}, which is not a public unicast address", bad.ip()));
    }
    Ok(first)
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.max(0.01))
}

/// Fetches a registrar RDAP URL once under the guards; returns the body of a 200 answer.
///
/// # Errors
/// A message saying which guard refused or what failed (the caller reports it and keeps the
/// registry's answer).
pub async fn fetch_rdap(link: &str, config: &ReferralConfig) -> Result<Vec<u8>, String> {
    let url = Url::parse(link).map_err(|e| format!("bad referral URL {link:?}: {e}"))?;
    let host = url.host_str().ok_or_else(|| format!("referral URL {link} has no host"))?.to_ascii_lowercase();
    let test_allowed = config.test_only_allow.contains_key(&host);
    if url.scheme() != "https" && !test_allowed {
        return Err(format!("referral {link} refused: RDAP referrals must use https"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!("referral {link} refused: credentials in the URL"));
    }
    let port = url.port_or_known_default().unwrap_or(443);
    let addr = checked_address(&host, port, config).await?;
    let client = reqwest::Client::builder()
        .resolve(&host, addr)
        // A proxy (`HTTPS_PROXY`…) would resolve the host again and undo the pinned address.
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(secs(config.timeout_secs))
        .connect_timeout(secs(config.timeout_secs))
        .user_agent(concat!("dsa/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("referral client: {e}"))?;
    let mut response = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/rdap+json, application/json;q=0.8")
        .send()
        .await
        .map_err(|e| format!("referral {host}: {e}"))?;
    if response.status() != reqwest::StatusCode::OK {
        return Err(format!("referral {host}: HTTP {} (redirects are not followed)", response.status()));
    }
    let limit = config.max_bytes;
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| format!("referral {host}: {e}"))? {
        if body.len() + chunk.len() > limit {
            return Err(format!("referral {host}: answer larger than {limit} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Asks a registrar WHOIS server (port 43, RFC 3912) once under the guards; returns the raw
/// answer.
///
/// # Errors
/// A message saying which guard refused or what failed.
pub async fn fetch_whois(server: &str, domain: &str, config: &ReferralConfig) -> Result<Vec<u8>, String> {
    let server = server.trim().trim_start_matches("whois://").trim_end_matches('/').to_ascii_lowercase();
    let (host, port) = match server.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => {
            (h.to_owned(), p.parse::<u16>().map_err(|_| format!("bad port in {server}"))?)
        }
        _ => (server.clone(), 43),
    };
    if host.is_empty() || host.contains('/') {
        return Err(format!("bad WHOIS referral {server:?}"));
    }
    let addr = checked_address(&host, port, config).await?;
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.map_err(|e| format!("referral {host}: {e}"))?;
        stream.write_all(format!("{domain}\r\n").as_bytes()).await.map_err(|e| format!("referral {host}: {e}"))?;
        let mut answer = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            let n = stream.read(&mut buf).await.map_err(|e| format!("referral {host}: {e}"))?;
            if n == 0 {
                return Ok(answer);
            }
            if answer.len() + n > config.max_bytes {
                return Err(format!("referral {host}: answer larger than {} bytes", config.max_bytes));
            }
            answer.extend_from_slice(&buf[..n]);
        }
    };
    tokio::time::timeout(secs(config.timeout_secs), exchange)
        .await
        .map_err(|_| format!("referral {host}: no complete answer within {:.1} s", config.timeout_secs))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_unicast_passes() {
        for bad in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "0.0.0.0",
            "192.0.2.10",
            "198.18.0.1",
            "240.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd12::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "2001:db8::1",
        ] {
            assert!(!is_public_unicast(bad.parse().expect("ip")), "{bad} must be refused");
        }
        for good in ["8.8.8.8", "193.0.6.139", "2a00:1450:4001:80b::200e", "2606:4700::1111"] {
            assert!(is_public_unicast(good.parse().expect("ip")), "{good} must pass");
        }
    }

    #[tokio::test]
    async fn hostile_links_are_refused() {
        let cfg = ReferralConfig::default();
        let e = fetch_rdap("http://rdap.registrar.example/domain/x.com", &cfg).await.expect_err("http");
        assert!(e.contains("https"), "{e}");
        let e = fetch_rdap("https://127.0.0.1/domain/x.com", &cfg).await.expect_err("loopback");
        assert!(e.contains("not a public unicast"), "{e}");
        let e = fetch_rdap("https://[::1]:8443/domain/x.com", &cfg).await.expect_err("v6 loopback");
        assert!(e.contains("not a public unicast"), "{e}");
        let e = fetch_rdap("https://169.254.169.254/latest/meta-data", &cfg).await.expect_err("metadata");
        assert!(e.contains("not a public unicast"), "{e}");
        let e = fetch_rdap("https://user:pw@rdap.example/domain/x.com", &cfg).await.expect_err("credentials");
        assert!(e.contains("credentials"), "{e}");
        // `localhost` resolves to loopback: refused after resolution.
        let e = fetch_rdap("https://localhost/domain/x.com", &cfg).await.expect_err("localhost");
        assert!(e.contains("not a public unicast") || e.contains("resolving"), "{e}");
        let e = fetch_whois("10.0.0.1", "x.com", &cfg).await.expect_err("private whois");
        assert!(e.contains("not a public unicast"), "{e}");
        let e = fetch_whois("localhost:43", "x.com", &cfg).await.expect_err("localhost whois");
        assert!(e.contains("not a public unicast") || e.contains("resolving"), "{e}");
    }
}
