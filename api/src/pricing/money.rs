//! Money: ISO 4217 minor units ([`iso_currency`]) and exact decimal arithmetic
//! ([`rust_decimal`]); see the module documentation of [`crate::pricing`], "Money".

use std::str::FromStr;

use iso_currency::Currency;
use rust_decimal::{Decimal, RoundingStrategy};

/// The largest amount accepted in a price file, in major units (a quadrillion): far above any
/// registration price, and small enough that a markup of [`MAX_COMMISSION_PERCENT`](super::MAX_COMMISSION_PERCENT)
/// stays well inside [`Decimal`]'s range (about 7.9 × 10^28).
const MAX_AMOUNT: Decimal = Decimal::from_parts(0xA4C6_8000, 0x0003_8D7E, 0, false, 0); // 10^15 = 0x3_8D7E_A4C6_8000

/// The number of decimal places of `currency`'s minor unit per ISO 4217: 2 for most (USD cents), 0
/// for JPY, KRW, VND, CLP, ISK…, 3 for BHD, KWD, OMR, JOD, TND, IQD, LYD, 4 for CLF and UYW.
/// Unknown codes, and funds or precious-metal codes without a minor unit (XAU, XDR), get 2.
/// `currency` is an upper-case ISO 4217 code, as [`Price::currency`](super::Price::currency) returns.
pub fn minor_unit_exponent(currency: &str) -> u32 {
    Currency::from_code(currency).and_then(Currency::exponent).map_or(2, u32::from)
}

/// Checks an ISO 4217 alphabetic code (three ASCII letters) and returns it upper-cased. Whether
/// the code is currently assigned is not checked: the list changes and a typo such as `USS`
/// would still be caught by any human reading the output, while `$`, `usd1` or `US` are not.
pub(super) fn parse_currency(raw: &str) -> Result<String, String> {
    if raw.len() == 3 && raw.bytes().all(|b| b.is_ascii_alphabetic()) {
        Ok(raw.to_ascii_uppercase())
    } else {
        Err(format!("currency {raw:?} is not an ISO 4217 code (three letters, e.g. USD)"))
    }
}

/// The decimal a person typed for `x`: the shortest text that round-trips to the `f64` (Rust's
/// `Display`, which never uses exponent notation), read as a [`Decimal`] — `9.68`, not
/// `9.67999999999999971578`. This is how `rust_decimal`'s own serde reader takes JSON floats.
/// `None` for non-finite values and for values outside `Decimal`'s range.
pub(super) fn decimal_of(x: f64) -> Option<Decimal> {
    if !x.is_finite() {
        return None;
    }
    // `+ 0.0` turns -0.0 into 0.0, so that no response shows `-0.0`.
    Decimal::from_str(&(x + 0.0).to_string()).ok()
}

/// Checks a price amount in major units: finite, not negative, at most [`MAX_AMOUNT`]. `what`
/// names it in the error (`register`, `renew`).
pub(super) fn check_amount(what: &str, amount: f64) -> Result<Decimal, String> {
    if amount.is_nan() {
        Err(format!("{what} price is NaN"))
    } else if amount.is_infinite() {
        Err(format!("{what} price is infinite"))
    } else if amount < 0.0 {
        Err(format!("{what} price {amount} is negative"))
    } else {
        decimal_of(amount)
            .filter(|d| *d <= MAX_AMOUNT)
            .ok_or_else(|| format!("{what} price {amount} is too large (at most {MAX_AMOUNT})"))
    }
}

/// `amount` rounded to `exp` decimal places (the currency's minor unit), halves away from zero.
pub(super) fn round_to_minor_unit(amount: Decimal, exp: u32) -> Decimal {
    amount.round_dp_with_strategy(exp, RoundingStrategy::MidpointAwayFromZero)
}

/// `base × (1 + percent/100)`, rounded half away from zero to `exp` decimal places. `None` only
/// if the product leaves `Decimal`'s range, which [`check_amount`] and the commission's bound rule
/// out.
pub(super) fn mark_up(base: Decimal, percent: Decimal, exp: u32) -> Option<Decimal> {
    let factor = Decimal::ONE_HUNDRED.checked_add(percent)?;
    let marked_up = base.checked_mul(factor)?.checked_div(Decimal::ONE_HUNDRED)?;
    Some(round_to_minor_unit(marked_up, exp))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> Decimal {
        Decimal::from_str_exact(text).expect("decimal literal")
    }

    #[test]
    fn decimal_reads_the_shortest_representation() {
        assert_eq!(decimal_of(9.68), Some(d("9.68")));
        assert_eq!(decimal_of(0.1 + 0.2), Some(d("0.30000000000000004")));
        assert_eq!(decimal_of(1000.0), Some(d("1000")));
        assert_eq!(decimal_of(-0.0).map(|z| z.is_sign_positive()), Some(true));
        assert_eq!(decimal_of(1e300), None);
        assert_eq!(decimal_of(f64::NAN), None);
    }

    #[test]
    fn the_largest_amount_is_ten_to_the_fifteenth() {
        assert_eq!(MAX_AMOUNT, d("1000000000000000"));
        assert!(check_amount("register", 1e15).is_ok());
        assert_eq!(
            check_amount("register", 1e300),
            Err(format!("register price {} is too large (at most 1000000000000000)", 1e300))
        );
    }

    #[test]
    fn halves_round_away_from_zero() {
        assert_eq!(round_to_minor_unit(d("2.5"), 0), d("3"));
        assert_eq!(round_to_minor_unit(d("-2.5"), 0), d("-3"));
        assert_eq!(round_to_minor_unit(d("2.4"), 0), d("2"));
        // Naive `(1.005 * 100.0).round()` gives 100: 1.005 is 1.00499999999999989… in binary.
        assert_eq!(decimal_of(1.005).map(|a| round_to_minor_unit(a, 2)), Some(d("1.01")));
        assert_eq!(decimal_of(0.1 + 0.2).map(|a| round_to_minor_unit(a, 2)), Some(d("0.30")));
    }

    #[test]
    fn markup_is_exact() {
        assert_eq!(mark_up(d("9.68"), d("10"), 2), Some(d("10.65"))); // 10.648
        assert_eq!(mark_up(d("10"), d("0.05"), 2), Some(d("10.01"))); // 10.005
        assert_eq!(mark_up(d("1236"), d("12.5"), 0), Some(d("1391"))); // 1390.5
    }

    #[test]
    fn currency_exponents() {
        assert_eq!(minor_unit_exponent("USD"), 2);
        assert_eq!(minor_unit_exponent("JPY"), 0);
        assert_eq!(minor_unit_exponent("KWD"), 3);
        assert_eq!(minor_unit_exponent("CLF"), 4);
        assert_eq!(minor_unit_exponent("XAU"), 2);
        assert_eq!(minor_unit_exponent("XYZ"), 2);
    }
}
