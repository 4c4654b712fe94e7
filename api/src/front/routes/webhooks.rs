//! `/v1/webhooks` (issue 25, a dsa extension): a server key registers HTTPS endpoints that
//! receive its events, signed as Standard Webhooks says; it reads every delivery and its
//! attempts, retries one, sends a test event, rotates the signing secret and enables a webhook
//! that was disabled. Embed keys get 403. No credits are charged; the keyed prelude (key,
//! origin, per-minute limit) applies.
//!
//! The delivery itself is [`crate::webhooks::deliver`]; the SSRF guards [`crate::webhooks::guard`].

use axum::Json;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::keyed::Keyed;
use super::{ApiQuery, optional};
use crate::events::{NewEvent, event_id};
use crate::front::error::{ApiError, ErrorBody};
use crate::front::keys::KeyRecord;
use crate::front::state::AppState;
use crate::webhooks::{
    AttemptRecord, DeliveryRecord, EVENT_TYPES, MAX_DESCRIPTION_CHARS, NewWebhook, WebhookRecord, guard, new_secret,
    rfc3339_ms, unix_ms,
};

/// Largest request body read, in bytes.
pub const MAX_BODY_BYTES: usize = 16 * 1024;
/// Deliveries per page by default, and at most.
pub const DELIVERIES_PAGE: i64 = 20;
/// Most deliveries per page.
pub const DELIVERIES_PAGE_MAX: i64 = 100;

/// A webhook as the API shows it (never its secret).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({"id": "wh_0193a0c4f1b27c5e9d1a3b4c5d6e7f80", "url": "https://hooks.example.com/dsa",
    "event_types": ["domain.available"], "description": "shop", "state": "active", "created_at": "2026-11-27T10:00:00Z"}))]
pub struct Webhook {
    /// The webhook's id (`wh_…`).
    pub id: String,
    /// Where deliveries go.
    pub url: String,
    /// The event types delivered; empty: every type.
    pub event_types: Vec<String>,
    /// The owner's note.
    pub description: String,
    /// `active`, or `disabled` (its endpoint failed for too long; `POST /v1/webhooks/{id}/enable`).
    #[schema(example = "active")]
    pub state: String,
    /// Why it was disabled.
    #[schema(nullable = false)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    /// Since when every attempt failed (absent after a success).
    #[schema(nullable = false)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<String>,
    /// Until when the previous secret still signs, after a rotation.
    #[schema(nullable = false)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_secret_valid_until: Option<String>,
    /// When it was registered.
    pub created_at: String,
}

impl Webhook {
    /// The view of a record at `now_ms`.
    pub fn of(record: &WebhookRecord, now_ms: i64) -> Self {
        Self {
            id: record.id.clone(),
            url: record.url.clone(),
            event_types: record.event_types.clone(),
            description: record.description.clone(),
            state: record.state.clone(),
            disabled_reason: record.disabled_reason.clone(),
            failing_since: record.failing_since_ms.map(rfc3339_ms),
            previous_secret_valid_until: record
                .previous_secret
                .as_ref()
                .filter(|(_, until)| *until > now_ms)
                .map(|(_, until)| rfc3339_ms(*until)),
            created_at: rfc3339_ms(record.created_at_ms),
        }
    }
}

/// `POST /v1/webhooks` body.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"url": "https://hooks.example.com/dsa", "event_types": ["domain.available", "domain.registered"], "description": "shop"}))]
pub struct CreateWebhook {
    /// An `https` URL on a public address (at most 2,048 bytes). Redirects are not followed.
    pub url: String,
    /// Event types to deliver (`domain.available`, `domain.registered`, `domain.expiring`,
    /// `domain.state_changed`, `job.finished`, `webhook.disabled`); empty or absent: every type.
    /// Test events are always delivered.
    #[serde(default)]
    pub event_types: Vec<String>,
    /// A note for the owner (at most 200 characters).
    #[serde(default)]
    pub description: String,
}

/// `POST /v1/webhooks` answer: the webhook and its signing secret, shown this once.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CreatedWebhook {
    /// Always true.
    pub success: bool,
    /// The webhook.
    pub webhook: Webhook,
    /// The signing secret (`whsec_` + base64), shown only in this answer: keep it to verify
    /// deliveries.
    #[schema(example = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")]
    pub secret: String,
}

