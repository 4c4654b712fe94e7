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

pub mod chart;
pub mod text;

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::OnceLock;

use axum::Form;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use serde::Serialize;
use time::OffsetDateTime;

use crate::accounts::{self, Account, AccountState, Email, NewAccount, PasswordParams, SessionRecord};
use crate::keys::{self, KeyKind, KeyRecord, KeyState, Plan};
use crate::policy::{ClientAddr, PortalConfig};
use crate::routes::front::{front_css, widget};
use crate::state::AppState;
use crate::store::{KeyUpdate, NewKey};
use text::t;

/// Content-Security-Policy of every portal page: no script at all, styles and images from this
/// origin only, forms post only here, never framed.
pub const PORTAL_CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
base-uri 'none'; frame-ancestors 'none'";

/// How many charges the dashboard lists.
const RECENT_CHARGES: i64 = 20;
/// A session's last-seen time is written at most this often (seconds), not on every page view.
const TOUCH_EVERY_SECS: i64 = 60;
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
}

/// Hashes a password on a blocking thread (argon2id takes tens of milliseconds of CPU and
/// `password_memory_kib` of memory), at most [`Portal::hashing`] at once.
async fn hash_password(portal: &Portal, password: String) -> anyhow::Result<String> {
    let _slot = portal.hashing.acquire().await?;
    let params = portal.params;
    tokio::task::spawn_blocking(move || params.hash(&password)).await?
}

/// Verifies a password on a blocking thread, within the same bound.
async fn verify_password(portal: &Portal, password: String, phc: String) -> bool {
    let Ok(_slot) = portal.hashing.acquire().await else { return false };
    tokio::task::spawn_blocking(move || accounts::verify_password(&password, &phc)).await.unwrap_or(false)
}

/// The hash verified when the e-mail address is unknown, so that answer takes as long as a wrong
/// password (no user enumeration by timing). Made once, with the current parameters.
async fn dummy_hash(state: &AppState) -> String {
    let portal = state.portal();
    if let Some(hash) = portal.dummy_hash.get() {
        return hash.clone();
    }
    let hash = hash_password(portal, accounts::new_token()).await.unwrap_or_default();
    portal.dummy_hash.get_or_init(|| hash).clone()
}

/// The portal's routes (merged into the main router when `policy.portal.enabled`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/account", get(dashboard))
        .route("/account/", get(|| async { redirect("/account") }))
        .route("/account/portal.css", get(stylesheet))
        .route("/account/signup", get(signup_page).post(signup))
        .route("/account/signin", get(signin_page).post(signin))
        .route("/account/signout", post(signout))
        .route("/account/keys", post(create_key))
        .route("/account/keys/{id}", get(key_page).post(save_settings))
        .route("/account/keys/{id}/roll", post(roll_key))
        .route("/account/keys/{id}/disable", post(disable_key))
        .route("/account/keys/{id}/enable", post(enable_key))
        .route("/account/reset", get(reset_page).post(reset_password))
}

// ---------------------------------------------------------------------------------------------
// Responses

/// Errors of a portal handler: an HTML page with a status.
#[derive(Debug)]
pub enum PortalError {
    /// The CSRF token is missing or wrong: 403.
    Csrf,
    /// Not signed in: 303 to the sign-in page.
    SignIn,
    /// No such key in the account: 404.
    NotFound,
    /// A store or template failure: 500 (logged, not shown).
    Internal(anyhow::Error),
}

impl<E: Into<anyhow::Error>> From<E> for PortalError {
    fn from(e: E) -> Self {
        PortalError::Internal(e.into())
    }
}

impl IntoResponse for PortalError {
    fn into_response(self) -> Response {
        match self {
            PortalError::Csrf => message_page(StatusCode::FORBIDDEN, t("csrf_title"), t("csrf_failed")),
            PortalError::SignIn => redirect("/account/signin"),
            PortalError::NotFound => message_page(StatusCode::NOT_FOUND, t("not_found_title"), t("not_found")),
            PortalError::Internal(e) => {
                tracing::error!(error = format!("{e:#}"), "portal request failed");
                message_page(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Internal server error",
                    "Something went wrong on our side; try again in a moment.",
                )
            }
        }
    }
}

type PortalResult = Result<Response, PortalError>;

