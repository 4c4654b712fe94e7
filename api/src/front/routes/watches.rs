//! `/v1/watches` (issue 25, our extension): watch a registrable domain through its lifecycle and
//! read the events of its changes.
//!
//! * `POST /v1/watches` — body `{"domain": …, "events"?: […], "note"?: …}`; charges the monthly
//!   fee (`watches.monthly_fee`) at once (429 when the allowance cannot cover it). A key watching
//!   the domain already gets that watch back (200, nothing charged); a new one is 201.
//! * `GET /v1/watches` — the key's watches, oldest first, `limit` (1–100, default 50) per page,
//!   `cursor` from the previous page's `next_cursor`.
//! * `GET|DELETE /v1/watches/{id}` — one watch; deleting refunds nothing and charges nothing more.
//! * `GET /v1/watches/{id}/events` — its events in emission order, `after` an event id.
//!
//! Server keys only (an embed key lives in browsers, and a watch is an account's standing
//! order): 403 for embed keys. Another key's watch is a 404, as one that does not exist. The
//! watch is read and written through the store; the re-checks are the scheduler's
//! ([`crate::watches::scheduler`]).

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::check::parse_domain;
use super::keyed::Keyed;
use super::{ApiQuery, optional};
use crate::events::EventRecord;
use crate::front::error::{ApiError, ErrorBody};
use crate::front::keys::KeyRecord;
use crate::front::state::AppState;
use crate::watches::{EVENT_TYPES, Lifecycle, NewWatch, WatchRecord, fee_event_id, new_watch_id, rfc3339};

/// Largest `POST /v1/watches` body, bytes.
pub const MAX_BODY_BYTES: usize = 4 * 1024;
/// Longest note, characters.
pub const MAX_NOTE_CHARS: usize = 500;
/// Page size bounds of the lists.
pub const MAX_PAGE: i64 = 100;
/// Default page size.
pub const DEFAULT_PAGE: i64 = 50;
/// The 403 text for an embed key.
pub const SERVER_KEY_ONLY: &str = "Watches need a server key: embed keys cannot create or read watches.";
/// The 404 text for a watch the key does not hold.
pub const NO_SUCH_WATCH: &str = "No such watch for this key.";
/// The 415 text of a `POST` whose body is not JSON.
pub const UNSUPPORTED_MEDIA_TYPE: &str =
    "Unsupported media type: send the watch as Content-Type: application/json, {\"domain\": \"example.com\"}.";

/// The body of `POST /v1/watches`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"domain": "example.com", "events": ["domain.available"], "note": "for the new shop"}))]
pub struct WatchRequest {
    /// The name to watch, as a U-label or A-label; reduced to its registrable domain.
    #[schema(min_length = 1, max_length = 1024, example = "example.com")]
    pub domain: String,
    /// The event types to record for this watch (default: all four). Each of
    /// `domain.available`, `domain.registered`, `domain.expiring`, `domain.state_changed`.
    #[serde(default)]
    #[schema(value_type = Option<Vec<WatchEventType>>)]
    pub events: Option<Vec<String>>,
    /// Your own note (at most 500 characters), shown with the watch.
    #[serde(default)]
    #[schema(max_length = 500)]
    pub note: Option<String>,
}

/// An event type a watch records.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
pub enum WatchEventType {
    /// The registry says the name is free to register (never on DNS alone).
    #[serde(rename = "domain.available")]
    Available,
    /// The name became registered (from available, reserved or restricted).
    #[serde(rename = "domain.registered")]
    Registered,
    /// The registry's expiry date is within the operator's window (30 days by default); once
    /// per expiry date.
    #[serde(rename = "domain.expiring")]
    Expiring,
    /// Any change of lifecycle state, with `from` and `to`.
    #[serde(rename = "domain.state_changed")]
    StateChanged,
}

