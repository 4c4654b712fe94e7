//! `/v1/jobs`: bulk jobs over HTTP (our extension; issue 26). Server keys only (403 for an embed
//! key): a list of thousands of names is a back-office task, never a browser's.
//!
//! * `POST /v1/jobs/bulk-check` — the upload, streamed into the store ([`super::upload`]); 202
//!   with the job and its `Location`.
//! * `GET /v1/jobs/{id}` — state, counts, progress, rate, ETA, credits.
//! * `GET /v1/jobs/{id}/results` — NDJSON or CSV pages in the order results were written,
//!   cursor-paginated, readable while the job runs.
//! * `DELETE /v1/jobs/{id}` — cancels; the hold of the names not checked is released.
//! * `GET /v1/jobs` — the key's jobs, newest first.

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use utoipa::{IntoParams, ToSchema};

use super::unix_ms;
use super::upload::{Entries, Entry, Format};
use crate::front::error::{ApiError, ErrorBody};
use crate::front::keys::{KeyKind, KeyRecord};
use crate::front::routes::check::{CheckOptions, CheckOutcome, VerdictInfo, parse_domain};
use crate::front::routes::keyed::Keyed;
use crate::front::routes::{ApiQuery, Flag, optional};
use crate::front::state::AppState;
use crate::pricing::Pricing;
use crate::pricing::purchase::Purchase;
use crate::store::bulk_jobs::{BulkJob, BulkJobStore, NewItem};

/// The check options of a job, as stored (`bulk_jobs.options`).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct StoredOptions {
    /// `commission_percent` as sent.
    pub commission_percent: Option<String>,
    /// `redirect_url` as sent.
    pub redirect_url: Option<String>,
    /// `redirect_checkout` as sent.
    pub redirect_checkout: Option<String>,
}

impl StoredOptions {
    /// The parsed options (checked at submission).
    pub fn parse(&self) -> Result<CheckOptions, ApiError> {
        CheckOptions::from_query(&crate::front::routes::check::CheckQuery {
            commission_percent: self.commission_percent.clone(),
            redirect_url: self.redirect_url.clone(),
            redirect_checkout: self.redirect_checkout.clone(),
            ..Default::default()
        })
    }
}

/// Entries stored per chunk of an upload.
const CHUNK: usize = 1000;
/// Rejected entries shown in a job's answers at most (all are counted).
const SHOWN_INVALID: i64 = 100;
/// Results per page by default and at most.
const PAGE_DEFAULT: i64 = 1000;
const PAGE_MAX: i64 = 10_000;
/// Jobs listed at most.
const LIST_MAX: i64 = 100;
/// The 404 text of a job id that is not the key's (or whose results expired).
pub const NO_SUCH_JOB: &str = "No such bulk job for this key (an ended job's results are kept for a limited time).";
/// The 415 text of an upload in another media type.
pub const UNSUPPORTED_UPLOAD: &str = "Unsupported media type: send the names as application/json (an array of strings), application/x-ndjson, text/csv or text/plain (one per line).";

/// Query parameters of `POST /v1/jobs/bulk-check`: the check options, as for a bulk check.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SubmitQuery {
    /// As for `GET /v1/domains/check`: percentage markup for the displayed prices.
    #[param(value_type = Option<f64>, minimum = 0, maximum = 1000, example = 10)]
    pub commission_percent: Option<String>,
    /// As for `GET /v1/domains/check`: custom checkout URL, `purchase.source` is `client_url`.
    #[param(value_type = Option<String>, example = "https://shop.example/cart")]
    pub redirect_url: Option<String>,
    /// As for `GET /v1/domains/check`: `1` forces the platform checkout URL.
    #[param(value_type = Option<Flag>, default = 0)]
    pub redirect_checkout: Option<String>,
}

/// Query parameters of `GET /v1/jobs/{id}/results`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ResultsQuery {
    /// Where to continue: the `X-Next-Cursor` of the previous page; absent or 0 from the start.
    #[param(value_type = Option<i64>, minimum = 0, example = 0)]
    pub cursor: Option<String>,
    /// Results per page, 1 to 10,000 (default 1,000).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 10000, example = 1000)]
    pub limit: Option<String>,
    /// `ndjson` (default) or `csv`; `Accept: text/csv` also selects CSV.
    #[param(value_type = Option<String>, example = "ndjson")]
    pub format: Option<String>,
}

