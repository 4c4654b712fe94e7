//! Registration prices and the commission markup: the `pricing` object of an availability result.
//!
//! Spec: §2.1 (a key has `pricing_enabled` and an admin-configured default commission), §2.2 (the
//! `pricing` object and its fields), §4.1 (`commission_percent` overrides the key's default for one
//! request).
//!
//! The path of a price:
//!
//! ```text
//! prices file (JSON/CSV, or the embedded sample) ──load──▶ PriceTable  (validated once, at start-up)
//!                                                              │ get(suffix of the checked domain)
//! commission_percent ──CommissionPercent::parse──▶ quote(&Price, Option<CommissionPercent>) ──▶ Pricing
//! ```
//!
//! # Money
//!
//! The spec's amounts are JSON floats, so [`Price`] and [`Pricing`] hold `f64` in **major units of
//! the currency** (dollars, not cents). The arithmetic, however, is done on exact decimals: each
//! `f64` is read back as the shortest decimal that round-trips (what a person typed: `9.68`, not
//! `9.67999999999999971578`), converted to integer **minor units** of the currency (ISO 4217
//! exponent: cents for USD, yen for JPY, fils for KWD), marked up with integer arithmetic and
//! rounded half away from zero. The result is then turned back into the `f64` nearest to that
//! decimal, which `serde_json` prints as the short decimal (`10.65`). This avoids the
//! `0.1 + 0.2 = 0.30000000000000004` family of artefacts and the mis-rounding of halves such as
//! `1.005 → 1.00` that naive `(x * 100.0).round()` produces.
//!
//! # File formats
//!
//! * JSON ([`PriceTable::from_json`]; written by [`PriceTable::to_json`]): an object with an
//!   optional header (`format`, `source`, `as_of`, `sample`, `note`) and `prices`, an object keyed
//!   by registry suffix: `{"com": {"register": 11.06, "renew": 11.06, "currency": "USD"}}`.
//! * CSV ([`PriceTable::from_csv`]): see that function for the exact, deliberately small dialect.
//! * Porkbun's public pricing API response ([`PriceTable::import_porkbun`]), for `dsa prices import`.
//!
//! Suffixes are registry suffixes in A-label form without a leading dot (`com`, `com.af`,
//! `xn--p1ai`), the same string as `common::domain::DomainName::suffix`.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use time::Date;

/// The shipped sample price table (`api/data/prices.json`), compiled into the binary so that the
/// standalone mode has prices without any file. It is stale SAMPLE data (see
/// `api/data/PROVENANCE.md`); operators replace it with their own table.
pub const EMBEDDED_PRICES_JSON: &str = include_str!("../data/prices.json");

/// The value of the `format` header written by [`PriceTable::to_json`] and accepted by
/// [`PriceTable::from_json`]; bump it if the file layout changes incompatibly.
pub const PRICES_FORMAT: &str = "dsa-prices/1";

/// The largest commission accepted, in percent (1000 % = the displayed price is 11 × the base).
pub const MAX_COMMISSION_PERCENT: f64 = 1000.0;

/// Errors of this module: a bad `commission_percent` (a client error, HTTP 400) or a bad price
/// file (an operator error, reported at start-up or by `dsa prices import`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PricingError {
    /// `commission_percent` is not a finite number in 0..=1000 (spec §4.1). The message is fit
    /// for a 400 response body.
    #[error("commission_percent must be a number from 0 to 1000")]
    InvalidCommission,
    /// The JSON text is not valid JSON, or does not have the expected shape.
    #[error("price table: malformed JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// A price file is well-formed but a value in it is wrong. `at` names the place (`line 7`,
    /// `suffix "com"`), `reason` the fault.
    #[error("price table, {at}: {reason}")]
    Invalid {
        /// Where: a CSV line number or the suffix of a JSON entry.
        at: String,
        /// What is wrong, e.g. `duplicate suffix "com" (first at line 3)`.
        reason: String,
    },
    /// A price file could not be read.
    #[error("cannot read price table {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// [`PriceTable::load`] was given a file whose extension is neither `.json` nor `.csv`.
    #[error("price table {}: unknown format, expected a .json or .csv file", path.display())]
    UnknownFormat {
        /// The file.
        path: PathBuf,
    },
}

