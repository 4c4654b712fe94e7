//! Cookies, sessions and CSRF: who is signed in, and whether a form was posted from our page.

use std::collections::HashMap;

use axum::http::{HeaderMap, header};

use super::render::PortalError;
use crate::front::state::AppState;
use crate::portal::accounts::{self, Account, AccountState, SessionRecord};

/// A session's last-seen time is written at most this often (seconds), not on every page view.
const TOUCH_EVERY_SECS: i64 = 60;

/// Cookie names: with TLS, the `__Host-` prefix (RFC 6265bis §4.1.3.2: Secure, Path=/, no Domain,
/// so no subdomain can set or shadow it).
pub(super) fn cookie_name(state: &AppState, base: &str) -> String {
    if state.cookie_secure() { format!("__Host-{base}") } else { base.to_owned() }
}

pub(super) const SESSION_COOKIE: &str = "dsa_portal";
pub(super) const PRE_CSRF_COOKIE: &str = "dsa_portal_csrf";

pub(super) fn cookie_value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty() && v.len() <= 128)
}

pub(super) fn set_cookie(state: &AppState, base: &str, value: &str, max_age: Option<u64>) -> String {
    let max_age = max_age.map(|s| format!("; Max-Age={s}")).unwrap_or_default();
    let secure = if state.cookie_secure() { "; Secure" } else { "" };
    format!("{}={value}; Path=/; HttpOnly; SameSite=Lax{max_age}{secure}", cookie_name(state, base))
}

pub(super) fn clear_cookie(state: &AppState, base: &str) -> String {
    set_cookie(state, base, "", Some(0))
}

/// A signed-in request: the session and its account.
pub(super) struct Signed {
    /// The session.
    pub(super) session: SessionRecord,
    /// Its account.
    pub(super) account: Account,
}

pub(super) fn now_secs(state: &AppState) -> i64 {
    state.now().unix_timestamp()
}

/// The live session of a request, if any. An expired session is deleted on sight.
pub(super) async fn session(state: &AppState, headers: &HeaderMap) -> Result<Option<Signed>, PortalError> {
    let Some(token) = cookie_value(headers, &cookie_name(state, SESSION_COOKIE)) else { return Ok(None) };
    let hash = accounts::token_hash(token);
    let store = state.store();
    let Some(session) = store.find_session(&hash).await? else { return Ok(None) };
    let now = now_secs(state);
    let config = state.portal().config();
    let idle = now - session.last_seen_at > i64::try_from(config.session_idle_secs).unwrap_or(i64::MAX);
    let old = now - session.created_at > i64::try_from(config.session_absolute_secs).unwrap_or(i64::MAX);
    if idle || old {
        store.delete_session(&hash).await?;
        return Ok(None);
    }
    let Some(account) = store.find_account(&session.account_id).await? else { return Ok(None) };
    if account.state != AccountState::Active {
        store.delete_session(&hash).await?;
        return Ok(None);
    }
    if now - session.last_seen_at >= TOUCH_EVERY_SECS {
        store.touch_session(&hash, now).await?;
    }
    Ok(Some(Signed { session, account }))
}

pub(super) async fn require_session(state: &AppState, headers: &HeaderMap) -> Result<Signed, PortalError> {
    session(state, headers).await?.ok_or(PortalError::SignIn)
}

/// A signed-in POST: the session, and its CSRF token in the form (else 403).
pub(super) async fn require_post(
    state: &AppState,
    headers: &HeaderMap,
    form: &HashMap<String, String>,
) -> Result<Signed, PortalError> {
    let signed = require_session(state, headers).await?;
    match form.get("csrf") {
        Some(token) if accounts::same_secret(token, &signed.session.csrf_token) => Ok(signed),
        _ => Err(PortalError::Csrf),
    }
}

/// The signed-out forms' CSRF token: a random value in an `HttpOnly` cookie that the form must
/// echo (double submit). Returns the token and, when new, the cookie to set.
pub(super) fn pre_csrf(state: &AppState, headers: &HeaderMap) -> (String, Option<String>) {
    match cookie_value(headers, &cookie_name(state, PRE_CSRF_COOKIE)) {
        Some(token) => (token.to_owned(), None),
        None => {
            let token = accounts::new_token();
            let cookie = set_cookie(state, PRE_CSRF_COOKIE, &token, None);
            (token, Some(cookie))
        }
    }
}

pub(super) fn check_pre_csrf(
    state: &AppState,
    headers: &HeaderMap,
    form: &HashMap<String, String>,
) -> Result<(), PortalError> {
    match (cookie_value(headers, &cookie_name(state, PRE_CSRF_COOKIE)), form.get("csrf")) {
        (Some(cookie), Some(field)) if accounts::same_secret(cookie, field) => Ok(()),
        _ => Err(PortalError::Csrf),
    }
}

/// Starts a session for `account`; returns its cookie and its CSRF token.
pub(super) async fn start_session(state: &AppState, account: &Account) -> Result<(String, String), PortalError> {
    let token = accounts::new_token();
    let csrf = accounts::new_token();
    let now = now_secs(state);
    // Expired sessions are deleted when seen; those of people who never came back go here, on
    // every sign-in.
    let config = state.portal().config();
    let idle = i64::try_from(config.session_idle_secs).unwrap_or(i64::MAX);
    let absolute = i64::try_from(config.session_absolute_secs).unwrap_or(i64::MAX);
    if let Err(e) = state.store().purge_sessions(now.saturating_sub(idle), now.saturating_sub(absolute)).await {
        tracing::warn!(error = %e, "could not purge expired portal sessions");
    }
    state
        .store()
        .create_session(SessionRecord {
            token_hash: accounts::token_hash(&token),
            account_id: account.id.clone(),
            csrf_token: csrf.clone(),
            created_at: now,
            last_seen_at: now,
        })
        .await?;
    Ok((set_cookie(state, SESSION_COOKIE, &token, Some(state.portal().config().session_absolute_secs)), csrf))
}

pub(super) fn field<'a>(form: &'a HashMap<String, String>, name: &str) -> &'a str {
    form.get(name).map_or("", |v| v.trim())
}