/// Query parameters of `GET /v1/jobs`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Jobs listed, 1 to 100 (default 20), newest first.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100, example = 20)]
    pub limit: Option<String>,
}

/// A job's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Accepted; no name checked yet.
    Queued,
    /// Names are being checked.
    Running,
    /// Every name has its result.
    Done,
    /// Cancelled by its key; the names not checked were released.
    Cancelled,
    /// Stopped by the server (an upload that never finished).
    Failed,
}

impl JobState {
    fn of(stored: &str) -> Self {
        match stored {
            "queued" => Self::Queued,
            "running" => Self::Running,
            "done" => Self::Done,
            "cancelled" => Self::Cancelled,
            _ => Self::Failed,
        }
    }
}

/// An entry rejected before any check, with the reason.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RejectedEntry {
    /// The entry as sent.
    pub input: String,
    /// Why it was rejected (the text a single check gives for the same input).
    pub error: String,
}

/// The answer to a submission.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct JobAccepted {
    /// Always true.
    pub success: bool,
    /// The job's id.
    pub id: String,
    /// `queued`.
    pub state: JobState,
    /// Entries received.
    pub received: i64,
    /// Distinct valid names to check (duplicates after normalisation count once).
    pub total: i64,
    /// Entries rejected.
    pub invalid: i64,
    /// The first rejected entries (at most 100; all are counted in `invalid`).
    pub invalid_entries: Vec<RejectedEntry>,
    /// Credits held for the job: 1 per name. Each is charged when its name gets a definitive
    /// verdict; the rest is released when the job ends.
    pub credits_held: i64,
    /// Where to follow the job.
    pub status_url: String,
    /// Where to read its results.
    pub results_url: String,
}

/// Results per verdict.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
pub struct VerdictCounts {
    /// Names that can be registered.
    pub available: i64,
    /// Registered names.
    pub taken: i64,
    /// Names in the registry's deletion cycle.
    pub pending_delete: i64,
    /// Names the registry reserves.
    pub reserved: i64,
    /// Names with registration restrictions.
    pub restricted: i64,
    /// Names without a definitive verdict after every try (not charged).
    pub unknown: i64,
}

/// The payload of a `job.finished` event (the `data` of its webhook delivery): how a bulk job
/// ended. Instants are RFC 3339 in UTC.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct JobEventData {
    /// The job's id.
    pub job_id: String,
    /// `done` (every name has its result) or `cancelled`.
    pub state: JobState,
    /// Distinct valid names submitted.
    pub total: i64,
    /// Entries rejected at submission.
    pub invalid: i64,
    /// Names with their result (for a cancelled job, those checked before the cancel).
    pub checked: i64,
    /// Results by verdict.
    pub counts: VerdictCounts,
    /// Credits charged: 1 per name with a definitive verdict.
    pub credits_charged: i64,
    /// Credits given back (names not charged).
    pub credits_released: i64,
    /// When the job ended.
    #[schema(format = DateTime)]
    pub finished_at: String,
    /// Where to read the results (with the same key).
    pub results_url: String,
}

/// A job's state and progress.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct JobStatus {
    /// Always true.
    pub success: bool,
    /// The job's id.
    pub id: String,
    /// `queued`, `running`, `done`, `cancelled` or `failed`.
    pub state: JobState,
    /// When the job was submitted (RFC 3339, UTC).
    pub created_at: String,
    /// When the first name was taken up.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub started_at: Option<String>,
    /// When the job ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub finished_at: Option<String>,
    /// When the results of an ended job are deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub results_expire_at: Option<String>,
    /// Entries received.
    pub received: i64,
    /// Distinct valid names.
    pub total: i64,
    /// Entries rejected.
    pub invalid: i64,
    /// Names with their result.
    pub checked: i64,
    /// `checked / total`, 0 to 1.
    pub progress: f64,
    /// Results by verdict (`GET /v1/jobs/{id}` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub counts: Option<VerdictCounts>,
    /// Names checked per second since the job started.
    pub names_per_second: f64,
    /// For a job still running: the least time, seconds, the remaining names take at the
    /// registries' query rates (each registry is asked at most so many times a second; names a
    /// DNS delegation already shows taken go faster). `GET /v1/jobs/{id}` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub eta_secs: Option<f64>,
    /// Credits still held for the names not yet charged (0 once the job ended).
    pub credits_held: i64,
    /// Credits charged: 1 per name with a definitive verdict.
    pub credits_charged: i64,
    /// Credits given back when the job ended (names not charged).
    pub credits_released: i64,
    /// Where to read the results.
    pub results_url: String,
}

