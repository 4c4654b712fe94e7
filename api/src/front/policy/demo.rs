//! Demo mode: keyless checks, counted per signed session cookie and per client address per UTC
//! day, in this process or in the fleet's demo bucket.

use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum_extra::extract::cookie::{Cookie, Key, SameSite, SignedCookieJar};
use moka::sync::Cache;
use sha2::{Digest, Sha512};
use time::OffsetDateTime;

use super::{ClientAddr, DemoConfig, KV_WAIT_MS};
use crate::front::error::ApiError;

/// Name of the demo session cookie.
pub const DEMO_COOKIE: &str = "dsa_demo";

/// Demo-mode state: session and per-IP counters (one day), and the cookie signing key.
pub struct Demo {
    config: DemoConfig,
    /// The fleet's demo bucket: counters shared by every front (none in standalone mode).
    fleet: Option<(async_nats::jetstream::kv::Store, async_nats::Client)>,
    proxy_hops: u8,
    key: Key,
    /// Demo checks per (session, UTC day).
    sessions: Cache<(String, i64), u32>,
    /// Demo checks per (client address, UTC day).
    ips: Cache<(IpAddr, i64), u32>,
    lock: Mutex<()>,
    global: Option<governor::DefaultDirectRateLimiter>,
}

impl std::fmt::Debug for Demo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Demo").field("config", &self.config.enabled).finish_non_exhaustive()
    }
}

/// A demo check admitted: release it if no definitive answer comes, or keep it.
#[derive(Debug)]
pub struct DemoTicket {
    /// The session id (new sessions need the cookie set).
    pub session: String,
    /// Whether the response must set the cookie.
    pub new_session: bool,
    /// Demo checks left in this session after this one.
    pub remaining: u32,
    ip: Option<IpAddr>,
    /// The UTC day (days since 1970-01-01) the check was counted in.
    day: i64,
}

impl Demo {
    /// Demo state with the given settings; `stored_secret` signs cookies when the configuration
    /// names no `cookie_secret` (see [`crate::store::Store::shared_secret`]).
    pub fn new(config: DemoConfig, proxy_hops: u8, stored_secret: &str) -> Self {
        let secret = match &config.cookie_secret {
            Some(s) => s.expose(),
            None => stored_secret,
        };
        // `Key` wants 64 bytes of key material; the setting is "any string", so it is stretched
        // with SHA-512 (the cookie crate signs with HMAC-SHA256 under the key's signing half).
        let key = Key::from(Sha512::digest(secret.as_bytes()).as_slice());
        let day = Duration::from_secs(86_400);
        Self {
            fleet: None,
            proxy_hops,
            key,
            sessions: Cache::builder().max_capacity(1_000_000).time_to_live(day).build(),
            ips: Cache::builder().max_capacity(1_000_000).time_to_live(day).build(),
            lock: Mutex::new(()),
            global: std::num::NonZeroU32::new(config.global_per_minute)
                .map(|n| governor::RateLimiter::direct(governor::Quota::per_minute(n))),
            config,
        }
    }

    /// Keeps the session and per-IP counters in the fleet's demo bucket (`dsa_demo`, one day
    /// lifetime), so N fronts together still allow 2 checks per session and the per-IP cap.
    #[must_use]
    pub fn with_fleet(mut self, bucket: async_nats::jetstream::kv::Store, client: async_nats::Client) -> Self {
        self.fleet = Some((bucket, client));
        self
    }

    /// Whether demo mode is on.
    pub fn enabled(&self) -> bool {
        self.config.enabled
    }

    /// The session a signed `dsa_demo` cookie in `headers` carries (`SignedCookieJar` checks the
    /// HMAC-SHA256 signature); `None` without a cookie or with a forged one.
    fn session_of(&self, headers: &HeaderMap) -> Option<String> {
        SignedCookieJar::from_headers(headers, self.key.clone()).get(DEMO_COOKIE).map(|c| c.value().to_owned())
    }

