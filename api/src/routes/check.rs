//! `GET /v1/domains/check` (spec §2.2, §4.1): the availability check. Cost: 1 credit, spent only
//! for a definitive answer.
//!
//! Order: key (400/403) → origin (403) → parameters (400) → domain (400) → credits (429) →
//! verdict (cache, else a job on the bus; unknown or no reply in time → 502, credits released) →
//! pricing and purchase → commit the charge.

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use common::verdict::{Method, Status, Verdict};
use serde::Serialize;
use time::OffsetDateTime;

use super::Params;
use crate::error::ApiError;
use crate::pricing::{CommissionPercent, Pricing, quote};
use crate::purchase::{CheckoutUrl, Purchase, PurchaseInputs, resolve_purchase};
use crate::state::AppState;

/// Credits per availability check (spec §8).
pub const CHECK_COST: i64 = 1;

/// Our additions to the spec's check result, kept in one nested object (`verdict`).
#[derive(Debug, Serialize)]
pub struct VerdictInfo {
    /// available, taken, pending_delete, reserved, restricted.
    pub status: Status,
    /// dns, rdap, whois, policy or cache.
    pub method: Method,
    /// Whether the evidence came from the registry (or the zone's name servers) itself.
    pub authoritative: bool,
    /// Whether the verdict came from the cache.
    pub cached: bool,
    /// When the evidence was obtained (RFC 3339, UTC).
    #[serde(with = "time::serde::rfc3339")]
    pub checked_at: OffsetDateTime,
    /// The registry suffix with its leading dot (`.com.af`).
    pub tld: String,
    /// The U-label form of the domain, for display.
    pub unicode: String,
}

/// The check response (spec §2.2 plus `credits_*` per §8 and our `verdict` object).
#[derive(Debug, Serialize)]
pub struct CheckResponse {
    /// Always true here.
    pub success: bool,
    /// Normalised domain (A-label).
    pub domain: String,
    /// True only when the registry said the name can be registered.
    pub available: bool,
    /// `Available` or `Taken`.
    pub message: &'static str,
    /// Prices, when enabled for the key and known for the TLD; never for a taken domain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pricing: Option<Pricing>,
    /// Checkout button, for available names when the key shows one and a URL resolves.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub purchase: Option<Purchase>,
    /// Credits charged (1).
    pub credits_cost: i64,
    /// Credits left this month.
    pub credits_remaining: i64,
    /// How the verdict was reached.
    pub verdict: VerdictInfo,
}

/// Handler of `GET /v1/domains/check`.
pub async fn check(State(state): State<AppState>, headers: HeaderMap, RawQuery(raw): RawQuery) -> Result<Json<CheckResponse>, ApiError> {
    let params = Params::parse(raw.as_deref());
    let presented = params.require("client_key")?;
    let key = state.key(presented).await?;
    crate::origin::check(&key, &headers)?;
    let input = params.require("domain")?;
    let commission = params.get("commission_percent").map(CommissionPercent::parse).transpose().map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let redirect_url = params.get("redirect_url").map(CheckoutUrl::parse).transpose().map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let redirect_checkout = params.flag("redirect_checkout")?;
    let _include_price = params.flag("include_price")?;
    let domain = state.engine().parse(input)?;
    state.engine().entry(&domain).map_err(|e| ApiError::BadRequest(e.to_string()))?;

    let reservation = state.credits().reserve(&key, "check", CHECK_COST, OffsetDateTime::now_utc()).await?;
    let (verdict, cached) = verdict_for(&state, &domain).await?;
    if !verdict.status.is_definitive() {
        metrics::counter!("dsa_verdicts_total", "status" => "unknown").increment(1);
        return Err(ApiError::Upstream(verdict.evidence));
    }
    metrics::counter!("dsa_verdicts_total", "method" => method_label(verdict.method), "status" => status_label(verdict.status)).increment(1);

    let available = verdict.status.is_available();
    let pricing = if available && key.pricing_enabled {
        let commission = match commission {
            Some(c) => Some(c),
            None => key.default_commission_percent.and_then(|c| CommissionPercent::new(c).ok()),
        };
        state.prices().get(domain.suffix()).map(|price| quote(price, commission))
    } else {
        None
    };
    let key_url = key.purchase_url.as_deref().and_then(|u| CheckoutUrl::parse(u).ok());
    let inputs = PurchaseInputs {
        redirect_url: redirect_url.as_ref(),
        redirect_checkout,
        platform_checkout: state.platform_checkout(),
        key_purchase_url: key_url.as_ref(),
        show_purchase_button: key.show_purchase_button,
    };
    let purchase = resolve_purchase(
        &inputs,
        available,
        domain.as_str(),
        domain.sld(),
        &domain.tld(),
    );
    let credits_remaining = reservation.commit();
    Ok(Json(CheckResponse {
        success: true,
        domain: domain.as_str().to_owned(),
        available,
        message: verdict.status.message(),
        pricing,
        purchase,
        credits_cost: CHECK_COST,
        credits_remaining,
        verdict: VerdictInfo {
            status: verdict.status,
            method: verdict.method,
            authoritative: verdict.authoritative,
            cached,
            checked_at: verdict.checked_at,
            tld: domain.tld(),
            unicode: domain.unicode().to_owned(),
        },
    }))
}

/// A verdict from the cache, else from a worker through the job bus (bounded wait).
async fn verdict_for(state: &AppState, domain: &common::domain::DomainName) -> Result<(Verdict, bool), ApiError> {
    if let Some(v) = state.engine().cached(domain).await {
        return Ok((v, true));
    }
    match state.bus().check(domain.clone(), state.check_deadline()).await {
        Ok(v) => Ok((v, false)),
        Err(crate::dispatch::DispatchError::Engine(e)) => Err(ApiError::BadRequest(e.to_string())),
        Err(e) => Err(ApiError::Upstream(e.to_string())),
    }
}

fn method_label(m: Method) -> &'static str {
    match m {
        Method::Dns => "dns",
        Method::Rdap => "rdap",
        Method::Whois => "whois",
        Method::Policy => "policy",
        Method::Cache => "cache",
    }
}

fn status_label(s: Status) -> &'static str {
    match s {
        Status::Available => "available",
        Status::Taken => "taken",
        Status::PendingDelete => "pending_delete",
        Status::Reserved => "reserved",
        Status::Restricted => "restricted",
        Status::Unknown => "unknown",
    }
}