impl PricingError {
    fn invalid(at: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Invalid { at: at.into(), reason: reason.into() }
    }
}

// ---------------------------------------------------------------------------------------------
// Currency minor units

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
/// Unknown codes get 2. `currency` is an upper-case ISO 4217 code, as [`Price::currency`] returns.
pub fn minor_unit_exponent(currency: &str) -> u32 {
    MINOR_UNIT_EXCEPTIONS.iter().find(|(code, _)| *code == currency).map_or(2, |&(_, exp)| exp)
}

/// Checks an ISO 4217 alphabetic code (three ASCII letters) and returns it upper-cased. Whether
/// the code is currently assigned is not checked: the list changes and a typo such as `USS`
/// would still be caught by any human reading the output, while `$`, `usd1` or `US` are not.
fn parse_currency(raw: &str) -> Result<String, String> {
    if raw.len() == 3 && raw.bytes().all(|b| b.is_ascii_alphabetic()) {
        Ok(raw.to_ascii_uppercase())
    } else {
        Err(format!("currency {raw:?} is not an ISO 4217 code (three letters, e.g. USD)"))
    }
}

// ---------------------------------------------------------------------------------------------
// Exact decimal arithmetic on f64 amounts

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
fn to_minor_units(amount: f64, exp: u32) -> Option<i128> {
    Decimal::of(amount)?.to_units(exp)
}

/// Integer minor units back to the `f64` nearest to the decimal `units / 10^exp`: both operands
/// are exact (|units| < 2^53 for any sane price) and IEEE division rounds correctly.
fn from_minor_units(units: i128, exp: u32) -> f64 {
    // `as` is exact below 2^53 minor units, i.e. for any real price.
    units as f64 / pow10(exp)
}

fn pow10(exp: u32) -> f64 {
    POW10_F64.get(exp as usize).copied().unwrap_or_else(|| 10_f64.powf(f64::from(exp)))
}

/// `base_units × (1 + percent/100)`, rounded half away from zero, in the same minor units.
/// `None` on overflow (absurd inputs only).
fn mark_up_units(base_units: i128, percent: f64) -> Option<i128> {
    let c = Decimal::of(percent)?;
    // base × (100·10^s + m) / (100·10^s), where percent = m / 10^s.
    let denominator = 100_i128.checked_mul(10_i128.checked_pow(c.scale)?)?;
    let factor = denominator.checked_add(c.mantissa)?;
    let numerator = base_units.checked_mul(factor)?;
    Some(div_round_half_away(numerator, denominator))
}

/// Fallback for amounts too large or too precise for [`Decimal`]: plain `f64` rounding.
fn round_f64(amount: f64, exp: u32) -> f64 {
    let scale = pow10(exp);
    (amount * scale).round() / scale
}

// ---------------------------------------------------------------------------------------------
// Commission

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
/// Only obtainable from a validated [`PriceTable`] or [`Price::new`]: amounts are finite and
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

    fn check(register: f64, renew: f64, currency: &str) -> Result<Self, String> {
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

// ---------------------------------------------------------------------------------------------
// The table

/// Where a price table comes from: the header of the JSON file. Purely informative except
/// `sample`, which the server should warn about at start-up (sample prices are stale).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provenance {
    /// Who published the prices (free text).
    pub source: Option<String>,
    /// The date the prices were valid (written as `YYYY-MM-DD`).
    pub as_of: Option<Date>,
    /// True for the shipped sample: not the operator's prices, to be replaced.
    pub sample: bool,
    /// Free-text remarks.
    pub note: Option<String>,
}

/// Registry suffix → [`Price`] (spec §2.2 "price data exists for the TLD"), validated on load.
/// Suffixes are A-labels without a leading dot, lower case (`com`, `com.af`).
#[derive(Debug, Clone, PartialEq)]
pub struct PriceTable {
    provenance: Provenance,
    prices: BTreeMap<String, Price>,
}

/// The outcome of [`PriceTable::import_porkbun`]: the table and the entries left out.
#[derive(Debug, Clone, PartialEq)]
pub struct PorkbunImport {
    /// The imported prices (USD).
    pub table: PriceTable,
    /// Entries not imported, as (Porkbun key, reason). Porkbun also sells names in the Handshake
    /// alternative root (`"specialType": "handshake"`); those are not DNS registry suffixes, and a
    /// price for them must never be shown for a DNS domain.
    pub skipped: Vec<(String, String)>,
}