/// A list of webhooks.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebhookList {
    /// Always true.
    pub success: bool,
    /// The key's webhooks, oldest first.
    pub webhooks: Vec<Webhook>,
}

/// One webhook.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WebhookAnswer {
    /// Always true.
    pub success: bool,
    /// The webhook.
    pub webhook: Webhook,
}

/// `DELETE /v1/webhooks/{id}` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DeletedWebhook {
    /// Always true.
    pub success: bool,
    /// The deleted webhook's id.
    pub id: String,
    /// Always true.
    pub deleted: bool,
}

/// A delivery of one event to the webhook.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Delivery {
    /// The delivery's id (`dlv_…`).
    pub id: String,
    /// The event's id: the `webhook-id` header of every attempt.
    pub event_id: String,
    /// The event's type.
    pub event_type: String,
    /// `pending` (an attempt is due at `next_attempt_at`), `delivered` or `failed` (every
    /// attempt of the schedule failed; `…/retry` tries once more).
    pub state: String,
    /// Attempts made.
    pub attempts: i64,
    /// When the next attempt is due (pending only).
    #[schema(nullable = false)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<String>,
    /// When a 2xx answer came.
    #[schema(nullable = false)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<String>,
    /// When the delivery was created.
    pub created_at: String,
    /// Every attempt, oldest first: status, error, latency.
    pub attempt_log: Vec<AttemptRecord>,
}

impl Delivery {
    fn of(record: DeliveryRecord) -> Self {
        Self {
            next_attempt_at: (record.state == "pending").then(|| rfc3339_ms(record.next_attempt_ms)),
            delivered_at: record.delivered_at_ms.map(rfc3339_ms),
            created_at: rfc3339_ms(record.created_at_ms),
            id: record.id,
            event_id: record.event_id,
            event_type: record.event_type,
            state: record.state,
            attempts: record.attempts,
            attempt_log: record.attempt_log,
        }
    }
}

/// `GET /v1/webhooks/{id}/deliveries` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DeliveryList {
    /// Always true.
    pub success: bool,
    /// Deliveries, newest first.
    pub deliveries: Vec<Delivery>,
    /// Pass as `cursor` for the next (older) page; absent on the last page.
    #[schema(nullable = false)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Query of `GET /v1/webhooks/{id}/deliveries`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeliveriesQuery {
    /// `next_cursor` of the previous page; absent: the newest deliveries.
    #[param(value_type = Option<String>, example = "42")]
    pub cursor: Option<String>,
    /// Deliveries per page, 1 to 100 (default 20).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100, example = 20)]
    pub limit: Option<String>,
}

/// `POST …/retry` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RetryAnswer {
    /// Always true.
    pub success: bool,
    /// The delivery, due now.
    pub delivery_id: String,
}

/// `POST …/test` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TestAnswer {
    /// Always true.
    pub success: bool,
    /// The test event's id (the `webhook-id` of its delivery).
    pub event_id: String,
}

/// `POST …/rotate-secret` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RotatedSecret {
    /// Always true.
    pub success: bool,
    /// The new signing secret, shown only in this answer.
    #[schema(example = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD")]
    pub secret: String,
    /// Until then deliveries carry a signature with the previous secret too.
    pub previous_secret_valid_until: String,
}

/// A webhook id in the path.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct WebhookPath {
    /// The webhook's id (`wh_…`).
    pub id: String,
}

/// A delivery in the path.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct DeliveryPath {
    /// The webhook's id (`wh_…`).
    pub id: String,
    /// The delivery's id (`dlv_…`).
    pub delivery_id: String,
}

/// Only server keys manage webhooks.
/// The refusal of an embed key.
const SERVER_KEY_ONLY: &str = "Webhooks are managed with a server key; an embed key cannot use them.";

fn server_key(key: &KeyRecord) -> Result<(), ApiError> {
    crate::front::routes::keyed::require_server_key(key, SERVER_KEY_ONLY)
}

fn bad_path(e: PathRejection) -> ApiError {
    ApiError::BadRequest(format!("Malformed id in the path: {e}."))
}

