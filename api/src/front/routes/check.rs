//! `GET /v1/domains/check` (spec §2.2, §4.1): the availability check. Cost: 1 credit, spent only
//! for a definitive answer. Without `client_key` it is a demo check (spec §5.6).
//!
//! Order: key (400/403) → origin (403) → per-minute limit (429) → parameters (400) → domain
//! (400) → credits (429) → verdict (cache, else a job on the bus; unknown or no reply in time →
//! the last known verdict if young enough, flagged stale, else 502 with credits released) →
//! pricing and purchase → commit the charge.
//!
//! Serve stale (`engine.stale`): when the registry gives no definitive answer, a verdict seen for
//! the name within `max_age_secs` (taken and the like; default a day) or `available_max_age_secs`
//! (available; default 5 minutes) is returned with `verdict.cached: true`, `verdict.stale: true`
//! and `verdict.age_secs`. It is charged like a cache hit: the caller got a definitive answer,
//! dated. Older verdicts are never served: the answer stays 502, not charged.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use common::domain::DomainName;
use common::verdict::{Method, Status, Verdict};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Serialize;
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

use super::keyed::Keyed;
use super::{Flag, flag, optional, required};
use crate::front::dispatch::BusError;
use crate::front::error::{ApiError, ErrorBody};
use crate::front::keys::KeyRecord;
use crate::front::policy::{ClientAddr, DemoTicket};
use crate::front::state::AppState;
use crate::pricing::purchase::{CheckoutUrl, Purchase, PurchaseInputs, resolve_purchase};
use crate::pricing::{CommissionPercent, Pricing, quote};

/// Credits per availability check (spec §8).
pub const CHECK_COST: i64 = 1;

/// How the verdict was reached and how fresh it is (a dsa extension, kept in one nested object).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct VerdictInfo {
    /// available, taken, pending_delete, reserved, restricted.
    pub status: Status,
    /// dns, rdap, whois, policy or cache.
    pub method: Method,
    /// For an available name where this service asks a second, independent signal first: the
    /// signal that agreed with `method` — `whois` or `rdap` (the registry's other service) or
    /// `dns` (the TLD's own name servers show no delegation). Absent when one registry answer
    /// decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "whois")]
    pub confirmed_by: Option<Method>,
    /// Whether the evidence came from the registry (or the zone's name servers) itself.
    pub authoritative: bool,
    /// Whether the verdict came from the cache (fresh or stale).
    pub cached: bool,
    /// Whether this is a last known verdict served because the registry gave no definitive
    /// answer now (see `age_secs`; "Serve stale" in docs/verdicts.md).
    pub stale: bool,
    /// For a stale verdict: seconds since its evidence was obtained. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = 42)]
    #[schema(nullable = false)]
    pub age_secs: Option<u64>,
    /// When the evidence was obtained (RFC 3339, UTC).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub checked_at: OffsetDateTime,
    /// The registry suffix with its leading dot (`.com.af`).
    pub tld: String,
    /// The U-label form of the domain, for display.
    pub unicode: String,
}

/// The answer to an availability check.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CheckResponse {
    /// Always true here.
    pub success: bool,
    /// Normalised domain (A-label).
    pub domain: String,
    /// True only when the registry said the name can be registered.
    pub available: bool,
    /// `Available` or `Taken`.
    #[schema(value_type = String, example = "Available")]
    pub message: &'static str,
    /// Prices, when enabled for the key and known for the TLD; never for a taken domain.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub pricing: Option<Pricing>,
    /// Checkout button, for available names when the key shows one and a URL resolves.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub purchase: Option<Purchase>,
    /// Credits charged (1; 0 for a demo check).
    pub credits_cost: i64,
    /// Credits left this month (for a demo check: demo checks left in the session).
    pub credits_remaining: i64,
    /// How the verdict was reached (a dsa extension).
    pub verdict: VerdictInfo,
    /// Present (true) on demo checks only: checks made without a key.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub demo: Option<bool>,
}

