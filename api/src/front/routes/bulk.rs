//! `GET` and `POST /v1/domains/bulk` (spec §2.5, §4.4, §8): up to ten availability checks in one
//! request, run in parallel. Cost: 1 credit per domain that gets a definitive verdict.
//!
//! Order: key prelude (400/403; the per-minute limit counts the whole bulk as **one** request,
//! 429) → media type (POST: 415) → body (POST: 400 when unreadable, over [`MAX_BODY_BYTES`] or
//! malformed) → parameters (400) → the list (400 when empty or over [`MAX_DOMAINS`] entries) →
//! each entry normalised like a single check (a rejected entry goes to `invalid`, duplicates
//! after normalisation are checked and reported once) → credits for every distinct valid domain
//! held up front (429 `Monthly credit limit reached` when the allowance cannot cover them all;
//! nothing charged) → every check at once, each [`evaluate`] as for `GET /v1/domains/check`
//! (cache, else a job on the bus; the jobs go out together and the replies are gathered, so a
//! bulk costs about its slowest check) → only the entries with a definitive verdict are charged;
//! the rest of the hold is given back.
//!
//! Two response forms:
//! * `application/json` (default): the §2.5 object once every check is done. When no valid entry
//!   gets a definitive verdict, a 502 (nothing charged), as for a single check.
//! * `application/x-ndjson` (when the request's `Accept` prefers it): one JSON line per distinct
//!   valid domain as its verdict arrives (completion order, each line carrying its `domain`), then
//!   one summary line (`"summary": true`) with `total`, `invalid` and the credits. Each line's
//!   credit is committed just before the line is written; a client that hangs up early is
//!   charged only for the lines already written (the rest of the hold is given back). The stream
//!   keeps the request's deadline (`server.request_timeout_secs`): past it, the checks still
//!   running are dropped uncharged and an error line (`{"success":false,"error":…}`) ends it.
//!
//! Demo mode (spec §5.6) covers availability checks only: a bulk needs a key (the
//! [`require_key`](super::keyed::require_key) prelude, 400 without `client_key`).

use std::collections::HashSet;
use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use common::domain::DomainName;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

use super::check::{CheckOptions, CheckOutcome, CheckQuery, VerdictInfo, evaluate, parse_domain};
use super::keyed::Keyed;
use super::{ApiQuery, Flag, required};
use crate::front::credits::Reservation;
use crate::front::error::{ApiError, ErrorBody};
use crate::front::keys::KeyRecord;
use crate::front::state::AppState;
use crate::pricing::Pricing;
use crate::pricing::purchase::Purchase;

/// Most entries one bulk request may carry (spec §4.4, §8); more is a 400 naming the limit.
pub const MAX_DOMAINS: usize = 10;
/// Credits per domain of a bulk check (spec §8), charged for a definitive verdict only.
pub const COST_PER_DOMAIN: i64 = 1;
/// Largest `POST` body read, in bytes: ten domains of the longest accepted input (1,024
/// characters each, as for `domain` of a single check) fit with room to spare. Larger is a 400.
pub const MAX_BODY_BYTES: usize = 16 * 1024;
/// The media type of the streaming form (newline-delimited JSON).
pub const NDJSON: &str = "application/x-ndjson";
/// The 415 text of a `POST` whose body is not `application/json` (also the document's example).
pub const UNSUPPORTED_MEDIA_TYPE: &str =
    "Unsupported media type: send the list as Content-Type: application/json, {\"domains\": [\"example.com\", …]}.";

/// Query parameters of `GET /v1/domains/bulk` (spec §4.4). `client_key` is the security scheme.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BulkQuery {
    /// Comma-separated domain names, 1 to 10 entries (each as `domain` of a single check).
    /// Every entry counts towards the limit and `total`, blank and duplicate ones included.
    #[param(required = true, value_type = String, min_length = 1, example = "example.com,dsa-demo-available.net")]
    pub domains: Option<String>,
    /// As for `GET /v1/domains/check`: percentage markup for this request's displayed prices.
    #[param(value_type = Option<f64>, minimum = 0, maximum = 1000, example = 10)]
    pub commission_percent: Option<String>,
    /// As for `GET /v1/domains/check`: custom checkout URL, `purchase.source` is `client_url`.
    #[param(value_type = Option<String>, example = "https://shop.example/cart")]
    pub redirect_url: Option<String>,
    /// As for `GET /v1/domains/check`: `1` forces the platform checkout URL.
    #[param(value_type = Option<Flag>, default = 0)]
    pub redirect_checkout: Option<String>,
}