time::serde::format_description!(iso_date, Date, "[year]-[month]-[day]");

/// The JSON file as read. Unknown fields are refused so that a typo (`"regsiter"`) is an error
/// rather than a silently missing price.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileIn {
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default, with = "iso_date::option")]
    as_of: Option<Date>,
    #[serde(default)]
    sample: bool,
    #[serde(default)]
    note: Option<String>,
    prices: Entries<PriceIn>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PriceIn {
    register: f64,
    renew: f64,
    currency: String,
}

#[derive(Serialize)]
struct FileOut<'a> {
    format: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<&'a str>,
    #[serde(with = "iso_date::option", skip_serializing_if = "Option::is_none")]
    as_of: Option<Date>,
    sample: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<&'a str>,
    prices: &'a BTreeMap<String, Price>,
}

/// A JSON object read as a list of (key, value) pairs in file order, so that duplicate keys are
/// seen (a `HashMap` would silently keep the last one).
struct Entries<T>(Vec<(String, T)>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Entries<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntriesVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for EntriesVisitor<T> {
            type Value = Entries<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object keyed by registry suffix")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(entry) = map.next_entry::<String, T>()? {
                    entries.push(entry);
                }
                Ok(Entries(entries))
            }
        }

        deserializer.deserialize_map(EntriesVisitor(PhantomData))
    }
}

/// Normalises a registry suffix: one leading dot removed, ASCII lower-cased, then checked as LDH
/// labels of 1–63 octets without leading/trailing hyphen (RFC 1035 §2.3.1, RFC 5891 §4.2.3.1).
/// U-labels are refused with a hint, since lookups use the A-label form.
fn normalise_suffix(raw: &str) -> Result<String, String> {
    let s = raw.strip_prefix('.').unwrap_or(raw);
    if s.is_empty() {
        return Err("empty suffix".to_owned());
    }
    if !s.is_ascii() {
        return Err(format!("suffix {raw:?} is not ASCII: write its A-label (xn--…) form"));
    }
    let s = s.to_ascii_lowercase();
    if s.len() > 253 {
        return Err(format!("suffix {raw:?} is longer than 253 characters"));
    }
    for label in s.split('.') {
        let valid = (1..=63).contains(&label.len())
            && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-');
        if !valid {
            return Err(format!(
                "suffix {raw:?} is not a domain suffix (labels of letters, digits and inner hyphens, separated by single dots)"
            ));
        }
    }
    Ok(s)
}

/// Accumulates validated entries and reports duplicates with the place of the first one.
#[derive(Default)]
struct Builder {
    prices: BTreeMap<String, Price>,
    first_at: HashMap<String, String>,
}

impl Builder {
    fn add(
        &mut self,
        at: String,
        raw_suffix: &str,
        register: f64,
        renew: f64,
        currency: &str,
    ) -> Result<(), PricingError> {
        let suffix = normalise_suffix(raw_suffix).map_err(|r| PricingError::invalid(&at, r))?;
        let price = Price::check(register, renew, currency).map_err(|r| PricingError::invalid(&at, r))?;
        if let Some(first) = self.first_at.get(&suffix) {
            return Err(PricingError::invalid(&at, format!("duplicate suffix {suffix:?} (first at {first})")));
        }
        self.first_at.insert(suffix.clone(), at);
        self.prices.insert(suffix, price);
        Ok(())
    }

    fn finish(self, provenance: Provenance, what: &str) -> Result<PriceTable, PricingError> {
        if self.prices.is_empty() {
            return Err(PricingError::invalid(what, "contains no prices"));
        }
        Ok(PriceTable { provenance, prices: self.prices })
    }
}

/// The CSV header, exactly (case-insensitive, spaces around fields ignored).
const CSV_HEADER: [&str; 4] = ["suffix", "register", "renew", "currency"];