/// The key's jobs.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct JobList {
    /// Always true.
    pub success: bool,
    /// Newest first.
    pub jobs: Vec<JobStatus>,
}

/// One result line: the fields of a bulk check's entry with the `verdict` object, and whether the
/// name was charged.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct JobResult {
    /// True with a definitive verdict (charged 1 credit); false when none came after every try.
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
    /// On success: how the verdict was reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub verdict: Option<VerdictInfo>,
    /// On failure: why there is no verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub error: Option<String>,
    /// Whether this name was charged (1 credit).
    pub charged: bool,
}

impl JobResult {
    /// The row of a name with a definitive verdict (charged).
    pub fn checked(outcome: CheckOutcome) -> Self {
        JobResult {
            success: true,
            domain: outcome.domain.as_str().to_owned(),
            available: Some(outcome.verdict.status.is_available()),
            message: Some(outcome.verdict.status.message()),
            verdict: Some(VerdictInfo::of(&outcome)),
            pricing: outcome.pricing,
            purchase: outcome.purchase,
            error: None,
            charged: true,
        }
    }

    /// The row of a name without a verdict (not charged).
    pub fn failed(domain: &str, error: &str) -> Self {
        JobResult {
            success: false,
            domain: domain.to_owned(),
            available: None,
            message: None,
            pricing: None,
            purchase: None,
            verdict: None,
            error: Some(error.to_owned()),
            charged: false,
        }
    }
}

/// The refusal of an embed key.
const SERVER_KEY_ONLY: &str = "Bulk jobs take a server key: an embed key cannot submit or read them.";

fn server_key(key: &KeyRecord) -> Result<(), ApiError> {
    crate::front::routes::keyed::require_server_key(key, SERVER_KEY_ONLY)
}

fn jobs_store(state: &AppState) -> Result<&dyn BulkJobStore, ApiError> {
    state.store().bulk_jobs().ok_or_else(|| ApiError::Internal(anyhow::anyhow!("this store keeps no bulk jobs")))
}

pub(crate) fn rfc3339(ms: i64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
}

/// The registry that answers for a name (the interleaving and ETA key): the host of the RDAP
/// base the engine asks (with `engine.rdap.base_overrides`, as the engine's politeness keys it),
/// else its WHOIS host, else its suffix.
fn registry_of(state: &AppState, domain: &common::domain::DomainName) -> String {
    let Ok(entry) = state.book().entry(domain) else { return format!("suffix:{}", domain.suffix()) };
    if let Some(host) = state
        .book()
        .rdap_base_of(domain.suffix(), entry)
        .and_then(|u| url::Url::parse(u).ok())
        .and_then(|u| u.host_str().map(str::to_owned))
    {
        return format!("rdap:{host}");
    }
    if let Some(whois) = &entry.whois {
        return format!("whois:{}", whois.host);
    }
    format!("suffix:{}", domain.suffix())
}

/// Queries per second the politeness budget allows a registry key of [`registry_of`].
fn registry_rate(state: &AppState, registry: &str) -> f64 {
    let limits = &state.book().config().limits;
    let rate = match registry.split_once(':') {
        Some(("rdap", host)) => limits.hosts.get(host).unwrap_or(&limits.rdap).per_second,
        Some(("whois", host)) => limits.hosts.get(host).unwrap_or(&limits.whois).per_second,
        _ => limits.dns.per_second,
    };
    if rate > 0.0 { rate } else { 1.0 }
}