/// Query parameters of `POST /v1/domains/bulk` (spec §4.4): the domains are in the body.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BulkPostQuery {
    /// As for `GET /v1/domains/check`: percentage markup for this request's displayed prices.
    #[param(value_type = Option<f64>, minimum = 0, maximum = 1000, example = 10)]
    pub commission_percent: Option<String>,
    /// As for `GET /v1/domains/check`: custom checkout URL, `purchase.source` is `client_url`.
    #[param(value_type = Option<String>, example = "https://shop.example/cart")]
    pub redirect_url: Option<String>,
    /// As for `GET /v1/domains/check`: `1` forces the platform checkout URL.
    #[param(value_type = Option<Flag>, default = 0)]
    pub redirect_checkout: Option<String>,
}

impl BulkQuery {
    fn options(&self) -> Result<CheckOptions, ApiError> {
        options(&self.commission_percent, &self.redirect_url, &self.redirect_checkout)
    }
}

impl BulkPostQuery {
    fn options(&self) -> Result<CheckOptions, ApiError> {
        options(&self.commission_percent, &self.redirect_url, &self.redirect_checkout)
    }
}

fn options(
    commission_percent: &Option<String>,
    redirect_url: &Option<String>,
    redirect_checkout: &Option<String>,
) -> Result<CheckOptions, ApiError> {
    CheckOptions::from_query(&CheckQuery {
        commission_percent: commission_percent.clone(),
        redirect_url: redirect_url.clone(),
        redirect_checkout: redirect_checkout.clone(),
        ..CheckQuery::default()
    })
}

/// The `POST` body: `{"domains": ["example.com", …]}`. Other members are ignored.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[schema(example = json!({"domains": ["example.com", "dsa-demo-available.net"]}))]
pub struct BulkRequest {
    /// 1 to 10 domain names, each as `domain` of a single check. Every entry counts towards the
    /// limit and `total`, blank and duplicate ones included.
    #[schema(min_items = 1, max_items = 10)]
    pub domains: Vec<String>,
}

/// One checked domain (the fields of an availability check), or why it could not be checked.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BulkEntry {
    /// True with a definitive verdict (charged 1 credit); false when the registry gave none in
    /// time (not charged; `error` says why).
    pub success: bool,
    /// Normalised domain (A-label).
    pub domain: String,
    /// On success: true only when the registry said the name can be registered.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub available: Option<bool>,
    /// On success: `Available` or `Taken`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, example = "Available")]
    #[schema(nullable = false)]
    pub message: Option<&'static str>,
    /// As for a single check: prices when enabled for the key and known for the TLD.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub pricing: Option<Pricing>,
    /// As for a single check: the checkout button for an available name.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub purchase: Option<Purchase>,
    /// On success: how the verdict was reached (our addition, as for a single check).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub verdict: Option<VerdictInfo>,
    /// On failure: the human-readable reason (retry this domain with exponential backoff).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub error: Option<String>,
}

/// An entry that was rejected before any check, with the reason.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct InvalidEntry {
    /// The entry as sent.
    pub input: String,
    /// Why it was rejected: the text a single check gives in its 400 for the same input.
    pub error: String,
}

/// The answer to a bulk check.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BulkResponse {
    /// Always true here (per-domain failures are in the entries).
    pub success: bool,
    /// Number of entries received, blank, invalid and duplicate ones included.
    pub total: usize,
    /// One entry per distinct valid domain, in request order (first occurrence).
    pub domains: Vec<BulkEntry>,
    /// The rejected entries, in request order; empty when none.
    pub invalid: Vec<InvalidEntry>,
    /// Credits charged: 1 per entry of `domains` with `success` true.
    pub credits_cost: i64,
    /// Credits left this month.
    pub credits_remaining: i64,
    /// When this answer was made (RFC 3339, UTC).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub checked_at: OffsetDateTime,
}

