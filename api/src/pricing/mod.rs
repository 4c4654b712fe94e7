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
//! Amounts are exact decimals ([`rust_decimal::Decimal`]) in **major units of the currency**
//! (dollars, not cents) from the moment a price file is read until the response is serialized.
//! A price file's number is read as the shortest decimal that round-trips (what a person typed:
//! `9.68`, not `9.67999999999999971578`); the markup `base × (1 + c/100)` is exact and rounded
//! half away from zero (`RoundingStrategy::MidpointAwayFromZero`) to the currency's minor unit
//! (ISO 4217 exponent from [`iso_currency`]: cents for USD, yen for JPY, fils for KWD). The
//! spec's amounts are JSON numbers, so a decimal becomes the nearest `f64` only when written
//! (`rust_decimal::serde::float`), which `serde_json` prints as the short decimal (`10.65`). This
//! avoids the `0.1 + 0.2 = 0.30000000000000004` family of artefacts and the mis-rounding of
//! halves such as `1.005 → 1.00` that naive `(x * 100.0).round()` produces.
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
//!
//! Where things are: exact money arithmetic and ISO 4217 minor units in `money.rs`;
//! [`CommissionPercent`], [`Price`], [`Pricing`] and [`quote()`] in `quote.rs`; [`PriceTable`]
//! and its JSON/CSV formats in `table.rs`; the Porkbun import in `import.rs`.

mod import;
mod money;
pub mod purchase;
mod quote;
mod table;

use std::path::PathBuf;

pub use self::import::PorkbunImport;
pub use self::money::minor_unit_exponent;
pub use self::quote::{CommissionPercent, Price, Pricing, PricingMode, quote};
pub use self::table::{PriceTable, Provenance};

/// The shipped sample price table (`api/data/prices.json`), compiled into the binary so that the
/// standalone mode has prices without any file. It is stale SAMPLE data (see
/// `api/data/PROVENANCE.md`); operators replace it with their own table.
pub const EMBEDDED_PRICES_JSON: &str = include_str!("../../data/prices.json");

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
    /// A [`PricingError::Invalid`] at `at`.
    fn invalid(at: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Invalid { at: at.into(), reason: reason.into() }
    }
}