/// A watch as the API shows it. Instants are RFC 3339 in UTC.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WatchObject {
    /// The watch's id (`wch_` + 32 hex digits).
    #[schema(example = "wch_0193a8f25a7e7c319f042b1d6f0c9e55")]
    pub id: String,
    /// The registrable domain watched (A-label).
    pub domain: String,
    /// Where the name is in its lifecycle, as of `last_checked_at` (`unknown` until the first
    /// check, which follows creation within seconds).
    pub state: Lifecycle,
    /// The event types recorded for this watch.
    pub events: Vec<WatchEventType>,
    /// Your note.
    pub note: String,
    /// The registration's EPP statuses at the last check (RFC 5731 names such as
    /// `clientTransferProhibited`, `redemptionPeriod`, `pendingDelete`); empty when not registered.
    pub epp_status: Vec<String>,
    /// The registry's expiry date; `null` when it publishes none (or the name is not registered).
    #[schema(required = true, format = DateTime)]
    pub expires_at: Option<String>,
    /// The earliest time the name can become free, when it can be computed (near expiry, in
    /// redemption or pending delete); the checks tighten around it.
    #[schema(required = true, format = DateTime)]
    pub predicted_drop_at: Option<String>,
    /// What the last check saw, in words (the registry service asked and its answer).
    pub evidence: String,
    /// The last check with a definitive registry answer; `null` before the first.
    #[schema(required = true, format = DateTime)]
    pub last_checked_at: Option<String>,
    /// When the name is checked next.
    #[schema(format = DateTime)]
    pub next_check_at: String,
    /// When the watch was created.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Credits the watch costs each month (charged at creation and at each month's reset).
    pub monthly_fee: i64,
}

/// The answer to `POST /v1/watches`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WatchCreated {
    /// Always true.
    pub success: bool,
    /// The watch.
    pub watch: WatchObject,
    /// Credits charged by this request: the monthly fee for a new watch, 0 when the key already
    /// watched the domain.
    pub credits_cost: i64,
    /// Credits left this month.
    pub credits_remaining: i64,
}

/// The answer to `GET /v1/watches/{id}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WatchResponse {
    /// Always true.
    pub success: bool,
    /// The watch.
    pub watch: WatchObject,
}

/// The answer to `GET /v1/watches`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WatchList {
    /// Always true.
    pub success: bool,
    /// The watches of this page, oldest first.
    pub watches: Vec<WatchObject>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// The answer to `DELETE /v1/watches/{id}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WatchDeleted {
    /// Always true.
    pub success: bool,
    /// The watch deleted.
    pub id: String,
    /// Always true.
    pub deleted: bool,
}

/// The payload of every watch event (also the `data` of its webhook delivery). Instants are RFC
/// 3339 in UTC.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WatchEventData {
    /// The watch the event belongs to.
    pub watch_id: String,
    /// The registrable domain (A-label).
    pub domain: String,
    /// The state before the change (for `domain.expiring` without a change: the same as `to`).
    pub from: Lifecycle,
    /// The state after it.
    pub to: Lifecycle,
    /// EPP statuses the registry showed (empty when not registered).
    pub epp_status: Vec<String>,
    /// The registry's expiry date, when published.
    #[schema(required = true, format = DateTime)]
    pub expires_at: Option<String>,
    /// The predicted earliest drop, when it can be computed.
    #[schema(required = true, format = DateTime)]
    pub predicted_drop_at: Option<String>,
    /// The registry's answer that decided, in words.
    pub evidence: String,
    /// When the check was made.
    #[schema(format = DateTime)]
    pub checked_at: String,
}

/// One event of a watch.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WatchEvent {
    /// The event's stable id (`evt_` + 32 hex digits): the same for every delivery of it.
    #[schema(example = "evt_5f0c1e2d3b4a59687766554433221100")]
    pub id: String,
    /// What happened.
    #[serde(rename = "type")]
    pub event_type: WatchEventType,
    /// The watch id.
    pub subject: String,
    /// When it was recorded.
    #[schema(format = DateTime)]
    pub occurred_at: String,
    /// The payload (stored as a JSON object of this shape).
    #[schema(value_type = WatchEventData)]
    pub data: serde_json::Value,
}

/// The answer to `GET /v1/watches/{id}/events`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WatchEvents {
    /// Always true.
    pub success: bool,
    /// Events in the order they were recorded.
    pub events: Vec<WatchEvent>,
    /// Pass as `after` for the next page; `null` on the last page.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
}

