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

use crate::front::error::ApiError;

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
///
/// The map is keyed by client input (an IPv6 client rotates through the 2^16 /64s of a /48, and
/// more), so it is bounded (issue 32): past [`IP_LIMITER_MAX`] addresses the idle ones are
/// dropped (`retain_recent`), and if more than half the bound are still recent, the map starts
/// afresh (every address gets its allowance back once) instead of growing. The half keeps the
/// O(n) prune amortised: the code before pruned on every request once 100,000 recent addresses
/// were held (210,000 /64s at 1 a minute took 167 s of CPU).
#[derive(Debug)]
pub struct IpLimiter {
    limiter: Option<std::sync::RwLock<governor::DefaultKeyedRateLimiter<IpAddr>>>,
    quota: Option<governor::Quota>,
    hops: u8,
}

/// Addresses held at most (about 64 bytes each).
pub const IP_LIMITER_MAX: usize = 100_000;

impl IpLimiter {
    /// A limiter allowing `per_minute` requests per address (bursts up to that many); 0 allows all.
    pub fn new(per_minute: u32, hops: u8) -> Self {
        let quota = std::num::NonZeroU32::new(per_minute).map(governor::Quota::per_minute);
        let limiter = quota.map(|q| std::sync::RwLock::new(governor::RateLimiter::keyed(q)));
        Self { limiter, quota, hops }
    }

    /// Counts one request from `addr`.
    ///
    /// # Errors
    /// [`ApiError::TooManyRequests`] with the seconds until the address may send again.
    pub fn check(&self, addr: &ClientAddr) -> Result<(), ApiError> {
        let (Some(limiter), Some(ip)) = (&self.limiter, addr.limit_ip(self.hops)) else {
            return Ok(());
        };
        let read = |l: &std::sync::RwLock<governor::DefaultKeyedRateLimiter<IpAddr>>| {
            l.read().unwrap_or_else(std::sync::PoisonError::into_inner).len()
        };
        if read(limiter) > IP_LIMITER_MAX {
            let mut map = limiter.write().unwrap_or_else(std::sync::PoisonError::into_inner);
            if map.len() > IP_LIMITER_MAX {
                map.retain_recent();
                if map.len() > IP_LIMITER_MAX / 2
                    && let Some(quota) = self.quota
                {
                    tracing::warn!(
                        addresses = map.len(),
                        "per-address limiter full of recent addresses; starting afresh"
                    );
                    *map = governor::RateLimiter::keyed(quota);
                }
                map.shrink_to_fit();
            }
        }
        let map = limiter.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        map.check_key(&ip).map_err(|not_until| {
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

    /// Distinct /64s past the bound, each still limited (one client rotating through its
    /// prefixes): the map never holds more than [`IP_LIMITER_MAX`] addresses, and pruning stays
    /// cheap (the code before scanned the whole map on every request past 100,000: 167 s here).
    #[test]
    fn the_per_address_map_is_bounded_and_cheap() {
        let limiter = IpLimiter::new(1, 0);
        let started = std::time::Instant::now();
        for i in 0..(2 * IP_LIMITER_MAX as u128 + 10_000) {
            let ip = IpAddr::V6(std::net::Ipv6Addr::from((0x2001_0db8u128 << 96) | (i << 64)));
            let _ = limiter.check(&ClientAddr { peer: Some(ip), forwarded: Vec::new() });
        }
        let held = limiter.limiter.as_ref().map_or(0, |l| l.read().expect("lock").len());
        assert!(held <= IP_LIMITER_MAX, "{held} addresses held");
        assert!(started.elapsed().as_secs() < 60, "{:?} for 210,000 addresses", started.elapsed());
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