fn no_webhook() -> ApiError {
    ApiError::NoSuchResource("No webhook with this id for this key.".into())
}

async fn owned(state: &AppState, key: &KeyRecord, id: &str) -> Result<WebhookRecord, ApiError> {
    server_key(key)?;
    state.store().find_webhook(&key.id, id).await?.ok_or_else(no_webhook)
}

fn now_ms(state: &AppState) -> i64 {
    unix_ms(state.now())
}

#[utoipa::path(
    post,
    path = "/v1/webhooks",
    tag = "webhooks",
    operation_id = "createWebhook",
    summary = "Register a webhook (dsa extension)",
    description = "Registers an HTTPS endpoint that receives this key's events (`domain.available`, `domain.registered`, `domain.expiring`, `domain.state_changed` of its watches with the `WatchEventData` payload, `job.finished` of its bulk jobs with the `JobEventData` payload, `webhook.disabled`, and test events), signed as the Standard Webhooks specification says. The answer shows the signing secret once. Server keys only; at most 20 webhooks per key. The URL must use https and resolve to public addresses only.",
    request_body(content = CreateWebhook, content_type = "application/json"),
    security(("client_key" = [])),
    responses(
        (status = 201, description = "Registered; keep `secret` to verify deliveries.", body = CreatedWebhook),
        (status = 400, description = "Missing `client_key`, a malformed body, a URL that is not https or does not resolve to public addresses, an unknown event type, or the key already has 20 webhooks.", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended, or an embed key.", body = ErrorBody),
        (status = 415, description = "The body is not `application/json`.", body = ErrorBody,
            example = json!({"success": false, "error": "Unsupported media type: send the webhook as Content-Type: application/json."})),
        (status = 429, description = "Per-minute limit.", body = ErrorBody, headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
    )
)]
/// `POST /v1/webhooks`.
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
        return Err(ApiError::UnsupportedMediaType(
            "Unsupported media type: send the webhook as Content-Type: application/json.".into(),
        ));
    }
    let bytes = axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| ApiError::BadRequest(format!("Request body unreadable or over {MAX_BODY_BYTES} bytes.")))?;
    let request: CreateWebhook = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::BadRequest(format!(
            "Malformed JSON body ({e}); expected {{\"url\": \"https://…\", \"event_types\": [\"domain.available\", …]}}."
        ))
    })?;
    let mut event_types: Vec<String> = Vec::new();
    for t in &request.event_types {
        if !EVENT_TYPES.contains(&t.as_str()) || t == "webhook.test" {
            return Err(ApiError::BadRequest(format!(
                "Unknown event type {t:?}; use domain.available, domain.registered, domain.expiring, domain.state_changed, job.finished or webhook.disabled."
            )));
        }
        if !event_types.contains(t) {
            event_types.push(t.clone());
        }
    }
    if request.description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(ApiError::BadRequest(format!(
            "The description is longer than {MAX_DESCRIPTION_CHARS} characters."
        )));
    }
    let config = state.webhooks();
    let timeout = std::time::Duration::from_secs_f64(config.timeout_secs.clamp(0.05, 10.0));
    let target =
        guard::resolve(&request.url, config.test_only_allow_loopback, timeout).await.map_err(ApiError::BadRequest)?;
    let secret = new_secret();
    let now = now_ms(&state);
    let record = state
        .store()
        .create_webhook(NewWebhook {
            key_id: key.id.clone(),
            url: target.url.to_string(),
            event_types,
            description: request.description,
            secret: secret.clone(),
            now_ms: now,
        })
        .await?
        .ok_or_else(|| {
            ApiError::BadRequest(format!(
                "This key already has {} webhooks; delete one first.",
                crate::webhooks::MAX_WEBHOOKS_PER_KEY
            ))
        })?;
    let answer = CreatedWebhook { success: true, webhook: Webhook::of(&record, now), secret };
    Ok((StatusCode::CREATED, Json(answer)).into_response())
}