    /// The `Set-Cookie` value for a session: signed, one day, HTTP only, `SameSite=Lax`, `Secure`
    /// when `secure`.
    pub fn cookie(&self, session: &str, secure: bool) -> String {
        let cookie = Cookie::build((DEMO_COOKIE, session.to_owned()))
            .path("/")
            .max_age(time::Duration::seconds(86_400))
            .http_only(true)
            .same_site(SameSite::Lax)
            .secure(secure)
            .build();
        let response = SignedCookieJar::new(self.key.clone()).add(cookie).into_response();
        response
            .headers()
            .get(axum::http::header::SET_COOKIE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    }

    /// The client address used for the per-IP cap (IPv6: its /64, see [`ClientAddr::limit_ip`]).
    pub fn client_ip(&self, addr: &ClientAddr) -> Option<IpAddr> {
        addr.limit_ip(self.proxy_hops)
    }

    /// Admits one demo check for the session in `headers` (or a new one) from `addr`.
    ///
    /// # Errors
    /// [`ApiError::TooManyRequests`] when the session's or the IP's demo checks are used up.
    pub async fn admit(
        &self,
        headers: &HeaderMap,
        addr: &ClientAddr,
        now: OffsetDateTime,
    ) -> Result<DemoTicket, ApiError> {
        if let Some(global) = &self.global
            && let Err(not_until) = global.check()
        {
            let wait = not_until.wait_time_from(governor::clock::Clock::now(&governor::clock::DefaultClock::default()));
            return Err(ApiError::TooManyRequests {
                message: "Demo checks are busy right now; retry shortly, or use a client key (the free Developer plan needs no card).".into(),
                retry_after_secs: Some(wait.as_secs().max(1)),
            });
        }
        let existing = self.session_of(headers);
        let (session, new_session) = match existing {
            Some(s) => (s, false),
            None => (uuid::Uuid::new_v4().simple().to_string(), true),
        };
        let ip = self.client_ip(addr);
        // The demo window is the UTC day: session and address counters are kept per day, so a
        // retry succeeds at 00:00 UTC (or with a key, at once).
        let limit_hit = || ApiError::TooManyRequests {
            message: format!(
                "Demo limit of {} checks reached; use a client key to continue (the free Developer plan needs no card), or retry after the time in Retry-After.",
                self.config.checks_per_session
            ),
            retry_after_secs: Some(secs_to_next_day(now)),
        };
        let day = now.unix_timestamp().div_euclid(86_400);
        if let Some((store, client)) = &self.fleet
            && client.connection_state() == async_nats::connection::State::Connected
        {
            let session_key = format!("s.{session}.{day}");
            let ip_key = ip.map(|ip| format!("ip.{}.{day}", ip.to_string().replace([':', '.'], "_")));
            if let Some(ip_key) = &ip_key {
                match kv_add(store, ip_key, 1, Some(self.config.checks_per_ip_per_day)).await {
                    Ok(Some(_)) => {}
                    Ok(None) => return Err(limit_hit()),
                    Err(e) => {
                        tracing::warn!(error = %e, "demo bucket unavailable; counting in this front");
                        return self.admit_local(session, new_session, ip, day, limit_hit);
                    }
                }
            }
            return match kv_add(store, &session_key, 1, Some(self.config.checks_per_session)).await {
                Ok(Some(used)) => Ok(DemoTicket {
                    remaining: self.config.checks_per_session.saturating_sub(used),
                    session,
                    new_session,
                    ip,
                    day,
                }),
                other => {
                    if let Some(ip_key) = &ip_key {
                        let _ = kv_add(store, ip_key, -1, None).await;
                    }
                    match other {
                        Ok(_) => Err(limit_hit()),
                        Err(e) => {
                            tracing::warn!(error = %e, "demo bucket unavailable; counting in this front");
                            self.admit_local(session, new_session, ip, day, limit_hit)
                        }
                    }
                }
            };
        }
        self.admit_local(session, new_session, ip, day, limit_hit)
    }

    fn admit_local(
        &self,
        session: String,
        new_session: bool,
        ip: Option<IpAddr>,
        day: i64,
        limit_hit: impl Fn() -> ApiError,
    ) -> Result<DemoTicket, ApiError> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let session_key = (session.clone(), day);
        let used = self.sessions.get(&session_key).unwrap_or(0);
        if used >= self.config.checks_per_session {
            return Err(limit_hit());
        }
        if let Some(ip) = ip {
            let by_ip = self.ips.get(&(ip, day)).unwrap_or(0);
            if by_ip >= self.config.checks_per_ip_per_day {
                return Err(limit_hit());
            }
            self.ips.insert((ip, day), by_ip + 1);
        }
        self.sessions.insert(session_key, used + 1);
        Ok(DemoTicket { remaining: self.config.checks_per_session - used - 1, session, new_session, ip, day })
    }

