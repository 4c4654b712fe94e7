//! `dsa prices import`: a registrar's pricing export converted into a [`PriceTable`].

use serde::Deserialize;

use super::table::{Builder, Entries};
use super::{PriceTable, PricingError, Provenance};

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

impl PriceTable {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