#[utoipa::path(
    get,
    path = "/v1/webhooks",
    tag = "webhooks",
    operation_id = "listWebhooks",
    summary = "List the key's webhooks (dsa extension)",
    description = "The key's webhooks, oldest first, without their secrets. Server keys only.",
    security(("client_key" = [])),
    responses(
        (status = 200, description = "The webhooks.", body = WebhookList),
        (status = 400, description = "Missing `client_key`.", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended, or an embed key.", body = ErrorBody),
        (status = 429, description = "Per-minute limit.", body = ErrorBody, headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
    )
)]
/// `GET /v1/webhooks`.
pub async fn list(State(state): State<AppState>, Keyed { key }: Keyed) -> Result<Json<WebhookList>, ApiError> {
    server_key(&key)?;
    let now = now_ms(&state);
    let webhooks = state.store().list_webhooks(&key.id).await?.iter().map(|w| Webhook::of(w, now)).collect();
    Ok(Json(WebhookList { success: true, webhooks }))
}

#[utoipa::path(
    get,
    path = "/v1/webhooks/{id}",
    tag = "webhooks",
    operation_id = "getWebhook",
    summary = "Read one webhook (dsa extension)",
    description = "One of the key's webhooks, without its secret. Server keys only.",
    params(WebhookPath),
    security(("client_key" = [])),
    responses(
        (status = 200, description = "The webhook.", body = WebhookAnswer),
        (status = 400, description = "Missing `client_key`.", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended, or an embed key.", body = ErrorBody),
        (status = 404, description = "No webhook with this id for this key.", body = ErrorBody,
            example = json!({"success": false, "error": "No webhook with this id for this key."})),
        (status = 429, description = "Per-minute limit.", body = ErrorBody, headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
    )
)]
/// `GET /v1/webhooks/{id}`.
pub async fn get_one(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    path: Result<Path<WebhookPath>, PathRejection>,
) -> Result<Json<WebhookAnswer>, ApiError> {
    let Path(WebhookPath { id }) = path.map_err(bad_path)?;
    let record = owned(&state, &key, &id).await?;
    Ok(Json(WebhookAnswer { success: true, webhook: Webhook::of(&record, now_ms(&state)) }))
}

#[utoipa::path(
    delete,
    path = "/v1/webhooks/{id}",
    tag = "webhooks",
    operation_id = "deleteWebhook",
    summary = "Delete a webhook (dsa extension)",
    description = "Deletes one of the key's webhooks: nothing more is delivered to it, pending deliveries included. Server keys only.",
    params(WebhookPath),
    security(("client_key" = [])),
    responses(
        (status = 200, description = "Deleted.", body = DeletedWebhook),
        (status = 400, description = "Missing `client_key`.", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended, or an embed key.", body = ErrorBody),
        (status = 404, description = "No webhook with this id for this key.", body = ErrorBody,
            example = json!({"success": false, "error": "No webhook with this id for this key."})),
        (status = 429, description = "Per-minute limit.", body = ErrorBody, headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
    )
)]
/// `DELETE /v1/webhooks/{id}`.
pub async fn delete(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    path: Result<Path<WebhookPath>, PathRejection>,
) -> Result<Json<DeletedWebhook>, ApiError> {
    let Path(WebhookPath { id }) = path.map_err(bad_path)?;
    server_key(&key)?;
    if !state.store().delete_webhook(&key.id, &id).await? {
        return Err(no_webhook());
    }
    Ok(Json(DeletedWebhook { success: true, id, deleted: true }))
}