/// Handler of `POST /v1/jobs/bulk-check`.
#[utoipa::path(
    post,
    path = "/v1/jobs/bulk-check",
    tag = "bulk jobs",
    operation_id = "submitBulkJob",
    summary = "Check a long list of domain names as a job (up to 100,000)",
    description = "Starts an asynchronous check of up to 100,000 names (a dsa extension; the operator may set a lower limit). Send the names as a JSON array of strings (`application/json`), one JSON string or `{\"domain\": …}` per line (`application/x-ndjson`), or one name per line (`text/csv`, first column, an optional `domain` header; `text/plain`). Entries are normalised as for a single check; duplicates after normalisation are checked once; entries that are not valid names are reported in the answer and are not fatal.\n\nThe whole cost (1 credit per distinct valid name) is held at submission: 429 when this month's credits cannot cover it. Each name is charged once, when it gets a definitive verdict; a name the registries could not answer after several tries is reported unknown and not charged; whatever was not charged is released when the job ends. Server keys only. Follow the job at `Location`; to be told when it ends, register a webhook that takes `job.finished` events (payload `JobEventData`).",
    params(SubmitQuery),
    request_body(content = Vec<String>, content_type = "application/json",
        description = "The names as a JSON array of strings. The same list is also accepted as `application/x-ndjson` (one JSON string or `{\"domain\": …}` per line), `text/csv` (first column, optional `domain` header) or `text/plain` (one name per line), with that `Content-Type`.",
        example = json!(["example.com", "dsa-demo-available.net"])),
    security(("client_key" = [])),
    responses(
        (status = 202, description = "Accepted: the job is queued. `invalid_entries` lists the first rejected entries.", body = JobAccepted,
            headers(("Location" = String, description = "The job's URL (`/v1/jobs/{id}`)."))),
        (status = 400, description = "Missing `client_key`, a body that breaks its format, no valid name, or a malformed parameter.", body = ErrorBody),
        (status = 413, description = "More names than the server takes in one job (`Too many names: …`), or a body over its size limit: split the list into several jobs. Nothing is held.", body = ErrorBody,
            example = json!({"success": false, "error": "Too many names: more than 100000 sent, at most 100000 per job."})),
        (status = 403, description = "Key not found, disabled or suspended, or an embed key (bulk jobs take a server key).", body = ErrorBody),
        (status = 415, description = "The body is not JSON, NDJSON, CSV or plain text.", body = ErrorBody,
            example = json!({"success": false, "error": UNSUPPORTED_UPLOAD})),
        (status = 429, description = "Per-minute limit, or this month's credits cannot cover every distinct valid name (`Monthly credit limit reached`; nothing held).", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
    )
)]
pub async fn submit(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<SubmitQuery>,
    body: Body,
) -> Result<Response, ApiError> {
    server_key(&key)?;
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let format = Format::of(content_type).ok_or_else(|| ApiError::UnsupportedMediaType(UNSUPPORTED_UPLOAD.into()))?;
    let stored = StoredOptions {
        commission_percent: query.commission_percent,
        redirect_url: query.redirect_url,
        redirect_checkout: query.redirect_checkout,
    };
    stored.parse()?.usable(&state)?;
    let jobs = jobs_store(&state)?;
    let config = state.policy().bulk_jobs.clone();
    // A declared length over the limit is refused before anything is stored or read; a body
    // without one (chunked) is counted as it streams in.
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > config.max_body_bytes as u64) {
        return Err(too_large(config.max_body_bytes));
    }
    let now = state.now();
    let period = common::messages::billing_period(now);
    let id = uuid::Uuid::now_v7().to_string();
    let options = serde_json::to_string(&stored).map_err(|e| ApiError::Internal(e.into()))?;
    jobs.create_job(&id, &key.id, &period, &options, unix_ms(now)).await?;
    // From here on, a refusal deletes what was stored of the upload.
    let uploaded = upload(&state, jobs, &id, format, body, &config).await;
    let received = match uploaded {
        Ok(received) => received,
        Err(e) => {
            jobs.delete_job(&id).await?;
            return Err(e);
        }
    };
    let (total, invalid) = jobs.item_counts(&id).await?;
    if total == 0 {
        let first = jobs.invalid_entries(&id, 1).await?.into_iter().next();
        jobs.delete_job(&id).await?;
        return Err(ApiError::BadRequest(match first {
            Some((input, error)) => {
                format!("No valid name in the upload; the first rejected entry, {input:?}: {error}")
            }
            None => "No name in the upload: send at least one domain name.".into(),
        }));
    }
    // The whole cost against the allowance (429 with the spec's text), then the job's own hold
    // in the store (seen by every front), then this front's view re-read, then the reservation
    // given back: between the last two steps the hold is counted twice (refusing early, never
    // late).
    let reservation = match state.credits().reserve(&key, "bulk_job", total, now).await {
        Ok(r) => r,
        Err(e) => {
            jobs.delete_job(&id).await?;
            return Err(e);
        }
    };
    if !jobs.open_job(&id, received, total, invalid, total).await? {
        return Err(ApiError::Internal(anyhow::anyhow!("bulk job {id} was not uploading when opened")));
    }
    if let Err(e) = state.credits().reread(&key.id, &period).await {
        tracing::warn!(error = ?e, "credits not re-read after a bulk job hold");
    }
    let _ = reservation.release();
    metrics::counter!("dsa_bulk_jobs_submitted_total").increment(1);
    tracing::info!(job = %id, total, invalid, "bulk job submitted");
    let invalid_entries = jobs
        .invalid_entries(&id, SHOWN_INVALID)
        .await?
        .into_iter()
        .map(|(input, error)| RejectedEntry { input, error })
        .collect();
    let status_url = format!("/v1/jobs/{id}");
    let body = JobAccepted {
        success: true,
        id: id.clone(),
        state: JobState::Queued,
        received,
        total,
        invalid,
        invalid_entries,
        credits_held: total,
        results_url: format!("{status_url}/results"),
        status_url: status_url.clone(),
    };
    let mut response = (StatusCode::ACCEPTED, Json(body)).into_response();
    if let Ok(v) = HeaderValue::from_str(&status_url) {
        response.headers_mut().insert(header::LOCATION, v);
    }
    Ok(response)
}

