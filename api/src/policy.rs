//! The policy layer in front of every paid endpoint (spec §5, §7, §8): per-minute rate limits per
//! key and plan, and the keyless demo mode.
//!
//! **Rate limits** count requests per key in windows aligned to the UTC minute, as the spec says
//! ("retry after the next minute window"): a 429 carries `Retry-After` (seconds to the next
//! window), and every answer carries `RateLimit-Policy` and `RateLimit` (IETF httpapi
//! RateLimit header fields draft). In standalone mode the counters live in this process.
//!
//! **Demo mode**: `GET /v1/domains/check` without `client_key` is allowed twice per session (a
//! signed, HttpOnly cookie naming a server-side counter) and a few times per client IP per day
//! (clearing cookies does not reset it); then 429 with a message to use a key. Demo answers cost
//! nothing and carry no pricing or purchase object.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue};
use hmac::{Hmac, Mac};
use moka::sync::Cache;
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use time::OffsetDateTime;

use crate::error::ApiError;
use crate::keys::Plan;

/// Policy settings (`[policy]`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// Requests per minute per key, by plan.
    pub per_minute: PlanRates,
    /// Keyless demo checks.
    pub demo: DemoConfig,
    /// Whether an embed key with an empty allowed-origins list works from any origin. Off by
    /// default (production): list the sites that embed the key. Turn on only for development.
    pub empty_origins_allow_all: bool,
    /// Deprecated spelling of `trusted_proxy_hops = 1`.
    pub trust_forwarded_for: bool,
    /// How many reverse proxies in front of dsa append to `X-Forwarded-For` (0: use the socket
    /// peer). The client address is the entry that many places from the right — the right-most
    /// address no trusted proxy wrote — never the left-most, which any client can forge.
    pub trusted_proxy_hops: u8,
    /// Requests per minute per client address (IPv6: per /64), counted before the key lookup so
    /// that random keys cannot each cost a database query. 0 turns it off.
    pub per_ip_per_minute: u32,
    /// Requests served at once by one front; past that, new requests get a fast 503 with
    /// `Retry-After` instead of waiting in an unbounded queue. 0 turns it off.
    pub max_in_flight: usize,
    /// The account portal (`/account`): sessions, sign-in limits, key roll grace, password cost.
    pub portal: PortalConfig,
}

/// Account portal settings (`[policy.portal]`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct PortalConfig {
    /// Serve the portal under `/account`.
    pub enabled: bool,
    /// A session ends after this many seconds without a request.
    pub session_idle_secs: u64,
    /// A session ends this many seconds after sign-in, active or not.
    pub session_absolute_secs: u64,
    /// Sign-in attempts per minute per client address (IPv6: per /64), per front.
    pub signin_per_ip_per_minute: u32,
    /// Sign-in attempts per minute per e-mail address (existing or not), per front.
    pub signin_per_account_per_minute: u32,
    /// After "Roll", the old secret keeps working this many seconds (time to deploy the new one).
    pub roll_grace_secs: u64,
    /// A password-reset link works this many seconds, once.
    pub reset_token_secs: u64,
    /// The base URL printed in reset links (`dsa accounts reset-link`), e.g.
    /// `https://dsa.example`; unset: `http://` + `server.listen`.
    pub public_url: Option<String>,
    /// argon2id memory, KiB (OWASP minimum: 19456).
    pub password_memory_kib: u32,
    /// argon2id passes (OWASP minimum with 19 MiB: 2).
    pub password_iterations: u32,
    /// argon2id lanes.
    pub password_parallelism: u32,
}

impl Default for PortalConfig {
    fn default() -> Self {
        let params = crate::accounts::PasswordParams::default();
        Self {
            enabled: true,
            session_idle_secs: 2 * 3_600,
            session_absolute_secs: 7 * 86_400,
            signin_per_ip_per_minute: 20,
            signin_per_account_per_minute: 5,
            roll_grace_secs: 86_400,
            reset_token_secs: 3_600,
            public_url: None,
            password_memory_kib: params.memory_kib,
            password_iterations: params.iterations,
            password_parallelism: params.parallelism,
        }
    }
}

