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
//!
//! Where things are: the settings here; [`MinuteWindows`]/[`RateWindows`] in `windows.rs`;
//! [`ClientAddr`] and the per-address limiter in `client_addr.rs`; [`Demo`] in `demo.rs`.

mod client_addr;
mod demo;
pub mod pressure;
mod windows;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::front::keys::Plan;

pub use self::client_addr::{ClientAddr, IpLimiter, limit_prefix};
pub use self::demo::{DEMO_COOKIE, Demo, DemoTicket, secs_to_next_day};
pub use self::windows::{FleetWindows, MinuteWindows, RateState, RateWindows};

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
    /// Shed new requests (fast 503 with `Retry-After`) while the front's
    /// scheduling lag — how late its runtime runs a task that is ready, i.e. how long every
    /// request waits before it is looked at — is past this many milliseconds and the front is busy
    /// (`shed_min_in_flight`): the CPU-saturation signal of [`pressure`]. 0 turns it off.
    pub shed_scheduling_lag_ms: u64,
    /// The busy floor of `shed_scheduling_lag_ms` and of the adaptive in-flight limit (requests
    /// in flight).
    pub shed_min_in_flight: usize,
    /// The account portal (`/account`): sessions, sign-in limits, key roll grace, password cost.
    pub portal: PortalConfig,
    /// Bulk jobs (`/v1/jobs`): size limits, the runner's share of the checks, result retention.
    pub bulk_jobs: crate::front::bulk_jobs::BulkJobsConfig,
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
    /// Deprecated and unused since sign-in failures count per (e-mail address, client address)
    /// (`signin_free_failures`): a limit per e-mail address let anyone lock its owner out.
    pub signin_per_account_per_minute: u32,
    /// Failed sign-ins of one e-mail address from one client address (IPv6: per /64) before
    /// that pair backs off: 1 s, then 2, 4, … up to `signin_backoff_max_secs`, per front. A
    /// success clears it; other addresses are not slowed, so nobody can lock an owner out.
    pub signin_free_failures: u32,
    /// Longest back-off of one (e-mail address, client address) pair, seconds.
    pub signin_backoff_max_secs: u64,
    /// Accounts created per client address (IPv6: per /64) per UTC day, per front; 0: no limit.
    pub signups_per_ip_per_day: u32,
    /// Keys an account may create in the portal per hour, per front; 0: no limit.
    pub key_creations_per_hour: u32,
    /// Active keys an account may hold, per kind, by the best plan among its keys; the operator
    /// raises one account's cap with `dsa accounts set-key-cap`.
    pub key_caps: KeyCaps,
    /// After "Roll", the old secret keeps working this many seconds (time to deploy the new one).
    pub roll_grace_secs: u64,
    /// A password-reset link works this many seconds, once.
    pub reset_token_secs: u64,
    /// The base URL printed in reset links (`dsa accounts reset-link`), e.g.
    /// `https://dsa.example`; unset: `http://` + `server.listen`.
    pub public_url: Option<String>,
    /// Outgoing mail for e-mail verification. Set: a new account gets no key (so no credits)
    /// until its owner follows the link sent to the address; unset (the default): no e-mail is
    /// sent and sign-up shows the keys at once.
    pub smtp: Option<SmtpConfig>,
    /// A verification link works this many seconds, once.
    pub verify_token_secs: u64,
    /// argon2id memory, KiB (OWASP minimum: 19456).
    pub password_memory_kib: u32,
    /// argon2id passes (OWASP minimum with 19 MiB: 2).
    pub password_iterations: u32,
    /// argon2id lanes.
    pub password_parallelism: u32,
}

impl Default for PortalConfig {
    fn default() -> Self {
        let params = crate::portal::accounts::PasswordParams::default();
        Self {
            enabled: true,
            session_idle_secs: 2 * 3_600,
            session_absolute_secs: 7 * 86_400,
            signin_per_ip_per_minute: 20,
            signin_per_account_per_minute: 5,
            signin_free_failures: 5,
            signin_backoff_max_secs: 900,
            signups_per_ip_per_day: 3,
            key_creations_per_hour: 5,
            key_caps: KeyCaps::default(),
            roll_grace_secs: 86_400,
            reset_token_secs: 3_600,
            public_url: None,
            smtp: None,
            verify_token_secs: 86_400,
            password_memory_kib: params.memory_kib,
            password_iterations: params.iterations,
            password_parallelism: params.parallelism,
        }
    }
}

