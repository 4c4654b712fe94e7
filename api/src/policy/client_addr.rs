//! The client's address (socket peer and `X-Forwarded-For` behind trusted proxies) and the
//! per-address limit counted before the key lookup.
//!
//! Why this is ours and not `axum-client-ip` (1.3.1, reviewed for issue 16): that crate's
//! `ClientIpSource::RightmostXForwardedFor` takes only the *last* `X-Forwarded-For` entry, i.e.
//! exactly one trusted proxy, and rejects a request without the header; it has no setting for
//! "`policy.proxy_hops` trusted hops, the right-most entry they did not write", nor the fall-back
//! to the socket peer (hops = 0, or no header) and to the left-most entry of a short chain that
//! [`ClientAddr::ip`] implements. Its `LeftmostXForwardedFor` is client-written and forgeable.
//! Switching would change which address is counted behind two or more proxies, so the ten lines
//! of [`ClientAddr::ip`] stay.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;

use crate::error::ApiError;

/// The client's address as seen by this front: the socket peer and the `X-Forwarded-For` chain.
/// [`ClientAddr::ip`] picks the address to count limits against.
#[derive(Debug, Clone, Default)]
pub struct ClientAddr {
    /// Peer address of the TCP connection, when known.
    pub peer: Option<IpAddr>,
    /// Every `X-Forwarded-For` entry, left to right (all header lines joined); unparsable
    /// entries are kept out.
    pub forwarded: Vec<IpAddr>,
}

impl ClientAddr {
    /// Reads the peer (from axum's `ConnectInfo`) and the `X-Forwarded-For` chain.
    pub fn from_parts(headers: &HeaderMap, extensions: &axum::http::Extensions) -> Self {
        let peer = extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
        let forwarded = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .filter_map(|v| v.trim().parse().ok())
            .collect();
        Self { peer, forwarded }
    }

    /// The client address behind `hops` trusted proxies: the socket peer when `hops` is 0, else
    /// the `X-Forwarded-For` entry `hops` places from the right (the left-most one when the chain
    /// is shorter). Entries left of it were written by the client and are never trusted.
    pub fn ip(&self, hops: u8) -> Option<IpAddr> {
        if hops == 0 || self.forwarded.is_empty() {
            return self.peer;
        }
        let index = self.forwarded.len().saturating_sub(usize::from(hops));
        self.forwarded.get(index).copied().or(self.peer)
    }

    /// The address limits are counted against: [`ClientAddr::ip`], with an IPv6 address reduced
    /// to its /64 network (one subscriber's usual allocation), so rotating through a prefix
    /// does not multiply a client's allowance.
    pub fn limit_ip(&self, hops: u8) -> Option<IpAddr> {
        self.ip(hops).map(limit_prefix)
    }
}

/// An address as counted by per-IP limits: IPv4 as is, IPv6 reduced to its /64 network
/// (IPv4-mapped IPv6 addresses count as their IPv4 address).
pub fn limit_prefix(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(std::net::Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        },
    }
}

impl<S: Send + Sync> FromRequestParts<S> for ClientAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Self::from_parts(&parts.headers, &parts.extensions))
    }
}

/// Requests per minute per client address, counted before the key lookup (see
/// `policy.per_ip_per_minute`): a GCRA limiter from `governor`, keyed by [`limit_prefix`].
#[derive(Debug)]
pub struct IpLimiter {
    limiter: Option<governor::DefaultKeyedRateLimiter<IpAddr>>,
    hops: u8,
}

impl IpLimiter {
    /// A limiter allowing `per_minute` requests per address (bursts up to that many); 0 allows all.
    pub fn new(per_minute: u32, hops: u8) -> Self {
        let limiter =
            std::num::NonZeroU32::new(per_minute).map(|n| governor::RateLimiter::keyed(governor::Quota::per_minute(n)));
        Self { limiter, hops }
    }

    /// Counts one request from `addr`.
    ///
    /// # Errors
    /// [`ApiError::TooManyRequests`] with the seconds until the address may send again.
    pub fn check(&self, addr: &ClientAddr) -> Result<(), ApiError> {
        let (Some(limiter), Some(ip)) = (&self.limiter, addr.limit_ip(self.hops)) else {
            return Ok(());
        };
        if limiter.len() > 100_000 {
            limiter.retain_recent();
        }
        limiter.check_key(&ip).map_err(|not_until| {
            let wait = not_until.wait_time_from(governor::clock::Clock::now(&governor::clock::DefaultClock::default()));
            ApiError::TooManyRequests {
                message: "Too many requests from this address; slow down and retry after the time in Retry-After."
                    .into(),
                retry_after_secs: Some(wait.as_secs().max(1)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(peer: &str, chain: &[&str]) -> ClientAddr {
        ClientAddr {
            peer: Some(peer.parse().expect("ip")),
            forwarded: chain.iter().map(|c| c.parse().expect("ip")).collect(),
        }
    }

    #[test]
    fn client_address_is_the_right_most_untrusted_entry() {
        let a = addr("10.1.1.1", &["6.6.6.6", "1.2.3.4", "10.0.0.2"]);
        assert_eq!(a.ip(0), Some("10.1.1.1".parse().expect("ip")), "no trusted proxy: the peer");
        assert_eq!(a.ip(1), Some("10.0.0.2".parse().expect("ip")));
        assert_eq!(a.ip(2), Some("1.2.3.4".parse().expect("ip")));
        assert_eq!(a.ip(9), Some("6.6.6.6".parse().expect("ip")), "short chain: the left-most");
        assert_eq!(addr("10.1.1.1", &[]).ip(1), Some("10.1.1.1".parse().expect("ip")));
    }

    #[test]
    fn ipv6_limits_count_per_slash_64() {
        let a: IpAddr = "2001:db8:aa:bb:1:2:3:4".parse().expect("ip");
        assert_eq!(limit_prefix(a), "2001:db8:aa:bb::".parse::<IpAddr>().expect("ip"));
        let mapped: IpAddr = "::ffff:192.0.2.9".parse().expect("ip");
        assert_eq!(limit_prefix(mapped), "192.0.2.9".parse::<IpAddr>().expect("ip"));
        let v4: IpAddr = "192.0.2.9".parse().expect("ip");
        assert_eq!(limit_prefix(v4), v4);
    }
}
