//! Messages that travel between dsa's roles (front → ledger today; front → workers in the fleet).
//! Each has a serde round-trip test.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

/// One charge: `credits` spent by a key on an endpoint. The `event_id` is unique, so applying an
/// event twice is a no-op (ledger `ON CONFLICT DO NOTHING`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerEvent {
    /// Unique id (UUID v7: time-ordered).
    pub event_id: Uuid,
    /// The key's id (not the key).
    pub key_id: String,
    /// Billing period, `YYYY-MM` (UTC).
    pub period: String,
    /// Endpoint charged (`check`, `whois`, `dns`, `bulk`, `suggest`).
    pub endpoint: String,
    /// Credits spent (spec §8 costs).
    pub credits: i64,
    /// When the charge was made (UTC).
    #[serde(with = "time::serde::rfc3339")]
    pub charged_at: OffsetDateTime,
}

/// The billing period (`YYYY-MM`, UTC) of an instant: allowances reset on the 1st of each month
/// (spec §3, §8).
pub fn billing_period(at: OffsetDateTime) -> String {
    let at = at.to_offset(time::UtcOffset::UTC);
    format!("{:04}-{:02}", at.year(), u8::from(at.month()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ledger_event_round_trips() {
        let e = LedgerEvent {
            event_id: Uuid::now_v7(),
            key_id: "k".into(),
            period: "2026-11".into(),
            endpoint: "check".into(),
            credits: 1,
            charged_at: time::macros::datetime!(2026-11-30 23:59:59 UTC),
        };
        let json = serde_json::to_string(&e).expect("serialise");
        assert_eq!(serde_json::from_str::<LedgerEvent>(&json).expect("parse"), e);
        assert_eq!(billing_period(e.charged_at), "2026-11");
        assert_eq!(billing_period(time::macros::datetime!(2026-12-01 00:00:00 UTC)), "2026-12");
    }
}