impl PortalConfig {
    /// The argon2id parameters.
    pub fn password_params(&self) -> crate::accounts::PasswordParams {
        crate::accounts::PasswordParams {
            memory_kib: self.password_memory_kib,
            iterations: self.password_iterations,
            parallelism: self.password_parallelism,
        }
    }
}

impl PolicyConfig {
    /// The effective number of trusted proxy hops.
    pub fn proxy_hops(&self) -> u8 {
        self.trusted_proxy_hops.max(u8::from(self.trust_forwarded_for))
    }
}

/// Default of `policy.per_ip_per_minute`.
pub const DEFAULT_PER_IP_PER_MINUTE: u32 = 6_000;
/// Default of `policy.max_in_flight`.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 4_096;

impl Default for PolicyConfig {
    fn default() -> Self {
        Self {
            per_minute: PlanRates::default(),
            demo: DemoConfig::default(),
            empty_origins_allow_all: false,
            trust_forwarded_for: false,
            trusted_proxy_hops: 0,
            per_ip_per_minute: DEFAULT_PER_IP_PER_MINUTE,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            portal: PortalConfig::default(),
        }
    }
}

/// Requests per minute per plan.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct PlanRates {
    /// Free Developer.
    pub free: u32,
    /// Starter.
    pub starter: u32,
    /// PRO.
    pub pro: u32,
    /// Reseller.
    pub reseller: u32,
}

impl Default for PlanRates {
    fn default() -> Self {
        Self { free: 60, starter: 300, pro: 1_200, reseller: 3_000 }
    }
}

impl PlanRates {
    /// The limit of a plan, requests per minute.
    pub fn of(&self, plan: Plan) -> u32 {
        match plan {
            Plan::Free => self.free,
            Plan::Starter => self.starter,
            Plan::Pro => self.pro,
            Plan::Reseller => self.reseller,
        }
    }
}

/// Demo mode settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DemoConfig {
    /// Whether keyless checks are allowed at all (off: a missing key is 400 everywhere).
    pub enabled: bool,
    /// Checks per session (spec §5.6: 2).
    pub checks_per_session: u32,
    /// Checks per client IP per day, whatever the cookies.
    pub checks_per_ip_per_day: u32,
    /// Secret signing the session cookie (any string; long and random). Unset: a random secret
    /// generated once and kept in the database, shared by every front.
    pub cookie_secret: Option<String>,
    /// Mark the session cookie `Secure` even though dsa itself serves plain HTTP (TLS terminated
    /// by a proxy in front of it). With `server.tls_cert` set it is `Secure` anyway.
    pub cookie_secure: bool,
    /// Demo checks per minute for all clients together, per front (0: no global cap): bounds
    /// what keyless traffic can cost the registries, however many addresses it comes from.
    pub global_per_minute: u32,
}

impl Default for DemoConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            checks_per_session: 2,
            checks_per_ip_per_day: 10,
            cookie_secret: None,
            cookie_secure: false,
            global_per_minute: 600,
        }
    }
}

/// The rate-limit state of one request, for the response headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateState {
    /// Requests allowed per window.
    pub limit: u32,
    /// Requests left in this window.
    pub remaining: u32,
    /// Seconds until the window resets.
    pub reset_secs: u64,
}

impl RateState {
    /// Adds `RateLimit-Policy` and `RateLimit` (IETF draft structured fields) to `headers`.
    pub fn apply(&self, headers: &mut HeaderMap) {
        if let Ok(v) = HeaderValue::from_str(&format!("\"per-minute\";q={};w=60", self.limit)) {
            headers.insert("ratelimit-policy", v);
        }
        if let Ok(v) = HeaderValue::from_str(&format!("\"per-minute\";r={};t={}", self.remaining, self.reset_secs)) {
            headers.insert("ratelimit", v);
        }
    }
}

/// Per-key request counters in minute windows (one process).
#[derive(Debug, Default)]
pub struct MinuteWindows {
    counters: Mutex<HashMap<String, (i64, u32)>>,
}