/// Query parameters of `GET /v1/watches`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WatchListQuery {
    /// Watches per page, 1 to 100 (default 50).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100, example = 50)]
    pub limit: Option<String>,
    /// The `next_cursor` of the previous page.
    #[param(value_type = Option<String>)]
    pub cursor: Option<String>,
}

/// Query parameters of `GET /v1/watches/{id}/events`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WatchEventsQuery {
    /// Events per page, 1 to 100 (default 50).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100, example = 50)]
    pub limit: Option<String>,
    /// The id of the last event already read (the previous page's `next_cursor`).
    #[param(value_type = Option<String>)]
    pub after: Option<String>,
}

/// Only server keys hold watches.
fn server_key(key: &KeyRecord) -> Result<(), ApiError> {
    super::keyed::require_server_key(key, SERVER_KEY_ONLY)
}

fn page_size(limit: &Option<String>) -> Result<i64, ApiError> {
    match optional(limit) {
        None => Ok(DEFAULT_PAGE),
        Some(raw) => match raw.parse::<i64>() {
            Ok(n) if (1..=MAX_PAGE).contains(&n) => Ok(n),
            _ => Err(ApiError::BadRequest(format!("limit must be a whole number from 1 to {MAX_PAGE}."))),
        },
    }
}

fn event_type(name: &str) -> Option<WatchEventType> {
    serde_json::from_value(serde_json::Value::String(name.to_owned())).ok()
}

/// The API's view of a stored watch.
pub fn watch_object(watch: &WatchRecord, monthly_fee: i64) -> WatchObject {
    WatchObject {
        id: watch.id.clone(),
        domain: watch.domain.clone(),
        state: watch.state,
        events: watch.events.iter().filter_map(|e| event_type(e)).collect(),
        note: watch.note.clone(),
        epp_status: watch.epp_status.clone(),
        expires_at: watch.expires_at.map(rfc3339),
        predicted_drop_at: watch.predicted_drop_at.map(rfc3339),
        evidence: watch.evidence.clone(),
        last_checked_at: watch.last_checked_at.map(rfc3339),
        next_check_at: rfc3339(watch.next_check_at),
        created_at: rfc3339(watch.created_at),
        monthly_fee,
    }
}

async fn find(state: &AppState, key: &KeyRecord, id: &str) -> Result<WatchRecord, ApiError> {
    // Ids are short ASCII; anything else cannot name a watch (and is not sent to the store).
    if id.len() > 64 || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(ApiError::NoSuchResource(NO_SUCH_WATCH.into()));
    }
    state.store().find_watch(&key.id, id).await?.ok_or_else(|| ApiError::NoSuchResource(NO_SUCH_WATCH.into()))
}