/// Query parameters of `GET /v1/domains/check` (spec §4.1). `client_key` is the security scheme.
#[derive(Debug, Default, serde::Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CheckQuery {
    /// Full domain including its TLD, as a U-label or A-label (`bücher.de`, `www.example.com.af`);
    /// normalised per UTS 46 and reduced to the registrable domain.
    #[param(required = true, value_type = String, min_length = 1, max_length = 1024, example = "example.com")]
    pub domain: Option<String>,
    /// Percentage markup for this request's displayed price; overrides the key's default
    /// commission. A decimal number from 0 to 1000.
    #[param(value_type = Option<f64>, minimum = 0, maximum = 1000, example = 10)]
    pub commission_percent: Option<String>,
    /// Custom checkout URL (absolute http or https); `domain`, `sld` and `tld` are appended and
    /// `purchase.source` is `client_url`.
    #[param(value_type = Option<String>, example = "https://shop.example/cart")]
    pub redirect_url: Option<String>,
    /// `1` forces the platform checkout URL in `purchase.url`.
    #[param(value_type = Option<Flag>, default = 0)]
    pub redirect_checkout: Option<String>,
    /// For the front page's short form: `1` includes `price` in the answer of
    /// `GET /domain-check`; accepted and without effect on `GET /v1/domains/check`.
    #[param(value_type = Option<Flag>, default = 0)]
    pub include_price: Option<String>,
}

impl CheckQuery {
    /// The parameters of the query string `raw` (`application/x-www-form-urlencoded`, WHATWG URL
    /// §5.1): what [`ApiQuery`](super::ApiQuery) reads with serde, field for field, without serde's generic
    /// machinery (a third of the parameter step of every cached check): names and values
    /// decoded, invalid UTF-8 replaced, other parameters ignored.
    ///
    /// # Errors
    /// [`ApiError::BadRequest`] for a parameter given twice, as [`ApiQuery`](super::ApiQuery) answers it.
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        let mut query = CheckQuery::default();
        for (name, value) in url::form_urlencoded::parse(raw.as_bytes()) {
            let (field, slot) = match name.as_ref() {
                "domain" => ("domain", &mut query.domain),
                "commission_percent" => ("commission_percent", &mut query.commission_percent),
                "redirect_url" => ("redirect_url", &mut query.redirect_url),
                "redirect_checkout" => ("redirect_checkout", &mut query.redirect_checkout),
                "include_price" => ("include_price", &mut query.include_price),
                _ => continue,
            };
            if slot.is_some() {
                return Err(ApiError::BadRequest(format!("Malformed query string: duplicate field `{field}`.")));
            }
            *slot = Some(value.into_owned());
        }
        Ok(query)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for CheckQuery {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Self::parse(parts.uri.query().unwrap_or(""))
    }
}

/// The request options of a check besides the domain, parsed and validated (400 on bad input).
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// The request's `commission_percent`, if any (else the key's default applies).
    pub commission: Option<CommissionPercent>,
    /// The request's `redirect_url`, if any.
    pub redirect_url: Option<CheckoutUrl>,
    /// The request's `redirect_checkout=1`.
    pub redirect_checkout: bool,
}

impl CheckOptions {
    /// Parses the options of a check query.
    ///
    /// # Errors
    /// [`ApiError::BadRequest`] naming the bad parameter.
    pub fn from_query(q: &CheckQuery) -> Result<Self, ApiError> {
        let commission = optional(&q.commission_percent)
            .map(CommissionPercent::parse)
            .transpose()
            .map_err(|e| ApiError::BadRequest(e.to_string()))?;
        let redirect_url = optional(&q.redirect_url)
            .map(CheckoutUrl::parse)
            .transpose()
            .map_err(|e| ApiError::BadRequest(e.to_string()))?;
        let redirect_checkout = flag(&q.redirect_checkout, "redirect_checkout")?;
        flag(&q.include_price, "include_price")?;
        Ok(Self { commission, redirect_url, redirect_checkout })
    }