impl PriceTable {
    /// Reads the JSON format written by [`PriceTable::to_json`]:
    ///
    /// ```json
    /// {"format": "dsa-prices/1", "source": "…", "as_of": "2025-03-22", "sample": false, "note": "…",
    ///  "prices": {"com": {"register": 11.06, "renew": 11.06, "currency": "USD"}}}
    /// ```
    ///
    /// Only `prices` is required. Amounts are JSON numbers in major units; suffixes may carry a
    /// leading dot and any case. Errors name the offending suffix: unknown fields, negative
    /// amounts, a bad currency code, a duplicate suffix (also `com` vs `.COM`), an empty table.
    pub fn from_json(text: &str) -> Result<Self, PricingError> {
        let file: FileIn = serde_json::from_str(text).map_err(|e| {
            if looks_like_porkbun(text) {
                PricingError::invalid(
                    "JSON",
                    "this is a raw Porkbun pricing response; convert it with `dsa prices import --porkbun FILE --out FILE`",
                )
            } else {
                PricingError::Json(e)
            }
        })?;
        if let Some(format) = &file.format
            && format != PRICES_FORMAT
        {
            return Err(PricingError::invalid(
                "header",
                format!("format {format:?} is not supported (expected {PRICES_FORMAT:?})"),
            ));
        }
        let mut builder = Builder::default();
        for (suffix, p) in &file.prices.0 {
            builder.add(format!("suffix {suffix:?}"), suffix, p.register, p.renew, &p.currency)?;
        }
        builder
            .finish(Provenance { source: file.source, as_of: file.as_of, sample: file.sample, note: file.note }, "JSON")
    }