/// The last line of the streaming form: the totals without the per-domain entries (those
/// were the lines before it).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BulkSummary {
    /// Always true.
    pub success: bool,
    /// Always true: marks the summary line (entry lines carry `domain` instead).
    pub summary: bool,
    /// Number of entries received, blank, invalid and duplicate ones included.
    pub total: usize,
    /// Number of domain lines sent before this one (distinct valid domains).
    pub checked: usize,
    /// The rejected entries, in request order; empty when none.
    pub invalid: Vec<InvalidEntry>,
    /// Credits charged: 1 per domain line with `success` true.
    pub credits_cost: i64,
    /// Credits left this month.
    pub credits_remaining: i64,
    /// When the last check finished (RFC 3339, UTC).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub checked_at: OffsetDateTime,
}

/// One line of the `application/x-ndjson` form: a domain's entry, then one summary.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(untagged)]
pub enum BulkStreamLine {
    /// A domain's result, as soon as its check finishes.
    Entry(BulkEntry),
    /// The last line.
    Summary(BulkSummary),
    /// The last line instead of the summary when the request's time ran out before every check
    /// finished, in the error shape `{"success": false, "error": "…"}`;
    /// the domains without a line were not checked to the end and not charged.
    TimedOut(crate::front::error::ErrorBody),
}

impl BulkEntry {
    fn checked(outcome: CheckOutcome) -> Self {
        BulkEntry {
            success: true,
            domain: outcome.domain.as_str().to_owned(),
            available: Some(outcome.verdict.status.is_available()),
            message: Some(outcome.verdict.status.message()),
            verdict: Some(VerdictInfo::of(&outcome)),
            pricing: outcome.pricing,
            purchase: outcome.purchase,
            error: None,
        }
    }

    fn failed(domain: &DomainName, error: &ApiError) -> Self {
        BulkEntry {
            success: false,
            domain: domain.as_str().to_owned(),
            available: None,
            message: None,
            pricing: None,
            purchase: None,
            verdict: None,
            error: Some(error.to_string()),
        }
    }
}

/// The list after normalisation: distinct valid domains in request order, and the rejects.
#[derive(Debug, Default)]
pub struct BulkList {
    /// Entries received (the response's `total`).
    pub total: usize,
    /// Distinct valid domains, first occurrence order.
    pub domains: Vec<DomainName>,
    /// Rejected entries, request order.
    pub invalid: Vec<InvalidEntry>,
}

/// Normalises the entries of a bulk request like single checks do (spec §4.4), dropping
/// duplicates after normalisation (`Example.COM` and `www.example.com` are one check).
///
/// # Errors
/// [`ApiError::BadRequest`] for an empty list or more than [`MAX_DOMAINS`] entries.
pub fn parse_list(state: &AppState, entries: Vec<String>) -> Result<BulkList, ApiError> {
    if entries.is_empty() {
        return Err(ApiError::BadRequest("domains is empty: send 1 to 10 domain names.".into()));
    }
    if entries.len() > MAX_DOMAINS {
        return Err(ApiError::BadRequest(format!(
            "Too many domains: {} sent, at most {MAX_DOMAINS} per bulk request.",
            entries.len()
        )));
    }
    let mut list = BulkList { total: entries.len(), ..BulkList::default() };
    let mut seen = HashSet::new();
    for input in entries {
        let trimmed = input.trim();
        if trimmed.is_empty() {
            list.invalid.push(InvalidEntry { input, error: "Empty entry: expected a domain name.".into() });
            continue;
        }
        match parse_domain(state, trimmed) {
            Ok(domain) => {
                if seen.insert(domain.as_str().to_owned()) {
                    list.domains.push(domain);
                }
            }
            Err(e) => list.invalid.push(InvalidEntry { error: e.to_string(), input }),
        }
    }
    Ok(list)
}

/// Whether the client prefers the streaming form (RFC 9110 §12.5.1): `Accept` names [`NDJSON`]
/// with a quality above zero, above that of `application/json` and no lower than that of a
/// wildcard (`application/*`, `*/*`). Without `Accept`, the answer is JSON.
fn wants_stream(headers: &HeaderMap) -> bool {
    let (mut ndjson, mut json, mut wildcard) = (0.0_f32, 0.0_f32, 0.0_f32);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else { continue };
        for range in value.split(',') {
            let mut params = range.split(';');
            let media = params.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = params
                .filter_map(|p| p.trim().strip_prefix("q=").or_else(|| p.trim().strip_prefix("Q=")))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            match media.as_str() {
                NDJSON => ndjson = ndjson.max(q),
                "application/json" => json = json.max(q),
                "application/*" | "*/*" => wildcard = wildcard.max(q),
                _ => {}
            }
        }
    }
    ndjson > 0.0 && ndjson > json && ndjson >= wildcard
}