    /// Checks the options against this server's configuration (before any credit is held).
    ///
    /// # Errors
    /// [`ApiError::BadRequest`] for `redirect_checkout=1` without a platform checkout URL.
    pub fn usable(&self, state: &AppState) -> Result<(), ApiError> {
        if self.redirect_checkout && state.platform_checkout().is_none() {
            return Err(ApiError::BadRequest(
                "redirect_checkout=1 asks for the platform checkout URL, but this server has none configured (pricing.platform_checkout_url); drop the parameter or use redirect_url.".into(),
            ));
        }
        Ok(())
    }
}

/// The core of one check, before it is shaped for an endpoint: the verdict and, for a key, the
/// offer (price and purchase). Projections: [`CheckOutcome::into_body`] (§2.2), the front-page
/// form (§4.7) and bulk entries (§2.5).
#[derive(Debug, Clone)]
pub struct CheckOutcome {
    /// The normalised domain.
    pub domain: DomainName,
    /// The definitive verdict.
    pub verdict: Verdict,
    /// Whether the verdict came from the cache (fresh or stale).
    pub cached: bool,
    /// For a stale verdict (the registry gave no definitive answer now): its age, seconds.
    pub stale_age_secs: Option<u64>,
    /// Prices, when the key enables them, the name is available and a price is known.
    pub pricing: Option<Pricing>,
    /// Checkout button, per [`resolve_purchase`].
    pub purchase: Option<Purchase>,
}

/// Parses a domain for a check and makes sure the catalogue supports its suffix.
///
/// # Errors
/// [`ApiError::BadRequest`] with the normaliser's or the catalogue's reason.
pub fn parse_domain(state: &AppState, input: &str) -> Result<DomainName, ApiError> {
    let domain = state.book().parse(input)?;
    state.book().entry(&domain).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    Ok(domain)
}

/// The core check step for a key: a definitive verdict (cache or job bus), then the offer.
/// Credits are the caller's business (reserve before, commit after).
///
/// # Errors
/// As [`verdict_for`]: 502 without a definitive verdict, 400 for an unsupported suffix.
pub async fn evaluate(
    state: &AppState,
    key: &KeyRecord,
    domain: DomainName,
    options: &CheckOptions,
) -> Result<CheckOutcome, ApiError> {
    options.usable(state)?;
    let Answer { verdict, cached, stale_age_secs } = verdict_for(state, &domain).await?;
    let available = verdict.status.is_available();
    let pricing = if available && key.pricing_enabled {
        let commission = match options.commission {
            Some(c) => Some(c),
            None => key.default_commission_percent.and_then(|c| CommissionPercent::new(c).ok()),
        };
        state.prices().get(domain.suffix()).map(|price| quote(price, commission))
    } else {
        None
    };
    // Spec §4.1: pricing disabled for the key → no pricing and no purchase.
    let show_purchase_button = key.show_purchase_button && key.pricing_enabled;
    // The key's URL is parsed only when a button can be shown (an available name).
    let key_url = if available && show_purchase_button { key.purchase_checkout() } else { None };
    let inputs = PurchaseInputs {
        redirect_url: options.redirect_url.as_ref(),
        redirect_checkout: options.redirect_checkout,
        platform_checkout: state.platform_checkout(),
        key_purchase_url: key_url.as_deref(),
        show_purchase_button,
    };
    let purchase = resolve_purchase(&inputs, available, domain.as_str(), domain.sld(), &domain.tld());
    Ok(CheckOutcome { domain, verdict, cached, stale_age_secs, pricing, purchase })
}

impl CheckOutcome {
    /// The §2.2 body (plus `credits_*` and our `verdict` object).
    pub fn into_body(self, credits_cost: i64, credits_remaining: i64, demo: Option<bool>) -> CheckResponse {
        let verdict = VerdictInfo::of(&self);
        CheckResponse {
            success: true,
            domain: self.domain.as_str().to_owned(),
            available: self.verdict.status.is_available(),
            message: self.verdict.status.message(),
            pricing: self.pricing,
            purchase: self.purchase,
            credits_cost,
            credits_remaining,
            verdict,
            demo,
        }
    }
}

