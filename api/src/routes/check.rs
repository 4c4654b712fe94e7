//! `GET /v1/domains/check` (spec §2.2, §4.1): the availability check. Cost: 1 credit, spent only
//! for a definitive answer. Without `client_key` it is a demo check (spec §5.6).
//!
//! Order: key (400/403) → origin (403) → per-minute limit (429) → parameters (400) → domain
//! (400) → credits (429) → verdict (cache, else a job on the bus; unknown or no reply in time →
//! 502, credits released) → pricing and purchase → commit the charge.

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use common::domain::DomainName;
use common::verdict::{Method, Status, Verdict};
use serde::Serialize;
use time::OffsetDateTime;

use super::Params;
use crate::error::ApiError;
use crate::policy::{ClientAddr, RateState};
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
    /// Credits charged (1; 0 for a demo check).
    pub credits_cost: i64,
    /// Credits left this month (for a demo check: demo checks left in the session).
    pub credits_remaining: i64,
    /// How the verdict was reached.
    pub verdict: VerdictInfo,
    /// Present on demo checks only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub demo: Option<bool>,
}

/// Handler of `GET /v1/domains/check`.
pub async fn check(
    State(state): State<AppState>,
    headers: HeaderMap,
    addr: ClientAddr,
    RawQuery(raw): RawQuery,
) -> Response {
    let params = Params::parse(raw.as_deref());
    if params.get("client_key").is_none() && state.demo().enabled() {
        return demo_check(&state, &headers, &addr, &params).await.unwrap_or_else(IntoResponse::into_response);
    }
    let mut rate = None;
    let result = keyed_check(&state, &headers, &params, &mut rate).await;
    let mut response = match result {
        Ok(body) => Json(body).into_response(),
        Err(e) => e.into_response(),
    };
    if let Some(rate) = rate {
        rate.apply(response.headers_mut());
    }
    response
}

async fn keyed_check(
    state: &AppState,
    headers: &HeaderMap,
    params: &Params,
    rate: &mut Option<RateState>,
) -> Result<CheckResponse, ApiError> {
    let presented = params.require("client_key")?;
    let key = state.key(presented).await?;
    crate::origin::check(&key, headers, state.policy().empty_origins_allow_all)?;
    match state.rate_limit(&key).await {
        Ok(s) => *rate = Some(s),
        Err((e, s)) => {
            *rate = Some(s);
            return Err(e);
        }
    }
    let input = params.require("domain")?;
    let commission = params
        .get("commission_percent")
        .map(CommissionPercent::parse)
        .transpose()
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let redirect_url = params
        .get("redirect_url")
        .map(CheckoutUrl::parse)
        .transpose()
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let redirect_checkout = params.flag("redirect_checkout")?;
    let _include_price = params.flag("include_price")?;
    let domain = state.engine().parse(input)?;
    state.engine().entry(&domain).map_err(|e| ApiError::BadRequest(e.to_string()))?;

    let reservation = state.credits().reserve(&key, "check", CHECK_COST, state.now()).await?;
    let (verdict, cached) = verdict_for(state, &domain).await?;

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
    let purchase = resolve_purchase(&inputs, available, domain.as_str(), domain.sld(), &domain.tld());
    let credits_remaining = reservation.commit();
    Ok(response(&domain, &verdict, cached, pricing, purchase, CHECK_COST, credits_remaining, None))
}

async fn demo_check(
    state: &AppState,
    headers: &HeaderMap,
    addr: &ClientAddr,
    params: &Params,
) -> Result<Response, ApiError> {
    let input = params.require("domain")?;
    let domain = state.engine().parse(input)?;
    state.engine().entry(&domain).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let ticket = state.demo().admit(headers, addr, state.now()).await?;
    let verdict = match verdict_for(state, &domain).await {
        Ok(v) => v,
        Err(e) => {
            state.demo().release(&ticket, state.now()).await;
            return Err(e);
        }
    };
    let body = response(&domain, &verdict.0, verdict.1, None, None, 0, i64::from(ticket.remaining), Some(true));
    let mut response = Json(body).into_response();
    if ticket.new_session
        && let Ok(v) = HeaderValue::from_str(&state.demo().cookie(&ticket.session, state.tls()))
    {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    Ok(response)
}

#[expect(clippy::too_many_arguments, reason = "one place assembles every field of the response")]
fn response(
    domain: &DomainName,
    verdict: &Verdict,
    cached: bool,
    pricing: Option<Pricing>,
    purchase: Option<Purchase>,
    credits_cost: i64,
    credits_remaining: i64,
    demo: Option<bool>,
) -> CheckResponse {
    CheckResponse {
        success: true,
        domain: domain.as_str().to_owned(),
        available: verdict.status.is_available(),
        message: verdict.status.message(),
        pricing,
        purchase,
        credits_cost,
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
        demo,
    }
}

/// A definitive verdict from the cache, else from a worker through the job bus (bounded wait).
///
/// # Errors
/// 502 for an unknown verdict or no reply in time; 400 for an unsupported TLD.
async fn verdict_for(state: &AppState, domain: &DomainName) -> Result<(Verdict, bool), ApiError> {
    let (verdict, cached) = if let Some(v) = state.engine().cached(domain).await {
        (v, true)
    } else {
        match state.bus().check(domain.clone(), state.check_deadline()).await {
            Ok(v) => {
                if v.domain == domain.as_str() {
                    state.engine().remember(&v).await;
                }
                (v, false)
            }
            Err(crate::dispatch::DispatchError::Engine(e)) => return Err(ApiError::BadRequest(e.to_string())),
            Err(crate::dispatch::DispatchError::Rejected(reason)) => return Err(ApiError::BadRequest(reason)),
            Err(e) => {
                metrics::counter!("dsa_verdicts_total", "method" => "none", "status" => "unknown").increment(1);
                return Err(ApiError::Upstream(e.to_string()));
            }
        }
    };
    metrics::counter!("dsa_verdicts_total", "method" => method_label(verdict.method), "status" => status_label(verdict.status)).increment(1);
    if !verdict.status.is_definitive() {
        return Err(ApiError::Upstream(verdict.evidence));
    }
    Ok((verdict, cached))
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
