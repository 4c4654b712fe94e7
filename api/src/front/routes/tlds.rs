//! `GET /v1/tlds` and `GET /v1/tlds/{tld}`: the suffixes dsa answers for, how it asks about each
//! (the lookup chain and its upstreams), and, for one suffix, how those upstreams fared over the
//! last hour. Free (no key, no credits): it describes the service, not a domain.
//!
//! The listing is computed once per process (the catalogue, the engine configuration and the
//! price table do not change while it runs) and served from the same bytes with
//! `Cache-Control: public, max-age=3600`. The single-suffix form adds live health and is computed
//! per request, `Cache-Control: no-store`.

use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use common::catalogue::{RegistrationPolicy, TldEntry};
use serde::Serialize;
use time::OffsetDateTime;
use utoipa::ToSchema;
use workers::book::ConsensusSource;
use workers::health::WINDOW_MINUTES;
use workers::probe::Protocol;

use crate::front::error::{ApiError, ErrorBody};
use crate::front::state::AppState;

/// `Cache-Control` of the listing: it only changes when the server restarts with another
/// catalogue, configuration or price table.
pub const LISTING_CACHE_CONTROL: &str = "public, max-age=3600";

/// One supported suffix: how dsa decides availability there.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TldInfo {
    /// The suffix with its leading dot, A-label (`.com`, `.com.af`, `.xn--p1ai`).
    #[schema(example = ".com")]
    pub tld: String,
    /// The lookup chain as this server runs it, in order: `dns` (the pre-check: can prove taken,
    /// never available), then the registry methods `rdap` (RFC 9083) and `whois` (RFC 3912).
    /// Empty for a restricted zone, which is answered by policy without any query.
    #[schema(example = json!(["dns", "rdap", "whois"]))]
    pub methods: Vec<&'static str>,
    /// The registry's RDAP base URLs (IANA bootstrap, RFC 9224).
    #[schema(example = json!(["https://rdap.verisign.com/com/v1/"]))]
    pub rdap: Vec<String>,
    /// The registry's WHOIS host (port 43, RFC 3912), when one is known.
    #[schema(example = "whois.verisign-grs.com")]
    #[schema(required = true)]
    pub whois: Option<String>,
    /// Whether an `available` answer can be definitive here: a registry method (RDAP or WHOIS) is
    /// in the chain and the zone is open to anyone. Otherwise checks answer taken or restricted,
    /// or 502, never available.
    pub definitive_available: bool,
    /// Whether only eligible registrants may register (checks answer `restricted`).
    pub restricted: bool,
    /// Who is eligible, for a restricted zone.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub restricted_reason: Option<String>,
    /// Whether this server's price table has a price for the suffix (checks may then carry
    /// `pricing`).
    pub price_known: bool,
    /// zonedb tags (`generic`, `country`, `brand`, `geo`, `sponsored`, …).
    #[schema(example = json!(["generic"]))]
    pub tags: Vec<String>,
}

/// The `GET /v1/tlds` body.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TldList {
    /// Always true here.
    pub success: bool,
    /// Number of entries in `tlds`.
    pub count: usize,
    /// Every supported suffix, sorted by suffix.
    pub tlds: Vec<TldInfo>,
}

/// The politeness budget of an upstream host (per process).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BudgetInfo {
    /// Sustained queries per second this service allows itself towards the registry.
    pub per_second: f64,
    /// Queries allowed at once after an idle period.
    pub burst: u32,
    /// Queries allowed in flight at once.
    pub concurrency: usize,
    /// Queries in flight now.
    pub in_flight: usize,
    /// Seconds left of the host's cooldown after repeated failures; absent when not cooling down.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub cooldown_remaining_secs: Option<f64>,
}