#[utoipa::path(
    get,
    path = "/v1/webhooks/{id}/deliveries",
    tag = "webhooks",
    operation_id = "listWebhookDeliveries",
    summary = "List a webhook's deliveries (dsa extension)",
    description = "The webhook's deliveries, newest first, each with its attempts (time, HTTP status, error, latency) and, while pending, when the next attempt is due. Pages of `limit` (default 20, at most 100); pass `next_cursor` as `cursor` for older ones. Server keys only.",
    params(WebhookPath, DeliveriesQuery),
    security(("client_key" = [])),
    responses(
        (status = 200, description = "A page of deliveries.", body = DeliveryList),
        (status = 400, description = "Missing `client_key`, a malformed `cursor` or `limit`.", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended, or an embed key.", body = ErrorBody),
        (status = 404, description = "No webhook with this id for this key.", body = ErrorBody,
            example = json!({"success": false, "error": "No webhook with this id for this key."})),
        (status = 429, description = "Per-minute limit.", body = ErrorBody, headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
    )
)]
/// `GET /v1/webhooks/{id}/deliveries`.
pub async fn deliveries(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    path: Result<Path<WebhookPath>, PathRejection>,
    ApiQuery(query): ApiQuery<DeliveriesQuery>,
) -> Result<Json<DeliveryList>, ApiError> {
    let Path(WebhookPath { id }) = path.map_err(bad_path)?;
    let limit = match optional(&query.limit) {
        None => DELIVERIES_PAGE,
        Some(raw) => raw.parse::<i64>().ok().filter(|n| (1..=DELIVERIES_PAGE_MAX).contains(n)).ok_or_else(|| {
            ApiError::BadRequest(format!("limit must be a whole number from 1 to {DELIVERIES_PAGE_MAX}."))
        })?,
    };
    let before = match optional(&query.cursor) {
        None => i64::MAX,
        Some(raw) => raw
            .parse::<i64>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| ApiError::BadRequest("cursor must be the next_cursor of a previous page.".into()))?,
    };
    let record = owned(&state, &key, &id).await?;
    let page = state.store().list_deliveries(&record.id, before, limit + 1).await?;
    let more = page.len() as i64 > limit;
    let page: Vec<DeliveryRecord> = page.into_iter().take(limit as usize).collect();
    let next_cursor = if more { page.last().map(|d| d.seq.to_string()) } else { None };
    Ok(Json(DeliveryList { success: true, deliveries: page.into_iter().map(Delivery::of).collect(), next_cursor }))
}

#[utoipa::path(
    post,
    path = "/v1/webhooks/{id}/deliveries/{delivery_id}/retry",
    tag = "webhooks",
    operation_id = "retryWebhookDelivery",
    summary = "Retry a delivery now (dsa extension)",
    description = "Makes the delivery due now: a failed one gets one more attempt, a pending one is attempted without waiting for its schedule, a delivered one is sent again (same `webhook-id`). Server keys only.",
    params(DeliveryPath),
    security(("client_key" = [])),
    responses(
        (status = 202, description = "The delivery is due now.", body = RetryAnswer),
        (status = 400, description = "Missing `client_key`, or the webhook is disabled (enable it first).", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended, or an embed key.", body = ErrorBody),
        (status = 404, description = "No webhook with this id for this key (`No webhook with this id for this key.`), or no such delivery of it.", body = ErrorBody,
            example = json!({"success": false, "error": "No delivery with this id for this webhook."})),
        (status = 429, description = "Per-minute limit.", body = ErrorBody, headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
    )
)]
/// `POST /v1/webhooks/{id}/deliveries/{delivery_id}/retry`.
pub async fn retry(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    path: Result<Path<DeliveryPath>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path(DeliveryPath { id, delivery_id }) = path.map_err(bad_path)?;
    let record = owned(&state, &key, &id).await?;
    active(&record)?;
    if !state.store().retry_delivery(&record.id, &delivery_id, now_ms(&state)).await? {
        return Err(ApiError::NoSuchResource("No delivery with this id for this webhook.".into()));
    }
    Ok((StatusCode::ACCEPTED, Json(RetryAnswer { success: true, delivery_id })).into_response())
}

fn active(record: &WebhookRecord) -> Result<(), ApiError> {
    if record.state == "active" {
        Ok(())
    } else {
        Err(ApiError::BadRequest("The webhook is disabled; enable it first (POST /v1/webhooks/{id}/enable).".into()))
    }
}

