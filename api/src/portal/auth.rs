//! Sign up, sign in, sign out and password reset.

use std::collections::HashMap;

use axum::Form;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use time::OffsetDateTime;

use super::keys::{keys_shown, make_key};
use super::render::{PortalError, PortalResult, message_page, redirect, render, with_cookies, with_retry_after};
use super::session::{
    SESSION_COOKIE, check_pre_csrf, clear_cookie, field, now_secs, pre_csrf, require_post, session, start_session,
};
use super::text::t;
use super::{MAX_NAME_CHARS, Portal};
use crate::front::keys::KeyKind;
use crate::front::policy::{ClientAddr, PortalConfig};
use crate::front::state::AppState;
use crate::portal::accounts::{self, AccountState, Email, NewAccount};

/// Hashes a password on a blocking thread (argon2id takes tens of milliseconds of CPU and
/// `password_memory_kib` of memory), within the global budget of [`Portal::hashing`].
///
/// # Errors
/// [`PortalError::Busy`] when every slot is taken (never queued).
async fn hash_password(portal: &Portal, password: String) -> Result<String, PortalError> {
    let slot = portal.hashing.try_acquire().map_err(|_| busy())?;
    hash_in(portal, slot, password).await
}

/// Hashes a password in a slot of the budget already taken.
async fn hash_in(
    portal: &Portal,
    _slot: tokio::sync::SemaphorePermit<'_>,
    password: String,
) -> Result<String, PortalError> {
    let params = portal.params;
    Ok(tokio::task::spawn_blocking(move || params.hash(&password)).await??)
}

/// Verifies a password on a blocking thread, within the same budget.
async fn verify_password(portal: &Portal, password: String, phc: String) -> Result<bool, PortalError> {
    let _slot = portal.hashing.try_acquire().map_err(|_| busy())?;
    Ok(tokio::task::spawn_blocking(move || accounts::verify_password(&password, &phc)).await.unwrap_or(false))
}

fn busy() -> PortalError {
    metrics::counter!("dsa_portal_hashing_refused_total").increment(1);
    PortalError::Busy
}

/// The hash verified when the e-mail address is unknown, so that answer takes as long as a wrong
/// password (no user enumeration by timing). Made once, with the current parameters; a request
/// that finds the budget full makes none (and keeps none empty).
async fn dummy_hash(state: &AppState) -> Result<String, PortalError> {
    let portal = state.portal();
    portal.dummy_hash.get_or_try_init(|| hash_password(portal, accounts::new_token())).await.cloned()
}

/// Whether a typed e-mail address is too long to be one (RFC 5321 §4.5.3.1.3: a path is at most
/// 256 octets, so an address at most 254): refused before any limiter counts or keeps it.
fn too_long(email: &str) -> bool {
    email.trim().len() > 254
}

pub(super) async fn signup_page(State(state): State<AppState>, headers: HeaderMap) -> PortalResult {
    if session(&state, &headers).await?.is_some() {
        return Ok(redirect("/account"));
    }
    let (csrf, cookie) = pre_csrf(&state, &headers);
    let page = render("portal/signup.html", StatusCode::OK, minijinja::context! { csrf })?;
    Ok(with_cookies(page, &cookie.into_iter().collect::<Vec<_>>()))
}

fn signup_error(
    state: &AppState,
    headers: &HeaderMap,
    status: StatusCode,
    error: &str,
    form: &HashMap<String, String>,
) -> PortalResult {
    let (csrf, _) = pre_csrf(state, headers);
    render(
        "portal/signup.html",
        status,
        minijinja::context! { csrf, error, email => field(form, "email"), display_name => field(form, "display_name") },
    )
}

