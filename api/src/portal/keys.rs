//! The account's keys: new keys shown once, the key page and its settings form, roll,
//! disable and enable.

use std::collections::HashMap;

use axum::Form;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use serde::Serialize;
use time::OffsetDateTime;

use super::MAX_NAME_CHARS;
use super::dashboard::key_row;
use super::render::{
    PortalError, PortalResult, human_secs, message_page, redirect, render, ser, with_cookies, with_retry_after,
};
use super::session::{Signed, field, require_post, require_session};
use super::text::t;
use crate::front::keys::{self, KeyKind, KeyRecord, KeyState, Plan};
use crate::front::routes::front::widget;
use crate::front::state::AppState;
use crate::portal::accounts::Account;
use crate::store::{KeyUpdate, NewKey};

/// One freshly made key, shown once.
#[derive(Debug, Serialize)]
pub(super) struct ShownKey {
    id: String,
    kind: &'static str,
    key: String,
    fingerprint: String,
}

/// The settings of the keys the portal creates: the free Developer plan, pricing and the
/// purchase button on, no origin yet (the owner adds the sites).
pub(super) fn portal_key(kind: KeyKind, key_hash: String) -> NewKey {
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

pub(super) async fn make_key(state: &AppState, account: &Account, kind: KeyKind) -> Result<ShownKey, PortalError> {
    let (key, hash) = keys::generate(kind);
    let record = state.store().create_account_key(&account.id, portal_key(kind, hash)).await?;
    tracing::info!(account_id = %account.id, key_id = %record.id, fingerprint = %record.fingerprint, "portal key created");
    Ok(ShownKey { id: record.id, kind: kind.as_str(), key, fingerprint: record.fingerprint })
}

/// The widget snippet for an embed key (the full key when just shown, else a placeholder).
pub(super) fn snippet(state: &AppState, headers: &HeaderMap, embed_key: Option<&str>) -> String {
    let w = widget();
    format!(
        "<div data-dsa-widget data-client-key=\"{}\"></div>\n<script src=\"{}/widget.js?v={}\"\n        integrity=\"{}\"\n        crossorigin=\"anonymous\" async></script>",
        embed_key.unwrap_or(t("snippet_placeholder")),
        crate::front::routes::front::base_url(state, headers),
        w.version,
        w.integrity
    )
}

/// The page that shows new keys once.
pub(super) fn keys_shown(
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

/// The active keys of `kind` an account may hold (issue 32: each key carries its own monthly
/// allowance, so more keys would be more free credits): the operator's cap for the account, else
/// the cap of the best plan among its keys (`policy.portal.key_caps`).
pub(super) fn key_cap(state: &AppState, account: &Account, keys: &[KeyRecord], kind: KeyKind) -> u32 {
    if let Some(cap) = account.key_cap {
        return u32::try_from(cap.max(0)).unwrap_or(u32::MAX);
    }
    let plan = keys.iter().map(|k| k.plan).max().unwrap_or(Plan::Free);
    state.portal().config().key_caps.of(plan).of(kind)
}

/// The refusal page when one more active key of `kind` would pass the account's cap (a rolled
/// key is the same key, so it is never counted twice; a disabled key frees its place).
pub(super) fn over_cap(
    state: &AppState,
    account: &Account,
    keys: &[KeyRecord],
    kind: KeyKind,
) -> Option<axum::response::Response> {
    let cap = key_cap(state, account, keys, kind);
    let active = keys.iter().filter(|k| k.kind == kind && k.state == KeyState::Active).count();
    if active < usize::try_from(cap).unwrap_or(usize::MAX) {
        return None;
    }
    tracing::info!(account_id = %account.id, kind = kind.as_str(), cap, "portal key refused: over the account's cap");
    let noun = if cap == 1 { "key" } else { "keys" };
    let message = format!(
        "This account has reached its limit of {cap} {} {noun}. Disable one of them to create or enable another, or ask the operator of this dsa server to raise the limit.",
        kind.as_str()
    );
    Some(message_page(StatusCode::FORBIDDEN, t("key_limit_title"), &message))
}

/// The key `id` if the signed-in account owns it (else 404, whether or not it exists).
pub(super) async fn owned_key(state: &AppState, signed: &Signed, id: &str) -> Result<KeyRecord, PortalError> {
    state.store().account_keys(&signed.account.id).await?.into_iter().find(|k| k.id == id).ok_or(PortalError::NotFound)
}

pub(super) async fn create_key(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> PortalResult {
    let signed = require_post(&state, &headers, &form).await?;
    let kind = KeyKind::parse(field(&form, "kind")).unwrap_or(KeyKind::Embed);
    let _one_at_a_time = state.portal().key_creation.lock().await;
    let keys = state.store().account_keys(&signed.account.id).await?;
    if let Some(refused) = over_cap(&state, &signed.account, &keys, kind) {
        return Ok(refused);
    }
    if let Err(wait) = state.portal().limits.create_key(&signed.account.id) {
        tracing::info!(account_id = %signed.account.id, "portal key creation rate limited");
        let page = message_page(StatusCode::TOO_MANY_REQUESTS, t("key_limit_title"), t("key_rate_limited"));
        return Ok(with_retry_after(page, wait.0));
    }
    let shown = make_key(&state, &signed.account, kind).await?;
    keys_shown(&state, &headers, &signed.session.csrf_token, t("keys_shown_title"), &[shown], None, &[])
}

/// Form values of the settings form, kept to re-show it with an error.
#[derive(Debug, Default, Serialize)]
pub(super) struct SettingsForm {
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
            text => match crate::pricing::purchase::CheckoutUrl::parse(text) {
                Ok(u) => Some(u.as_str().to_owned()),
                Err(crate::pricing::purchase::PurchaseError::InvalidCheckoutUrl { reason }) => {
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

/// What differs between the ways the key page is shown (a plain view, a refused settings form,
/// a name just checked); the rest (the key's row, watches and jobs) is read by
/// [`key_page_render`].
pub(super) struct KeyView<'a> {
    form: &'a SettingsForm,
    status: StatusCode,
    errors: &'a [String],
    saved: bool,
    /// The result of the page's "check a name" form, when it was just used.
    checked: Option<CheckedRow>,
}

/// A name checked from the key page (server keys): the verdict, and whether the page offers to
/// watch it (any verdict but available: a watch is for a name you cannot register now).
#[derive(Debug, Serialize)]
pub(super) struct CheckedRow {
    domain: String,
    status: String,
    available: bool,
    evidence: String,
    credits_remaining: i64,
}

/// Renders the page of `key`: its row, settings form, webhooks' state, watches and bulk jobs,
/// with what `view` adds.
pub(super) async fn key_page_render(
    state: &AppState,
    headers: &HeaderMap,
    signed: &Signed,
    key: &KeyRecord,
    view: KeyView<'_>,
) -> PortalResult {
    let row = key_row(state, key, &common::messages::billing_period(state.now())).await?;
    let watches = watch_rows(state, key).await?;
    let jobs = crate::front::bulk_jobs::routes::recent_jobs(state, key).await;
    let KeyView { form, status, errors, saved, checked } = view;
    let created_at = key.created_at.as_str();
    render(
        "portal/key.html",
        status,
        minijinja::context! {
            signed_in => true,
            csrf => signed.session.csrf_token.clone(),
            key => ser(&row),
            created_at => created_at.get(..10).unwrap_or(created_at),
            form => ser(form),
            errors => errors.to_vec(),
            saved,
            grace => human_secs(state.portal().config().roll_grace_secs),
            snippet => (row.kind == "embed").then(|| snippet(state, headers, None)),
            watches => ser(&watches),
            watch_fee => state.watches_config().monthly_fee,
            jobs => ser(&jobs),
            checked => checked.as_ref().map(ser),
        },
    )
}

/// One watch of the key page.
#[derive(Debug, Serialize)]
pub(super) struct WatchRow {
    domain: String,
    state: &'static str,
    expires_at: Option<String>,
    next_check_at: String,
}

/// The key's watches (the first 100), for its page.
async fn watch_rows(state: &AppState, key: &KeyRecord) -> Result<Vec<WatchRow>, PortalError> {
    let watches = state.store().list_watches(&key.id, None, 100).await?;
    Ok(watches
        .into_iter()
        .map(|w| WatchRow {
            domain: w.domain,
            // A watch not yet checked has no state to show: say so rather than "unknown".
            state: if w.last_checked_at.is_none() { t("watch_not_checked_yet") } else { w.state.as_str() },
            expires_at: w.expires_at.map(crate::watches::rfc3339),
            next_check_at: crate::watches::rfc3339(w.next_check_at),
        })
        .collect())
}

/// Adds a watch to a server key from its page (the API's path: the same fee, the same checks).
pub(super) async fn add_watch(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<HashMap<String, String>>,
) -> PortalResult {
    let signed = require_post(&state, &headers, &form).await?;
    let key = owned_key(&state, &signed, &id).await?;
    if key.kind != KeyKind::Server {
        return Ok(message_page(StatusCode::BAD_REQUEST, t("watch_refused_title"), t("watches_server_only")));
    }
    let added = async {
        let domain = crate::front::routes::check::parse_domain(&state, field(&form, "domain").trim())?;
        let events = crate::watches::EVENT_TYPES.iter().map(|e| (*e).to_owned()).collect();
        crate::front::routes::watches::create_for(&state, &key, &domain, events, String::new()).await
    }
    .await;
    match added {
        Ok((watch, ..)) => {
            tracing::info!(account_id = %signed.account.id, key_id = %key.id, watch = %watch.id, "portal watch added");
            Ok(redirect(&format!("/account/keys/{}#watches", key.id)))
        }
        Err(crate::front::error::ApiError::Internal(e)) => Err(PortalError::Internal(e)),
        Err(e) => Ok(message_page(e.status(), t("watch_refused_title"), &e.to_string())),
    }
}

pub(super) async fn key_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> PortalResult {
    let signed = require_session(&state, &headers).await?;
    let key = owned_key(&state, &signed, &id).await?;
    let saved = q.contains_key("saved");
    let form = SettingsForm::of(&key);
    let view = KeyView { form: &form, status: StatusCode::OK, errors: &[], saved, checked: None };
    key_page_render(&state, &headers, &signed, &key, view).await
}

/// Checks a name with a server key from its page (the API's check: the same credit, the same
/// errors) and shows the verdict above the watch form; a name that is not available can be
/// watched from there in one click.
pub(super) async fn check_name(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<HashMap<String, String>>,
) -> PortalResult {
    let signed = require_post(&state, &headers, &form).await?;
    let key = owned_key(&state, &signed, &id).await?;
    if key.kind != KeyKind::Server {
        return Ok(message_page(StatusCode::BAD_REQUEST, t("check_refused_title"), t("watches_server_only")));
    }
    let query = crate::front::routes::check::CheckQuery {
        domain: Some(field(&form, "domain").trim().to_owned()),
        ..Default::default()
    };
    let checked = match crate::front::routes::check::keyed_check(&state, &key, &query).await {
        Ok(checked) => checked,
        Err(crate::front::error::ApiError::Internal(e)) => return Err(PortalError::Internal(e)),
        Err(e) => return Ok(message_page(e.status(), t("check_refused_title"), &e.to_string())),
    };
    let verdict = &checked.outcome.verdict;
    let row = CheckedRow {
        domain: checked.outcome.domain.as_str().to_owned(),
        status: serde_json::to_value(verdict.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        available: verdict.status == common::verdict::Status::Available,
        evidence: verdict.evidence.clone(),
        credits_remaining: checked.credits_remaining,
    };
    tracing::info!(account_id = %signed.account.id, key_id = %key.id, domain = %row.domain, status = %row.status, "portal check");
    let settings = SettingsForm::of(&key);
    let view = KeyView { form: &settings, status: StatusCode::OK, errors: &[], saved: false, checked: Some(row) };
    key_page_render(&state, &headers, &signed, &key, view).await
}

pub(super) async fn save_settings(
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
            let view = KeyView {
                form: &values,
                status: StatusCode::BAD_REQUEST,
                errors: &errors,
                saved: false,
                checked: None,
            };
            key_page_render(&state, &headers, &signed, &key, view).await
        }
    }
}

pub(super) async fn roll_key(
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

pub(super) async fn set_state(
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
    let _one_at_a_time = state.portal().key_creation.lock().await;
    if to == KeyState::Active && key.state != KeyState::Active {
        let keys = state.store().account_keys(&signed.account.id).await?;
        if let Some(refused) = over_cap(state, &signed.account, &keys, key.kind) {
            return Ok(refused);
        }
    }
    state.store().set_key_state(&key.id, to).await?;
    tracing::info!(account_id = %signed.account.id, key_id = %key.id, state = to.as_str(), "portal key state changed");
    Ok(redirect("/account"))
}

pub(super) async fn disable_key(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<HashMap<String, String>>,
) -> PortalResult {
    set_state(&state, &headers, &id, &form, KeyState::Disabled).await
}

pub(super) async fn enable_key(
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
        // A wildcard over a public suffix would admit every site under it (Public Suffix List).
        let suffix = SettingsForm { origins: "https://*.co.uk".into(), ..SettingsForm::default() };
        let errors = suffix.parse().expect_err("public-suffix wildcard refused");
        assert!(errors[0].contains("co.uk, a public suffix"), "{errors:?}");
    }
}