/// Handler of `GET /v1/domains/bulk`: up to ten availability checks in parallel (spec §4.4).
///
/// Behind the [`require_key`](super::keyed::require_key) prelude. See the module doc for the
/// order of checks, the credits and the two response forms.
#[utoipa::path(
    get,
    path = "/v1/domains/bulk",
    tag = "bulk",
    operation_id = "bulkCheckDomains",
    summary = "Check up to 10 domain names at once",
    description = "Checks every name of `domains` (comma-separated, at most 10) in parallel and answers one entry per distinct valid name, in request order; names that cannot be checked are listed in `invalid` with the reason. Costs 1 credit per name that gets a definitive verdict; the credits for all valid names must be available when the request starts.\n\nSend `Accept: application/x-ndjson` to receive one line per name as soon as its verdict is known, then a summary line (a dsa extension).",
    params(BulkQuery),
    security(("client_key" = [])),
    responses(
        (status = 200, description = "The checks, in parallel. `domains` has one entry per distinct valid domain in request order; an entry without a definitive verdict has `success: false` and an `error`, and is not charged. \
Rejected entries are in `invalid`. With `Accept: application/x-ndjson`: one line per domain in completion order, then a summary line; when the request times out first, the stream ends with an error line (`{\"success\": false, \"error\": …}`) instead, and the domains without a line are not charged.",
            content(
                (BulkResponse = "application/json", example = json!({"success": true, "total": 3,
                    "domains": [
                        {"success": true, "domain": "example.com", "available": false, "message": "Taken",
                            "verdict": {"status": "taken", "method": "dns", "authoritative": true, "cached": false, "stale": false, "checked_at": "2026-11-23T13:31:41Z", "tld": ".com", "unicode": "example.com"}},
                        {"success": true, "domain": "dsa-demo-available.net", "available": true, "message": "Available",
                            "pricing": {"currency": "USD", "base_register": 12.52, "display_register": 12.52, "pricing_mode": "base", "commission_percent": 0.0},
                            "purchase": {"show_button": true, "url": "https://checkout.example/register?domain=dsa-demo-available.net&sld=dsa-demo-available&tld=.net", "source": "url"},
                            "verdict": {"status": "available", "method": "rdap", "authoritative": true, "cached": false, "stale": false, "checked_at": "2026-11-23T13:31:41Z", "tld": ".net", "unicode": "dsa-demo-available.net"}}],
                    "invalid": [{"input": "exa_mple.com", "error": "Invalid domain format: character '_' is not allowed; use letters, digits and hyphens."}],
                    "credits_cost": 2, "credits_remaining": 498, "checked_at": "2026-11-23T13:31:41Z"})),
                (BulkStreamLine = "application/x-ndjson"),
            ),
            headers(
                ("RateLimit-Policy" = String, description = "The key's per-minute quota; a bulk request counts as one request."),
                ("RateLimit" = String, description = "Requests left in this window and seconds until it resets."),
                ("X-Request-Id" = String, description = "Request identifier (also in the logs)."))),
        (status = 400, description = "Missing `client_key` or `domains`, an empty list, more than 10 entries (`Too many domains: … at most 10 per bulk request.`), or a malformed parameter.", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended (`Invalid or disabled client key.`), or the request's origin is not allowed for the key.", body = ErrorBody),
        (status = 429, description = "Per-minute limit (a bulk counts as one request; `Retry-After`: the next window), or the monthly credits cannot cover every distinct valid domain (`Monthly credit limit reached`; nothing charged).", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
        (status = 502, description = "No valid domain got a definitive verdict (JSON form only); retry with exponential backoff. Not charged.", body = ErrorBody),
    )
)]
pub async fn bulk_get(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<BulkQuery>,
) -> Result<Response, ApiError> {
    let raw = required(&query.domains, "domains")?;
    let options = query.options()?;
    let entries = raw.split(',').map(str::to_owned).collect();
    run(state, key, options, entries, wants_stream(&headers)).await
}