/// The 413 of an upload over `max_body_bytes`.
fn too_large(max_body_bytes: usize) -> ApiError {
    ApiError::PayloadTooLarge(format!("The upload is over {max_body_bytes} bytes: split the list into several jobs."))
}

/// Streams the body into the store; returns the number of entries received.
async fn upload(
    state: &AppState,
    jobs: &dyn BulkJobStore,
    id: &str,
    format: Format,
    body: Body,
    config: &super::BulkJobsConfig,
) -> Result<i64, ApiError> {
    let mut parser = Entries::new(format);
    let mut stream = body.into_data_stream();
    let (mut bytes, mut received) = (0_usize, 0_i64);
    let mut chunk: Vec<NewItem> = Vec::with_capacity(CHUNK);
    let max_names = i64::try_from(config.max_names).unwrap_or(i64::MAX);
    loop {
        let next = stream.next().await;
        let last = next.is_none();
        let entries = match next {
            Some(Ok(data)) => {
                bytes += data.len();
                if bytes > config.max_body_bytes {
                    return Err(too_large(config.max_body_bytes));
                }
                parser.push(&data).map_err(|e| ApiError::BadRequest(e.to_string()))?;
                parser.take()
            }
            Some(Err(e)) => return Err(ApiError::BadRequest(format!("The upload could not be read: {e}."))),
            None => {
                parser.finish().map_err(|e| ApiError::BadRequest(e.to_string()))?;
                parser.take()
            }
        };
        for entry in entries {
            if received >= max_names {
                return Err(ApiError::PayloadTooLarge(format!(
                    "Too many names: more than {max_names} sent, at most {max_names} per job."
                )));
            }
            chunk.push(item(state, received, entry));
            received += 1;
        }
        if chunk.len() >= CHUNK || (last && !chunk.is_empty()) {
            jobs.add_items(id, std::mem::take(&mut chunk)).await?;
        }
        if last {
            return Ok(received);
        }
    }
}

fn item(state: &AppState, seq: i64, entry: Entry) -> NewItem {
    match entry {
        Entry::Name(input) => match parse_domain(state, input.trim()) {
            Ok(domain) => NewItem {
                seq,
                registry: registry_of(state, &domain),
                domain: Some(domain.as_str().to_owned()),
                input,
                error: None,
            },
            Err(e) => NewItem { seq, input, domain: None, registry: String::new(), error: Some(e.to_string()) },
        },
        Entry::Rejected { input, error } => {
            NewItem { seq, input, domain: None, registry: String::new(), error: Some(error) }
        }
    }
}

/// A key's job, or 404.
async fn own_job(state: &AppState, key: &KeyRecord, id: &str) -> Result<BulkJob, ApiError> {
    let missing = || ApiError::NoSuchResource(NO_SUCH_JOB.into());
    if id.len() > 64 {
        return Err(missing());
    }
    match jobs_store(state)?.job(id).await? {
        Some(job) if job.key_id == key.id && job.state != "uploading" => Ok(job),
        _ => Err(missing()),
    }
}