    /// Gives a demo check back (no definitive answer was returned). The counters of the ticket's
    /// own day are given back, so a check that straddles midnight returns what it took.
    pub async fn release(&self, ticket: &DemoTicket, _now: OffsetDateTime) {
        let day = ticket.day;
        if let Some((store, client)) = &self.fleet
            && client.connection_state() == async_nats::connection::State::Connected
        {
            let _ = kv_add(store, &format!("s.{}.{day}", ticket.session), -1, None).await;
            if let Some(ip) = ticket.ip {
                let _ = kv_add(store, &format!("ip.{}.{day}", ip.to_string().replace([':', '.'], "_")), -1, None).await;
            }
            return;
        }
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let session_key = (ticket.session.clone(), day);
        if let Some(n) = self.sessions.get(&session_key) {
            self.sessions.insert(session_key, n.saturating_sub(1));
        }
        if let Some(ip) = ticket.ip
            && let Some(n) = self.ips.get(&(ip, day))
        {
            self.ips.insert((ip, day), n.saturating_sub(1));
        }
    }
}

/// Seconds from `now` to the next 00:00 UTC (1 to 86,400): when the demo counters, kept per UTC
/// day, start again. The `Retry-After` of a demo-limit 429.
pub fn secs_to_next_day(now: OffsetDateTime) -> u64 {
    u64::try_from(86_400 - now.unix_timestamp().rem_euclid(86_400)).unwrap_or(86_400)
}

/// Adds `delta` to the counter at `key` with compare-and-set, unless that would pass `cap`.
/// Returns the new value, or `None` when the cap was reached. Each KV call waits at most 250 ms.
async fn kv_add(
    store: &async_nats::jetstream::kv::Store,
    key: &str,
    delta: i64,
    cap: Option<u32>,
) -> Result<Option<u32>, String> {
    let wait = std::time::Duration::from_millis(KV_WAIT_MS);
    for _ in 0..32 {
        let entry = tokio::time::timeout(wait, store.entry(key.to_owned()))
            .await
            .map_err(|_| "timed out".to_owned())?
            .map_err(|e| e.to_string())?;
        let (count, revision) = match &entry {
            Some(e) => {
                (std::str::from_utf8(&e.value).ok().and_then(|s| s.parse::<i64>().ok()).unwrap_or(0), Some(e.revision))
            }
            None => (0, None),
        };
        let next = (count + delta).max(0);
        if let Some(cap) = cap
            && next > i64::from(cap)
        {
            return Ok(None);
        }
        let value = bytes::Bytes::from(next.to_string());
        let stored = match revision {
            Some(rev) => tokio::time::timeout(wait, store.update(key, value, rev)).await.map(|r| r.is_ok()),
            None => tokio::time::timeout(wait, store.create(key, value)).await.map(|r| r.is_ok()),
        }
        .map_err(|_| "timed out".to_owned())?;
        if stored {
            return Ok(Some(u32::try_from(next).unwrap_or(u32::MAX)));
        }
    }
    Err("contended".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_cookie_is_signed() {
        let demo = Demo::new(DemoConfig { cookie_secret: Some("s".into()), ..DemoConfig::default() }, 0, "unused");
        let cookie = demo.cookie("abc", false);
        assert!(cookie.starts_with("dsa_demo="), "{cookie}");
        for attribute in ["Path=/", "Max-Age=86400", "HttpOnly", "SameSite=Lax"] {
            assert!(cookie.contains(attribute), "{cookie}");
        }
        assert!(!cookie.contains("Secure"), "{cookie}");
        assert!(demo.cookie("abc", true).contains("Secure"));
        let value = cookie.split(';').next().expect("name=value");
        let with = |v: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(axum::http::header::COOKIE, v.parse().expect("header"));
            demo.session_of(&headers)
        };
        assert_eq!(with(&format!("other=1; {value}")).as_deref(), Some("abc"));
        assert_eq!(with("dsa_demo=abc.00"), None);
        assert_eq!(with(&value.replace("abc", "abd")), None);
        let other = Demo::new(DemoConfig::default(), 0, "another secret");
        let mut headers = HeaderMap::new();
        headers.insert(axum::http::header::COOKIE, value.parse().expect("header"));
        assert_eq!(other.session_of(&headers), None, "another key does not accept it");
    }
}
