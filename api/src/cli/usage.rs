//! `dsa usage`: a key's settled credit usage in a month (also shown by `dsa keys show` and
//! `dsa accounts show`).

use api::config::Settings;
use api::keys::KeyRecord;
use api::store::Store;

use super::{open_store, print_json, resolve};

/// Runs `dsa usage`: prints a key's settled usage in `period` (default: this month).
pub(crate) async fn run(settings: Settings, key: &str, period: Option<String>, json: bool) -> anyhow::Result<()> {
    let store = open_store(&settings).await?;
    let record = resolve(store.as_ref(), key).await?;
    let usage = Usage::of(store.as_ref(), &record, period.unwrap_or_else(this_month)).await?;
    if json {
        let mut value = usage.json();
        value["id"] = record.id.clone().into();
        value["fingerprint"] = record.fingerprint.clone().into();
        value["monthly_allowance"] = record.monthly_allowance.into();
        print_json(&value)
    } else {
        usage.print(&record);
        Ok(())
    }
}

/// A key's settled usage in one period.
pub(crate) struct Usage {
    /// Billing period, `YYYY-MM` (UTC).
    pub(crate) period: String,
    /// Credits settled in the period.
    pub(crate) used: i64,
    /// Credits left of today's monthly allowance.
    pub(crate) remaining: i64,
    /// Credits by endpoint.
    pub(crate) by_endpoint: Vec<(String, i64)>,
}

impl Usage {
    /// The settled usage of `key` in `period`.
    pub(crate) async fn of(store: &dyn Store, key: &KeyRecord, period: String) -> anyhow::Result<Self> {
        let used = store.settled_usage(&key.id, &period).await?;
        let by_endpoint = store.usage_by_endpoint(&key.id, &period).await?;
        // Remaining is measured against today's allowance, also for past months.
        Ok(Self { remaining: (key.monthly_allowance - used).max(0), used, by_endpoint, period })
    }

    /// The JSON form scripts read.
    pub(crate) fn json(&self) -> serde_json::Value {
        let by_endpoint: serde_json::Map<String, serde_json::Value> =
            self.by_endpoint.iter().map(|(e, c)| (e.clone(), (*c).into())).collect();
        serde_json::json!({
            "period": self.period,
            "used": self.used,
            "remaining": self.remaining,
            "by_endpoint": by_endpoint,
        })
    }

    /// Prints the usage as a table.
    pub(crate) fn print(&self, key: &KeyRecord) {
        println!("usage of {} in {} (UTC)", key.fingerprint, self.period);
        println!("  {:<18}{:>9}", "used", self.used);
        println!("  {:<18}{:>9}", "allowance", key.monthly_allowance);
        println!("  {:<18}{:>9}", "remaining", self.remaining);
        if self.by_endpoint.is_empty() {
            println!("  no charges");
        } else {
            println!("  {:<18}{:>9}", "endpoint", "credits");
            for (endpoint, credits) in &self.by_endpoint {
                println!("  {endpoint:<18}{credits:>9}");
            }
        }
    }
}

/// The current billing period.
pub(crate) fn this_month() -> String {
    common::messages::billing_period(time::OffsetDateTime::now_utc())
}

/// A billing period as the ledger writes it (`YYYY-MM`, see `common::messages::billing_period`).
pub(crate) fn parse_period(text: &str) -> Result<String, String> {
    let bad = || format!("{text:?}: expected a month as YYYY-MM, e.g. 2026-07");
    let (year, month) = text.split_once('-').ok_or_else(bad)?;
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(year, 4) || !digits(month, 2) || !matches!(month.parse::<u8>(), Ok(1..=12)) {
        return Err(bad());
    }
    Ok(text.to_owned())
}