/// A job's results by verdict so far.
///
/// # Errors
/// The store's.
pub(crate) async fn verdict_counts(jobs: &dyn BulkJobStore, id: &str) -> anyhow::Result<VerdictCounts> {
    let mut counts = VerdictCounts::default();
    for (status, n) in jobs.counts_by_status(id).await? {
        match status.as_str() {
            "available" => counts.available += n,
            "taken" => counts.taken += n,
            "pending_delete" => counts.pending_delete += n,
            "reserved" => counts.reserved += n,
            "restricted" => counts.restricted += n,
            _ => counts.unknown += n,
        }
    }
    Ok(counts)
}

async fn status(state: &AppState, job: &BulkJob, detail: bool) -> Result<JobStatus, ApiError> {
    let jobs = jobs_store(state)?;
    let now = unix_ms(state.now());
    let open = job.is_open();
    let elapsed_ms = match job.started_at {
        Some(at) => job.finished_at.unwrap_or(now) - at,
        None => 0,
    };
    let names_per_second = if elapsed_ms > 0 { job.checked as f64 * 1000.0 / elapsed_ms as f64 } else { 0.0 };
    let (counts, eta_secs) = if detail {
        let counts = verdict_counts(jobs, &job.id).await?;
        let eta = if open {
            let mut worst = 0.0_f64;
            for (registry, pending) in jobs.pending_by_registry(&job.id).await? {
                worst = worst.max(pending as f64 / registry_rate(state, &registry));
            }
            Some((worst * 10.0).round() / 10.0)
        } else {
            None
        };
        (Some(counts), eta)
    } else {
        (None, None)
    };
    let progress = if job.total > 0 { (job.checked as f64 / job.total as f64).min(1.0) } else { 1.0 };
    Ok(JobStatus {
        success: true,
        id: job.id.clone(),
        state: JobState::of(&job.state),
        created_at: rfc3339(job.created_at),
        started_at: job.started_at.map(rfc3339),
        finished_at: job.finished_at.map(rfc3339),
        results_expire_at: job.expires_at.map(rfc3339),
        received: job.received,
        total: job.total,
        invalid: job.invalid,
        checked: job.checked,
        progress,
        counts,
        names_per_second: (names_per_second * 100.0).round() / 100.0,
        eta_secs,
        credits_held: if open { (job.held - job.charged).max(0) } else { 0 },
        credits_charged: job.charged,
        credits_released: if open { 0 } else { (job.held - job.charged).max(0) },
        results_url: format!("/v1/jobs/{}/results", job.id),
    })
}

const JOB_ID_DESCRIPTION: &str = "The job's id (from the submission's answer or `Location`).";

/// Handler of `GET /v1/jobs/{id}`.
#[utoipa::path(
    get,
    path = "/v1/jobs/{id}",
    tag = "bulk jobs",
    operation_id = "getBulkJob",
    summary = "A bulk job's state and progress",
    description = "The job's state (`queued`, `running`, `done`, `cancelled`, `failed`), its results so far by verdict, progress, names checked per second, an estimate of the time left from the registries' query rates, and its credits: held, charged, released. Free.",
    params(("id" = String, Path, description = JOB_ID_DESCRIPTION)),
    security(("client_key" = [])),
    responses(
        (status = 200, description = "The job.", body = JobStatus),
        (status = 400, description = "Missing `client_key`.", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended, or an embed key.", body = ErrorBody),
        (status = 404, description = "No such job for this key (or its results expired).", body = ErrorBody, example = json!({"success": false, "error": NO_SUCH_JOB})),
        (status = 429, description = "Per-minute limit.", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
    )
)]
pub async fn get_job(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    Path(id): Path<String>,
) -> Result<Json<JobStatus>, ApiError> {
    server_key(&key)?;
    let job = own_job(&state, &key, &id).await?;
    Ok(Json(status(&state, &job, true).await?))
}

