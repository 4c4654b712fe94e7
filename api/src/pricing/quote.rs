//! The commission, a suffix's [`Price`] and the `pricing` object of a result ([`quote`]).

use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use super::money::{check_amount, decimal_of, mark_up, minor_unit_exponent, parse_currency, round_to_minor_unit};
use super::{MAX_COMMISSION_PERCENT, PricingError};

/// A commission (markup) in **percent** of the base registration price: `10` means the displayed
/// price is the base × 1.10. Finite, 0 ≤ c ≤ 1000 ([`MAX_COMMISSION_PERCENT`]).
///
/// Spec §4.1 (`commission_percent` query parameter, overriding the key's admin-configured default
/// of §2.1) and §2.2 (`pricing.commission_percent`). Deserializes from a JSON number with the same
/// checks, so a key's configured default can hold this type directly.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct CommissionPercent(f64);

impl CommissionPercent {
    /// No markup.
    pub const ZERO: Self = Self(0.0);

    /// Parses the `commission_percent` query parameter (decimal text, e.g. `10`, `12.5`).
    /// Surrounding white space is ignored; anything else that is not a finite number from 0 to
    /// 1000 (`-5`, `ten`, `NaN`, `inf`, `1001`, `10%`, an empty string) is
    /// [`PricingError::InvalidCommission`], whose message is fit for a 400 body. A missing
    /// parameter is the caller's `None`, not an empty string.
    pub fn parse(text: &str) -> Result<Self, PricingError> {
        let value: f64 = text.trim().parse().map_err(|_| PricingError::InvalidCommission)?;
        Self::new(value)
    }

    /// Checks a commission given as a number in percent (see [`CommissionPercent::parse`]).
    pub fn new(percent: f64) -> Result<Self, PricingError> {
        if percent.is_finite() && (0.0..=MAX_COMMISSION_PERCENT).contains(&percent) {
            // `+ 0.0` turns -0.0 into 0.0 so that the response never shows `-0.0`.
            Ok(Self(percent + 0.0))
        } else {
            Err(PricingError::InvalidCommission)
        }
    }

    /// The commission in percent.
    pub fn value(self) -> f64 {
        self.0
    }

    /// Whether this is no markup at all (pricing mode `base`).
    pub fn is_zero(self) -> bool {
        self.0 == 0.0
    }

    /// The commission as the decimal that was typed (`12.5`, `0.05`), for exact arithmetic.
    fn decimal(self) -> Decimal {
        // Always `Some`: the value is finite and at most 1000.
        decimal_of(self.0).unwrap_or_default()
    }
}

impl FromStr for CommissionPercent {
    type Err = PricingError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl TryFrom<f64> for CommissionPercent {
    type Error = PricingError;

    fn try_from(percent: f64) -> Result<Self, Self::Error> {
        Self::new(percent)
    }
}

impl From<CommissionPercent> for f64 {
    fn from(c: CommissionPercent) -> Self {
        c.0
    }
}

impl fmt::Display for CommissionPercent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", self.0)
    }
}

// ---------------------------------------------------------------------------------------------
// Price and the pricing object

/// The registry prices of one suffix, in **major units** of `currency` (dollars, not cents).
///
/// Only obtainable from a validated [`PriceTable`](super::PriceTable) or [`Price::new`]: amounts are finite and
/// non-negative and at most 10^15, the currency is an upper-case three-letter ISO 4217 code.
/// Amounts are exact decimals (what the price file says: `9.68`). Serializes as
/// `{"register": 9.68, "renew": 10.37, "currency": "USD"}` (JSON numbers), the `price` object of
/// the front-page short form (spec §4.7).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Price {
    #[serde(with = "rust_decimal::serde::float")]
    register: Decimal,
    #[serde(with = "rust_decimal::serde::float")]
    renew: Decimal,
    currency: String,
}

impl Price {
    /// Checks and builds a price: `register` and `renew` in major units (finite, ≥ 0, ≤ 10^15;
    /// read as the shortest decimal that round-trips, `9.68`), `currency` an ISO 4217 code (any
    /// case; stored upper-case).
    pub fn new(register: f64, renew: f64, currency: &str) -> Result<Self, PricingError> {
        Self::check(register, renew, currency).map_err(|reason| PricingError::invalid("price", reason))
    }

