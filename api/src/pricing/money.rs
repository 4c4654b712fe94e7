//! Money: ISO 4217 minor units and exact decimal arithmetic on `f64` amounts (see the module
//! documentation of [`crate::pricing`], "Money").

/// ISO 4217 currencies whose minor unit is not 2 decimal places (ISO 4217 list one, column "Minor
/// unit"; funds and precious-metal codes without a minor unit are treated as 2).
const MINOR_UNIT_EXCEPTIONS: &[(&str, u32)] = &[
    ("BIF", 0),
    ("CLP", 0),
    ("DJF", 0),
    ("GNF", 0),
    ("ISK", 0),
    ("JPY", 0),
    ("KMF", 0),
    ("KRW", 0),
    ("PYG", 0),
    ("RWF", 0),
    ("UGX", 0),
    ("UYI", 0),
    ("VND", 0),
    ("VUV", 0),
    ("XAF", 0),
    ("XOF", 0),
    ("XPF", 0),
    ("BHD", 3),
    ("IQD", 3),
    ("JOD", 3),
    ("KWD", 3),
    ("LYD", 3),
    ("OMR", 3),
    ("TND", 3),
    ("CLF", 4),
    ("UYW", 4),
];

/// Powers of ten as exact `f64`s, indexed by minor-unit exponent.
const POW10_F64: [f64; 5] = [1.0, 10.0, 100.0, 1_000.0, 10_000.0];

/// The number of decimal places of `currency`'s minor unit per ISO 4217: 2 for most (USD cents), 0
/// for JPY, KRW, VND, CLP, ISK…, 3 for BHD, KWD, OMR, JOD, TND, IQD, LYD, 4 for CLF and UYW.
/// Unknown codes get 2. `currency` is an upper-case ISO 4217 code, as [`Price::currency`](super::Price::currency) returns.
pub fn minor_unit_exponent(currency: &str) -> u32 {
    MINOR_UNIT_EXCEPTIONS.iter().find(|(code, _)| *code == currency).map_or(2, |&(_, exp)| exp)
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

/// A decimal `mantissa / 10^scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Decimal {
    mantissa: i128,
    scale: u32,
}

/// Most decimal digits accepted in [`Decimal::of`]; keeps every product below `i128::MAX` in
/// practice (and every product is checked anyway).
const MAX_DIGITS: usize = 36;

impl Decimal {
    /// The shortest decimal that round-trips to `x` (Rust's `Display` for `f64`, which never uses
    /// exponent notation). `None` for non-finite values or more than [`MAX_DIGITS`] digits
    /// (e.g. `1e300`): the caller then falls back to `f64` arithmetic.
    fn of(x: f64) -> Option<Self> {
        if !x.is_finite() {
            return None;
        }
        let text = x.to_string();
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text.as_str()),
        };
        let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
        if int.len() + frac.len() > MAX_DIGITS {
            return None;
        }
        let mut mantissa: i128 = 0;
        for b in int.bytes().chain(frac.bytes()) {
            if !b.is_ascii_digit() {
                return None;
            }
            mantissa = mantissa.checked_mul(10)?.checked_add(i128::from(b - b'0'))?;
        }
        let scale = u32::try_from(frac.len()).ok()?;
        Some(Self { mantissa: if negative { -mantissa } else { mantissa }, scale })
    }

    /// This value in integer units of `10^-exp`, rounded half away from zero.
    fn to_units(self, exp: u32) -> Option<i128> {
        if self.scale <= exp {
            self.mantissa.checked_mul(10_i128.checked_pow(exp - self.scale)?)
        } else {
            Some(div_round_half_away(self.mantissa, 10_i128.checked_pow(self.scale - exp)?))
        }
    }
}

/// `n / d` rounded to the nearest integer, halves away from zero. `d` must be positive.
fn div_round_half_away(n: i128, d: i128) -> i128 {
    let q = n / d;
    let r = n % d;
    // |r| ≥ d/2 ⇔ 2|r| ≥ d; no overflow since |r| < d ≤ i128::MAX / 2 for our powers of ten.
    if 2 * r.abs() >= d { q + n.signum() } else { q }
}

/// `amount` rounded to the currency's minor unit, half away from zero, as integer minor units.
pub(super) fn to_minor_units(amount: f64, exp: u32) -> Option<i128> {
    Decimal::of(amount)?.to_units(exp)
}

/// Integer minor units back to the `f64` nearest to the decimal `units / 10^exp`: both operands
/// are exact (|units| < 2^53 for any sane price) and IEEE division rounds correctly.
pub(super) fn from_minor_units(units: i128, exp: u32) -> f64 {
    // `as` is exact below 2^53 minor units, i.e. for any real price.
    units as f64 / pow10(exp)
}

fn pow10(exp: u32) -> f64 {
    POW10_F64.get(exp as usize).copied().unwrap_or_else(|| 10_f64.powf(f64::from(exp)))
}

/// `base_units × (1 + percent/100)`, rounded half away from zero, in the same minor units.
/// `None` on overflow (absurd inputs only).
pub(super) fn mark_up_units(base_units: i128, percent: f64) -> Option<i128> {
    let c = Decimal::of(percent)?;
    // base × (100·10^s + m) / (100·10^s), where percent = m / 10^s.
    let denominator = 100_i128.checked_mul(10_i128.checked_pow(c.scale)?)?;
    let factor = denominator.checked_add(c.mantissa)?;
    let numerator = base_units.checked_mul(factor)?;
    Some(div_round_half_away(numerator, denominator))
}

/// Fallback for amounts too large or too precise for [`Decimal`]: plain `f64` rounding.
pub(super) fn round_f64(amount: f64, exp: u32) -> f64 {
    let scale = pow10(exp);
    (amount * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_reads_the_shortest_representation() {
        assert_eq!(Decimal::of(9.68), Some(Decimal { mantissa: 968, scale: 2 }));
        assert_eq!(Decimal::of(0.1 + 0.2), Some(Decimal { mantissa: 30_000_000_000_000_004, scale: 17 }));
        assert_eq!(Decimal::of(1000.0), Some(Decimal { mantissa: 1000, scale: 0 }));
        assert_eq!(Decimal::of(1e300), None);
        assert_eq!(Decimal::of(f64::NAN), None);
    }

    #[test]
    fn halves_round_away_from_zero() {
        assert_eq!(div_round_half_away(25, 10), 3);
        assert_eq!(div_round_half_away(-25, 10), -3);
        assert_eq!(div_round_half_away(24, 10), 2);
        // Naive `(1.005 * 100.0).round()` gives 100: 1.005 is 1.00499999999999989… in binary.
        assert_eq!(to_minor_units(1.005, 2), Some(101));
        assert_eq!(to_minor_units(0.1 + 0.2, 2), Some(30));
    }

    #[test]
    fn markup_is_exact() {
        assert_eq!(mark_up_units(968, 10.0), Some(1065)); // 10.648 → 10.65
        assert_eq!(mark_up_units(1000, 0.05), Some(1001)); // 10.005 → 10.01
        assert_eq!(mark_up_units(1236, 12.5), Some(1391)); // 1390.5 → 1391
    }

    #[test]
    fn currency_exponents() {
        assert_eq!(minor_unit_exponent("USD"), 2);
        assert_eq!(minor_unit_exponent("JPY"), 0);
        assert_eq!(minor_unit_exponent("KWD"), 3);
        assert_eq!(minor_unit_exponent("XYZ"), 2);
    }
}