impl VerdictInfo {
    /// Our nested `verdict` object for a check's outcome.
    pub fn of(outcome: &CheckOutcome) -> Self {
        let (domain, verdict) = (&outcome.domain, &outcome.verdict);
        VerdictInfo {
            status: verdict.status,
            method: verdict.method,
            confirmed_by: verdict.confirmed_by,
            authoritative: verdict.authoritative,
            cached: outcome.cached,
            stale: outcome.stale_age_secs.is_some(),
            age_secs: outcome.stale_age_secs,
            checked_at: verdict.checked_at,
            tld: domain.tld(),
            unicode: domain.unicode().to_owned(),
        }
    }
}

/// Handler of `GET /v1/domains/check`: the availability check (spec §4.1, §2.2). Behind the
/// [`key_or_demo`](super::keyed::key_or_demo) prelude; without a key it is a demo check (§5.6).
#[utoipa::path(
    get,
    path = "/v1/domains/check",
    tag = "availability",
    operation_id = "checkDomain",
    summary = "Check whether a domain name can be registered",
    description = "Answers whether `domain` can be registered now. `available` is `true` only when the registry itself said the name is free (RDAP or WHOIS); a name that resolves in DNS is taken. An available name comes with its price (the registry price plus your commission) and a purchase link. The `verdict` object (a dsa extension) says how the answer was reached and how fresh it is.\n\nWithout `client_key` this is a demo check: two per browser session, without price or purchase link. With a key it costs 1 credit per definitive answer; a 502 (no definitive answer) is never charged.",
    params(CheckQuery),
    security(("client_key" = []), ()),
    responses(
        (status = 200, description = "A definitive verdict. `available` is true only when the registry said the name can be registered.",
            body = CheckResponse, headers(
                ("RateLimit-Policy" = String, description = "The key's per-minute quota, e.g. `\"per-minute\";q=60;w=60` (absent on demo checks)."),
                ("RateLimit" = String, description = "Requests left in this window and seconds until it resets, e.g. `\"per-minute\";r=59;t=42`."),
                ("X-Request-Id" = String, description = "Request identifier (also in the logs).")),
            example = json!({"success": true, "domain": "dsa-demo-available.com", "available": true, "message": "Available",
                "pricing": {"currency": "USD", "base_register": 11.06, "display_register": 12.17, "pricing_mode": "with_commission", "commission_percent": 10.0},
                "purchase": {"show_button": true, "url": "https://checkout.example/register?domain=dsa-demo-available.com&sld=dsa-demo-available&tld=.com", "source": "url"},
                "credits_cost": 1, "credits_remaining": 499,
                "verdict": {"status": "available", "method": "rdap", "authoritative": true, "cached": false, "stale": false, "checked_at": "2026-11-22T07:31:41.075370258Z", "tld": ".com", "unicode": "dsa-demo-available.com"}})),
        (status = 400, description = "Missing `client_key` or `domain`, invalid domain, unsupported TLD, or a malformed parameter.", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended (`Invalid or disabled client key.`), or the request's origin is not allowed for the key.", body = ErrorBody),
        (status = 429, description = "Per-minute limit (`Retry-After`: the next window), monthly credits (`Monthly credit limit reached`), or the demo limit.", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
        (status = 502, description = "The registry gave no definitive answer in time, and no recent verdict could stand in (a stale one is a 200 with `verdict.stale: true`); retry with exponential backoff. Not charged.", body = ErrorBody),
        (status = 503, description = "This front is shedding load, or cannot reach its key store for a key it has not seen; retry after `Retry-After`. Not charged.", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
    )
)]
pub async fn check(State(state): State<AppState>, caller: Caller, query: CheckQuery) -> Result<Response, ApiError> {
    let checked = perform(&state, caller, &query).await?;
    let demo = checked.demo.is_some().then_some(true);
    let body = checked.outcome.into_body(checked.credits_cost, checked.credits_remaining, demo);
    let mut response = super::json_response(&body);
    set_demo_cookie(&state, checked.demo.as_ref(), &mut response);
    Ok(response)
}

/// Who asks for a check ([`perform`]): the key the [`key_or_demo`](super::keyed::key_or_demo)
/// prelude admitted, or, without a key (a demo check, spec §5.6), what the demo rules read: the
/// request's headers (the session cookie) and its client address. Only a demo check copies the
/// headers.
#[derive(Debug, Clone)]
pub enum Caller {
    /// A check charged to the admitted key.
    Keyed(Keyed),
    /// A demo check.
    Demo {
        /// The request's headers.
        headers: HeaderMap,
        /// The client's address (as `policy.trusted_proxy_hops` says to read it).
        addr: ClientAddr,
    },
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(match parts.extensions.get::<Keyed>() {
            Some(keyed) => Caller::Keyed(keyed.clone()),
            None => Caller::Demo {
                headers: parts.headers.clone(),
                addr: ClientAddr::from_parts(&parts.headers, &parts.extensions),
            },
        })
    }
}