/// Handler of `DELETE /v1/jobs/{id}`.
#[utoipa::path(
    delete,
    path = "/v1/jobs/{id}",
    tag = "bulk jobs",
    operation_id = "cancelBulkJob",
    summary = "Cancel a bulk job",
    description = "Stops the job: no further name is checked, the results written so far stay readable, and the credits held for the names not charged are released. A job that already ended is answered as it is.",
    params(("id" = String, Path, description = JOB_ID_DESCRIPTION)),
    security(("client_key" = [])),
    responses(
        (status = 200, description = "The job after cancelling.", body = JobStatus),
        (status = 400, description = "Missing `client_key`.", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended, or an embed key.", body = ErrorBody),
        (status = 404, description = "No such job for this key.", body = ErrorBody, example = json!({"success": false, "error": NO_SUCH_JOB})),
        (status = 429, description = "Per-minute limit.", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
    )
)]
pub async fn cancel(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    Path(id): Path<String>,
) -> Result<Json<JobStatus>, ApiError> {
    server_key(&key)?;
    let job = own_job(&state, &key, &id).await?;
    let jobs = jobs_store(&state)?;
    let now = state.now();
    let ttl = i64::try_from(state.policy().bulk_jobs.results_ttl_secs).unwrap_or(i64::MAX / 2_000).saturating_mul(1000);
    let counts = verdict_counts(jobs, &job.id).await?;
    let event = super::finished_event(&job, JobState::Cancelled, counts, now);
    if jobs.cancel(&job.id, &key.id, unix_ms(now), unix_ms(now).saturating_add(ttl), event).await? {
        tracing::info!(job = %job.id, "bulk job cancelled");
        if let Err(e) = state.credits().reread(&key.id, &job.period).await {
            tracing::warn!(error = ?e, "credits not re-read after a cancel");
        }
    }
    let job = own_job(&state, &key, &id).await?;
    Ok(Json(status(&state, &job, true).await?))
}

/// Handler of `GET /v1/jobs`.
#[utoipa::path(
    get,
    path = "/v1/jobs",
    tag = "bulk jobs",
    operation_id = "listBulkJobs",
    summary = "The key's bulk jobs",
    description = "The key's jobs whose results are still kept, newest first, with their state, progress and credits. Free.",
    params(ListQuery),
    security(("client_key" = [])),
    responses(
        (status = 200, description = "The jobs.", body = JobList),
        (status = 400, description = "Missing `client_key`, or a malformed `limit`.", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended, or an embed key.", body = ErrorBody),
        (status = 429, description = "Per-minute limit.", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
    )
)]
pub async fn list(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<JobList>, ApiError> {
    server_key(&key)?;
    let limit = number(&query.limit, "limit", 1, LIST_MAX)?.unwrap_or(20);
    let mut jobs = Vec::new();
    for job in jobs_store(&state)?.jobs_of_key(&key.id, limit).await? {
        jobs.push(status(&state, &job, false).await?);
    }
    Ok(Json(JobList { success: true, jobs }))
}

fn number(value: &Option<String>, name: &str, min: i64, max: i64) -> Result<Option<i64>, ApiError> {
    let Some(text) = optional(value) else { return Ok(None) };
    match text.parse::<i64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(Some(n)),
        _ => Err(ApiError::BadRequest(format!("{name} must be a whole number from {min} to {max}, not {text:?}."))),
    }
}

/// Handler of `GET /v1/jobs/{id}/results`.
#[utoipa::path(
    get,
    path = "/v1/jobs/{id}/results",
    tag = "bulk jobs",
    operation_id = "getBulkJobResults",
    summary = "A bulk job's results, page by page",
    description = "The results written so far, in the order they were written, one per name: the fields of a bulk check entry with the `verdict` object, and `charged`. NDJSON by default (one JSON object per line); `format=csv` or `Accept: text/csv` gives CSV with the columns `domain,success,available,status,method,charged,checked_at,error`.\n\nPages: pass the `X-Next-Cursor` of one page as `cursor` of the next. While the job runs, a page may be short or empty and later pages bring the names checked since: read until `X-Job-State` is `done` or `cancelled` and a page comes back empty. Results are kept for a limited time after the job ends (`results_expire_at`). Free.",
    params(("id" = String, Path, description = JOB_ID_DESCRIPTION), ResultsQuery),
    security(("client_key" = [])),
    responses(
        (status = 200, description = "One page of results.",
            content(
                (JobResult = "application/x-ndjson"),
                (String = "text/csv", example = "domain,success,available,status,method,charged,checked_at,error\nexample.com,true,false,taken,dns,true,2026-11-27T10:00:00Z,\n"),
            ),
            headers(
                ("X-Next-Cursor" = i64, description = "The `cursor` of the next page."),
                ("X-Job-State" = String, description = "The job's state when the page was read."),
            )),
        (status = 400, description = "Missing `client_key`, or a malformed `cursor`, `limit` or `format`.", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended, or an embed key.", body = ErrorBody),
        (status = 404, description = "No such job for this key (or its results expired).", body = ErrorBody, example = json!({"success": false, "error": NO_SUCH_JOB})),
        (status = 429, description = "Per-minute limit.", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
    )
)]
pub async fn results(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    Path(id): Path<String>,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<ResultsQuery>,
) -> Result<Response, ApiError> {
    server_key(&key)?;
    let cursor = number(&query.cursor, "cursor", 0, i64::MAX)?.unwrap_or(0);
    let limit = number(&query.limit, "limit", 1, PAGE_MAX)?.unwrap_or(PAGE_DEFAULT);
    let csv = match optional(&query.format) {
        Some("csv") => true,
        Some("ndjson") => false,
        Some(other) => return Err(ApiError::BadRequest(format!("format must be ndjson or csv, not {other:?}."))),
        None => headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.to_ascii_lowercase().contains("text/csv")),
    };
    let job = own_job(&state, &key, &id).await?;
    let rows = jobs_store(&state)?.results(&job.id, cursor, limit).await?;
    let next = rows.last().map_or(cursor, |(seq, _)| *seq);
    let body = if csv { csv_page(&rows, cursor == 0)? } else { ndjson_page(&rows) };
    let mut response = Response::new(Body::from(body));
    let media = if csv { "text/csv; charset=utf-8" } else { "application/x-ndjson" };
    let set = |response: &mut Response, name: &'static str, value: &str| {
        if let Ok(v) = HeaderValue::from_str(value) {
            response.headers_mut().insert(name, v);
        }
    };
    set(&mut response, "content-type", media);
    set(&mut response, "x-next-cursor", &next.to_string());
    set(&mut response, "x-job-state", &job.state);
    Ok(response)
}