impl MinuteWindows {
    /// Counts one request of `key_id` at `now` against `limit` per minute.
    ///
    /// # Errors
    /// [`ApiError::TooManyRequests`] with the seconds to the next window when over the limit.
    pub fn hit(&self, key_id: &str, limit: u32, now: OffsetDateTime) -> Result<RateState, (ApiError, RateState)> {
        let unix = now.unix_timestamp();
        let window = unix.div_euclid(60);
        let reset_secs = u64::try_from(60 - unix.rem_euclid(60)).unwrap_or(60);
        let mut counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        if counters.len() > 100_000 {
            counters.retain(|_, (w, _)| *w == window);
        }
        let entry = counters.entry(key_id.to_owned()).or_insert((window, 0));
        if entry.0 != window {
            *entry = (window, 0);
        }
        if entry.1 >= limit {
            let state = RateState { limit, remaining: 0, reset_secs };
            return Err((
                ApiError::TooManyRequests {
                    message: format!(
                        "Rate limit of {limit} requests per minute exceeded; retry after the next minute window."
                    ),
                    retry_after_secs: Some(reset_secs),
                },
                state,
            ));
        }
        entry.1 += 1;
        Ok(RateState { limit, remaining: limit - entry.1, reset_secs })
    }
}

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

/// Name of the demo session cookie.
pub const DEMO_COOKIE: &str = "dsa_demo";

/// Demo-mode state: session and per-IP counters (one day), and the cookie signing key.
pub struct Demo {
    config: DemoConfig,
    /// The fleet's demo bucket: counters shared by every front (none in standalone mode).
    fleet: Option<(async_nats::jetstream::kv::Store, async_nats::Client)>,
    proxy_hops: u8,
    secret: Vec<u8>,
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
            Some(s) => s.as_bytes().to_vec(),
            None => stored_secret.as_bytes().to_vec(),
        };
        let day = Duration::from_secs(86_400);
        Self {
            fleet: None,
            proxy_hops,
            secret,
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

    fn sign(&self, session: &str) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.secret).unwrap_or_else(|_| unreachable_hmac());
        mac.update(session.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    fn verify(&self, cookie_value: &str) -> Option<String> {
        let (session, signature) = cookie_value.split_once('.')?;
        let expected = hex::decode(signature).ok()?;
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.secret).ok()?;
        mac.update(session.as_bytes());
        mac.verify_slice(&expected).ok()?;
        Some(session.to_owned())
    }

    /// The `Set-Cookie` value for a session.
    pub fn cookie(&self, session: &str, secure: bool) -> String {
        format!(
            "{DEMO_COOKIE}={session}.{}; Path=/; Max-Age=86400; HttpOnly; SameSite=Lax{}",
            self.sign(session),
            if secure { "; Secure" } else { "" }
        )
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
        let existing = headers
            .get_all(axum::http::header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|kv| kv.trim().strip_prefix(&format!("{DEMO_COOKIE}=")).map(str::to_owned))
            .find_map(|v| self.verify(&v));
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

/// Seconds from `now` to 00:00 UTC on the 1st of the next month (at least 1): when the monthly
/// allowance resets (spec §3, §8). The `Retry-After` of `Monthly credit limit reached`.
pub fn secs_to_next_month(now: OffsetDateTime) -> u64 {
    let date = now.to_offset(time::UtcOffset::UTC).date();
    let (year, month) = match date.month() {
        time::Month::December => (date.year() + 1, time::Month::January),
        month => (date.year(), month.next()),
    };
    time::Date::from_calendar_date(year, month, 1)
        .map(|first| (first.midnight().assume_utc() - now).whole_seconds())
        .ok()
        .and_then(|secs| u64::try_from(secs).ok())
        .unwrap_or(1)
        .max(1)
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

fn unreachable_hmac() -> Hmac<Sha256> {
    // HMAC accepts keys of any length; this branch cannot be taken.
    #[expect(clippy::unwrap_used, reason = "HMAC-SHA256 accepts a key of any length")]
    Hmac::<Sha256>::new_from_slice(b"k").unwrap()
}

/// Where per-key minute windows are counted: in this process (standalone) or in the NATS KV
/// bucket shared by every front (fleet).
///
/// In the fleet a front does not ask the bucket on every request: it leases a block of the
/// window's requests (compare-and-set adds the block to the window's counter in KV) and spends it
/// locally. The fleet-wide count can therefore never exceed the limit; the cost is that requests
/// leased by one front and not used there are lost to the others for that minute — at most
/// (block − 1) per front, block = limit / 20 (1 to 100).
pub enum RateWindows {
    /// One process.
    Local(MinuteWindows),
    /// The fleet's KV bucket.
    Fleet(Box<FleetWindows>),
}

/// State of [`RateWindows::Fleet`].
pub struct FleetWindows {
    store: async_nats::jetstream::kv::Store,
    client: async_nats::Client,
    /// (key id, window) → (requests leased and not yet spent here, window count in KV after the lease).
    leases: Mutex<HashMap<(String, i64), Arc<Lease>>>,
}

/// Requests leased for one key and window and not yet spent here, and the window's count in KV
/// after the lease.
type Lease = tokio::sync::Mutex<(u32, u32)>;

/// Longest wait for the rate-limit bucket before a request is let through, milliseconds.
const KV_WAIT_MS: u64 = 250;

impl std::fmt::Debug for RateWindows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RateWindows::Local(_) => "RateWindows::Local",
            RateWindows::Fleet(..) => "RateWindows::Fleet",
        })
    }
}