/// Handler of `POST /v1/domains/bulk`: the same checks with the list in a JSON body (spec §4.4).
///
/// Behind the [`require_key`](super::keyed::require_key) prelude. The body must be
/// `application/json` (else 415) of at most [`MAX_BODY_BYTES`] bytes (else 400).
#[utoipa::path(
    post,
    path = "/v1/domains/bulk",
    tag = "bulk",
    operation_id = "bulkCheckDomainsPost",
    summary = "Check up to 10 domain names at once (JSON body)",
    description = "The same checks as `GET /v1/domains/bulk`, with the names in a JSON body `{\"domains\": [\"example.com\", …]}` (at most 10 entries, at most 16 KiB, `Content-Type: application/json`).",
    params(BulkPostQuery),
    request_body(content = BulkRequest, content_type = "application/json", description = "The domains to check (at most 10 entries; the body at most 16 KiB)."),
    security(("client_key" = [])),
    responses(
        (status = 200, description = "As for `GET /v1/domains/bulk`.",
            content(
                (BulkResponse = "application/json"),
                (BulkStreamLine = "application/x-ndjson"),
            )),
        (status = 400, description = "Missing `client_key`, a body that is not valid JSON of the shape `{\"domains\": [string, …]}` or is over 16 KiB, an empty list, more than 10 entries, or a malformed parameter.", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended (`Invalid or disabled client key.`), or the request's origin is not allowed for the key.", body = ErrorBody),
        (status = 415, description = "The body is not `application/json`.", body = ErrorBody),
        (status = 429, description = "Per-minute limit (a bulk counts as one request; `Retry-After`: the next window), or the monthly credits cannot cover every distinct valid domain (`Monthly credit limit reached`; nothing charged).", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
        (status = 502, description = "No valid domain got a definitive verdict (JSON form only); retry with exponential backoff. Not charged.", body = ErrorBody),
    )
)]
pub async fn bulk_post(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<BulkPostQuery>,
    body: Body,
) -> Result<Response, ApiError> {
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
    let request: BulkRequest = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::BadRequest(format!("Malformed JSON body ({e}); expected {{\"domains\": [\"example.com\", …]}}."))
    })?;
    let options = query.options()?;
    run(state, key, options, request.domains, wants_stream(&headers)).await
}

/// A finished check of one domain of the list.
type Finished = (usize, DomainName, Result<CheckOutcome, ApiError>);

/// The checks of a list, all started at once, yielding in completion order.
fn start_checks(
    state: &AppState,
    key: &Arc<KeyRecord>,
    options: &Arc<CheckOptions>,
    domains: Vec<DomainName>,
) -> FuturesUnordered<futures::future::BoxFuture<'static, Finished>> {
    domains
        .into_iter()
        .enumerate()
        .map(|(i, domain)| {
            let (state, key, options) = (state.clone(), key.clone(), options.clone());
            let check: futures::future::BoxFuture<'static, Finished> = Box::pin(async move {
                let result = evaluate(&state, &key, domain.clone(), &options).await;
                (i, domain, result)
            });
            check
        })
        .collect()
}