/// Handler of `POST /v1/watches`.
#[utoipa::path(
    post,
    path = "/v1/watches",
    tag = "watches",
    operation_id = "createWatch",
    summary = "Watch a domain name's lifecycle",
    description = "Our extension. Follows a registrable domain through its lifecycle (registered, expiring, redemption, pending delete, available; or reserved, restricted) and records an event for each change, readable at `GET /v1/watches/{id}/events` (and delivered to your webhooks). \
The name is re-checked in the background with the registry's own answers (RDAP, else WHOIS): rarely while its expiry date is far, twice a day near expiry and in redemption, and every 30 seconds around its predicted drop. \
`domain.available` is only recorded on the registry's word, never because the name vanished from DNS. \
A watch costs its monthly fee in credits (20 by default; the operator sets it, `monthly_fee` in the answer), charged at creation and at each month's reset; the re-checks themselves cost nothing. A server key is required.",
    request_body(content = WatchRequest, content_type = "application/json", description = "The name to watch (at most 4 KiB)."),
    security(("client_key" = [])),
    responses(
        (status = 201, description = "The watch, created; its fee charged. `state` is `unknown` until the first check, seconds later.", body = WatchCreated),
        (status = 200, description = "The key already watches this domain: that watch, nothing charged.", body = WatchCreated),
        (status = 400, description = "Missing `client_key`, a body that is not JSON of the documented shape or is over 4 KiB, an invalid domain or unsupported TLD, an unknown event type, a note over 500 characters, or the key's watch limit reached.", body = ErrorBody),
        (status = 403, description = "Key not found or disabled, an embed key (watches need a server key), or a server key sent from a browser.", body = ErrorBody),
        (status = 415, description = "The body is not `application/json`.", body = ErrorBody,
            example = json!({"success": false, "error": UNSUPPORTED_MEDIA_TYPE})),
        (status = 429, description = "Per-minute limit, or the monthly credits cannot cover the watch's fee (`Monthly credit limit reached`; nothing created).", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
    )
)]
pub async fn create(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    server_key(&key)?;
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Err(ApiError::UnsupportedMediaType(UNSUPPORTED_MEDIA_TYPE.into()));
    }
    let bytes = axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| ApiError::BadRequest(format!("Request body unreadable or over {MAX_BODY_BYTES} bytes.")))?;
    let request: WatchRequest = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::BadRequest(format!("Malformed JSON body ({e}); expected {{\"domain\": \"example.com\"}}."))
    })?;
    let domain = parse_domain(&state, request.domain.trim())?;
    let mut events = Vec::new();
    match request.events {
        None => events.extend(EVENT_TYPES.iter().map(|e| (*e).to_owned())),
        Some(asked) => {
            for name in asked {
                if !EVENT_TYPES.contains(&name.as_str()) {
                    return Err(ApiError::BadRequest(format!(
                        "Unknown event type {:?}; expected some of {}.",
                        name.chars().take(64).collect::<String>(),
                        EVENT_TYPES.join(", ")
                    )));
                }
                if !events.contains(&name) {
                    events.push(name);
                }
            }
            if events.is_empty() {
                return Err(ApiError::BadRequest("events must name at least one event type.".into()));
            }
        }
    }
    let note = request.note.unwrap_or_default();
    if note.chars().count() > MAX_NOTE_CHARS {
        return Err(ApiError::BadRequest(format!("note must be at most {MAX_NOTE_CHARS} characters.")));
    }
    let (watch, credits_cost, credits_remaining, created) = create_for(&state, &key, &domain, events, note).await?;
    let fee = state.watches_config().monthly_fee.max(0);
    let body = WatchCreated { success: true, watch: watch_object(&watch, fee), credits_cost, credits_remaining };
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(body)).into_response())
}

/// Creates `key`'s watch of `domain` and charges its fee (the API's and the portal's one path):
/// the watch, the credits charged, the credits left, and whether it is new (false: the key
/// already watched the domain, nothing charged).
///
/// # Errors
/// 400 at the key's watch limit, 429 when the fee cannot be paid (nothing created), the store's
/// and the ledger's failures.
pub async fn create_for(
    state: &AppState,
    key: &KeyRecord,
    domain: &common::domain::DomainName,
    events: Vec<String>,
    note: String,
) -> Result<(WatchRecord, i64, i64, bool), ApiError> {
    let config = state.watches_config();
    let fee = config.monthly_fee.max(0);
    let store = state.store();
    if let Some(existing) = store.find_watch_by_domain(&key.id, domain.as_str()).await? {
        return Ok((existing, 0, remaining(state, key).await, false));
    }
    if store.count_watches(&key.id).await? >= config.max_per_key {
        return Err(ApiError::BadRequest(format!(
            "This key holds the most watches allowed ({}); delete one first.",
            config.max_per_key
        )));
    }
    let now = state.now();
    let reservation =
        if fee > 0 { Some(state.credits().reserve(key, crate::watches::FEE_ENDPOINT, fee, now).await?) } else { None };
    let period = common::messages::billing_period(now);
    let new = NewWatch {
        id: new_watch_id(),
        key_id: key.id.clone(),
        domain: domain.as_str().to_owned(),
        events,
        note,
        next_check_at: now.unix_timestamp(),
        charged_period: period.clone(),
        created_at: now.unix_timestamp(),
    };
    let Some(watch) = store.create_watch(new).await? else {
        // Created by a concurrent request of the same key meanwhile: the reservation is released.
        let existing = store
            .find_watch_by_domain(&key.id, domain.as_str())
            .await?
            .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("watch neither created nor found")))?;
        return Ok((existing, 0, remaining(state, key).await, false));
    };
    let credits_remaining = match reservation {
        Some(reservation) => match reservation.commit_as(fee_event_id(&watch.id, &period)).await {
            Ok(left) => left,
            Err(e) => {
                // Not charged: the watch must not exist either.
                let _ = store.delete_watch(&key.id, &watch.id).await;
                return Err(e);
            }
        },
        None => remaining(state, key).await,
    };
    Ok((watch, fee, credits_remaining, true))
}