#[utoipa::path(
    post,
    path = "/v1/webhooks/{id}/test",
    tag = "webhooks",
    operation_id = "testWebhook",
    summary = "Send a test event (dsa extension)",
    description = "Records a `webhook.test` event and delivers it to this webhook only, signed and retried like any event. Its delivery shows in `GET /v1/webhooks/{id}/deliveries`. Server keys only.",
    params(WebhookPath),
    security(("client_key" = [])),
    responses(
        (status = 202, description = "The test event is recorded; its delivery follows within a second or so.", body = TestAnswer),
        (status = 400, description = "Missing `client_key`, or the webhook is disabled (enable it first).", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended, or an embed key.", body = ErrorBody),
        (status = 404, description = "No webhook with this id for this key.", body = ErrorBody,
            example = json!({"success": false, "error": "No webhook with this id for this key."})),
        (status = 429, description = "Per-minute limit.", body = ErrorBody, headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
    )
)]
/// `POST /v1/webhooks/{id}/test`.
pub async fn test(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    path: Result<Path<WebhookPath>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path(WebhookPath { id }) = path.map_err(bad_path)?;
    let record = owned(&state, &key, &id).await?;
    active(&record)?;
    let occurrence = uuid::Uuid::now_v7().simple().to_string();
    let event = NewEvent {
        id: event_id(&["webhook.test", &record.id, &occurrence]),
        key_id: key.id.clone(),
        event_type: "webhook.test".into(),
        subject: Some(record.id.clone()),
        occurred_at: state.now(),
        data: serde_json::json!({"webhook_id": record.id, "message": "A test event from dsa."}),
    };
    let event_id = event.id.clone();
    state.store().emit_event(event).await?;
    Ok((StatusCode::ACCEPTED, Json(TestAnswer { success: true, event_id })).into_response())
}

#[utoipa::path(
    post,
    path = "/v1/webhooks/{id}/rotate-secret",
    tag = "webhooks",
    operation_id = "rotateWebhookSecret",
    summary = "Rotate a webhook's signing secret (dsa extension)",
    description = "Replaces the signing secret; the answer shows the new one once. Until `previous_secret_valid_until` (24 hours by default) every delivery carries two signatures in `webhook-signature`, one with each secret, so receivers can switch at their pace. Server keys only.",
    params(WebhookPath),
    security(("client_key" = [])),
    responses(
        (status = 200, description = "The new secret.", body = RotatedSecret),
        (status = 400, description = "Missing `client_key`.", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended, or an embed key.", body = ErrorBody),
        (status = 404, description = "No webhook with this id for this key.", body = ErrorBody,
            example = json!({"success": false, "error": "No webhook with this id for this key."})),
        (status = 429, description = "Per-minute limit.", body = ErrorBody, headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
    )
)]
/// `POST /v1/webhooks/{id}/rotate-secret`.
pub async fn rotate_secret(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    path: Result<Path<WebhookPath>, PathRejection>,
) -> Result<Json<RotatedSecret>, ApiError> {
    let Path(WebhookPath { id }) = path.map_err(bad_path)?;
    server_key(&key)?;
    let secret = new_secret();
    let until = now_ms(&state) + (state.webhooks().rotation_overlap_hours.max(0.0) * 3_600_000.0) as i64;
    state.store().rotate_webhook_secret(&key.id, &id, secret.clone(), until).await?.ok_or_else(no_webhook)?;
    Ok(Json(RotatedSecret { success: true, secret, previous_secret_valid_until: rfc3339_ms(until) }))
}

#[utoipa::path(
    post,
    path = "/v1/webhooks/{id}/enable",
    tag = "webhooks",
    operation_id = "enableWebhook",
    summary = "Enable a disabled webhook (dsa extension)",
    description = "Makes a webhook active again after it was disabled for failing; its pending deliveries resume. Server keys only.",
    params(WebhookPath),
    security(("client_key" = [])),
    responses(
        (status = 200, description = "The webhook, active.", body = WebhookAnswer),
        (status = 400, description = "Missing `client_key`.", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended, or an embed key.", body = ErrorBody),
        (status = 404, description = "No webhook with this id for this key.", body = ErrorBody,
            example = json!({"success": false, "error": "No webhook with this id for this key."})),
        (status = 429, description = "Per-minute limit.", body = ErrorBody, headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
    )
)]
/// `POST /v1/webhooks/{id}/enable`.
pub async fn enable(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    path: Result<Path<WebhookPath>, PathRejection>,
) -> Result<Json<WebhookAnswer>, ApiError> {
    let Path(WebhookPath { id }) = path.map_err(bad_path)?;
    server_key(&key)?;
    let record = state.store().enable_webhook(&key.id, &id).await?.ok_or_else(no_webhook)?;
    Ok(Json(WebhookAnswer { success: true, webhook: Webhook::of(&record, now_ms(&state)) }))
}
