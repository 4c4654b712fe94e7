//! The price table: registry suffix → [`Price`], read from JSON or CSV and validated once.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::marker::PhantomData;
use std::path::Path;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use time::Date;

use super::{CommissionPercent, EMBEDDED_PRICES_JSON, PRICES_FORMAT, Price, Pricing, PricingError, quote};

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
pub(super) struct Entries<T>(pub(super) Vec<(String, T)>);

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
pub(super) struct Builder {
    prices: BTreeMap<String, Price>,
    first_at: HashMap<String, String>,
}

impl Builder {
    pub(super) fn add(
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

    pub(super) fn finish(self, provenance: Provenance, what: &str) -> Result<PriceTable, PricingError> {
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

    /// Reads a price table from CSV (RFC 4180, read with the `csv` crate):
    ///
    /// ```text
    /// # comment lines start with '#'; blank lines are ignored
    /// suffix,register,renew,currency
    /// com,11.06,11.06,USD
    /// .com.af,25,25,USD
    /// dealer,257.96,"2,060.23",USD
    /// ```
    ///
    /// * UTF-8, optional byte-order mark, `\n` or `\r\n` line ends.
    /// * The first non-comment line is the header above (any case). Every other line has exactly
    ///   four comma-separated fields; spaces around fields are ignored.
    /// * Fields may be quoted (`"com"`, `"2,060.23"`; `""` is a quote inside a quoted field; no
    ///   blanks between a separator and a quote, RFC 4180 §2), so a
    ///   spreadsheet's export reads as is. Amounts are major units with `.` as the decimal
    ///   separator and optional `,` thousands separators (which need the field quoted).
    /// * `#` starts a comment only at the beginning of a line.
    ///
    /// Errors carry the 1-based line number.
    pub fn from_csv(text: &str) -> Result<Self, PricingError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        // Comment and blank lines become a record of empty fields, skipped below: the reader's own
        // `comment` option and its skipping of blank lines leave them out of record line numbers.
        let uncommented: String = text
            .split_inclusive('\n')
            .map(|line| {
                let content = line.trim();
                if content.is_empty() || content.starts_with('#') { ",\n" } else { line }
            })
            .collect();
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(uncommented.as_bytes());
        let mut header_seen = false;
        let mut builder = Builder::default();
        for record in reader.records() {
            let record = record.map_err(|e| {
                let at = e.position().map_or_else(|| "CSV".to_owned(), |p| format!("line {}", p.line()));
                PricingError::invalid(at, e.to_string())
            })?;
            let at = format!("line {}", record.position().map_or(0, csv::Position::line));
            // A comment or blank line.
            if record.iter().all(str::is_empty) {
                continue;
            }
            if !header_seen {
                let is_header = record.len() == CSV_HEADER.len()
                    && record.iter().zip(CSV_HEADER).all(|(f, h)| f.eq_ignore_ascii_case(h));
                if !is_header {
                    return Err(PricingError::invalid(at, "expected the header `suffix,register,renew,currency`"));
                }
                header_seen = true;
                continue;
            }
            if record.len() != CSV_HEADER.len() {
                return Err(PricingError::invalid(
                    at,
                    format!(
                        "expected 4 fields (suffix,register,renew,currency), found {}; quote a field that contains a comma",
                        record.len()
                    ),
                ));
            }
            let row: CsvRow = record.deserialize(None).map_err(|e| PricingError::invalid(&at, e.to_string()))?;
            let register = parse_csv_amount("register", &row.register).map_err(|r| PricingError::invalid(&at, r))?;
            let renew = parse_csv_amount("renew", &row.renew).map_err(|r| PricingError::invalid(&at, r))?;
            builder.add(at, &row.suffix, register, renew, &row.currency)?;
        }
        if !header_seen {
            return Err(PricingError::invalid("CSV", "missing the header `suffix,register,renew,currency`"));
        }
        builder.finish(Provenance::default(), "CSV")
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

    /// [`quote()`] for a suffix, or `None` without price data for it.
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

/// One data line of a CSV price file, in header order.
#[derive(Deserialize)]
struct CsvRow {
    suffix: String,
    register: String,
    renew: String,
    currency: String,
}

/// A CSV amount: decimal text (`9.68`, `2060`), optionally with thousands separators
/// (`2,060.23`, from a quoted field).
fn parse_csv_amount(what: &str, text: &str) -> Result<f64, String> {
    if text.is_empty() {
        return Err(format!("{what} price is empty"));
    }
    let plain: std::borrow::Cow<'_, str> = if text.contains(',') {
        // Groups of three digits after the first group of one to three: `2,060.23`, `1,000,000`.
        let int = text.split_once('.').map_or(text, |(int, _)| int);
        let mut groups = int.split(',');
        let digits = |g: &str| g.bytes().all(|b| b.is_ascii_digit());
        let grouped = groups.next().is_some_and(|g| (1..=3).contains(&g.len()) && digits(g))
            && groups.all(|g| g.len() == 3 && digits(g));
        if !grouped || text.split_once('.').is_some_and(|(_, frac)| frac.contains(',')) {
            return Err(format!("{what} price {text:?} is not a number"));
        }
        text.replace(',', "").into()
    } else {
        text.into()
    };
    plain.parse::<f64>().map_err(|_| format!("{what} price {text:?} is not a number"))
}

/// Whether `text` is a raw Porkbun response (so [`PriceTable::from_json`] can say how to convert it).
fn looks_like_porkbun(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text)
        .is_ok_and(|v| v.get("status").is_some() && v.get("pricing").is_some() && v.get("prices").is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_are_normalised_and_checked() {
        assert_eq!(normalise_suffix(".COM.af"), Ok("com.af".to_owned()));
        assert_eq!(normalise_suffix("xn--p1ai"), Ok("xn--p1ai".to_owned()));
        for bad in ["", ".", "com.", "..com", "-com", "co m", "рф", "a_b"] {
            assert!(normalise_suffix(bad).is_err(), "{bad:?} accepted");
        }
    }
}