/// One method's health over the last hour.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MethodHealth {
    /// `dns`, `rdap` or `whois`.
    #[schema(example = "rdap")]
    pub method: &'static str,
    /// The upstream host this server asks (honouring its overrides), when known.
    #[schema(required = true)]
    pub upstream: Option<String>,
    /// Exchanges with the upstream in the last hour.
    pub attempts: u64,
    /// Of which gave a definitive answer (a timeout, reset, throttling, 5xx or unreadable answer
    /// is a failure).
    pub successes: u64,
    /// `successes / attempts`, 0 to 1; absent without attempts.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub success_rate: Option<f64>,
    /// Median latency of the latest exchanges (up to 128) in the last hour, milliseconds; absent
    /// without any.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub p50_ms: Option<u64>,
    /// The upstream's politeness budget, when the upstream is known and the probes run in this
    /// process (absent on a fleet front, whose workers hold the budgets). DNS budgets are kept per
    /// name-server address: for a name server shown by host name (no override), the limits are
    /// right but `in_flight` and the cooldown are those of that name, not of its addresses.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub budget: Option<BudgetInfo>,
}

/// Live health of a suffix, as seen by the process answering.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HealthInfo {
    /// The window the figures cover, seconds (the last hour).
    pub window_secs: u64,
    /// Whether this process runs the probes itself (standalone mode). A fleet front does not: its
    /// `methods` figures stay at zero (the workers probe), and `last_definitive_at` comes from
    /// the verdicts its workers returned.
    pub probes_in_process: bool,
    /// One entry per method of the chain, in order.
    pub methods: Vec<MethodHealth>,
    /// The last time this process saw a definitive verdict for a name under the suffix (RFC 3339,
    /// UTC); absent when it has seen none since it started.
    #[serde(with = "time::serde::rfc3339::option", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    #[schema(nullable = false)]
    pub last_definitive_at: Option<OffsetDateTime>,
    /// Self-correcting routing: while RDAP keeps failing for the suffix and
    /// WHOIS answers, checks ask WHOIS before RDAP until this time (RFC 3339, UTC), or until RDAP
    /// answers again. In a fleet this is the state shared by every worker (the routing KV
    /// bucket); standalone, this process's. Absent when the catalogue's order applies. `methods`
    /// above keeps the catalogue's order.
    #[serde(with = "time::serde::rfc3339::option", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    #[schema(nullable = false)]
    pub whois_first_until: Option<OffsetDateTime>,
}

/// One disagreement between two signals about a name.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DisagreementInfo {
    /// When it was seen (RFC 3339, UTC).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: OffsetDateTime,
    /// The name checked.
    #[schema(example = "held-name.io")]
    pub domain: String,
    /// The first signal, which said the name is available.
    #[schema(example = "rdap said available (RDAP: HTTP 404 from rdap.nic.io: not found)")]
    pub first: String,
    /// The second signal, which said it is registered.
    #[schema(example = "whois said registered (Taken: WHOIS whois.nic.io: Registered (Domain Name:), 1204 bytes)")]
    pub second: String,
}

/// Whether an `available` answer for this suffix needs a second, independent signal.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ConsensusInfo {
    /// True when a check here answers `available` only after a second signal agreed (the
    /// other registry service, else the TLD's own name servers showing no delegation). Signals
    /// that disagree make the check a 502, not charged.
    pub required: bool,
    /// Why it is required: `catalogue` (the registry has a record of false "not found" answers),
    /// `config` (this server's operator asks for it) or `disagreement` (this service saw two
    /// signals disagree here recently, see `until`). Absent when not required.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "catalogue")]
    pub source: Option<&'static str>,
    /// The catalogue's reason, with its source, when the catalogue requires it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Until when a recent disagreement keeps it required (RFC 3339, UTC); absent when no
    /// disagreement is on record.
    #[serde(with = "time::serde::rfc3339::option", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub until: Option<OffsetDateTime>,
    /// Disagreements between two signals counted for this suffix while the record of them lives
    /// (in a fleet: across every worker, forgotten an hour after the last one).
    pub disagreements: u64,
    /// The latest disagreement, when one is on record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_disagreement: Option<DisagreementInfo>,
}