/// The headers of every portal response.
fn secure(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(PORTAL_CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // Reset links carry a token in the URL: never send it anywhere as a Referer.
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // Pages may show a key once: no cache may keep them.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn redirect(to: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        response.headers_mut().insert(header::LOCATION, v);
    }
    secure(response)
}

fn with_cookies(mut response: Response, cookies: &[String]) -> Response {
    for c in cookies {
        if let Ok(v) = HeaderValue::from_str(c) {
            response.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    response
}

/// The template environment of the portal (the front page's layout plus `portal/*`).
fn templates() -> &'static minijinja::Environment<'static> {
    static ENV: OnceLock<minijinja::Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = minijinja::Environment::new();
        for (name, source) in [
            ("layout.html", include_str!("../../templates/layout.html")),
            ("portal/base.html", include_str!("../../templates/portal/base.html")),
            ("portal/signin.html", include_str!("../../templates/portal/signin.html")),
            ("portal/signup.html", include_str!("../../templates/portal/signup.html")),
            ("portal/keys_shown.html", include_str!("../../templates/portal/keys_shown.html")),
            ("portal/dashboard.html", include_str!("../../templates/portal/dashboard.html")),
            ("portal/key.html", include_str!("../../templates/portal/key.html")),
            ("portal/reset.html", include_str!("../../templates/portal/reset.html")),
            ("portal/message.html", include_str!("../../templates/portal/message.html")),
        ] {
            if let Err(e) = env.add_template(name, source) {
                tracing::error!(template = name, error = %e, "template does not compile");
            }
        }
        env
    })
}

/// The portal's stylesheet (`api/static/portal.css`), on top of the front page's.
fn portal_css() -> &'static crate::routes::front::Asset {
    static CSS: OnceLock<crate::routes::front::Asset> = OnceLock::new();
    CSS.get_or_init(|| {
        crate::routes::front::Asset::new(include_str!("../../static/portal.css"), "text/css; charset=utf-8")
    })
}

async fn stylesheet(Query(q): Query<crate::routes::front::AssetQuery>, headers: HeaderMap) -> Response {
    portal_css().respond(q.v.as_deref(), &headers)
}

/// Renders a page; `ctx` is merged with what every page needs.
fn render(name: &str, status: StatusCode, ctx: minijinja::Value) -> PortalResult {
    let template = templates().get_template(name)?;
    let base = minijinja::context! {
        t => text::strings(),
        css_version => front_css().version.as_str(),
        portal_css_version => portal_css().version.as_str(),
    };
    let html = template.render(minijinja::context! { ..ctx, ..base })?;
    Ok(secure((status, Html(html)).into_response()))
}

/// A serialisable value as a template value.
fn ser<T: Serialize + ?Sized>(value: &T) -> minijinja::Value {
    minijinja::Value::from(minijinja::value::Serde(value))
}

fn message_page(status: StatusCode, title: &str, message: &str) -> Response {
    match render("portal/message.html", status, minijinja::context! { title, message }) {
        Ok(r) => r,
        Err(_) => secure((status, message.to_owned()).into_response()),
    }
}

// ---------------------------------------------------------------------------------------------
// Cookies, sessions, CSRF

/// Cookie names: with TLS, the `__Host-` prefix (RFC 6265bis §4.1.3.2: Secure, Path=/, no Domain,
/// so no subdomain can set or shadow it).
fn cookie_name(state: &AppState, base: &str) -> String {
    if state.cookie_secure() { format!("__Host-{base}") } else { base.to_owned() }
}

const SESSION_COOKIE: &str = "dsa_portal";
const PRE_CSRF_COOKIE: &str = "dsa_portal_csrf";

fn cookie_value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
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

fn set_cookie(state: &AppState, base: &str, value: &str, max_age: Option<u64>) -> String {
    let max_age = max_age.map(|s| format!("; Max-Age={s}")).unwrap_or_default();
    let secure = if state.cookie_secure() { "; Secure" } else { "" };
    format!("{}={value}; Path=/; HttpOnly; SameSite=Lax{max_age}{secure}", cookie_name(state, base))
}

fn clear_cookie(state: &AppState, base: &str) -> String {
    set_cookie(state, base, "", Some(0))
}

/// A signed-in request: the session and its account.
struct Signed {
    session: SessionRecord,
    account: Account,
}

fn now_secs(state: &AppState) -> i64 {
    state.now().unix_timestamp()
}

