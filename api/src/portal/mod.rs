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
//! Security parameters (`docs/widget-and-portal.md`, "Account portal"): argon2id ([`crate::portal::accounts`]); sign-in limited
//! per client address and per e-mail address (whether or not the account exists, so the limit
//! reveals nothing), with the same answer and a full hash verification (a dummy hash) for an
//! unknown address and a wrong password; session cookie `HttpOnly; SameSite=Lax`, plus `Secure`
//! and the `__Host-` prefix when TLS is on (dsa's own or a proxy's, `policy.demo.cookie_secure`).

//! Where things are: `session.rs` (cookies, sessions, CSRF), `render.rs` (templates, error pages,
//! security headers), `auth.rs` (sign up, sign in, sign out, password reset), `dashboard.rs`,
//! `keys.rs` (create, settings, roll, disable/enable), [`chart`] and [`text`].

pub mod accounts;
mod auth;
pub mod chart;
mod dashboard;
mod keys;
mod limits;
mod mail;
mod render;
pub mod service;
mod session;
pub mod text;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};

use crate::front::state::AppState;

pub use self::auth::reset_link;
pub use self::render::PortalError;
pub use self::service::Portal;

/// Content-Security-Policy of every portal page: no script at all, styles and images from this
/// origin only, forms post only here, never framed.
pub const PORTAL_CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
base-uri 'none'; frame-ancestors 'none'";

/// Largest form body the portal reads, bytes: its longest field is a password (256 characters)
/// or a list of allowed origins; axum's default (2 MiB) would let anonymous posts cost memory.
const MAX_FORM_BYTES: usize = 16 * 1024;

/// Longest display name and key label, characters.
const MAX_NAME_CHARS: usize = 80;

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
        .route("/account/keys/{id}/watches", post(keys::add_watch))
        .route("/account/keys/{id}/check", post(keys::check_name))
        .route("/account/keys/{id}/disable", post(keys::disable_key))
        .route("/account/keys/{id}/enable", post(keys::enable_key))
        .route("/account/reset", get(auth::reset_page).post(auth::reset_password))
        .route("/account/verify", get(auth::verify_email))
        .layer(DefaultBodyLimit::max(MAX_FORM_BYTES))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::policy::PortalConfig;

    /// 100,000 distinct short e-mail addresses from a handful of client addresses: the sign-in
    /// limiters keep at most their bound, however many strings they were given.
    #[test]
    fn sign_in_limiters_stay_bounded() {
        let portal = Portal::new(PortalConfig { signin_per_ip_per_minute: 1_000_000, ..PortalConfig::default() }, 0);
        for i in 0..100_000u32 {
            let ip = Some(std::net::IpAddr::from([192, 0, 2, (i % 8) as u8]));
            let email = format!("u{i}@example.com");
            let _ = portal.limits.attempt(ip);
            let _ = portal.limits.may_try(&email, ip);
            portal.limits.failed(&email, ip);
            let _ = portal.limits.sign_up(ip, 1);
        }
        let tracked = portal.limits.tracked();
        // The pairs' map is at its bound; the address maps hold the 8 addresses.
        assert!(tracked <= limits::TRACKED_MAX + 16, "{tracked} keys tracked, bound {}", limits::TRACKED_MAX);
    }
}