/// Credits left this month without charging anything (a zero hold, released at once).
async fn remaining(state: &AppState, key: &KeyRecord) -> i64 {
    let settled = state.store().settled_usage(&key.id, &common::messages::billing_period(state.now())).await;
    (key.monthly_allowance - settled.unwrap_or(0)).max(0)
}

/// Handler of `GET /v1/watches`.
#[utoipa::path(
    get,
    path = "/v1/watches",
    tag = "watches",
    operation_id = "listWatches",
    summary = "List your watches",
    description = "Our extension. The key's watches, oldest first, a page at a time: pass the answer's `next_cursor` as `cursor` for the next page. Free. A server key is required.",
    params(WatchListQuery),
    security(("client_key" = [])),
    responses(
        (status = 200, description = "A page of watches.", body = WatchList),
        (status = 400, description = "Missing `client_key`, or `limit` outside 1–100.", body = ErrorBody),
        (status = 403, description = "Key not found or disabled, an embed key, or a server key sent from a browser.", body = ErrorBody),
        (status = 429, description = "Per-minute limit.", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
    )
)]
pub async fn list(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    ApiQuery(query): ApiQuery<WatchListQuery>,
) -> Result<Json<WatchList>, ApiError> {
    server_key(&key)?;
    let limit = page_size(&query.limit)?;
    let cursor = optional(&query.cursor);
    if cursor.is_some_and(|c| c.len() > 64) {
        return Err(ApiError::BadRequest("cursor is not one this API gave.".into()));
    }
    let mut watches = state.store().list_watches(&key.id, cursor, limit + 1).await?;
    let next_cursor = if watches.len() as i64 > limit {
        watches.truncate(limit as usize);
        watches.last().map(|w| w.id.clone())
    } else {
        None
    };
    let fee = state.watches_config().monthly_fee.max(0);
    Ok(Json(WatchList { success: true, watches: watches.iter().map(|w| watch_object(w, fee)).collect(), next_cursor }))
}

/// Handler of `GET /v1/watches/{id}`.
#[utoipa::path(
    get,
    path = "/v1/watches/{id}",
    tag = "watches",
    operation_id = "getWatch",
    summary = "Read one watch",
    description = "Our extension. The watch with the name's lifecycle state as of its last check, the registry's expiry date, the predicted earliest drop and the next check. Free. A server key is required.",
    params(("id" = String, Path, description = "The watch's id.", example = "wch_0193a8f25a7e7c319f042b1d6f0c9e55")),
    security(("client_key" = [])),
    responses(
        (status = 200, description = "The watch.", body = WatchResponse),
        (status = 400, description = "Missing `client_key`.", body = ErrorBody),
        (status = 403, description = "Key not found or disabled, an embed key, or a server key sent from a browser.", body = ErrorBody),
        (status = 404, description = "The key holds no watch with this id.", body = ErrorBody,
            example = json!({"success": false, "error": NO_SUCH_WATCH})),
        (status = 429, description = "Per-minute limit.", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
    )
)]
pub async fn get_one(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    Path(id): Path<String>,
) -> Result<Json<WatchResponse>, ApiError> {
    server_key(&key)?;
    let watch = find(&state, &key, &id).await?;
    Ok(Json(WatchResponse { success: true, watch: watch_object(&watch, state.watches_config().monthly_fee.max(0)) }))
}