/// A finished check before it is shaped for an endpoint: the outcome and what it cost.
#[derive(Debug)]
pub struct Checked {
    /// The verdict and, for a key, the offer.
    pub outcome: CheckOutcome,
    /// Credits charged (0 for a demo check).
    pub credits_cost: i64,
    /// Credits left this month (demo: demo checks left in the session).
    pub credits_remaining: i64,
    /// The demo ticket, on demo checks (its session cookie goes on the response).
    pub demo: Option<DemoTicket>,
}

/// One whole check as `GET /v1/domains/check` and `GET /domain-check` run it, behind the
/// [`key_or_demo`](super::keyed::key_or_demo) prelude: with a key, parameters (400) → domain
/// (400) → credits (429) → [`evaluate`] → commit; without one, the demo rules (spec §5.6: no
/// charge, no price, no purchase; the demo check is given back when no verdict comes).
///
/// # Errors
/// 400 bad input, 429 credits or demo limit, 502 no definitive verdict (nothing charged).
pub async fn perform(state: &AppState, caller: Caller, query: &CheckQuery) -> Result<Checked, ApiError> {
    let input = required(&query.domain, "domain")?;
    let (headers, addr) = match caller {
        Caller::Keyed(Keyed { key }) => return keyed_check(state, &key, query).await,
        Caller::Demo { headers, addr } => (headers, addr),
    };
    let domain = parse_domain(state, input)?;
    let ticket = state.demo().admit(&headers, &addr, state.now()).await?;
    let Answer { verdict, cached, stale_age_secs } = match verdict_for(state, &domain).await {
        Ok(v) => v,
        Err(e) => {
            state.demo().release(&ticket, state.now()).await;
            return Err(e);
        }
    };
    let outcome = CheckOutcome { domain, verdict, cached, stale_age_secs, pricing: None, purchase: None };
    let credits_remaining = i64::from(ticket.remaining);
    Ok(Checked { outcome, credits_cost: 0, credits_remaining, demo: Some(ticket) })
}

/// A check charged to `key` (the keyed half of [`perform`], also run by the MCP `check_domain`
/// tool): parameters (400) → domain (400) → credits (429) → [`evaluate`] → commit.
///
/// # Errors
/// 400 bad input, 429 credits, 502 no definitive verdict (nothing charged).
pub async fn keyed_check(state: &AppState, key: &KeyRecord, query: &CheckQuery) -> Result<Checked, ApiError> {
    let input = required(&query.domain, "domain")?;
    let options = CheckOptions::from_query(query)?;
    let domain = parse_domain(state, input)?;
    let reservation = state.credits().reserve(key, "check", CHECK_COST, state.now()).await?;
    let outcome = evaluate(state, key, domain, &options).await?;
    let credits_remaining = reservation.commit().await?;
    Ok(Checked { outcome, credits_cost: CHECK_COST, credits_remaining, demo: None })
}