fn over_limit(limit: u32, reset_secs: u64) -> (ApiError, RateState) {
    (
        ApiError::TooManyRequests {
            message: format!("Rate limit of {limit} requests per minute exceeded; retry after the next minute window."),
            retry_after_secs: Some(reset_secs),
        },
        RateState { limit, remaining: 0, reset_secs },
    )
}

impl RateWindows {
    /// In-process windows.
    pub fn local() -> Self {
        RateWindows::Local(MinuteWindows::default())
    }

    /// Windows in the fleet's KV bucket.
    ///
    /// # Errors
    /// When the bucket does not exist.
    pub async fn fleet(
        client: async_nats::Client,
        js: &async_nats::jetstream::Context,
        bucket: &str,
    ) -> anyhow::Result<Self> {
        let store = js.get_key_value(bucket).await.map_err(|e| anyhow::anyhow!("rate-limit bucket {bucket}: {e}"))?;
        Ok(RateWindows::Fleet(Box::new(FleetWindows { store, client, leases: Mutex::new(HashMap::new()) })))
    }

    /// Counts one request of `key_id` at `now` against `limit` per minute.
    ///
    /// # Errors
    /// 429 with the header state when over the limit. In the fleet, a KV failure lets the request
    /// through (the monthly allowance still holds) and is logged.
    pub async fn hit(&self, key_id: &str, limit: u32, now: OffsetDateTime) -> Result<RateState, (ApiError, RateState)> {
        match self {
            RateWindows::Local(w) => w.hit(key_id, limit, now),
            RateWindows::Fleet(f) => f.hit(key_id, limit, now).await,
        }
    }
}