pub(super) async fn signup(
    State(state): State<AppState>,
    headers: HeaderMap,
    addr: ClientAddr,
    Form(form): Form<HashMap<String, String>>,
) -> PortalResult {
    check_pre_csrf(&state, &headers, &form)?;
    let portal = state.portal();
    if too_long(field(&form, "email")) {
        return signup_error(&state, &headers, StatusCode::BAD_REQUEST, t("email_invalid"), &form);
    }
    let ip = portal.client_ip(&addr);
    if let Err(wait) = portal.limits.attempt(ip) {
        let page = signup_error(&state, &headers, StatusCode::TOO_MANY_REQUESTS, t("signin_limited"), &form)?;
        return Ok(with_retry_after(page, wait.0));
    }
    // Each account comes with a Free allowance: accounts per address per UTC day are limited.
    let now = state.now();
    let day = now.unix_timestamp().div_euclid(86_400);
    if !portal.limits.may_sign_up(ip, day) {
        tracing::info!(?ip, "portal sign-up refused: daily limit of the address");
        let page = signup_error(&state, &headers, StatusCode::TOO_MANY_REQUESTS, t("signup_limited"), &form)?;
        return Ok(with_retry_after(page, crate::front::policy::secs_to_next_day(now)));
    }
    let email = match Email::parse(field(&form, "email")) {
        Ok(e) => e,
        Err(key) => return signup_error(&state, &headers, StatusCode::BAD_REQUEST, t(key), &form),
    };
    let display_name = field(&form, "display_name");
    if display_name.chars().count() > MAX_NAME_CHARS || display_name.chars().any(char::is_control) {
        return signup_error(&state, &headers, StatusCode::BAD_REQUEST, t("display_name_invalid"), &form);
    }
    let password = form.get("password").cloned().unwrap_or_default();
    if let Err(key) = accounts::check_new_password(&password, email.as_str()) {
        return signup_error(&state, &headers, StatusCode::BAD_REQUEST, t(key), &form);
    }
    let password_hash = hash_password(portal, password).await?;
    let verify = portal.mailer.is_some();
    // Counted before the insert (concurrent sign-ups cannot all pass), given back if none is made.
    if !portal.limits.sign_up(ip, day) {
        let page = signup_error(&state, &headers, StatusCode::TOO_MANY_REQUESTS, t("signup_limited"), &form)?;
        return Ok(with_retry_after(page, crate::front::policy::secs_to_next_day(now)));
    }
    let created = state
        .store()
        .create_account(NewAccount {
            email: email.as_str().to_owned(),
            display_name: display_name.to_owned(),
            password_hash,
            email_verified: !verify,
        })
        .await
        .inspect_err(|_| portal.limits.sign_up_undone(ip, day))?;
    let Some(account) = created else {
        portal.limits.sign_up_undone(ip, day);
        // With verification mail, a taken address gets the same page as a new one (the owner is
        // told by mail), so the form does not reveal who has an account. Without it the new
        // account's keys would be shown at once, so there is nothing to hide behind: say so.
        if verify {
            notify_account_exists(&state, email.as_str()).await?;
            return Ok(message_page(StatusCode::OK, t("verify_sent_title"), t("verify_sent")));
        }
        return signup_error(&state, &headers, StatusCode::CONFLICT, t("signup_taken"), &form);
    };
    tracing::info!(account_id = %account.id, verify, "portal account created");
    // With verification, no key (so no credits) and no session until the link is followed.
    if verify {
        let key = if send_verification(&state, &account).await? { "verify_sent" } else { "verify_send_failed" };
        return Ok(message_page(StatusCode::OK, t("verify_sent_title"), t(key)));
    }
    let (cookie, csrf) = start_session(&state, &account).await?;
    let shown =
        vec![make_key(&state, &account, KeyKind::Embed).await?, make_key(&state, &account, KeyKind::Server).await?];
    keys_shown(&state, &headers, &csrf, t("keys_shown_title"), &shown, None, &[cookie])
}

pub(super) async fn signin_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> PortalResult {
    if session(&state, &headers).await?.is_some() {
        return Ok(redirect("/account"));
    }
    let (csrf, cookie) = pre_csrf(&state, &headers);
    let notice = match q.get("done").map(String::as_str) {
        Some("signout") => Some(t("signed_out")),
        Some("reset") => Some(t("reset_done")),
        Some("verified") => Some(t("verify_done")),
        _ => None,
    };
    let page = render("portal/signin.html", StatusCode::OK, minijinja::context! { csrf, notice })?;
    Ok(with_cookies(page, &cookie.into_iter().collect::<Vec<_>>()))
}