/// Sets the demo session cookie on `response` when `ticket` opened a new session.
pub fn set_demo_cookie(state: &AppState, ticket: Option<&DemoTicket>, response: &mut Response) {
    if let Some(ticket) = ticket
        && ticket.new_session
        && let Ok(v) = HeaderValue::from_str(&state.demo().cookie(&ticket.session, state.cookie_secure()))
    {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
}

/// A definitive verdict and where it came from (see [`verdict_for`]).
#[derive(Debug, Clone)]
pub struct Answer {
    /// The definitive verdict.
    pub verdict: Verdict,
    /// Whether it came from the cache (fresh or stale).
    pub cached: bool,
    /// For a stale verdict: its age in seconds.
    pub stale_age_secs: Option<u64>,
}

/// A definitive verdict from the cache, else from a worker through the job bus (bounded wait),
/// else (the registry gave no definitive answer) the last known verdict if young enough, flagged
/// stale (see the module documentation).
///
/// # Errors
/// 502 for an unknown verdict or no reply in time without a usable stale one; 400 for an
/// unsupported TLD.
pub async fn verdict_for(state: &AppState, domain: &DomainName) -> Result<Answer, ApiError> {
    match fresh_verdict(state, domain).await {
        Err(ApiError::Upstream(cause)) => match state.book().stale(domain).await {
            Some(stale) => {
                tracing::info!(domain = domain.as_str(), age_secs = stale.age_secs, %cause, "serving a stale verdict");
                metrics::counter!("dsa_stale_verdicts_total", "status" => status_label(stale.verdict.status))
                    .increment(1);
                Ok(Answer { verdict: stale.verdict, cached: true, stale_age_secs: Some(stale.age_secs) })
            }
            None => Err(ApiError::Upstream(cause)),
        },
        other => other,
    }
}

async fn fresh_verdict(state: &AppState, domain: &DomainName) -> Result<Answer, ApiError> {
    let (verdict, cached) = if let Some(v) = state.book().cached(domain).await {
        (v, true)
    } else {
        // Background work (a bulk job's check) has flights of its own: a user's check never
        // waits on a job that keeps to the background share of the budgets.
        let flight = match common::priority::current() {
            common::priority::Priority::Interactive => domain.as_str().to_owned(),
            common::priority::Priority::Background => format!("{} background", domain.as_str()),
        };
        let (outcome, joined) = state.lookups().run(flight, || lookup(state.clone(), domain.clone())).await;
        // `lookup` runs the job in its own task, so a panic there is already its JoinError; this
        // arm is for the single-flight's own guarantee.
        let result = outcome.unwrap_or_else(|panicked| Err(BusError::Unavailable(panicked.to_string())));
        if joined {
            metrics::counter!("dsa_coalesced_lookups_total").increment(1);
        }
        match result {
            Ok(v) => (v, false),
            Err(BusError::Rejected(reason)) => return Err(ApiError::BadRequest(reason)),
            Err(cause) => {
                metrics::counter!("dsa_verdicts_total", "method" => "none", "status" => "unknown").increment(1);
                return Err(ApiError::Upstream(cause.to_string()));
            }
        }
    };
    verdicts_total(verdict.method, verdict.status).increment(1);
    if !verdict.status.is_definitive() {
        return Err(ApiError::Upstream(verdict.evidence));
    }
    Ok(Answer { verdict, cached, stale_age_secs: None })
}

/// One job on the bus for `domain`, shared by every concurrent check of it (see
/// [`crate::singleflight`]). In a fleet, a verdict for the name asked is remembered in the
/// front's verdict book; standalone's in-process workers already wrote it in the same book.
fn lookup(state: AppState, domain: DomainName) -> BoxFuture<'static, Result<Verdict, BusError>> {
    // The job runs in its own task holding only the bus and the book: it completes (and leaves
    // the in-flight map) even when every waiter has gone, and never keeps the application state
    // (and with it the ledger channel) alive past shutdown. The request id goes with it.
    let (bus, book, deadline) = (state.bus_handle(), state.book().clone(), state.check_deadline());
    drop(state);
    let request_id = common::request_id::current();
    let job = async move {
        match bus.check(&domain, deadline).await {
            // A verdict about another name is never returned to the user, whoever sent it.
            Ok(v) if v.domain != domain.as_str() => {
                tracing::error!(asked = domain.as_str(), answered = %v.domain, "worker answered for another domain");
                Err(BusError::Unavailable(format!("worker answered for {}, not {}", v.domain, domain.as_str())))
            }
            Ok(v) => {
                if !bus.probes_in_process() {
                    book.remember(&domain, &v).await;
                }
                Ok(v)
            }
            Err(e) => Err(e),
        }
    };
    // The job's priority goes with it too (a bulk job's check is background work).
    let job = common::priority::scope(common::priority::current(), job);
    let task = match request_id {
        Some(id) => tokio::spawn(common::request_id::scope(id, job)),
        None => tokio::spawn(job),
    };
    async move { task.await.unwrap_or_else(|e| Err(BusError::Unavailable(format!("lookup task failed: {e}")))) }.boxed()
}