/// The `GET /v1/tlds/{tld}` body: the suffix's listing entry, the catalogue entry that answers
/// for it, and live health.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TldDetail {
    /// Always true here.
    pub success: bool,
    /// The entry, as in `GET /v1/tlds`.
    #[serde(flatten)]
    pub info: TldInfo,
    /// The catalogue suffix whose registry (or policy) answers, with its leading dot: the same as
    /// `tld` for a listed suffix, the TLD for a second-level zone its registry sells (`.co.uk` →
    /// `.uk`), the restricted zone above it otherwise (`.sp.gov.br` → `.gov.br`).
    #[schema(example = ".com")]
    pub registry_suffix: String,
    /// How the chain's upstreams fared over the last hour.
    pub health: HealthInfo,
    /// Whether "available" needs a second signal here, and the disagreements seen.
    pub consensus: ConsensusInfo,
}

fn method_name(protocol: Protocol) -> &'static str {
    protocol.as_str()
}

/// The listing entry of `entry`, shown under the name `tld` (the suffix asked for).
fn info(state: &AppState, tld: &str, entry: &TldEntry) -> TldInfo {
    let chain = state.book().chain(entry);
    let restricted_reason = match &entry.policy {
        RegistrationPolicy::Restricted { reason } => Some(reason.clone()),
        RegistrationPolicy::Open => None,
    };
    let registry_method = chain.iter().any(|s| matches!(s.protocol, Protocol::Rdap | Protocol::Whois));
    TldInfo {
        tld: format!(".{tld}"),
        methods: chain.iter().map(|s| method_name(s.protocol)).collect(),
        rdap: entry.rdap.clone(),
        whois: entry.whois.as_ref().map(|w| w.host.clone()),
        definitive_available: registry_method && restricted_reason.is_none(),
        restricted: restricted_reason.is_some(),
        restricted_reason,
        price_known: state.prices().get(tld).is_some(),
        tags: entry.tags.clone(),
    }
}

/// The `GET /v1/tlds` body (JSON [`TldList`]), built once per process and shared by the route
/// and the MCP `list_tlds` tool.
pub fn listing(state: &AppState) -> bytes::Bytes {
    state.tld_listing(build_listing)
}

fn build_listing(state: &AppState) -> bytes::Bytes {
    let tlds: Vec<TldInfo> =
        state.book().catalogue().entries().filter(|e| e.is_supported()).map(|e| info(state, &e.suffix, e)).collect();
    let body = TldList { success: true, count: tlds.len(), tlds };
    // Serialising plain structs of strings and numbers cannot fail; an empty list is the
    // fallback that keeps the endpoint answering JSON if it ever did.
    serde_json::to_vec(&body)
        .map_or_else(|_| bytes::Bytes::from_static(br#"{"success":true,"count":0,"tlds":[]}"#), bytes::Bytes::from)
}

/// Every suffix dsa answers for.
///
/// Every supported suffix of the TLD catalogue (TLDs and the second-level registry zones it
/// lists), with the lookup chain this server runs there, whether "available" can be definitive,
/// the registration policy, whether a price is known, and the zonedb tags. Free: no key, no
/// credits. The body is the same for the life of the server process (`Cache-Control: public,
/// max-age=3600`).
#[utoipa::path(
    get,
    path = "/v1/tlds",
    tag = "catalogue",
    operation_id = "listTlds",
    summary = "List the TLDs this service answers for",
    description = "Every top-level domain and registry zone (such as `.com.af`) the service can check, with how it asks about each (RDAP, WHOIS, DNS) and whether registration is open. Free; no key needed.",
    responses(
        (status = 200, description = "Every supported suffix, sorted.", body = TldList,
            headers(("Cache-Control" = String, description = "`public, max-age=3600`: the listing only changes when the server restarts with another catalogue, configuration or price table.")),
            example = json!({"success": true, "count": 2, "tlds": [
                {"tld": ".com", "methods": ["dns", "rdap", "whois"], "rdap": ["https://rdap.verisign.com/com/v1/"], "whois": "whois.verisign-grs.com",
                 "definitive_available": true, "restricted": false, "price_known": true, "tags": ["generic"]},
                {"tld": ".gov.af", "methods": [], "rdap": [], "whois": "whois.nic.af",
                 "definitive_available": false, "restricted": true, "restricted_reason": "Afghan government bodies only.", "price_known": false, "tags": []}]})),
    )
)]
pub async fn list(State(state): State<AppState>) -> Response {
    let body = listing(&state);
    let mut response = ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static(LISTING_CACHE_CONTROL));
    response
}