pub(super) async fn signin(
    State(state): State<AppState>,
    headers: HeaderMap,
    addr: ClientAddr,
    Form(form): Form<HashMap<String, String>>,
) -> PortalResult {
    check_pre_csrf(&state, &headers, &form)?;
    let portal = state.portal();
    let typed = field(&form, "email");
    let fail = |status: StatusCode, key: &'static str, email: &str| {
        let (csrf, _) = pre_csrf(&state, &headers);
        render("portal/signin.html", status, minijinja::context! { csrf, error => t(key), email })
    };
    // Nothing longer than an e-mail address can be is counted, kept or echoed.
    if too_long(typed) {
        return fail(StatusCode::BAD_REQUEST, "email_invalid", "");
    }
    let typed = typed.to_lowercase();
    let ip = portal.client_ip(&addr);
    // The coarse per-address limit first: over it, nothing else is counted or kept.
    if let Err(wait) = portal.limits.attempt(ip) {
        tracing::info!(?ip, "portal sign-in rate limited (address)");
        return Ok(with_retry_after(fail(StatusCode::TOO_MANY_REQUESTS, "signin_limited", &typed)?, wait.0));
    }
    // Then the back-off of this e-mail address from this address, whether an account has it or
    // not (so it reveals nothing); another address is not slowed (no lock-out).
    let email = Email::parse(&typed).ok();
    if let Some(email) = &email
        && let Err(wait) = portal.limits.may_try(email.as_str(), ip)
    {
        tracing::info!(?ip, "portal sign-in backing off (e-mail address from this address)");
        return Ok(with_retry_after(fail(StatusCode::TOO_MANY_REQUESTS, "signin_backoff", &typed)?, wait.0));
    }
    let password = form.get("password").cloned().unwrap_or_default();
    let account = match &email {
        Some(email) => state.store().find_account(email.as_str()).await?,
        None => None,
    };
    // An unknown address verifies the dummy hash: same work, same answer as a wrong password.
    let phc = match &account {
        Some(a) => a.password_hash.clone(),
        None => dummy_hash(&state).await?,
    };
    let matches = verify_password(portal, password, phc).await?;
    let Some(account) = account.filter(|_| matches) else {
        if let Some(email) = &email {
            portal.limits.failed(email.as_str(), ip);
        }
        return fail(StatusCode::UNAUTHORIZED, "signin_failed", &typed);
    };
    portal.limits.succeeded(&account.email, ip);
    if account.state != AccountState::Active {
        return fail(StatusCode::FORBIDDEN, "signin_disabled", &typed);
    }
    if !account.email_verified {
        send_verification(&state, &account).await?;
        return fail(StatusCode::FORBIDDEN, "verify_first", &typed);
    }
    let (cookie, csrf) = start_session(&state, &account).await?;
    tracing::info!(account_id = %account.id, "portal sign-in");
    // An account without keys (all made by the operator, or none yet) gets its pair now.
    if state.store().account_keys(&account.id).await?.is_empty() {
        let shown =
            vec![make_key(&state, &account, KeyKind::Embed).await?, make_key(&state, &account, KeyKind::Server).await?];
        return keys_shown(&state, &headers, &csrf, t("keys_shown_title"), &shown, None, &[cookie]);
    }
    Ok(with_cookies(redirect("/account"), &[cookie]))
}

/// Mails `account` a one-time verification link, at most once per 10 minutes per account.
/// Returns whether a mail went out; a relay failure is logged, not shown (the owner signs in
/// later to get a new link).
async fn send_verification(state: &AppState, account: &accounts::Account) -> Result<bool, PortalError> {
    let portal = state.portal();
    let (Some(mailer), Some(base)) = (&portal.mailer, &portal.config.public_url) else { return Ok(false) };
    let mailer = match mailer {
        Ok(m) => m,
        Err(why) => {
            tracing::error!(account_id = %account.id, %why, "verification mail not sent: SMTP is misconfigured");
            return Ok(false);
        }
    };
    if !portal.limits.verification_mail(&account.id) {
        return Ok(false);
    }
    let token = accounts::new_token();
    let valid = portal.config.verify_token_secs;
    let expires = now_secs(state).saturating_add(i64::try_from(valid).unwrap_or(86_400));
    state.store().create_verify_token(&accounts::token_hash(&token), &account.id, expires).await?;
    let link = format!("{}/account/verify?token={token}", base.trim_end_matches('/'));
    match mailer.send_verification(&account.email, &link, valid).await {
        Ok(()) => {
            tracing::info!(account_id = %account.id, "verification mail sent");
            Ok(true)
        }
        Err(e) => {
            tracing::warn!(account_id = %account.id, error = format!("{e:#}"), "verification mail not sent");
            Ok(false)
        }
    }
}

