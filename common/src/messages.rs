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
    /// The request that caused the charge ([`crate::request_id`]), so the ledger consumer's log
    /// line of its settlement can be joined with the front's and the worker's. Absent for charges
    /// made outside a request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<crate::request_id::RequestId>,
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

/// A registration-record job (`/v1/whois`), published to the `whois` subject with the same
/// headers as a [`CheckJob`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhoisJob {
    /// Unique id (UUID v7).
    pub job_id: Uuid,
    /// Normalised registrable domain (A-label).
    pub domain: String,
    /// The front stops waiting at this instant (UTC).
    #[serde(with = "time::serde::rfc3339")]
    pub deadline: OffsetDateTime,
}

/// A worker's answer to a [`WhoisJob`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhoisReply {
    /// The job answered.
    pub job_id: Uuid,
    /// The record, or why there is none.
    pub outcome: crate::lookup::LookupOutcome<crate::lookup::WhoisAnswer>,
}

/// A DNS-records job (`/v1/dns`), published to the `dns` subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DnsJob {
    /// Unique id (UUID v7).
    pub job_id: Uuid,
    /// The host name to resolve (lower case A-labels, no trailing dot; subdomains allowed).
    pub name: String,
    /// The record types to ask for, in request order.
    pub types: Vec<crate::lookup::DnsType>,
    /// The front stops waiting at this instant (UTC).
    #[serde(with = "time::serde::rfc3339")]
    pub deadline: OffsetDateTime,
}

/// A worker's answer to a [`DnsJob`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DnsReply {
    /// The job answered.
    pub job_id: Uuid,
    /// The records, or why there are none.
    pub outcome: crate::lookup::LookupOutcome<crate::lookup::DnsAnswer>,
}

/// The job id of any job or reply payload (each carries `job_id`), for routing replies without
/// knowing their kind.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct JobId {
    /// The id.
    pub job_id: Uuid,
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
    fn lookup_messages_round_trip() {
        use crate::lookup::{DnsAnswer, DnsRecord, DnsType, LookupOutcome};
        let job = DnsJob {
            job_id: Uuid::now_v7(),
            name: "_sip._tcp.example.com".into(),
            types: vec![DnsType::Srv, DnsType::A],
            deadline: time::macros::datetime!(2026-11-22 10:00:05 UTC),
        };
        let json = serde_json::to_vec(&job).expect("serialise");
        assert_eq!(serde_json::from_slice::<DnsJob>(&json).expect("parse"), job);
        assert_eq!(serde_json::from_slice::<JobId>(&json).expect("id").job_id, job.job_id);
        let mut records = std::collections::BTreeMap::new();
        records.insert(
            DnsType::A,
            vec![DnsRecord {
                record_type: "A".into(),
                ttl: 300,
                value: Some("192.0.2.1".into()),
                ..Default::default()
            }],
        );
        let answer = DnsAnswer {
            dnssec: None,
            name: job.name.clone(),
            rcode: "NOERROR".into(),
            records,
            cname_chain: vec![],
            failed: std::collections::BTreeMap::from([(DnsType::Srv, "SERVFAIL".to_owned())]),
            checked_at: time::macros::datetime!(2026-11-22 10:00:01 UTC),
        };
        let reply = DnsReply { job_id: job.job_id, outcome: LookupOutcome::Answer { answer } };
        let json = serde_json::to_vec(&reply).expect("serialise");
        assert_eq!(serde_json::from_slice::<DnsReply>(&json).expect("parse"), reply);
        let reply = WhoisReply { job_id: job.job_id, outcome: LookupOutcome::Failed { reason: "timeout".into() } };
        let json = serde_json::to_vec(&reply).expect("serialise");
        assert_eq!(serde_json::from_slice::<WhoisReply>(&json).expect("parse"), reply);
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
            request_id: None,
        };
        let json = serde_json::to_string(&e).expect("serialise");
        assert_eq!(serde_json::from_str::<LedgerEvent>(&json).expect("parse"), e);
        assert_eq!(billing_period(e.charged_at), "2026-11");
        assert_eq!(billing_period(time::macros::datetime!(2026-12-01 00:00:00 UTC)), "2026-12");
    }
}
