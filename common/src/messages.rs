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
    /// The front instance that charged (its id); lets a front tell its own settled charges from
    /// others' when it estimates what is still in flight.
    #[serde(default)]
    pub front: String,
}

/// A lookup job for a worker (fleet mode). Published to the jobs stream with `Nats-Msg-Id` =
/// `job_id` (so a retried publish is not a second job) and the reply inbox in the
/// [`crate::subjects::REPLY_HEADER`] header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckJob {
    /// Unique id (UUID v7).
    pub job_id: Uuid,
    /// Normalised registrable domain (A-label); the worker parses it again with its catalogue.
    pub domain: String,
    /// The front stops waiting at this instant (UTC); a worker drops the job once it has passed.
    #[serde(with = "time::serde::rfc3339")]
    pub deadline: OffsetDateTime,
}

/// A worker's answer to a [`CheckJob`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckReply {
    /// The job answered.
    pub job_id: Uuid,
    /// The verdict, or why there is none.
    pub outcome: CheckOutcome,
}

/// What a worker concluded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CheckOutcome {
    /// A verdict (possibly `unknown`).
    Verdict {
        /// The verdict.
        verdict: crate::verdict::Verdict,
    },
    /// The job cannot be done (unsupported TLD, unparsable domain): a client error.
    Rejected {
        /// Why.
        reason: String,
    },
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
    fn check_messages_round_trip() {
        let job = CheckJob {
            job_id: Uuid::now_v7(),
            domain: "example.com".into(),
            deadline: time::macros::datetime!(2026-11-22 10:00:05 UTC),
        };
        let json = serde_json::to_vec(&job).expect("serialise");
        assert_eq!(serde_json::from_slice::<CheckJob>(&json).expect("parse"), job);
        let verdict = crate::verdict::Verdict {
            domain: "example.com".into(),
            status: crate::verdict::Status::Taken,
            method: crate::verdict::Method::Dns,
            authoritative: true,
            checked_at: time::macros::datetime!(2026-11-22 10:00:01 UTC),
            evidence: "delegated".into(),
        };
        for outcome in [CheckOutcome::Verdict { verdict }, CheckOutcome::Rejected { reason: "Unsupported TLD".into() }]
        {
            let reply = CheckReply { job_id: job.job_id, outcome };
            let json = serde_json::to_vec(&reply).expect("serialise");
            assert_eq!(serde_json::from_slice::<CheckReply>(&json).expect("parse"), reply);
        }
    }

    #[test]
    fn ledger_event_round_trips() {
        let e = LedgerEvent {
            event_id: Uuid::now_v7(),
            key_id: "k".into(),
            period: "2026-11".into(),
            endpoint: "check".into(),
            credits: 1,
            charged_at: time::macros::datetime!(2026-11-30 23:59:59 UTC),
            front: "front-1".into(),
        };
        let json = serde_json::to_string(&e).expect("serialise");
        assert_eq!(serde_json::from_str::<LedgerEvent>(&json).expect("parse"), e);
        assert_eq!(billing_period(e.charged_at), "2026-11");
        assert_eq!(billing_period(time::macros::datetime!(2026-12-01 00:00:00 UTC)), "2026-12");
    }
}