/// Normalises a suffix as a user writes it (`com`, `.COM`, `com.af`, `рф`) to the catalogue's
/// form: A-label, lower case, no leading or trailing dot (UTS 46 via the `idna` crate).
fn normalise(raw: &str) -> Result<String, ApiError> {
    let trimmed = raw.trim().trim_start_matches('.').trim_end_matches('.');
    if trimmed.is_empty() {
        return Err(ApiError::BadRequest("The TLD is empty; write it as com, .com or com.af.".into()));
    }
    idna::domain_to_ascii(trimmed)
        .ok()
        .filter(|s| !s.is_empty() && !s.split('.').any(str::is_empty))
        .ok_or_else(|| ApiError::BadRequest(format!("{trimmed:?} is not a valid TLD or registry suffix.")))
}

/// One suffix, with live health.
///
/// The suffix's listing entry (as in `GET /v1/tlds`), the catalogue suffix that answers for it,
/// and, per method of its chain, the last hour's attempts, success rate and median latency as
/// seen by this process, the politeness budget of the upstream host, and when a definitive
/// verdict was last seen. Free: no key, no credits.
#[utoipa::path(
    get,
    path = "/v1/tlds/{tld}",
    tag = "catalogue",
    operation_id = "getTld",
    summary = "Describe one TLD and its registries' health",
    description = "One suffix's entry, the registry zone that answers for it, and, for each lookup method, the last hour's attempts, failures and latency. `consensus` says whether an `available` answer here needs a second, independent signal (and why), and counts the times two signals disagreed. Free; no key needed.",
    params(("tld" = String, Path, description = "A TLD or registry suffix, with or without its leading dot, as an A-label or U-label: `com`, `.com`, `com.af`, `рф`.", example = "com")),
    responses(
        (status = 200, description = "The suffix, with live health.", body = TldDetail,
            headers(("Cache-Control" = String, description = "`no-store`: the health figures are live.")),
            example = json!({"success": true, "tld": ".com", "methods": ["dns", "rdap", "whois"], "rdap": ["https://rdap.verisign.com/com/v1/"],
                "whois": "whois.verisign-grs.com", "definitive_available": true, "restricted": false, "price_known": true, "tags": ["generic"],
                "registry_suffix": ".com",
                "health": {"window_secs": 3600, "probes_in_process": true, "last_definitive_at": "2026-11-23T13:52:10Z", "methods": [
                    {"method": "dns", "upstream": "a.gtld-servers.net", "attempts": 41, "successes": 41, "success_rate": 1.0, "p50_ms": 18,
                     "budget": {"per_second": 50.0, "burst": 50, "concurrency": 32, "in_flight": 0}},
                    {"method": "rdap", "upstream": "rdap.verisign.com", "attempts": 23, "successes": 22, "success_rate": 0.9565, "p50_ms": 142,
                     "budget": {"per_second": 10.0, "burst": 10, "concurrency": 8, "in_flight": 1}},
                    {"method": "whois", "upstream": "whois.verisign-grs.com", "attempts": 1, "successes": 1, "success_rate": 1.0, "p50_ms": 210,
                     "budget": {"per_second": 1.0, "burst": 2, "concurrency": 2, "in_flight": 0}}]},
                "consensus": {"required": true, "source": "disagreement", "until": "2026-11-23T14:40:02Z", "disagreements": 1,
                    "last_disagreement": {"at": "2026-11-23T13:40:02Z", "domain": "held-name.com",
                        "first": "rdap said available (RDAP: HTTP 404 from rdap.verisign.com: not found)",
                        "second": "whois said registered (Taken: WHOIS whois.verisign-grs.com: Registered (Domain Name:), 1867 bytes)"}}})),
        (status = 400, description = "The path is not a valid suffix (empty, or not a domain label).", body = ErrorBody),
        (status = 404, description = "The suffix is not a TLD in the catalogue, or dsa cannot answer for it (no registry method); the error names it and says why.", body = ErrorBody,
            example = json!({"success": false, "error": "Unsupported TLD: .invalid-tld (.invalid-tld is not a TLD in the IANA root zone)"})),
    )
)]
pub async fn detail(
    State(state): State<AppState>,
    raw: Result<Path<String>, axum::extract::rejection::PathRejection>,
) -> Result<Response, ApiError> {
    // A path segment that is not UTF-8 once percent-decoded: a 400 in the spec's shape (§7), not
    // axum's plain-text rejection.
    let Path(raw) = raw.map_err(|e| ApiError::BadRequest(format!("Malformed TLD in the path: {e}.")))?;
    let suffix = normalise(&raw)?;
    let catalogue = state.book().catalogue();
    let resolution = catalogue
        .resolve(&suffix)
        .map_err(|reason| ApiError::UnknownSuffix(format!("Unsupported TLD: .{suffix} ({reason})")))?;
    let entry = resolution.entry();
    if !entry.is_supported() {
        return Err(ApiError::UnknownSuffix(format!("Unsupported TLD: .{suffix} ({})", entry.reason)));
    }
    let info = info(&state, &suffix, entry);
    let book = state.book();
    let stats = book.health().stats(&entry.suffix, OffsetDateTime::now_utc());
    let methods = book
        .chain(entry)
        .into_iter()
        .map(|step| {
            let window = stats.of(step.protocol);
            // Only where the probes run in this process (standalone): a fleet front's workers
            // spend their budgets elsewhere.
            let budget =
                step.upstream.as_deref().and_then(|host| book.budget(step.protocol, host)).map(|b| BudgetInfo {
                    per_second: b.per_second,
                    burst: b.burst,
                    concurrency: b.concurrency,
                    in_flight: b.in_flight,
                    cooldown_remaining_secs: b.cooldown_remaining_secs,
                });
            MethodHealth {
                method: method_name(step.protocol),
                upstream: step.upstream,
                attempts: window.attempts,
                successes: window.successes,
                success_rate: window.success_rate,
                p50_ms: window.p50_ms,
                budget,
            }
        })
        .collect();
    let state_now = book.consensus(entry, true).await;
    let hold = state_now.hold;
    let consensus = ConsensusInfo {
        required: state_now.required.is_some(),
        source: state_now.required.map(|s| match s {
            ConsensusSource::Config => "config",
            ConsensusSource::Catalogue => "catalogue",
            ConsensusSource::Disagreement => "disagreement",
        }),
        reason: entry.consensus.clone(),
        until: hold.as_ref().map(|h| h.until),
        disagreements: hold.as_ref().map_or(0, |h| h.disagreements),
        last_disagreement: hold.map(|h| DisagreementInfo {
            at: h.last.at,
            domain: h.last.domain,
            first: h.last.first,
            second: h.last.second,
        }),
    };
    let body = TldDetail {
        success: true,
        consensus,
        info,
        registry_suffix: format!(".{}", entry.suffix),
        health: HealthInfo {
            window_secs: WINDOW_MINUTES * 60,
            probes_in_process: state.bus().probes_in_process(),
            methods,
            last_definitive_at: stats.last_definitive_at,
            whois_first_until: book.whois_first_until(&entry.suffix).await,
        },
    };
    let mut response = axum::Json(body).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}