/// The live session of a request, if any. An expired session is deleted on sight.
async fn session(state: &AppState, headers: &HeaderMap) -> Result<Option<Signed>, PortalError> {
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

async fn require_session(state: &AppState, headers: &HeaderMap) -> Result<Signed, PortalError> {
    session(state, headers).await?.ok_or(PortalError::SignIn)
}

/// A signed-in POST: the session, and its CSRF token in the form (else 403).
async fn require_post(
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
fn pre_csrf(state: &AppState, headers: &HeaderMap) -> (String, Option<String>) {
    match cookie_value(headers, &cookie_name(state, PRE_CSRF_COOKIE)) {
        Some(token) => (token.to_owned(), None),
        None => {
            let token = accounts::new_token();
            let cookie = set_cookie(state, PRE_CSRF_COOKIE, &token, None);
            (token, Some(cookie))
        }
    }
}

fn check_pre_csrf(state: &AppState, headers: &HeaderMap, form: &HashMap<String, String>) -> Result<(), PortalError> {
    match (cookie_value(headers, &cookie_name(state, PRE_CSRF_COOKIE)), form.get("csrf")) {
        (Some(cookie), Some(field)) if accounts::same_secret(cookie, field) => Ok(()),
        _ => Err(PortalError::Csrf),
    }
}

/// Starts a session for `account`; returns its cookie and its CSRF token.
async fn start_session(state: &AppState, account: &Account) -> Result<(String, String), PortalError> {
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

/// A duration for people: `24 h`, `15 min`, `3 s`.
fn human_secs(secs: u64) -> String {
    match secs {
        s if s >= 3_600 && s % 3_600 == 0 => format!("{} h", s / 3_600),
        s if s >= 60 && s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

fn field<'a>(form: &'a HashMap<String, String>, name: &str) -> &'a str {
    form.get(name).map_or("", |v| v.trim())
}

// ---------------------------------------------------------------------------------------------
// Sign up, sign in, sign out, reset

async fn signup_page(State(state): State<AppState>, headers: HeaderMap) -> PortalResult {
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

/// One freshly made key, shown once.
#[derive(Debug, Serialize)]
struct ShownKey {
    id: String,
    kind: &'static str,
    key: String,
    fingerprint: String,
}

/// The settings of the keys the portal creates: the free Developer plan, pricing and the
/// purchase button on, no origin yet (the owner adds the sites).
fn portal_key(kind: KeyKind, key_hash: String) -> NewKey {
    NewKey {
        key_hash,
        kind,
        plan: Plan::Free,
        pricing_enabled: true,
        show_purchase_button: true,
        default_commission_percent: None,
        purchase_url: None,
        allowed_origins: Vec::new(),
        label: format!("{} key", kind.as_str()),
    }
}

async fn make_key(state: &AppState, account: &Account, kind: KeyKind) -> Result<ShownKey, PortalError> {
    let (key, hash) = keys::generate(kind);
    let record = state.store().create_account_key(&account.id, portal_key(kind, hash)).await?;
    tracing::info!(account_id = %account.id, key_id = %record.id, fingerprint = %record.fingerprint, "portal key created");
    Ok(ShownKey { id: record.id, kind: kind.as_str(), key, fingerprint: record.fingerprint })
}

/// The widget snippet for an embed key (the full key when just shown, else a placeholder).
fn snippet(state: &AppState, headers: &HeaderMap, embed_key: Option<&str>) -> String {
    let w = widget();
    format!(
        "<div data-dsa-widget data-client-key=\"{}\"></div>\n<script src=\"{}/widget.js?v={}\"\n        integrity=\"{}\"\n        crossorigin=\"anonymous\" async></script>",
        embed_key.unwrap_or(t("snippet_placeholder")),
        crate::routes::front::base_url(state, headers),
        w.version,
        w.integrity
    )
}

/// The page that shows new keys once.
fn keys_shown(
    state: &AppState,
    headers: &HeaderMap,
    csrf: &str,
    title: &str,
    keys: &[ShownKey],
    note: Option<String>,
    cookies: &[String],
) -> PortalResult {
    let embed = keys.iter().find(|k| k.kind == "embed").map(|k| k.key.as_str());
    let page = render(
        "portal/keys_shown.html",
        StatusCode::OK,
        minijinja::context! {
            signed_in => true,
            title,
            keys => ser(keys),
            note,
            snippet => embed.map(|k| snippet(state, headers, Some(k))),
            csrf,
        },
    )?;
    Ok(with_cookies(page, cookies))
}

async fn signup(
    State(state): State<AppState>,
    headers: HeaderMap,
    addr: ClientAddr,
    Form(form): Form<HashMap<String, String>>,
) -> PortalResult {
    check_pre_csrf(&state, &headers, &form)?;
    if !state.portal().admit(&addr, None) {
        return signup_error(&state, &headers, StatusCode::TOO_MANY_REQUESTS, t("signin_limited"), &form);
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
    let password_hash = hash_password(state.portal(), password).await?;
    let created = state
        .store()
        .create_account(NewAccount {
            email: email.as_str().to_owned(),
            display_name: display_name.to_owned(),
            password_hash,
        })
        .await?;
    let Some(account) = created else {
        return signup_error(&state, &headers, StatusCode::CONFLICT, t("signup_taken"), &form);
    };
    tracing::info!(account_id = %account.id, "portal account created");
    let (cookie, csrf) = start_session(&state, &account).await?;
    let shown =
        vec![make_key(&state, &account, KeyKind::Embed).await?, make_key(&state, &account, KeyKind::Server).await?];
    keys_shown(&state, &headers, &csrf, t("keys_shown_title"), &shown, None, &[cookie])
}

async fn signin_page(
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
        _ => None,
    };
    let page = render("portal/signin.html", StatusCode::OK, minijinja::context! { csrf, notice })?;
    Ok(with_cookies(page, &cookie.into_iter().collect::<Vec<_>>()))
}

async fn signin(
    State(state): State<AppState>,
    headers: HeaderMap,
    addr: ClientAddr,
    Form(form): Form<HashMap<String, String>>,
) -> PortalResult {
    check_pre_csrf(&state, &headers, &form)?;
    let typed = field(&form, "email").to_lowercase();
    let fail = |status: StatusCode, key: &'static str| {
        let (csrf, _) = pre_csrf(&state, &headers);
        render("portal/signin.html", status, minijinja::context! { csrf, error => t(key), email => typed.clone() })
    };
    // Both limits count every attempt, before any lookup: the per-address limit is keyed by the
    // typed address whether an account has it or not, so hitting it reveals nothing.
    if !state.portal().admit(&addr, Some(&typed)) {
        tracing::info!(ip = ?addr.limit_ip(state.policy().proxy_hops()), "portal sign-in rate limited");
        return fail(StatusCode::TOO_MANY_REQUESTS, "signin_limited");
    }
    let password = form.get("password").cloned().unwrap_or_default();
    let account = match Email::parse(&typed) {
        Ok(email) => state.store().find_account(email.as_str()).await?,
        Err(_) => None,
    };
    // An unknown address verifies the dummy hash: same work, same answer as a wrong password.
    let phc = match &account {
        Some(a) => a.password_hash.clone(),
        None => dummy_hash(&state).await,
    };
    let matches = verify_password(state.portal(), password, phc).await;
    let Some(account) = account.filter(|_| matches) else {
        return fail(StatusCode::UNAUTHORIZED, "signin_failed");
    };
    if account.state != AccountState::Active {
        return fail(StatusCode::FORBIDDEN, "signin_disabled");
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

async fn signout(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> PortalResult {
    let signed = require_post(&state, &headers, &form).await?;
    state.store().delete_session(&signed.session.token_hash).await?;
    Ok(with_cookies(redirect("/account/signin?done=signout"), &[clear_cookie(&state, SESSION_COOKIE)]))
}

async fn reset_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> PortalResult {
    let (csrf, cookie) = pre_csrf(&state, &headers);
    let token = q.get("token").cloned().unwrap_or_default();
    let page = render("portal/reset.html", StatusCode::OK, minijinja::context! { csrf, token })?;
    Ok(with_cookies(page, &cookie.into_iter().collect::<Vec<_>>()))
}

async fn reset_password(
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
    // The token is consumed only once the new password passes the policy.
    let Some(account_id) = state.store().take_reset_token(&accounts::token_hash(&token), now_secs(&state)).await?
    else {
        return again(StatusCode::BAD_REQUEST, "reset_invalid");
    };
    let hash = hash_password(state.portal(), password).await?;
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

// ---------------------------------------------------------------------------------------------
// Dashboard

/// One key's row on the dashboard.
#[derive(Debug, Serialize)]
struct KeyRow {
    id: String,
    label: String,
    fingerprint: String,
    kind: &'static str,
    state: &'static str,
    plan: &'static str,
    used: i64,
    remaining: i64,
    allowance: i64,
    per_minute: u32,
    origins: Vec<String>,
}

fn plan_name(plan: Plan) -> &'static str {
    match plan {
        Plan::Free => "Free Developer",
        Plan::Starter => "Starter",
        Plan::Pro => "PRO",
        Plan::Reseller => "Reseller",
    }
}

async fn key_row(state: &AppState, key: &KeyRecord, period: &str) -> Result<KeyRow, PortalError> {
    let used = state.store().settled_usage(&key.id, period).await?;
    Ok(KeyRow {
        id: key.id.clone(),
        label: key.label.clone(),
        fingerprint: key.fingerprint.clone(),
        kind: key.kind.as_str(),
        state: key.state.as_str(),
        plan: plan_name(key.plan),
        used,
        remaining: (key.monthly_allowance - used).max(0),
        allowance: key.monthly_allowance,
        per_minute: state.policy().per_minute.of(key.plan),
        origins: key.allowed_origins.clone(),
    })
}

/// The first day of the next month (UTC), when allowances reset (spec §3, §8).
fn reset_date(now: OffsetDateTime) -> String {
    let (y, m) = if now.month() == time::Month::December {
        (now.year() + 1, 1)
    } else {
        (now.year(), u8::from(now.month()) + 1)
    };
    format!("{y:04}-{m:02}-01")
}

async fn dashboard(State(state): State<AppState>, headers: HeaderMap) -> PortalResult {
    let signed = require_session(&state, &headers).await?;
    let now = state.now();
    let period = common::messages::billing_period(now);
    let keys = state.store().account_keys(&signed.account.id).await?;
    let mut rows = Vec::with_capacity(keys.len());
    for key in &keys {
        rows.push(key_row(&state, key, &period).await?);
    }
    let usage = state.store().account_daily_usage(&signed.account.id, &period).await?;
    let chart = chart::render(&period, now.month().length(now.year()), &usage, t("chart_title"));
    let fingerprints: HashMap<&str, &str> = keys.iter().map(|k| (k.id.as_str(), k.fingerprint.as_str())).collect();
    let recent: Vec<_> = state
        .store()
        .recent_charges(&signed.account.id, RECENT_CHARGES)
        .await?
        .into_iter()
        .map(|c| {
            minijinja::context! {
                when => c.charged_at.get(..19).unwrap_or(&c.charged_at).replace('T', " "),
                fingerprint => fingerprints.get(c.key_id.as_str()).copied().unwrap_or("-"),
                endpoint => c.endpoint,
                credits => c.credits,
            }
        })
        .collect();
    render(
        "portal/dashboard.html",
        StatusCode::OK,
        minijinja::context! {
            signed_in => true,
            csrf => signed.session.csrf_token,
            account => ser(&signed.account),
            keys => ser(&rows),
            resets => reset_date(now),
            period,
            chart_svg => minijinja::Value::from_safe_string(chart.svg.clone()),
            legend => ser(&chart.legend),
            usage_rows => ser(&chart.rows),
            recent,
        },
    )
}

// ---------------------------------------------------------------------------------------------
// Keys

/// The key `id` if the signed-in account owns it (else 404, whether or not it exists).
async fn owned_key(state: &AppState, signed: &Signed, id: &str) -> Result<KeyRecord, PortalError> {
    state.store().account_keys(&signed.account.id).await?.into_iter().find(|k| k.id == id).ok_or(PortalError::NotFound)
}

async fn create_key(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> PortalResult {
    let signed = require_post(&state, &headers, &form).await?;
    let kind = KeyKind::parse(field(&form, "kind")).unwrap_or(KeyKind::Embed);
    let shown = make_key(&state, &signed.account, kind).await?;
    keys_shown(&state, &headers, &signed.session.csrf_token, t("keys_shown_title"), &[shown], None, &[])
}

/// Form values of the settings form, kept to re-show it with an error.
#[derive(Debug, Default, Serialize)]
struct SettingsForm {
    label: String,
    origins: String,
    pricing_enabled: bool,
    show_purchase_button: bool,
    commission: String,
    purchase_url: String,
}

impl SettingsForm {
    fn of(key: &KeyRecord) -> Self {
        Self {
            label: key.label.clone(),
            origins: key.allowed_origins.join("\n"),
            pricing_enabled: key.pricing_enabled,
            show_purchase_button: key.show_purchase_button,
            commission: key.default_commission_percent.map(|c| c.to_string()).unwrap_or_default(),
            purchase_url: key.purchase_url.clone().unwrap_or_default(),
        }
    }

    fn from_form(form: &HashMap<String, String>) -> Self {
        Self {
            label: field(form, "label").to_owned(),
            origins: form.get("origins").cloned().unwrap_or_default(),
            pricing_enabled: form.contains_key("pricing_enabled"),
            show_purchase_button: form.contains_key("show_purchase_button"),
            commission: field(form, "commission").to_owned(),
            purchase_url: field(form, "purchase_url").to_owned(),
        }
    }

    /// The change, or the messages saying what is wrong.
    fn parse(&self) -> Result<KeyUpdate, Vec<String>> {
        let mut errors = Vec::new();
        let mut origins = Vec::new();
        for line in self.origins.lines().map(str::trim).filter(|l| !l.is_empty()) {
            match keys::parse_origin(line) {
                Ok(o) if !origins.contains(&o) => origins.push(o),
                Ok(_) => {}
                Err(e) => errors.push(e),
            }
        }
        let commission = match self.commission.as_str() {
            "" => None,
            text => match text.parse::<f64>() {
                Ok(c) if (0.0..=1000.0).contains(&c) => Some(c),
                _ => {
                    errors.push(t("commission_invalid").to_owned());
                    None
                }
            },
        };
        let purchase_url = match self.purchase_url.as_str() {
            "" => None,
            // The same check as `dsa keys set --purchase-url` and the same stored form.
            text => match crate::purchase::CheckoutUrl::parse(text) {
                Ok(u) => Some(u.as_str().to_owned()),
                Err(crate::purchase::PurchaseError::InvalidCheckoutUrl { reason }) => {
                    errors.push(format!("{} ({reason})", t("purchase_url_invalid")));
                    None
                }
            },
        };
        if self.label.chars().count() > MAX_NAME_CHARS || self.label.chars().any(char::is_control) {
            errors.push(t("label_invalid").to_owned());
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        // The plan and the state are not the owner's to change (the operator's `dsa keys set`).
        Ok(KeyUpdate {
            plan: None,
            pricing_enabled: Some(self.pricing_enabled),
            show_purchase_button: Some(self.show_purchase_button),
            default_commission_percent: Some(commission),
            purchase_url: Some(purchase_url),
            allowed_origins: Some(origins),
            label: Some(self.label.clone()),
        })
    }
}

/// What the key page shows besides the key.
struct KeyView<'a> {
    form: &'a SettingsForm,
    status: StatusCode,
    errors: &'a [String],
    saved: bool,
}

fn key_page_render(
    state: &AppState,
    headers: &HeaderMap,
    signed: &Signed,
    (key, created_at): (&KeyRow, &str),
    view: KeyView<'_>,
) -> PortalResult {
    let KeyView { form, status, errors, saved } = view;
    render(
        "portal/key.html",
        status,
        minijinja::context! {
            signed_in => true,
            csrf => signed.session.csrf_token.clone(),
            key => ser(key),
            created_at => created_at.get(..10).unwrap_or(created_at),
            form => ser(form),
            errors => errors.to_vec(),
            saved,
            grace => human_secs(state.portal().config().roll_grace_secs),
            snippet => (key.kind == "embed").then(|| snippet(state, headers, None)),
        },
    )
}

async fn key_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> PortalResult {
    let signed = require_session(&state, &headers).await?;
    let key = owned_key(&state, &signed, &id).await?;
    let row = key_row(&state, &key, &common::messages::billing_period(state.now())).await?;
    let saved = q.contains_key("saved");
    let form = SettingsForm::of(&key);
    let view = KeyView { form: &form, status: StatusCode::OK, errors: &[], saved };
    key_page_render(&state, &headers, &signed, (&row, &key.created_at), view)
}

async fn save_settings(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<HashMap<String, String>>,
) -> PortalResult {
    let signed = require_post(&state, &headers, &form).await?;
    let key = owned_key(&state, &signed, &id).await?;
    let values = SettingsForm::from_form(&form);
    match values.parse() {
        Ok(update) => {
            state.store().update_key(&key.id, update).await?;
            tracing::info!(account_id = %signed.account.id, key_id = %key.id, "portal key settings saved");
            Ok(redirect(&format!("/account/keys/{}?saved=1", key.id)))
        }
        Err(errors) => {
            let row = key_row(&state, &key, &common::messages::billing_period(state.now())).await?;
            let view = KeyView { form: &values, status: StatusCode::BAD_REQUEST, errors: &errors, saved: false };
            key_page_render(&state, &headers, &signed, (&row, &key.created_at), view)
        }
    }
}

async fn roll_key(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<HashMap<String, String>>,
) -> PortalResult {
    let signed = require_post(&state, &headers, &form).await?;
    let key = owned_key(&state, &signed, &id).await?;
    let (secret, hash) = keys::generate(key.kind);
    let grace = i64::try_from(state.portal().config().roll_grace_secs).unwrap_or(86_400);
    let until = OffsetDateTime::now_utc().unix_timestamp() + grace;
    state.store().roll_key(&key.id, &hash, until).await?;
    tracing::info!(account_id = %signed.account.id, key_id = %key.id, grace_secs = grace, "portal key rolled");
    let until_text = OffsetDateTime::from_unix_timestamp(until)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_default();
    let shown =
        ShownKey { id: key.id.clone(), kind: key.kind.as_str(), key: secret, fingerprint: keys::fingerprint(&hash) };
    let note = format!("{} {} (UTC).", t("rolled_grace"), until_text.replace('T', " ").trim_end_matches('Z'));
    keys_shown(&state, &headers, &signed.session.csrf_token, t("rolled_title"), &[shown], Some(note), &[])
}

async fn set_state(
    state: &AppState,
    headers: &HeaderMap,
    id: &str,
    form: &HashMap<String, String>,
    to: KeyState,
) -> PortalResult {
    let signed = require_post(state, headers, form).await?;
    let key = owned_key(state, &signed, id).await?;
    if key.state == KeyState::Suspended {
        return Ok(message_page(StatusCode::FORBIDDEN, t("key_title"), t("suspended_refused")));
    }
    state.store().set_key_state(&key.id, to).await?;
    tracing::info!(account_id = %signed.account.id, key_id = %key.id, state = to.as_str(), "portal key state changed");
    Ok(redirect("/account"))
}

async fn disable_key(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<HashMap<String, String>>,
) -> PortalResult {
    set_state(&state, &headers, &id, &form, KeyState::Disabled).await
}

async fn enable_key(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<HashMap<String, String>>,
) -> PortalResult {
    set_state(&state, &headers, &id, &form, KeyState::Active).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_compile() {
        for name in templates().templates().map(|(n, _)| n) {
            assert!(templates().get_template(name).is_ok(), "{name}");
        }
        assert_eq!(templates().templates().count(), 9, "every template compiled");
    }

    #[test]
    fn settings_are_validated() {
        let form = SettingsForm {
            origins: "https://shop.example\nhttps://shop.example/\nhttps://*.example.com\n".into(),
            commission: "25".into(),
            purchase_url: "https://shop.example/cart".into(),
            ..SettingsForm::default()
        };
        let update = form.parse().expect("valid");
        assert_eq!(update.allowed_origins, Some(vec!["https://shop.example".into(), "https://*.example.com".into()]));
        assert_eq!(update.default_commission_percent, Some(Some(25.0)));
        assert_eq!(update.plan, None);
        let bad = SettingsForm {
            origins: "https://shop.example/path".into(),
            commission: "1001".into(),
            purchase_url: "/cart".into(),
            ..SettingsForm::default()
        };
        let errors = bad.parse().expect_err("invalid");
        assert_eq!(errors.len(), 3, "{errors:?}");
        let creds = SettingsForm { purchase_url: "https://user:pw@shop.example/".into(), ..SettingsForm::default() };
        let errors = creds.parse().expect_err("credentials refused");
        assert!(errors[0].contains("user:password"), "{errors:?}");
    }

    #[test]
    fn durations_for_people() {
        assert_eq!(human_secs(86_400), "24 h");
        assert_eq!(human_secs(900), "15 min");
        assert_eq!(human_secs(3), "3 s");
    }

    #[test]
    fn reset_dates() {
        assert_eq!(reset_date(time::macros::datetime!(2026-11-23 13:00 UTC)), "2026-12-01");
        assert_eq!(reset_date(time::macros::datetime!(2026-12-31 23:59 UTC)), "2027-01-01");
    }
}