/// A started bulk: the parsed list, the credit hold for all of it and the running checks.
type Started = (BulkList, Option<Reservation>, FuturesUnordered<futures::future::BoxFuture<'static, Finished>>);

/// Parses the list, holds the credits for every distinct valid domain and starts the checks.
async fn start(
    state: &AppState,
    key: &Arc<KeyRecord>,
    options: CheckOptions,
    entries: Vec<String>,
) -> Result<Started, ApiError> {
    let mut list = parse_list(state, entries)?;
    options.usable(state)?;
    let wanted = i64::try_from(list.domains.len()).unwrap_or(i64::MAX) * COST_PER_DOMAIN;
    metrics::histogram!("dsa_bulk_domains").record(list.domains.len() as f64);
    // The whole cost is held before any check starts: all or nothing (spec §7 429).
    let hold = if wanted > 0 { Some(state.credits().reserve(key, "bulk", wanted, state.now()).await?) } else { None };
    let checks = start_checks(state, key, &Arc::new(options), std::mem::take(&mut list.domains));
    Ok((list, hold, checks))
}

async fn run(
    state: AppState,
    key: Arc<KeyRecord>,
    options: CheckOptions,
    entries: Vec<String>,
    stream: bool,
) -> Result<Response, ApiError> {
    if !stream {
        return Ok(Json(check_list(&state, key, options, entries).await?).into_response());
    }
    let (list, hold, checks) = start(&state, &key, options, entries).await?;
    // The stream outlives the handler (and the request timeout and concurrency layers, which
    // end with the response head): it keeps the request's deadline itself.
    let deadline = tokio::time::Instant::now() + state.request_timeout();
    Ok(streaming(state, key, list.total, list.invalid, hold, checks, deadline))
}

/// The JSON form of a bulk check (also run by the MCP `check_domains` tool): every check at
/// once, each entry charged only for a definitive verdict; a 502 when none got one.
///
/// # Errors
/// 400 for a bad list or option, 429 when the credits cannot cover every distinct valid domain,
/// 502 when no domain got a definitive verdict (nothing charged).
pub async fn check_list(
    state: &AppState,
    key: Arc<KeyRecord>,
    options: CheckOptions,
    entries: Vec<String>,
) -> Result<BulkResponse, ApiError> {
    let (list, hold, checks) = start(state, &key, options, entries).await?;
    let mut finished: Vec<Finished> = checks.collect().await;
    finished.sort_by_key(|(i, _, _)| *i);
    let charged = finished.iter().filter(|(_, _, r)| r.is_ok()).count();
    // With nothing charged every result is an error (or there were none).
    if charged == 0
        && let Some((_, _, Err(first))) = finished.pop()
    {
        // Not one definitive verdict: the answer of a single check (502), nothing charged.
        return Err(first);
    }
    let credits_cost = i64::try_from(charged).unwrap_or(i64::MAX) * COST_PER_DOMAIN;
    let credits_remaining = settle(state, &key, hold, credits_cost).await?;
    let domains = finished
        .into_iter()
        .map(|(_, domain, result)| match result {
            Ok(outcome) => BulkEntry::checked(outcome),
            Err(e) => BulkEntry::failed(&domain, &e),
        })
        .collect();
    Ok(BulkResponse {
        success: true,
        total: list.total,
        domains,
        invalid: list.invalid,
        credits_cost,
        credits_remaining,
        checked_at: state.now(),
    })
}

/// Commits `credits` of `hold` (one ledger event, durable before the answer) and gives the rest
/// back; returns the credits remaining this month.
///
/// # Errors
/// 503 when the charge cannot be made durable (the whole hold is given back, see
/// [`Reservation::commit`]).
async fn settle(state: &AppState, key: &KeyRecord, hold: Option<Reservation>, credits: i64) -> Result<i64, ApiError> {
    match hold {
        Some(mut hold) => {
            if let Some(charged) = hold.split_off(credits) {
                // On failure `hold` drops here and gives the rest back.
                charged.commit().await?;
            }
            // Read after the rest is given back, so the figure counts only what was charged.
            Ok(hold.release())
        }
        None => Ok(remaining(state, key).await),
    }
}

/// Credits remaining for a key without charging anything (a list with no valid domain).
async fn remaining(state: &AppState, key: &KeyRecord) -> i64 {
    match state.credits().reserve(key, "bulk", 0, state.now()).await {
        Ok(nothing) => nothing.release(),
        Err(_) => 0,
    }
}

/// The streaming form: one line per domain in completion order, each committed before it is
/// written, then the summary. Dropping the body (the client hung up) drops the hold: the lines
/// not yet written are not charged. At `deadline` (the request's timeout) the checks still
/// running are dropped, their credits given back, and a last error line ends the stream: the
/// body would otherwise keep working after the timeout and the concurrency limit, which end
/// with the response head, had let go of the request.
fn streaming(
    state: AppState,
    key: Arc<KeyRecord>,
    total: usize,
    invalid: Vec<InvalidEntry>,
    hold: Option<Reservation>,
    checks: FuturesUnordered<futures::future::BoxFuture<'static, Finished>>,
    deadline: tokio::time::Instant,
) -> Response {
    struct Progress {
        state: AppState,
        key: Arc<KeyRecord>,
        total: usize,
        invalid: Vec<InvalidEntry>,
        hold: Option<Reservation>,
        checks: FuturesUnordered<futures::future::BoxFuture<'static, Finished>>,
        checked: usize,
        credits_cost: i64,
        done: bool,
    }
    let progress = Progress { state, key, total, invalid, hold, checks, checked: 0, credits_cost: 0, done: false };
    let lines = futures::stream::unfold(progress, move |mut p| async move {
        if p.done {
            return None;
        }
        let Ok(next) = tokio::time::timeout_at(deadline, p.checks.next()).await else {
            p.done = true;
            // Cancels the checks still running and gives back the credits of their lines.
            p.checks = FuturesUnordered::new();
            p.hold = None;
            metrics::counter!("dsa_bulk_stream_timeouts_total").increment(1);
            let line = BulkStreamLine::TimedOut(crate::front::error::ErrorBody {
                success: false,
                error: format!(
                    "The request timed out after {} domain lines; those were charged, the other domains were not \
                     checked to the end and not charged. Retry them.",
                    p.checked
                ),
            });
            let mut bytes = serde_json::to_vec(&line).unwrap_or_else(|_| b"{}".to_vec());
            bytes.push(b'\n');
            return Some((Ok::<_, std::convert::Infallible>(Bytes::from(bytes)), p));
        };
        let line = match next {
            Some((_, domain, result)) => {
                p.checked += 1;
                let entry = match result {
                    Ok(outcome) => {
                        // The line is written only once its charge is durable; a charge the
                        // ledger refuses makes the line an error, not charged.
                        let charged = match p.hold.as_mut().and_then(|h| h.split_off(COST_PER_DOMAIN)) {
                            Some(piece) => piece.commit().await.map(|_| ()),
                            None => Ok(()),
                        };
                        match charged {
                            Ok(()) => {
                                p.credits_cost += COST_PER_DOMAIN;
                                BulkEntry::checked(outcome)
                            }
                            Err(e) => BulkEntry::failed(&domain, &e),
                        }
                    }
                    Err(e) => BulkEntry::failed(&domain, &e),
                };
                BulkStreamLine::Entry(entry)
            }
            None => {
                p.done = true;
                // Read after the rest is given back, so the figure counts only what was charged.
                let credits_remaining = match p.hold.take() {
                    Some(rest) => rest.release(),
                    None => remaining(&p.state, &p.key).await,
                };
                BulkStreamLine::Summary(BulkSummary {
                    success: true,
                    summary: true,
                    total: p.total,
                    checked: p.checked,
                    invalid: std::mem::take(&mut p.invalid),
                    credits_cost: p.credits_cost,
                    credits_remaining,
                    checked_at: p.state.now(),
                })
            }
        };
        let mut bytes = serde_json::to_vec(&line).unwrap_or_else(|_| b"{}".to_vec());
        bytes.push(b'\n');
        Some((Ok::<_, std::convert::Infallible>(Bytes::from(bytes)), p))
    });
    let mut response = Body::from_stream(lines).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(NDJSON));
    // Proxies that buffer responses (nginx) would hold the lines back until the end.
    response.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(header::ACCEPT, HeaderValue::from_str(v).expect("header"));
        }
        headers
    }

    #[test]
    fn the_stream_is_chosen_only_when_preferred() {
        assert!(!wants_stream(&accept(&[])));
        assert!(!wants_stream(&accept(&["application/json"])));
        assert!(!wants_stream(&accept(&["*/*"])));
        assert!(wants_stream(&accept(&["application/x-ndjson"])));
        assert!(wants_stream(&accept(&["Application/X-NDJSON; charset=utf-8"])));
        assert!(wants_stream(&accept(&["application/x-ndjson, application/json;q=0.9"])));
        assert!(wants_stream(&accept(&["application/json;q=0.5", "application/x-ndjson"])));
        assert!(!wants_stream(&accept(&["application/x-ndjson;q=0.5, application/json"])));
        assert!(!wants_stream(&accept(&["application/x-ndjson;q=0"])));
        assert!(wants_stream(&accept(&["application/x-ndjson, */*"])), "named beats a wildcard");
        assert!(!wants_stream(&accept(&["application/x-ndjson, application/json"])), "a tie answers JSON");
        assert!(!wants_stream(&accept(&["application/x-ndjson;q=0.5, */*"])));
    }
}