/// The `dsa_verdicts_total` series of a method and status, registered with the recorder on its
/// first use and kept: `metrics::counter!` with labels builds the series' key and looks it up in
/// the recorder's registry on every call (about 1,300 instructions of each cached check).
fn verdicts_total(method: Method, status: Status) -> &'static metrics::Counter {
    use std::sync::OnceLock;
    const METHODS: [Method; 5] = [Method::Dns, Method::Rdap, Method::Whois, Method::Policy, Method::Cache];
    const STATUSES: [Status; 6] = [
        Status::Available,
        Status::Taken,
        Status::PendingDelete,
        Status::Reserved,
        Status::Restricted,
        Status::Unknown,
    ];
    static SERIES: [OnceLock<metrics::Counter>; METHODS.len() * STATUSES.len()] =
        [const { OnceLock::new() }; METHODS.len() * STATUSES.len()];
    let m = METHODS.iter().position(|&x| x == method).unwrap_or_default();
    let s = STATUSES.iter().position(|&x| x == status).unwrap_or_default();
    SERIES[m * STATUSES.len() + s].get_or_init(|| {
        // The process's recorder first, so that the series is not kept from a no-op recorder.
        crate::front::telemetry::prometheus();
        metrics::counter!("dsa_verdicts_total", "method" => method_label(method), "status" => status_label(status))
    })
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

#[cfg(test)]
mod tests {
    use super::CheckQuery;

    /// Issue 29: the check's own query parser reads what serde's does, field for field, and
    /// refuses a repeated parameter with the same 400 text.
    #[test]
    fn the_check_query_parser_reads_what_serde_reads() {
        let fields = |q: &CheckQuery| {
            [&q.domain, &q.commission_percent, &q.redirect_url, &q.redirect_checkout, &q.include_price]
                .map(Clone::clone)
        };
        for raw in [
            "",
            "domain=example.com",
            "client_key=k&domain=b%C3%BCcher.de&commission_percent=12.5",
            "domain=&commission_percent",
            "dom%61in=encoded.com&redirect_url=https%3A%2F%2Fshop.example%2F%3Fa%3D1%26b%3D2",
            "domain=a+b.com&redirect_checkout=1&include_price=0&other=x&other=y",
            "domain=%ZZ.com&&&=&redirect_checkout",
            "domain=%FF%FE.com",
            "domain=a.com&domain=b.com",
            "include_price=1&dom%61in=x&domain=y",
            "redirect_url=a&redirect_url=",
        ] {
            let ours = CheckQuery::parse(raw);
            let serde = serde_urlencoded::from_str::<CheckQuery>(raw);
            match (ours, serde) {
                (Ok(ours), Ok(serde)) => assert_eq!(fields(&ours), fields(&serde), "{raw}"),
                (Err(ours), Err(serde)) => {
                    assert_eq!(ours.to_string(), format!("Malformed query string: {serde}."), "{raw}")
                }
                (ours, serde) => panic!("{raw}: ours {ours:?}, serde {serde:?}"),
            }
        }
    }
}
