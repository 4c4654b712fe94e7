//! The account portal (`/account`, issue 15): owners sign up, sign in, see their keys' usage and
//! change their keys' settings. Server-rendered HTML (minijinja, the front page's engine and
//! stylesheet), usable without JavaScript; no page carries a script.
//!
//! The path of a request:
//!
//! ```text
//! /account/…  ─► session (cookie → account_sessions row, idle + absolute expiry)
//!             ─► POST: CSRF token of the session (or, signed out, of the pre-session cookie) → 403
//!             ─► Store (accounts, keys, ledger)   ─► template (portal/*.html, strings in text.rs)
//!             ─► security headers (CSP without script, frame-ancestors 'none', nosniff, no-store)
//! ```
//!
//! The portal reads and changes keys through the [`Store`](crate::store::Store) directly; it never
//! calls the metered API, so looking at a dashboard costs no credits.
//!
//! Security parameters (README, "Account portal"): argon2id ([`crate::accounts`]); sign-in limited
//! per client address and per e-mail address (whether or not the account exists, so the limit
//! reveals nothing), with the same answer and a full hash verification (a dummy hash) for an
//! unknown address and a wrong password; session cookie `HttpOnly; SameSite=Lax`, plus `Secure`
//! and the `__Host-` prefix when TLS is on (dsa's own or a proxy's, `policy.demo.cookie_secure`).

//! Where things are: `session.rs` (cookies, sessions, CSRF), `render.rs` (templates, error pages,
//! security headers), `auth.rs` (sign up, sign in, sign out, password reset), `dashboard.rs`,
//! `keys.rs` (create, settings, roll, disable/enable), [`chart`] and [`text`].

mod auth;
pub mod chart;
mod dashboard;
mod keys;
mod render;
mod session;
pub mod text;

use std::num::NonZeroU32;
use std::sync::OnceLock;

use axum::Router;
use axum::routing::{get, post};

use crate::accounts::PasswordParams;
use crate::policy::{ClientAddr, PortalConfig};
use crate::state::AppState;

pub use self::auth::reset_link;
pub use self::render::PortalError;

/// Content-Security-Policy of every portal page: no script at all, styles and images from this
/// origin only, forms post only here, never framed.
pub const PORTAL_CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
base-uri 'none'; frame-ancestors 'none'";

/// Most keys (client addresses, e-mail addresses) a sign-in limiter map holds.
const SIGN_IN_TRACKED_MAX: usize = 20_000;

/// Longest display name and key label, characters.
const MAX_NAME_CHARS: usize = 80;

/// The portal's own state: its settings, sign-in limiters and the dummy hash.
pub struct Portal {
    config: PortalConfig,
    params: PasswordParams,
    per_ip: Option<governor::DefaultKeyedRateLimiter<std::net::IpAddr>>,
    per_account: Option<governor::DefaultKeyedRateLimiter<String>>,
    proxy_hops: u8,
    dummy_hash: OnceLock<String>,
    /// Password hashes computed at once: each holds `password_memory_kib` of memory, so a burst
    /// of sign-ins from many addresses queues here instead of exhausting memory.
    hashing: tokio::sync::Semaphore,
}

impl std::fmt::Debug for Portal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Portal").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Portal {
    /// The portal for these settings.
    pub fn new(config: PortalConfig, proxy_hops: u8) -> Self {
        let limiter = |n: u32| NonZeroU32::new(n).map(governor::Quota::per_minute);
        Self {
            params: config.password_params(),
            per_ip: limiter(config.signin_per_ip_per_minute).map(governor::RateLimiter::keyed),
            per_account: limiter(config.signin_per_account_per_minute).map(governor::RateLimiter::keyed),
            proxy_hops,
            config,
            dummy_hash: OnceLock::new(),
            hashing: tokio::sync::Semaphore::new(
                std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get).max(2),
            ),
        }
    }

    /// The settings.
    pub fn config(&self) -> &PortalConfig {
        &self.config
    }

    /// Counts a sign-in (or sign-up) attempt; false when the address or the e-mail address is
    /// over its limit.
    fn admit(&self, addr: &ClientAddr, email: Option<&str>) -> bool {
        let ip_ok = match (&self.per_ip, addr.limit_ip(self.proxy_hops)) {
            (Some(limiter), Some(ip)) => limiter.check_key(&ip).is_ok(),
            _ => true,
        };
        let account_ok = match (&self.per_account, email) {
            (Some(limiter), Some(email)) => limiter.check_key(&email.to_owned()).is_ok(),
            _ => true,
        };
        ip_ok && account_ok
    }

    /// Keys held by the sign-in limiters (client addresses and e-mail addresses).
    #[cfg(test)]
    fn tracked(&self) -> usize {
        self.per_ip.as_ref().map_or(0, governor::RateLimiter::len)
            + self.per_account.as_ref().map_or(0, governor::RateLimiter::len)
    }
}

/// The portal's routes (merged into the main router when `policy.portal.enabled`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/account", get(dashboard::dashboard))
        .route("/account/", get(|| async { render::redirect("/account") }))
        .route("/account/portal.css", get(render::stylesheet))
        .route("/account/signup", get(auth::signup_page).post(auth::signup))
        .route("/account/signin", get(auth::signin_page).post(auth::signin))
        .route("/account/signout", post(auth::signout))
        .route("/account/keys", post(keys::create_key))
        .route("/account/keys/{id}", get(keys::key_page).post(keys::save_settings))
        .route("/account/keys/{id}/roll", post(keys::roll_key))
        .route("/account/keys/{id}/disable", post(keys::disable_key))
        .route("/account/keys/{id}/enable", post(keys::enable_key))
        .route("/account/reset", get(auth::reset_page).post(auth::reset_password))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100,000 distinct short e-mail addresses from a handful of client addresses: the sign-in
    /// limiters keep at most their bound, however many strings they were given.
    #[test]
    fn sign_in_limiters_stay_bounded() {
        let portal = Portal::new(PortalConfig { signin_per_ip_per_minute: 1_000_000, ..PortalConfig::default() }, 0);
        for i in 0..100_000u32 {
            let addr = ClientAddr { peer: Some(std::net::IpAddr::from([192, 0, 2, (i % 8) as u8])), forwarded: vec![] };
            let _ = portal.admit(&addr, Some(&format!("u{i}@example.com")));
        }
        let tracked = portal.tracked();
        assert!(tracked <= SIGN_IN_TRACKED_MAX, "{tracked} keys tracked, bound {SIGN_IN_TRACKED_MAX}");
    }
}