/// Handler of `DELETE /v1/watches/{id}`.
#[utoipa::path(
    delete,
    path = "/v1/watches/{id}",
    tag = "watches",
    operation_id = "deleteWatch",
    summary = "Stop watching",
    description = "Our extension. Deletes the watch: no more checks, events or fees. This month's fee is not refunded. Its events already recorded are kept. A server key is required.",
    params(("id" = String, Path, description = "The watch's id.", example = "wch_0193a8f25a7e7c319f042b1d6f0c9e55")),
    security(("client_key" = [])),
    responses(
        (status = 200, description = "Deleted.", body = WatchDeleted),
        (status = 400, description = "Missing `client_key`.", body = ErrorBody),
        (status = 403, description = "Key not found or disabled, an embed key, or a server key sent from a browser.", body = ErrorBody),
        (status = 404, description = "The key holds no watch with this id.", body = ErrorBody,
            example = json!({"success": false, "error": NO_SUCH_WATCH})),
        (status = 429, description = "Per-minute limit.", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
    )
)]
pub async fn delete(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    Path(id): Path<String>,
) -> Result<Json<WatchDeleted>, ApiError> {
    server_key(&key)?;
    let watch = find(&state, &key, &id).await?;
    if !state.store().delete_watch(&key.id, &watch.id).await? {
        return Err(ApiError::NoSuchResource(NO_SUCH_WATCH.into()));
    }
    Ok(Json(WatchDeleted { success: true, id: watch.id, deleted: true }))
}

/// Handler of `GET /v1/watches/{id}/events`.
#[utoipa::path(
    get,
    path = "/v1/watches/{id}/events",
    tag = "watches",
    operation_id = "listWatchEvents",
    summary = "Read a watch's events",
    description = "Our extension. What happened to the watched name, in the order it was recorded: `domain.state_changed` (every change of lifecycle state), `domain.registered`, `domain.expiring` and `domain.available`. Each event has a stable id, recorded once however many times the name is re-checked; the same id and `data` are delivered to your webhooks. Pass the answer's `next_cursor` as `after` for the next page. Free. A server key is required.",
    params(("id" = String, Path, description = "The watch's id.", example = "wch_0193a8f25a7e7c319f042b1d6f0c9e55"), WatchEventsQuery),
    security(("client_key" = [])),
    responses(
        (status = 200, description = "A page of events.", body = WatchEvents),
        (status = 400, description = "Missing `client_key`, `limit` outside 1–100, or an `after` that is not an event of this watch.", body = ErrorBody),
        (status = 403, description = "Key not found or disabled, an embed key, or a server key sent from a browser.", body = ErrorBody),
        (status = 404, description = "The key holds no watch with this id.", body = ErrorBody,
            example = json!({"success": false, "error": NO_SUCH_WATCH})),
        (status = 429, description = "Per-minute limit.", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
    )
)]
pub async fn events(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<WatchEventsQuery>,
) -> Result<Json<WatchEvents>, ApiError> {
    server_key(&key)?;
    let watch = find(&state, &key, &id).await?;
    let limit = page_size(&query.limit)?;
    let after = match optional(&query.after) {
        None => 0,
        Some(after) => {
            let bad = || ApiError::BadRequest("after must be the id of an event of this watch.".into());
            if after.len() > 64 {
                return Err(bad());
            }
            let event = state.store().find_event(&key.id, after).await?.ok_or_else(bad)?;
            if event.subject.as_deref() != Some(watch.id.as_str()) {
                return Err(bad());
            }
            event.seq
        }
    };
    let mut records = state.store().list_events(&key.id, Some(&watch.id), after, limit + 1).await?;
    let next_cursor = if records.len() as i64 > limit {
        records.truncate(limit as usize);
        records.last().map(|e| e.id.clone())
    } else {
        None
    };
    let events = records.into_iter().filter_map(watch_event).collect();
    Ok(Json(WatchEvents { success: true, events, next_cursor }))
}

/// A stored event as the API shows it (an event of another type than a watch's is skipped).
fn watch_event(record: EventRecord) -> Option<WatchEvent> {
    Some(WatchEvent {
        id: record.id,
        event_type: event_type(&record.event_type)?,
        subject: record.subject?,
        occurred_at: record.occurred_at,
        data: record.data,
    })
}