impl FleetWindows {
    async fn hit(&self, key_id: &str, limit: u32, now: OffsetDateTime) -> Result<RateState, (ApiError, RateState)> {
        let unix = now.unix_timestamp();
        let window = unix.div_euclid(60);
        let reset_secs = u64::try_from(60 - unix.rem_euclid(60)).unwrap_or(60);
        let let_through = RateState { limit, remaining: limit, reset_secs };
        let lease = {
            let mut leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
            if leases.len() > 10_000 {
                leases.retain(|(_, w), _| *w == window);
            }
            leases.entry((key_id.to_owned(), window)).or_default().clone()
        };
        // One lease per key and window: requests of other keys never wait on this one.
        let mut slot = lease.lock().await;
        if slot.0 > 0 {
            slot.0 -= 1;
            return Ok(RateState { limit, remaining: limit.saturating_sub(slot.1) + slot.0, reset_secs });
        }
        if self.client.connection_state() != async_nats::connection::State::Connected {
            return Ok(let_through);
        }
        let wait = std::time::Duration::from_millis(KV_WAIT_MS);
        let key = format!("min.{}.{window}", key_id.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_"));
        let block = (limit / 20).clamp(1, 100);
        for _ in 0..32 {
            let entry = match tokio::time::timeout(wait, self.store.entry(key.clone())).await {
                Ok(Ok(e)) => e,
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "rate-limit bucket unavailable; request let through");
                    return Ok(let_through);
                }
                Err(_) => {
                    tracing::warn!("rate-limit bucket timed out; request let through");
                    return Ok(let_through);
                }
            };
            let (count, revision) = match &entry {
                Some(e) => (
                    std::str::from_utf8(&e.value).ok().and_then(|s| s.parse::<u32>().ok()).unwrap_or(0),
                    Some(e.revision),
                ),
                None => (0, None),
            };
            let take = block.min(limit.saturating_sub(count));
            if take == 0 {
                return Err(over_limit(limit, reset_secs));
            }
            let value = bytes::Bytes::from((count + take).to_string());
            let stored = match revision {
                Some(rev) => tokio::time::timeout(wait, self.store.update(&key, value, rev)).await.map(|r| r.is_ok()),
                None => tokio::time::timeout(wait, self.store.create(&key, value)).await.map(|r| r.is_ok()),
            };
            match stored {
                Err(_) => {
                    tracing::warn!("rate-limit bucket timed out; request let through");
                    return Ok(let_through);
                }
                Ok(true) => {
                    *slot = (take - 1, count + take);
                    return Ok(RateState { limit, remaining: limit - (count + take) + slot.0, reset_secs });
                }
                Ok(false) => {} // another front won the compare-and-set: read again
            }
        }
        tracing::warn!("rate-limit window contended; request let through");
        Ok(let_through)
    }
}

#[cfg(test)]
mod tests {
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

    use super::*;
    use time::macros::datetime;

    #[test]
    fn minute_windows_reset_on_the_minute() {
        let w = MinuteWindows::default();
        let t = datetime!(2026-11-22 10:00:50 UTC);
        assert_eq!(w.hit("k", 2, t).map(|s| s.remaining).ok(), Some(1));
        assert_eq!(w.hit("k", 2, t).map(|s| s.remaining).ok(), Some(0));
        let (err, state) = w.hit("k", 2, t).expect_err("third is over");
        assert!(matches!(err, ApiError::TooManyRequests { retry_after_secs: Some(10), .. }));
        assert_eq!(state.reset_secs, 10);
        assert!(w.hit("other", 2, t).is_ok(), "per key");
        assert_eq!(w.hit("k", 2, datetime!(2026-11-22 10:01:00 UTC)).map(|s| s.remaining).ok(), Some(1));
    }

    #[test]
    fn retry_after_for_the_day_and_the_month() {
        assert_eq!(secs_to_next_day(datetime!(2026-11-22 23:59:30 UTC)), 30);
        assert_eq!(secs_to_next_day(datetime!(2026-11-22 00:00:00 UTC)), 86_400);
        assert_eq!(secs_to_next_month(datetime!(2026-11-30 23:59:30 UTC)), 30);
        assert_eq!(secs_to_next_month(datetime!(2026-12-31 23:00:00 UTC)), 3_600, "December rolls into January");
        assert_eq!(secs_to_next_month(datetime!(2026-02-01 00:00:00 UTC)), 28 * 86_400);
        assert_eq!(secs_to_next_month(datetime!(2026-12-01 00:30:00 +01:00)), 30 * 60, "UTC, not the offset's month");
    }

    #[test]
    fn demo_cookie_is_signed() {
        let demo = Demo::new(DemoConfig { cookie_secret: Some("s".into()), ..DemoConfig::default() }, 0, "unused");
        let cookie = demo.cookie("abc", false);
        let value = cookie.split(';').next().and_then(|kv| kv.strip_prefix("dsa_demo=")).expect("value");
        assert_eq!(demo.verify(value).as_deref(), Some("abc"));
        assert!(demo.verify("abc.00").is_none());
        assert!(demo.verify(&value.replace("abc", "abd")).is_none());
    }
}