    /// Reads a price table from CSV. The dialect, deliberately small:
    ///
    /// ```text
    /// # comment lines start with '#'; blank lines are ignored
    /// suffix,register,renew,currency
    /// com,11.06,11.06,USD
    /// .com.af,25,25,USD
    /// ```
    ///
    /// * UTF-8, optional byte-order mark, `\n` or `\r\n` line ends.
    /// * The first non-comment line is the header above (any case). Every other line has exactly
    ///   four comma-separated fields; spaces around fields are ignored.
    /// * No quoting and no thousands separators (a field never contains a comma); the decimal
    ///   separator is `.`; amounts are major units (`2060.23`, not `2,060.23`).
    /// * `#` starts a comment only at the beginning of a line.
    ///
    /// Errors carry the 1-based line number.
    pub fn from_csv(text: &str) -> Result<Self, PricingError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut header_seen = false;
        let mut builder = Builder::default();
        for (index, raw_line) in text.lines().enumerate() {
            let at = format!("line {}", index + 1);
            let line = raw_line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            if !header_seen {
                let is_header = fields.len() == CSV_HEADER.len()
                    && fields.iter().zip(CSV_HEADER).all(|(f, h)| f.eq_ignore_ascii_case(h));
                if !is_header {
                    return Err(PricingError::invalid(at, "expected the header `suffix,register,renew,currency`"));
                }
                header_seen = true;
                continue;
            }
            if line.contains('"') {
                return Err(PricingError::invalid(at, "quoted fields are not supported"));
            }
            let [suffix, register, renew, currency] = fields[..] else {
                return Err(PricingError::invalid(
                    at,
                    format!(
                        "expected 4 fields (suffix,register,renew,currency), found {}; quoting and thousands separators are not supported",
                        fields.len()
                    ),
                ));
            };
            let register = parse_csv_amount("register", register).map_err(|r| PricingError::invalid(&at, r))?;
            let renew = parse_csv_amount("renew", renew).map_err(|r| PricingError::invalid(&at, r))?;
            builder.add(at, suffix, register, renew, currency)?;
        }
        if !header_seen {
            return Err(PricingError::invalid("CSV", "missing the header `suffix,register,renew,currency`"));
        }
        builder.finish(Provenance::default(), "CSV")
    }

    /// Imports Porkbun's public pricing API response (`{"status":"SUCCESS","pricing":{"<tld>":
    /// {"registration":"9.68","renewal":"10.37",…}}}`) as a USD table, discarding the report of
    /// skipped entries; see [`PriceTable::import_porkbun`].
    pub fn from_porkbun_json(text: &str) -> Result<Self, PricingError> {
        Self::import_porkbun(text).map(|import| import.table)
    }

    /// Imports Porkbun's public pricing API response. Amounts are USD strings in major units,
    /// possibly with thousands separators (`"2,060.23"`); `registration` becomes `register`,
    /// `renewal` becomes `renew`; transfer prices and coupons are ignored. Entries with a
    /// `specialType` (Handshake names) are skipped and listed in [`PorkbunImport::skipped`].
    /// The table's provenance names Porkbun; the caller adds the date it was fetched
    /// ([`PriceTable::with_provenance`]), which the response does not carry.
    pub fn import_porkbun(text: &str) -> Result<PorkbunImport, PricingError> {
        let response: PorkbunResponse = serde_json::from_str(text).map_err(PricingError::Json)?;
        if response.status != "SUCCESS" {
            return Err(PricingError::invalid(
                "Porkbun response",
                format!(
                    "status is {:?}, not \"SUCCESS\"{}",
                    response.status,
                    response.message.map(|m| format!(": {m}")).unwrap_or_default()
                ),
            ));
        }
        let Some(pricing) = response.pricing else {
            return Err(PricingError::invalid("Porkbun response", "no `pricing` member"));
        };
        let mut builder = Builder::default();
        let mut skipped = Vec::new();
        for (tld, entry) in pricing.0 {
            if let Some(kind) = entry.special_type {
                skipped.push((tld, format!("specialType {kind:?}: not a DNS registry suffix")));
                continue;
            }
            let at = format!("Porkbun TLD {tld:?}");
            let register =
                porkbun_amount("registration", &entry.registration).map_err(|r| PricingError::invalid(&at, r))?;
            let renew = porkbun_amount("renewal", &entry.renewal).map_err(|r| PricingError::invalid(&at, r))?;
            builder.add(at, &tld, register, renew, "USD")?;
        }
        let table = builder.finish(
            Provenance {
                source: Some("Porkbun public pricing API (v3 pricing/get), USD retail prices".to_owned()),
                ..Provenance::default()
            },
            "Porkbun response",
        )?;
        Ok(PorkbunImport { table, skipped })
    }

    /// Loads a price file, choosing the reader by extension: `.json` → [`PriceTable::from_json`],
    /// `.csv` → [`PriceTable::from_csv`] (case-insensitive).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, PricingError> {
        let path = path.as_ref();
        let extension = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        let read =
            || std::fs::read_to_string(path).map_err(|source| PricingError::Io { path: path.to_owned(), source });
        match extension.as_deref() {
            Some("json") => Self::from_json(&read()?),
            Some("csv") => Self::from_csv(&read()?),
            _ => Err(PricingError::UnknownFormat { path: path.to_owned() }),
        }
    }

    /// The shipped sample table ([`EMBEDDED_PRICES_JSON`], `api/data/prices.json`): Porkbun's USD
    /// prices of 2025-03-22, marked `sample`. A test guarantees it parses.
    pub fn embedded() -> Result<Self, PricingError> {
        Self::from_json(EMBEDDED_PRICES_JSON)
    }

    /// Writes the table in the JSON format read by [`PriceTable::from_json`]: pretty-printed,
    /// suffixes sorted, header first (stable output for diffs of the shipped file).
    pub fn to_json(&self) -> Result<String, PricingError> {
        let file = FileOut {
            format: PRICES_FORMAT,
            source: self.provenance.source.as_deref(),
            as_of: self.provenance.as_of,
            sample: self.provenance.sample,
            note: self.provenance.note.as_deref(),
            prices: &self.prices,
        };
        let mut text = serde_json::to_string_pretty(&file).map_err(PricingError::Json)?;
        text.push('\n');
        Ok(text)
    }

    /// The price of a registry suffix (`com`, `com.af`; a leading dot and upper case are
    /// tolerated). `None` when the table has no price for it: then the response has no `pricing`
    /// object (spec §2.2).
    pub fn get(&self, suffix: &str) -> Option<&Price> {
        let suffix = suffix.strip_prefix('.').unwrap_or(suffix);
        if suffix.bytes().any(|b| b.is_ascii_uppercase()) {
            self.prices.get(&suffix.to_ascii_lowercase())
        } else {
            self.prices.get(suffix)
        }
    }

    /// [`quote`] for a suffix, or `None` without price data for it.
    pub fn quote(&self, suffix: &str, commission: Option<CommissionPercent>) -> Option<Pricing> {
        self.get(suffix).map(|price| quote(price, commission))
    }

    /// Number of suffixes with a price.
    pub fn len(&self) -> usize {
        self.prices.len()
    }

    /// Whether the table has no price (never true for a loaded table: loaders refuse empty ones).
    pub fn is_empty(&self) -> bool {
        self.prices.is_empty()
    }

    /// All (suffix, price) pairs, suffixes in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Price)> {
        self.prices.iter().map(|(s, p)| (s.as_str(), p))
    }

    /// The file header: source, date, sample flag.
    pub fn provenance(&self) -> &Provenance {
        &self.provenance
    }

    /// Replaces the header, e.g. to record the date of a Porkbun import before [`PriceTable::to_json`].
    #[must_use]
    pub fn with_provenance(mut self, provenance: Provenance) -> Self {
        self.provenance = provenance;
        self
    }
}