fn ndjson_page(rows: &[(i64, String)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(rows.iter().map(|(_, r)| r.len() + 1).sum());
    for (_, row) in rows {
        out.extend_from_slice(row.as_bytes());
        out.push(b'\n');
    }
    out
}

fn csv_page(rows: &[(i64, String)], header: bool) -> Result<Vec<u8>, ApiError> {
    let mut writer = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
    let fail = |e: csv::Error| ApiError::Internal(e.into());
    if header {
        writer
            .write_record(["domain", "success", "available", "status", "method", "charged", "checked_at", "error"])
            .map_err(fail)?;
    }
    for (_, row) in rows {
        let value: serde_json::Value = serde_json::from_str(row).unwrap_or_default();
        let text = |v: &serde_json::Value| match v {
            serde_json::Value::Null => String::new(),
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let verdict = &value["verdict"];
        writer
            .write_record([
                text(&value["domain"]),
                text(&value["success"]),
                text(&value["available"]),
                if verdict.is_null() { "unknown".to_owned() } else { text(&verdict["status"]) },
                text(&verdict["method"]),
                text(&value["charged"]),
                text(&verdict["checked_at"]),
                text(&value["error"]),
            ])
            .map_err(fail)?;
    }
    writer.into_inner().map_err(|e| ApiError::Internal(anyhow::anyhow!("csv: {e}")))
}

/// A job as the account portal lists it on the key's page (read-only).
#[derive(Debug, Clone, Serialize)]
pub struct JobSummary {
    /// The job's id.
    pub id: String,
    /// When it was submitted (RFC 3339, UTC, to the second).
    pub submitted: String,
    /// Its state.
    pub state: String,
    /// Names with a result.
    pub checked: i64,
    /// Distinct valid names.
    pub total: i64,
    /// Credits charged.
    pub charged: i64,
}

/// The latest jobs of a server key (at most 10) for the portal; none for an embed key, or when
/// the store cannot be read (the page still shows).
pub async fn recent_jobs(state: &AppState, key: &KeyRecord) -> Vec<JobSummary> {
    if key.kind != KeyKind::Server {
        return Vec::new();
    }
    let Some(jobs) = state.store().bulk_jobs() else { return Vec::new() };
    match jobs.jobs_of_key(&key.id, 10).await {
        Ok(list) => list
            .into_iter()
            .map(|j| JobSummary {
                submitted: rfc3339(j.created_at).chars().take(19).collect::<String>().replace('T', " "),
                id: j.id,
                state: j.state,
                checked: j.checked,
                total: j.total,
                charged: j.charged,
            })
            .collect(),
        Err(e) => {
            tracing::warn!(error = ?e, "bulk jobs not read for the portal");
            Vec::new()
        }
    }
}
