//! The commission, a suffix's [`Price`] and the `pricing` object of a result ([`quote`]).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::money::{from_minor_units, mark_up_units, minor_unit_exponent, parse_currency, round_f64, to_minor_units};
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
/// non-negative, the currency is an upper-case three-letter ISO 4217 code. Serializes as
/// `{"register": 9.68, "renew": 10.37, "currency": "USD"}`, the `price` object of the front-page
/// short form (spec §4.7).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Price {
    register: f64,
    renew: f64,
    currency: String,
}

impl Price {
    /// Checks and builds a price: `register` and `renew` in major units (finite, ≥ 0),
    /// `currency` an ISO 4217 code (any case; stored upper-case).
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

    /// First-year registration price, major units.
    pub fn register(&self) -> f64 {
        self.register
    }

    /// Yearly renewal price, major units.
    pub fn renew(&self) -> f64 {
        self.renew
    }

    /// ISO 4217 code, upper case (`USD`).
    pub fn currency(&self) -> &str {
        &self.currency
    }
}

fn check_amount(what: &str, amount: f64) -> Result<f64, String> {
    if amount.is_nan() {
        Err(format!("{what} price is NaN"))
    } else if amount.is_infinite() {
        Err(format!("{what} price is infinite"))
    } else if amount < 0.0 {
        Err(format!("{what} price {amount} is negative"))
    } else {
        Ok(amount + 0.0)
    }
}

/// Whether displayed prices include a commission (spec §2.2 `pricing_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PricingMode {
    /// `"base"`: `display_register` equals `base_register`, commission 0.0.
    Base,
    /// `"with_commission"`: `display_register` = `base_register` × (1 + commission_percent/100).
    WithCommission,
}

/// The `pricing` object of an availability result (spec §2.2), field names as in the spec.
/// Amounts are major units of `currency`, rounded to its minor unit (ISO 4217).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Pricing {
    /// ISO 4217 code.
    pub currency: String,
    /// Registration price before markup.
    pub base_register: f64,
    /// Price shown to end users: `base_register` in mode `base`, `base_register` × (1 +
    /// `commission_percent`/100) rounded half away from zero to the minor unit otherwise.
    pub display_register: f64,
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
    let commission = commission.filter(|c| !c.is_zero());
    let base_units = to_minor_units(price.register, exp);
    let base_register = match base_units {
        Some(units) => from_minor_units(units, exp),
        None => round_f64(price.register, exp),
    };
    let Some(commission) = commission else {
        return Pricing {
            currency: price.currency.clone(),
            base_register,
            display_register: base_register,
            pricing_mode: PricingMode::Base,
            commission_percent: 0.0,
        };
    };
    let display_register = match base_units.and_then(|b| mark_up_units(b, commission.value())) {
        Some(units) => from_minor_units(units, exp),
        None => round_f64(base_register * (1.0 + commission.value() / 100.0), exp),
    };
    Pricing {
        currency: price.currency.clone(),
        base_register,
        display_register,
        pricing_mode: PricingMode::WithCommission,
        commission_percent: commission.value(),
    }
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
    fn absurd_amounts_fall_back_to_f64() {
        let p = quote(&usd(1e300), commission("10"));
        assert!(p.display_register.is_finite());
        assert!(p.display_register > p.base_register);
    }

    #[test]
    fn zero_commission_is_base_mode() {
        let p = quote(&usd(9.68), Some(CommissionPercent::ZERO));
        assert_eq!(p.pricing_mode, PricingMode::Base);
        assert_eq!(p.display_register, 9.68);
        assert_eq!(p.commission_percent, 0.0);
    }

    #[test]
    fn negative_zero_commission_is_plain_zero() {
        let c = CommissionPercent::parse("-0").expect("-0 is zero");
        assert!(c.value().is_sign_positive());
    }
}