/// Porkbun's response, only the members used.
#[derive(Deserialize)]
struct PorkbunResponse {
    status: String,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    pricing: Option<Entries<PorkbunEntry>>,
}

#[derive(Deserialize)]
struct PorkbunEntry {
    registration: serde_json::Value,
    renewal: serde_json::Value,
    #[serde(default, rename = "specialType")]
    special_type: Option<String>,
}

fn looks_like_porkbun(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text)
        .is_ok_and(|v| v.get("status").is_some() && v.get("pricing").is_some() && v.get("prices").is_none())
}

/// A Porkbun amount: a string such as `"9.68"` or `"2,060.23"` (or, defensively, a number).
fn porkbun_amount(what: &str, value: &serde_json::Value) -> Result<f64, String> {
    match value {
        serde_json::Value::Number(n) => n.as_f64().ok_or_else(|| format!("{what} {n} is not a number")),
        serde_json::Value::String(s) => {
            let well_formed = !s.is_empty()
                && s.bytes().all(|b| b.is_ascii_digit() || b == b',' || b == b'.')
                && s.bytes().filter(|&b| b == b'.').count() <= 1
                && s.bytes().next().is_some_and(|b| b.is_ascii_digit());
            let plain: String = s.chars().filter(|&c| c != ',').collect();
            match plain.parse::<f64>() {
                Ok(amount) if well_formed => Ok(amount),
                _ => Err(format!("{what} {s:?} is not an amount")),
            }
        }
        other => Err(format!("{what} is {other}, not an amount")),
    }
}

/// A CSV amount: plain decimal text (`9.68`, `2060`).
fn parse_csv_amount(what: &str, text: &str) -> Result<f64, String> {
    if text.is_empty() {
        return Err(format!("{what} price is empty"));
    }
    text.parse::<f64>().map_err(|_| format!("{what} price {text:?} is not a number"))
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

    #[test]
    fn suffixes_are_normalised_and_checked() {
        assert_eq!(normalise_suffix(".COM.af"), Ok("com.af".to_owned()));
        assert_eq!(normalise_suffix("xn--p1ai"), Ok("xn--p1ai".to_owned()));
        for bad in ["", ".", "com.", "..com", "-com", "co m", "рф", "a_b"] {
            assert!(normalise_suffix(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn porkbun_amounts_with_thousands_separators() {
        let s = |t: &str| serde_json::Value::String(t.to_owned());
        assert_eq!(porkbun_amount("r", &s("2,060.23")), Ok(2060.23));
        assert_eq!(porkbun_amount("r", &s("9.68")), Ok(9.68));
        assert!(porkbun_amount("r", &s("")).is_err());
        assert!(porkbun_amount("r", &s("-1")).is_err());
        assert!(porkbun_amount("r", &s("1.2.3")).is_err());
        assert!(porkbun_amount("r", &s("N/A")).is_err());
    }

    #[test]
    fn currency_exponents() {
        assert_eq!(minor_unit_exponent("USD"), 2);
        assert_eq!(minor_unit_exponent("JPY"), 0);
        assert_eq!(minor_unit_exponent("KWD"), 3);
        assert_eq!(minor_unit_exponent("XYZ"), 2);
    }
}