    pub(super) fn check(register: f64, renew: f64, currency: &str) -> Result<Self, String> {
        Ok(Self {
            register: check_amount("register", register)?,
            renew: check_amount("renew", renew)?,
            currency: parse_currency(currency)?,
        })
    }

    /// This price with its renewal amount as the registration amount too: what the short form
    /// (spec §4.7) quotes to show the marked-up renewal price.
    #[must_use]
    pub fn renewal(&self) -> Self {
        Self { register: self.renew, renew: self.renew, currency: self.currency.clone() }
    }

    /// First-year registration price, major units.
    pub fn register(&self) -> Decimal {
        self.register
    }

    /// Yearly renewal price, major units.
    pub fn renew(&self) -> Decimal {
        self.renew
    }

    /// ISO 4217 code, upper case (`USD`).
    pub fn currency(&self) -> &str {
        &self.currency
    }
}

/// Whether displayed prices include a commission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PricingMode {
    /// `"base"`: `display_register` equals `base_register`, commission 0.0.
    Base,
    /// `"with_commission"`: `display_register` = `base_register` × (1 + commission_percent/100).
    WithCommission,
}

/// The price of an available name.
/// Amounts are exact decimals in major units of `currency`, rounded to its minor unit (ISO 4217),
/// and JSON numbers on the wire (`10.65`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Pricing {
    /// ISO 4217 code.
    pub currency: String,
    /// Registration price before markup.
    #[serde(with = "rust_decimal::serde::float")]
    #[schema(value_type = f64)]
    pub base_register: Decimal,
    /// Price shown to end users: `base_register` in mode `base`, `base_register` × (1 +
    /// `commission_percent`/100) rounded half away from zero to the minor unit otherwise.
    #[serde(with = "rust_decimal::serde::float")]
    #[schema(value_type = f64)]
    pub display_register: Decimal,
    /// `base` or `with_commission`.
    pub pricing_mode: PricingMode,
    /// Applied markup in percent; 0.0 in mode `base`.
    pub commission_percent: f64,
}

/// Prices a registration for display (spec §2.2): `base_register` is `price.register()` rounded to
/// the currency's minor unit; with no commission or a zero one the mode is `base` and the display
/// price is the base; otherwise the display price is `base_register × (1 + c/100)` computed on
/// exact decimals and rounded half away from zero to the minor unit (10 % on 9.68 USD → 10.65;
/// 12.5 % on 1236 JPY → 1391).
///
/// Which commission applies (the request's `commission_percent`, else the key's default) is the
/// caller's choice; so is whether pricing is shown at all (key `pricing_enabled`, domain available,
/// price known — spec §2.2 "Presence").
pub fn quote(price: &Price, commission: Option<CommissionPercent>) -> Pricing {
    let exp = minor_unit_exponent(&price.currency);
    let base_register = round_to_minor_unit(price.register, exp);
    let (display_register, pricing_mode, commission_percent) = match commission.filter(|c| !c.is_zero()) {
        // `Price` bounds the amount and `CommissionPercent` the markup, so the product always
        // fits; the base price is the (unreachable) fallback rather than a panic.
        Some(c) => {
            (mark_up(base_register, c.decimal(), exp).unwrap_or(base_register), PricingMode::WithCommission, c.value())
        }
        None => (base_register, PricingMode::Base, 0.0),
    };
    Pricing { currency: price.currency.clone(), base_register, display_register, pricing_mode, commission_percent }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usd(amount: f64) -> Price {
        Price::new(amount, amount, "USD").expect("valid price")
    }

    fn commission(text: &str) -> Option<CommissionPercent> {
        Some(CommissionPercent::parse(text).expect("valid commission"))
    }

    #[test]
    fn absurd_amounts_are_refused_and_the_largest_is_marked_up() {
        assert!(Price::new(1e300, 1.0, "USD").is_err());
        let p = quote(&usd(1e15), commission("1000"));
        assert_eq!(p.display_register, Decimal::from(11_000_000_000_000_000_i64));
    }

    #[test]
    fn zero_commission_is_base_mode() {
        let p = quote(&usd(9.68), Some(CommissionPercent::ZERO));
        assert_eq!(p.pricing_mode, PricingMode::Base);
        assert_eq!(p.display_register, Decimal::new(968, 2));
        assert_eq!(p.commission_percent, 0.0);
    }

    #[test]
    fn negative_zero_commission_is_plain_zero() {
        let c = CommissionPercent::parse("-0").expect("-0 is zero");
        assert!(c.value().is_sign_positive());
    }
}
