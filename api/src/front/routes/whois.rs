//! `GET /v1/whois` (spec §2.3, §4.2): the registration record of a domain. Cost: 2 credits, spent
//! only for a definitive registry answer; no definitive answer from any upstream → 502, nothing
//! charged.
//!
//! The record comes from RDAP first, WHOIS port 43 otherwise (see
//! [`workers::engine::registration`]). A field the registry does not publish is `null` (arrays
//! empty), never an invented value.
//!
//! **Not registered**: when the registry says there is no such domain, the answer is a 200 with
//! `whois: null` and `lookup.registered: false`, charged like any definitive answer (the registry
//! was asked and answered). A name the registry reports as reserved is also `whois: null`, with
//! `lookup.registry_status: ["reserved"]`.

use axum::Json;
use axum::extract::State;
use common::lookup::WhoisProvenance;
use common::record::DomainRecord;
use serde::Serialize;
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

use super::check::parse_domain;
use super::keyed::{Admitted, Keyed};
use super::{ApiQuery, required};
use crate::front::dispatch::BusError;
use crate::front::error::{ApiError, ErrorBody};
use crate::front::state::AppState;

/// Credits per WHOIS lookup (spec §8).
pub const WHOIS_COST: i64 = 2;

/// The spec's `source` value (§2.3: `<platform>_domain_whois`). Where the data came from is in
/// `lookup`.
pub const SOURCE: &str = "dsa_domain_whois";

/// Query parameters of `GET /v1/whois` (spec §4.2). `client_key` is the security scheme.
#[derive(Debug, Default, serde::Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WhoisQuery {
    /// Full domain including its TLD, as a U-label or A-label; reduced to the registrable domain.
    #[param(required = true, value_type = String, min_length = 1, max_length = 1024, example = "example.com")]
    pub domain: Option<String>,
}

/// Who holds the name, as far as the registry publishes it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RegistrantObject {
    /// Organisation; `null` when not published or redacted (see `lookup.redacted`).
    #[schema(required = true)]
    pub org: Option<String>,
    /// ISO 3166-1 alpha-2 country code, upper case; `null` when not published or redacted.
    #[schema(example = "US")]
    #[schema(required = true)]
    pub country: Option<String>,
}

/// The registration record. Timestamps are RFC 3339 in UTC with `Z`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WhoisObject {
    /// The domain (A-label, lower case).
    pub domain: String,
    /// Status labels: EPP names (RFC 5731 spelling, e.g. `clientTransferProhibited`) mapped from
    /// RDAP (RFC 8056) and WHOIS; the registry's own words where no EPP name applies.
    pub status: Vec<String>,
    /// Sponsoring registrar's name; `null` when not published.
    #[schema(required = true)]
    pub registrar: Option<String>,
    /// Registrant organisation and country.
    pub registrant: RegistrantObject,
    /// Delegated name servers (host names, lower case, no trailing dot).
    pub nameservers: Vec<String>,
    /// Registration time; `null` when not published.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    #[schema(required = true)]
    pub created_at: Option<OffsetDateTime>,
    /// Last update; `null` when not published.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    #[schema(required = true)]
    pub updated_at: Option<OffsetDateTime>,
    /// Expiry; `null` when not published.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    #[schema(required = true)]
    pub expires_at: Option<OffsetDateTime>,
    /// Whether the delegation is DNSSEC-signed; `null` when the registry does not say.
    #[schema(required = true)]
    pub dnssec: Option<bool>,
    /// Always `dsa_domain_whois`.
    #[schema(example = "dsa_domain_whois")]
    pub source: &'static str,
}

/// How the record was obtained (a dsa extension, kept in one nested object).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WhoisLookupInfo {
    /// False when the registry says the name is not registered (then `whois` is `null`).
    pub registered: bool,
    /// Where the data came from.
    #[serde(flatten)]
    pub provenance: WhoisProvenance,
}

/// The answer to a WHOIS lookup.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WhoisResponse {
    /// Always true here.
    pub success: bool,
    /// The registrable domain asked (A-label).
    pub domain: String,
    /// The record; `null` when the name is not registered.
    #[schema(required = true)]
    pub whois: Option<WhoisObject>,
    /// Credits charged (2).
    pub credits_cost: i64,
    /// Credits left this month.
    pub credits_remaining: i64,
    /// When the registry answered (RFC 3339, UTC).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub checked_at: OffsetDateTime,
    /// How the record was obtained (our addition).
    pub lookup: WhoisLookupInfo,
}

fn utc(t: Option<OffsetDateTime>) -> Option<OffsetDateTime> {
    t.map(|t| t.to_offset(time::UtcOffset::UTC))
}

/// The §2.3 object of a record.
pub fn whois_object(domain: &str, r: DomainRecord) -> WhoisObject {
    WhoisObject {
        domain: r.domain.unwrap_or_else(|| domain.to_owned()),
        status: r.status,
        registrar: r.registrar,
        registrant: RegistrantObject { org: r.registrant.org, country: r.registrant.country },
        nameservers: r.nameservers,
        created_at: utc(r.created_at),
        updated_at: utc(r.updated_at),
        expires_at: utc(r.expires_at),
        dnssec: r.dnssec,
        source: SOURCE,
    }
}