/// The SMTP relay verification mail goes through (`[policy.portal.smtp]`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SmtpConfig {
    /// Host name of the relay (also the name its TLS certificate must carry).
    pub host: String,
    /// Port: 587 (submission, STARTTLS), 465 (implicit TLS) or 25.
    pub port: u16,
    /// `starttls` (required, RFC 3207), `tls` (implicit TLS, RFC 8314) or `none` (plain text:
    /// only for a relay on the same host or a trusted network).
    pub security: SmtpSecurity,
    /// The sender, e.g. `dsa <noreply@dsa.example>`.
    pub from: String,
    /// User name for SMTP AUTH (unset: no authentication).
    pub username: Option<String>,
    /// Password for SMTP AUTH.
    pub password: Option<crate::secret::Secret>,
    /// Longest wait for the relay to take one message, seconds.
    pub timeout_secs: u64,
}

impl Default for SmtpConfig {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".into(),
            port: 587,
            security: SmtpSecurity::Starttls,
            from: "dsa <noreply@localhost>".into(),
            username: None,
            password: None,
            timeout_secs: 10,
        }
    }
}

/// How the SMTP connection is protected.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SmtpSecurity {
    /// Plain text, then STARTTLS, required (RFC 3207).
    Starttls,
    /// TLS from the first byte (RFC 8314).
    Tls,
    /// Plain text throughout.
    None,
}

/// Active keys of each kind an account may hold, by plan (`[policy.portal.key_caps]`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct KeyCaps {
    /// Free Developer (spec §8: one allowance per account, so one key of each kind).
    pub free: KindCaps,
    /// Starter.
    pub starter: KindCaps,
    /// PRO.
    pub pro: KindCaps,
    /// Reseller.
    pub reseller: KindCaps,
}

impl Default for KeyCaps {
    fn default() -> Self {
        Self {
            free: KindCaps { embed: 1, server: 1 },
            starter: KindCaps { embed: 2, server: 2 },
            pro: KindCaps { embed: 5, server: 5 },
            reseller: KindCaps { embed: 20, server: 20 },
        }
    }
}

impl KeyCaps {
    /// The caps of a plan.
    pub fn of(&self, plan: Plan) -> &KindCaps {
        match plan {
            Plan::Free => &self.free,
            Plan::Starter => &self.starter,
            Plan::Pro => &self.pro,
            Plan::Reseller => &self.reseller,
        }
    }
}

/// Active keys per kind.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default, deny_unknown_fields)]
pub struct KindCaps {
    /// Embed keys.
    pub embed: u32,
    /// Server keys.
    pub server: u32,
}

impl KindCaps {
    /// The cap of a kind.
    pub fn of(&self, kind: crate::front::keys::KeyKind) -> u32 {
        match kind {
            crate::front::keys::KeyKind::Embed => self.embed,
            crate::front::keys::KeyKind::Server => self.server,
        }
    }
}

impl PortalConfig {
    /// The argon2id parameters.
    pub fn password_params(&self) -> crate::portal::accounts::PasswordParams {
        crate::portal::accounts::PasswordParams {
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
            shed_scheduling_lag_ms: pressure::DEFAULT_SHED_SCHEDULING_LAG_MS,
            shed_min_in_flight: pressure::DEFAULT_SHED_MIN_IN_FLIGHT,
            portal: PortalConfig::default(),
            bulk_jobs: crate::front::bulk_jobs::BulkJobsConfig::default(),
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
    pub cookie_secret: Option<crate::secret::Secret>,
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

/// Longest wait for one call to a fleet KV bucket (rate limits, demo) before a request is let
/// through, milliseconds.
const KV_WAIT_MS: u64 = 250;

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn retry_after_for_the_day_and_the_month() {
        assert_eq!(secs_to_next_day(datetime!(2026-11-22 23:59:30 UTC)), 30);
        assert_eq!(secs_to_next_day(datetime!(2026-11-22 00:00:00 UTC)), 86_400);
        assert_eq!(secs_to_next_month(datetime!(2026-11-30 23:59:30 UTC)), 30);
        assert_eq!(secs_to_next_month(datetime!(2026-12-31 23:00:00 UTC)), 3_600, "December rolls into January");
        assert_eq!(secs_to_next_month(datetime!(2026-02-01 00:00:00 UTC)), 28 * 86_400);
        assert_eq!(secs_to_next_month(datetime!(2026-12-01 00:30:00 +01:00)), 30 * 60, "UTC, not the offset's month");
    }
}
