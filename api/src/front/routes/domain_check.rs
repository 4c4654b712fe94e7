//! `GET /domain-check` (spec §4.7): the front-page short form of the availability check.
//!
//! **Relation to §4.1.** It is the same check as `GET /v1/domains/check` — the same
//! [`key_or_demo`](super::keyed::key_or_demo) prelude (keys, origins, per-minute limits), the same
//! parameters ([`CheckQuery`]), the same credit (1 per definitive answer, none for a 502) and the
//! same demo rules (no `client_key`: 2 checks per session, no price, no purchase) — run by
//! [`perform`] and shaped differently ([`DomainCheckResponse::project`]):
//!
//! | §4.7 field | from the §4.1 result |
//! |---|---|
//! | `domain` | `domain` |
//! | `available` | `available` |
//! | `tld` | `verdict.tld` (registry suffix with its leading dot) |
//! | `price.register` | `pricing.display_register` (commission applied) |
//! | `price.renew` | the table's renewal price with the same commission and rounding |
//! | `price.currency` | `pricing.currency` |
//! | `purchase_url` | `purchase.url` |
//! | `checked_at` | `verdict.checked_at` |
//!
//! Every field is always present: `price` is **null** unless `include_price=1` was sent and the
//! §4.1 call would carry `pricing` (the key enables pricing, the name is available, the TLD has a
//! price); `purchase_url` is **null** when §4.1 would carry no `purchase`.

use axum::extract::State;
use axum::response::Response;
use rust_decimal::Decimal;
use serde::Serialize;
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::check::{Caller, CheckOutcome, CheckQuery, perform, set_demo_cookie};
use super::flag;
use crate::front::error::{ApiError, ErrorBody};
use crate::pricing::{CommissionPercent, PriceTable, quote};

/// The `price` object of the short form, in major units of `currency`, with the
/// commission of the request (or the key's default) applied to both amounts.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ShortPrice {
    /// First-year registration price as displayed (the full check's `display_register`).
    #[serde(with = "rust_decimal::serde::float")]
    #[schema(value_type = f64, example = 12.17)]
    pub register: Decimal,
    /// Yearly renewal price, marked up like `register` and rounded to the currency's minor unit.
    #[serde(with = "rust_decimal::serde::float")]
    #[schema(value_type = f64, example = 12.17)]
    pub renew: Decimal,
    /// ISO 4217 code.
    #[schema(example = "USD")]
    pub currency: String,
}

/// The short-form answer: every member is always present; `price` and `purchase_url` are null
/// when there is no price to show or no purchase link.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DomainCheckResponse {
    /// Normalised domain (A-label).
    pub domain: String,
    /// True only when the registry said the name can be registered.
    pub available: bool,
    /// The registry suffix with its leading dot (`.com.af`).
    pub tld: String,
    /// Prices with the commission applied; null unless `include_price=1`, pricing is enabled for
    /// the key, the name is available and the TLD has a price (never on demo checks).
    #[schema(required = true)]
    pub price: Option<ShortPrice>,
    /// Checkout URL with `domain`, `sld` and `tld` appended; null when the name cannot be bought
    /// here.
    #[schema(required = true)]
    pub purchase_url: Option<String>,
    /// When the registry's evidence was obtained (RFC 3339, UTC).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub checked_at: OffsetDateTime,
}

impl DomainCheckResponse {
    /// Projects a check outcome onto the §4.7 shape; `include_price` is the request's flag and
    /// `prices` the table the §4.1 `pricing` came from (for the renewal price).
    pub fn project(outcome: CheckOutcome, include_price: bool, prices: &PriceTable) -> Self {
        let price = match (&outcome.pricing, include_price) {
            (Some(pricing), true) => {
                let commission = CommissionPercent::new(pricing.commission_percent).ok();
                let renew =
                    prices.get(outcome.domain.suffix()).map(|p| quote(&p.renewal(), commission).display_register);
                renew.map(|renew| ShortPrice {
                    register: pricing.display_register,
                    renew,
                    currency: pricing.currency.clone(),
                })
            }
            _ => None,
        };
        Self {
            tld: outcome.domain.tld(),
            domain: outcome.domain.as_str().to_owned(),
            available: outcome.verdict.status.is_available(),
            price,
            purchase_url: outcome.purchase.map(|p| p.url),
            checked_at: outcome.verdict.checked_at,
        }
    }
}

/// Handler of `GET /domain-check` (spec §4.7): the check of §4.1 in the front page's shape.
#[utoipa::path(
    get,
    path = "/domain-check",
    tag = "front page",
    operation_id = "domainCheckShort",
    summary = "Check a domain name (short form)",
    params(CheckQuery),
    security(("client_key" = []), ()),
    description = "The front page's short form of `GET /v1/domains/check`: the same check, keys, \
credits (1 per definitive answer), per-minute limits, origins and demo rules (without `client_key`: 2 checks per \
session, no price, no purchase), answered in another shape. `price` is null unless `include_price=1` and the full \
answer would carry `pricing`; `purchase_url` is null when it would carry no `purchase`. The commission \
(`commission_percent`, else the key's default) applies to `register` and `renew`.",
    responses(
        (status = 200, description = "A definitive verdict.", body = DomainCheckResponse,
            example = json!({"domain": "dsa-demo-available.com", "available": true, "tld": ".com",
                "price": {"register": 12.17, "renew": 12.17, "currency": "USD"},
                "purchase_url": "https://checkout.example/register?domain=dsa-demo-available.com&sld=dsa-demo-available&tld=.com",
                "checked_at": "2026-11-22T07:31:41.075370258Z"})),
        (status = 400, description = "Missing `domain`, invalid domain, unsupported TLD, or a malformed parameter (also a missing `client_key` when demo mode is off).", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended, or the request's origin is not allowed for the key.", body = ErrorBody),
        (status = 429, description = "Per-minute limit, monthly credits (`Monthly credit limit reached`), or the demo limit.", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a retry may succeed (per-minute limit)."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
        (status = 502, description = "The registry gave no definitive answer in time; retry with exponential backoff. Not charged.", body = ErrorBody),
        (status = 503, description = "This front is shedding load, or cannot reach its key store for a key it has not seen; retry after `Retry-After`. Not charged.", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
    )
)]
pub async fn domain_check(
    State(state): State<crate::front::state::AppState>,
    caller: Caller,
    query: CheckQuery,
) -> Result<Response, ApiError> {
    let include_price = flag(&query.include_price, "include_price")?;
    let checked = perform(&state, caller, &query).await?;
    let body = DomainCheckResponse::project(checked.outcome, include_price, state.prices());
    let mut response = super::json_response(&body);
    set_demo_cookie(&state, checked.demo.as_ref(), &mut response);
    Ok(response)
}