/// Handler of `GET /v1/whois` (spec §4.2, §2.3), behind the
/// [`require_key`](super::keyed::require_key) prelude.
#[utoipa::path(
    get,
    path = "/v1/whois",
    tag = "whois",
    operation_id = "lookupWhois",
    summary = "Look up a domain's registration record",
    description = "The registration facts of a registered domain: registrar, creation, update and expiry dates, name servers, EPP statuses. Read from the registry's RDAP service where it has one, else from its WHOIS server. Costs 2 credits; a 502 (no registry answered) is not charged. A server key is required.",
    params(WhoisQuery),
    security(("client_key" = [])),
    responses(
        (status = 200, description = "The registry's record (RDAP first, WHOIS otherwise). Fields the registry does not publish are `null` (arrays empty). \
A name the registry says is **not registered** is also a 200 (charged): `whois` is `null` and `lookup.registered` is false.",
            body = WhoisResponse, headers(
                ("RateLimit-Policy" = String, description = "The key's per-minute quota, e.g. `\"per-minute\";q=60;w=60`."),
                ("RateLimit" = String, description = "Requests left in this window and seconds until it resets."),
                ("X-Request-Id" = String, description = "Request identifier (also in the logs).")),
            example = json!({"success": true, "domain": "google.com",
                "whois": {"domain": "google.com",
                    "status": ["clientDeleteProhibited", "clientTransferProhibited", "clientUpdateProhibited", "serverDeleteProhibited", "serverTransferProhibited", "serverUpdateProhibited"],
                    "registrar": "MarkMonitor Inc.", "registrant": {"org": "Dsa Sim Holdings Ltd", "country": "GB"},
                    "nameservers": ["ns1.google.com", "ns2.google.com", "ns3.google.com", "ns4.google.com"],
                    "created_at": "1997-09-15T04:00:00Z", "updated_at": "2026-01-15T08:30:00Z", "expires_at": "2028-09-14T04:00:00Z",
                    "dnssec": true, "source": "dsa_domain_whois"},
                "credits_cost": 2, "credits_remaining": 498, "checked_at": "2026-11-23T06:52:02.900238326Z",
                "lookup": {"registered": true, "protocol": "rdap", "server": "127.0.0.1", "authority": "registrar",
                    "referral": "http://registrar.dsa-sim.test:46031/registrar/domain/google.com", "referral_skipped": null, "redacted": [],
                    "registry_status": ["client delete prohibited", "client transfer prohibited", "client update prohibited", "server delete prohibited", "server transfer prohibited", "server update prohibited"]}})),
        (status = 400, description = "Missing `client_key` or `domain`, invalid domain, or unsupported TLD.", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended (`Invalid or disabled client key.`), or the request's origin is not allowed for the key.", body = ErrorBody),
        (status = 429, description = "Per-minute limit (`Retry-After`: the next window) or monthly credits (`Monthly credit limit reached`).", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
        (status = 502, description = "No definitive answer from any registry upstream (timeout, refused, rate-limited, unparsable); retry with exponential backoff. Not charged.", body = ErrorBody),
    )
)]
pub async fn whois(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    admitted: Admitted,
    ApiQuery(query): ApiQuery<WhoisQuery>,
) -> Result<Json<WhoisResponse>, ApiError> {
    let input = required(&query.domain, "domain")?;
    let domain = parse_domain(&state, input)?;
    // `records.whois_deadline_secs` bounds the whole request from its admission: the key lookup
    // and the credit reservation (database steps) spend from it, the registry gets what is left.
    let until = admitted
        .deadline(std::time::Duration::from_secs_f64(state.book().config().records.whois_deadline_secs.max(0.01)));
    let reservation = tokio::time::timeout_at(until, state.credits().reserve(&key, "whois", WHOIS_COST, state.now()))
        .await
        .map_err(|_| ApiError::Unavailable)??;
    let left = until.saturating_duration_since(tokio::time::Instant::now());
    let answer = match state.bus().whois(&domain, left).await {
        Ok(a) => a,
        Err(BusError::Rejected(reason)) => return Err(ApiError::BadRequest(reason)),
        Err(e) => {
            metrics::counter!("dsa_lookups_total", "kind" => "whois", "outcome" => "no_answer").increment(1);
            return Err(ApiError::Upstream(e.to_string()));
        }
    };
    metrics::counter!("dsa_lookups_total", "kind" => "whois", "outcome" => "answer").increment(1);
    let credits_remaining = reservation.commit().await?;
    let whois = answer.registered.then(|| whois_object(domain.as_str(), answer.record));
    Ok(Json(WhoisResponse {
        success: true,
        domain: domain.as_str().to_owned(),
        whois,
        credits_cost: WHOIS_COST,
        credits_remaining,
        checked_at: answer.checked_at,
        lookup: WhoisLookupInfo { registered: answer.registered, provenance: answer.provenance },
    }))
}