/// Mails the owner of `email` that a sign-up was tried with their address, at most once per 10
/// minutes per account (a budget of its own beside the verification mail's). A relay failure is logged, not shown:
/// the page must look the same whatever happened.
async fn notify_account_exists(state: &AppState, email: &str) -> Result<(), PortalError> {
    let portal = state.portal();
    let (Some(Ok(mailer)), Some(base)) = (&portal.mailer, &portal.config.public_url) else { return Ok(()) };
    let Some(account) = state.store().find_account(email).await? else { return Ok(()) };
    if !portal.limits.verification_mail(&format!("exists:{}", account.id)) {
        return Ok(());
    }
    let signin = format!("{}/account/signin", base.trim_end_matches('/'));
    match mailer.send_account_exists(&account.email, &signin).await {
        Ok(()) => tracing::info!(account_id = %account.id, "sign-up with a taken address: owner told by mail"),
        Err(e) => tracing::warn!(account_id = %account.id, error = format!("{e:#}"), "account-exists mail not sent"),
    }
    Ok(())
}

/// `GET /account/verify?token=…`: the link of the verification mail. Marks the address verified
/// (once) and sends the owner to sign in, where the account gets its keys.
pub(super) async fn verify_email(
    State(state): State<AppState>,
    Query(q): Query<HashMap<String, String>>,
) -> PortalResult {
    let token = q.get("token").map(String::as_str).unwrap_or_default();
    if token.is_empty() || token.len() > 128 {
        return Ok(message_page(StatusCode::BAD_REQUEST, t("verify_sent_title"), t("verify_invalid")));
    }
    match state.store().take_verify_token(&accounts::token_hash(token), now_secs(&state)).await? {
        Some(account_id) => {
            tracing::info!(%account_id, "portal e-mail address verified");
            Ok(redirect("/account/signin?done=verified"))
        }
        None => Ok(message_page(StatusCode::BAD_REQUEST, t("verify_sent_title"), t("verify_invalid"))),
    }
}

pub(super) async fn signout(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> PortalResult {
    let signed = require_post(&state, &headers, &form).await?;
    state.store().delete_session(&signed.session.token_hash).await?;
    Ok(with_cookies(redirect("/account/signin?done=signout"), &[clear_cookie(&state, SESSION_COOKIE)]))
}

pub(super) async fn reset_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> PortalResult {
    let (csrf, cookie) = pre_csrf(&state, &headers);
    let token = q.get("token").cloned().unwrap_or_default();
    let page = render("portal/reset.html", StatusCode::OK, minijinja::context! { csrf, token })?;
    Ok(with_cookies(page, &cookie.into_iter().collect::<Vec<_>>()))
}

pub(super) async fn reset_password(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> PortalResult {
    check_pre_csrf(&state, &headers, &form)?;
    let token = field(&form, "token").to_owned();
    let password = form.get("password").cloned().unwrap_or_default();
    let again = |status: StatusCode, key: &'static str| {
        let (csrf, _) = pre_csrf(&state, &headers);
        render("portal/reset.html", status, minijinja::context! { csrf, token => token.clone(), error => t(key) })
    };
    if let Err(key) = accounts::check_new_password(&password, "") {
        return again(StatusCode::BAD_REQUEST, key);
    }
    // The token is consumed only once the new password passes the policy and a hashing slot is
    // held (a busy front answers 429 and the link still works).
    let slot = state.portal().hashing.try_acquire().map_err(|_| busy())?;
    let Some(account_id) = state.store().take_reset_token(&accounts::token_hash(&token), now_secs(&state)).await?
    else {
        return again(StatusCode::BAD_REQUEST, "reset_invalid");
    };
    let hash = hash_in(state.portal(), slot, password).await?;
    state.store().set_password(&account_id, &hash).await?;
    tracing::info!(account_id = %account_id, "portal password reset");
    Ok(redirect("/account/signin?done=reset"))
}

/// Makes a one-time reset token for `account_id` and returns the link (`dsa accounts reset-link`).
///
/// # Errors
/// Storage errors.
pub async fn reset_link(
    store: &dyn crate::store::Store,
    config: &PortalConfig,
    base_url: &str,
    account_id: &str,
) -> anyhow::Result<String> {
    let token = accounts::new_token();
    let expires = OffsetDateTime::now_utc().unix_timestamp() + i64::try_from(config.reset_token_secs).unwrap_or(3_600);
    store.create_reset_token(&accounts::token_hash(&token), account_id, expires).await?;
    Ok(format!("{}/account/reset?token={token}", base_url.trim_end_matches('/')))
}
