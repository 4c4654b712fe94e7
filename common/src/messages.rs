//! Messages that travel between dsa's roles: charges (front → ledger) and jobs (front → workers,
//! in process or over NATS) with their replies.
//! Each has a serde round-trip test.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::lookup::{DnsAnswer, DnsType, LookupKind, LookupOutcome, WatchObservation, WhoisAnswer};
use crate::priority::Priority;
use crate::request_id::RequestId;

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
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::request_id::lenient")]
    pub request_id: Option<crate::request_id::RequestId>,
}

/// Most charges one ledger stream message carries ([`encode_ledger_message`]). A fleet front
/// sends the charges that queued while its earlier messages waited for their acks as one message:
/// with `sync_interval: always` the stream syncs its disk once per message, not once per charge.
pub const LEDGER_EVENTS_PER_MESSAGE: usize = 128;

/// Why a ledger stream message's payload holds no charges to settle.
#[derive(Debug, thiserror::Error)]
pub enum LedgerPayloadError {
    /// Neither a charge nor an array of charges.
    #[error("not a ledger event or an array of them: {0}")]
    Unparsable(#[from] serde_json::Error),
    /// More charges than [`LEDGER_EVENTS_PER_MESSAGE`] (no front sends that many).
    #[error("{0} ledger events in one message (at most {LEDGER_EVENTS_PER_MESSAGE})")]
    TooMany(usize),
    /// An empty array.
    #[error("no ledger event in the message")]
    Empty,
}

/// The payload of one ledger stream message carrying `events` (1 to
/// [`LEDGER_EVENTS_PER_MESSAGE`] of them): a JSON array of [`LedgerEvent`] objects.
pub fn encode_ledger_message(events: &[LedgerEvent]) -> Vec<u8> {
    // Plain data: serialising it cannot fail.
    serde_json::to_vec(events).unwrap_or_default()
}

/// The charges of one ledger stream message: a JSON array of [`LedgerEvent`]s
/// ([`encode_ledger_message`]) or a single event object, as fronts published before they grouped
/// charges (so messages still in the stream across an upgrade settle).
///
/// # Errors
/// [`LedgerPayloadError`]: unparsable, an empty array, or more than
/// [`LEDGER_EVENTS_PER_MESSAGE`] events. Each event's own values (credits) are the consumer's to
/// judge.
pub fn decode_ledger_message(payload: &[u8]) -> Result<Vec<LedgerEvent>, LedgerPayloadError> {
    let array = payload.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
    if !array {
        return Ok(vec![serde_json::from_slice::<LedgerEvent>(payload)?]);
    }
    // Counted before the events are built, so an oversized array allocates nothing per event.
    match serde_json::from_slice::<Vec<serde::de::IgnoredAny>>(payload)?.len() {
        0 => Err(LedgerPayloadError::Empty),
        n if n > LEDGER_EVENTS_PER_MESSAGE => Err(LedgerPayloadError::TooMany(n)),
        _ => Ok(serde_json::from_slice::<Vec<LedgerEvent>>(payload)?),
    }
}

/// The work a job asks for: one arm per kind of job, the one list of kinds on the wire (its
/// [`JobWork::kind`] names the subject and consumer, [`LookupKind`]). Adding a kind is an arm
/// here, its [`JobAnswer`] arm, and its handler in `workers::jobs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JobWork {
    /// An availability check (`/v1/domains/check`).
    Check {
        /// Normalised registrable domain (A-label); a worker in another process parses it again
        /// with its catalogue (the bytes came over the network).
        domain: String,
    },
    /// A registration record (`/v1/whois`).
    Whois {
        /// Normalised registrable domain (A-label).
        domain: String,
    },
    /// DNS records (`/v1/dns`).
    Dns {
        /// The host name to resolve (lower case A-labels, no trailing dot; subdomains allowed).
        name: String,
        /// The record types to ask for, in request order.
        types: Vec<DnsType>,
    },
    /// A watched name's lifecycle re-check (the watch scheduler): the registration record, and
    /// the availability check when the registry says it is not registered.
    Watch {
        /// Normalised registrable domain (A-label).
        domain: String,
        /// Only the DNS delegation (the engine's pre-check: no registry query); the observation
        /// then has `status: None` and `delegated` set. Absent in older messages: a full check.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        delegation_only: bool,
    },
}

impl JobWork {
    /// The kind of job: its subject, consumer and worker slots.
    pub fn kind(&self) -> LookupKind {
        match self {
            JobWork::Check { .. } => LookupKind::Check,
            JobWork::Whois { .. } => LookupKind::Whois,
            JobWork::Dns { .. } => LookupKind::Dns,
            JobWork::Watch { .. } => LookupKind::Watch,
        }
    }

    /// The name the job is about (a domain or a DNS name), for logs.
    pub fn name(&self) -> &str {
        match self {
            JobWork::Check { domain } | JobWork::Whois { domain } | JobWork::Watch { domain, .. } => domain,
            JobWork::Dns { name, .. } => name,
        }
    }
}

/// A job for a worker, of any kind. In the fleet it is published to the jobs stream on its kind's
/// subject with `Nats-Msg-Id` = `job_id` (so a retried publish is not a second job), the reply
/// subject in the [`crate::subjects::REPLY_HEADER`] header and the request id in the
/// [`crate::request_id::NATS_HEADER`] header (and in `request_id`); in standalone mode it goes
/// through the in-process bus as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    /// Unique id (UUID v7).
    pub job_id: Uuid,
    /// The request that caused the job, when one did (absent in jobs from an older front).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::request_id::lenient")]
    pub request_id: Option<RequestId>,
    /// The front stops waiting at this instant (UTC); a worker drops the job once it has passed.
    #[serde(with = "time::serde::rfc3339")]
    pub deadline: OffsetDateTime,
    /// Whether a user waits for the answer ([`crate::priority`]); absent on the wire when one
    /// does, so jobs of older fronts read as interactive.
    /// An unknown value (a newer front's) reads as interactive.
    #[serde(default, skip_serializing_if = "Priority::is_interactive", deserialize_with = "crate::priority::lenient")]
    pub priority: Priority,
    /// What to do (its `kind` tag sits beside the fields above on the wire).
    #[serde(flatten)]
    pub work: JobWork,
}

/// A worker's answer, one arm per [`JobWork`] arm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JobAnswer {
    /// The verdict of a check (possibly `unknown`: no definitive answer, a 502 at the front).
    Check {
        /// The verdict.
        verdict: crate::verdict::Verdict,
    },
    /// The registration record of a WHOIS job.
    Whois {
        /// The record (boxed: it is by far the largest answer).
        answer: Box<WhoisAnswer>,
    },
    /// The records of a DNS job.
    Dns {
        /// The records.
        answer: DnsAnswer,
    },
    /// What a watch re-check saw.
    Watch {
        /// The observation (its `status` is `None` without a definitive registry answer).
        observation: WatchObservation,
    },
}

/// A worker's reply to a [`Job`] of any kind: the answer, a rejection (a client error: 400), or
/// no definitive answer (502, not charged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobReply {
    /// The job answered.
    pub job_id: Uuid,
    /// What the worker concluded.
    pub outcome: LookupOutcome<JobAnswer>,
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
    let (year, month) = (at.year(), u8::from(at.month()));
    match u16::try_from(year) {
        // Written digit by digit: `format!` was most of a charge's cost here (every metered
        // request asks for its period twice).
        Ok(year) if year <= 9999 => {
            let digit = |n: u16| char::from(b'0' + (n % 10) as u8);
            let mut period = String::with_capacity(7);
            period.extend([digit(year / 1000), digit(year / 100), digit(year / 10), digit(year)]);
            period.extend(['-', digit(u16::from(month) / 10), digit(u16::from(month))]);
            period
        }
        _ => format!("{year:04}-{month:02}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(value: &T) {
        let json = serde_json::to_vec(value).expect("serialise");
        assert_eq!(&serde_json::from_slice::<T>(&json).expect("parse"), value);
    }

    #[test]
    fn a_billing_period_is_the_utc_year_and_month() {
        use time::macros::datetime;
        for (at, period) in [
            (datetime!(2026-11-29 23:59:59 UTC), "2026-11"),
            (datetime!(2026-11-30 23:30:00 -01:00), "2026-12"),
            (datetime!(2027-01-01 00:30:00 +01:00), "2026-12"),
            (datetime!(0987-02-03 04:05:06 UTC), "0987-02"),
            (datetime!(9999-12-31 23:59:59 UTC), "9999-12"),
            (datetime!(-0001-10-01 00:00:00 UTC), "-001-10"),
        ] {
            assert_eq!(billing_period(at), period, "{at}");
        }
    }

    #[test]
    fn jobs_of_every_kind_round_trip() {
        let deadline = time::macros::datetime!(2026-11-22 10:00:05 UTC);
        let works = [
            JobWork::Check { domain: "example.com".into() },
            JobWork::Whois { domain: "example.com".into() },
            JobWork::Dns { name: "_sip._tcp.example.com".into(), types: vec![DnsType::Srv, DnsType::A] },
            JobWork::Watch { domain: "example.com".into(), delegation_only: false },
            JobWork::Watch { domain: "example.com".into(), delegation_only: true },
        ];
        let priorities = [
            Priority::Interactive,
            Priority::Background,
            Priority::Interactive,
            Priority::Background,
            Priority::Background,
        ];
        for ((work, request_id), priority) in
            works.into_iter().zip([Some(RequestId::generate()), None, None, None, None]).zip(priorities)
        {
            let job = Job { job_id: Uuid::now_v7(), request_id, deadline, priority, work };
            round_trip(&job);
            let json = serde_json::to_vec(&job).expect("serialise");
            assert_eq!(serde_json::from_slice::<JobId>(&json).expect("id").job_id, job.job_id);
        }
        // The kind sits beside the job's fields, and a malformed request id is dropped, not fatal.
        let json = r#"{"job_id":"0192f0c4-7e1b-7c3a-9f00-2b1f6c1a9e55","deadline":"2026-11-22T10:00:05Z","kind":"check","domain":"a.io"}"#;
        let job: Job = serde_json::from_str(json).expect("parse");
        assert_eq!((job.work.kind(), job.work.name(), job.request_id), (LookupKind::Check, "a.io", None));
        assert_eq!(job.priority, Priority::Interactive, "no priority on the wire: interactive");
        for (raw, priority) in [
            (r#""background""#, Priority::Background),
            (r#""urgent""#, Priority::Interactive),
            ("7", Priority::Interactive),
        ] {
            let with = json.replace(r#""kind""#, &format!(r#""priority":{raw},"kind""#));
            let job: Job = serde_json::from_str(&with).unwrap_or_else(|e| panic!("{raw}: {e}"));
            assert_eq!(job.priority, priority, "{raw}");
        }
        for bad in [r#""a b""#, "42", "null", r#"{"x":1}"#, r#"["a"]"#] {
            let hostile = json.replace(r#""kind""#, &format!(r#""request_id":{bad},"kind""#));
            let job: Job = serde_json::from_str(&hostile).unwrap_or_else(|e| panic!("{bad}: {e}"));
            assert_eq!((job.request_id, job.work.name()), (None, "a.io"), "{bad}");
        }
    }

    #[test]
    fn replies_of_every_kind_round_trip() {
        use crate::lookup::{DnsRecord, WhoisProvenance};
        let verdict = crate::verdict::Verdict {
            domain: "example.com".into(),
            status: crate::verdict::Status::Taken,
            method: crate::verdict::Method::Dns,
            authoritative: true,
            checked_at: time::macros::datetime!(2026-11-22 10:00:01 UTC),
            evidence: "delegated".into(),
            confirmed_by: None,
        };
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
        let dns = DnsAnswer {
            dnssec: None,
            name: "_sip._tcp.example.com".into(),
            rcode: "NOERROR".into(),
            records,
            cname_chain: vec![],
            failed: std::collections::BTreeMap::from([(DnsType::Srv, "SERVFAIL".to_owned())]),
            checked_at: time::macros::datetime!(2026-11-22 10:00:01 UTC),
        };
        let whois = WhoisAnswer {
            domain: "example.com".into(),
            registered: true,
            record: Default::default(),
            provenance: WhoisProvenance {
                protocol: "rdap".into(),
                server: "rdap.example".into(),
                authority: "registry".into(),
                referral: None,
                referral_skipped: None,
                redacted: vec![],
                registry_status: vec![],
            },
            checked_at: time::macros::datetime!(2026-11-22 10:00:01 UTC),
        };
        let outcomes = [
            LookupOutcome::Answer { answer: JobAnswer::Check { verdict } },
            LookupOutcome::Answer { answer: JobAnswer::Whois { answer: Box::new(whois) } },
            LookupOutcome::Answer { answer: JobAnswer::Dns { answer: dns } },
            LookupOutcome::Answer {
                answer: JobAnswer::Watch {
                    observation: WatchObservation {
                        domain: "example.com".into(),
                        status: Some(crate::verdict::Status::PendingDelete),
                        epp_status: vec!["pendingDelete".into(), "redemptionPeriod".into()],
                        expires_at: Some(time::macros::datetime!(2026-10-01 00:00:00 UTC)),
                        delegated: Some(false),
                        evidence: "RDAP 200 from rdap.example".into(),
                        checked_at: time::macros::datetime!(2026-11-22 10:00:01 UTC),
                    },
                },
            },
            LookupOutcome::Rejected { reason: "Unsupported TLD".into() },
            LookupOutcome::Failed { reason: "timeout".into() },
        ];
        for outcome in outcomes {
            round_trip(&JobReply { job_id: Uuid::now_v7(), outcome });
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
            request_id: None,
        };
        let json = serde_json::to_string(&e).expect("serialise");
        assert_eq!(serde_json::from_str::<LedgerEvent>(&json).expect("parse"), e);
        // A malformed request id from a foreign publisher is dropped: the charge still settles.
        let hostile = json.replace(r#""front""#, r#""request_id":"<script>","front""#);
        assert_eq!(serde_json::from_str::<LedgerEvent>(&hostile).expect("parse"), e);
        assert_eq!(billing_period(e.charged_at), "2026-11");
        assert_eq!(billing_period(time::macros::datetime!(2026-12-01 00:00:00 UTC)), "2026-12");
    }

    #[test]
    fn ledger_messages_carry_one_event_or_an_array_of_them() {
        let event = |n: u8| LedgerEvent {
            event_id: Uuid::now_v7(),
            key_id: format!("k{n}"),
            period: "2026-11".into(),
            endpoint: "check".into(),
            credits: 1,
            charged_at: time::macros::datetime!(2026-11-28 12:00:00 UTC),
            front: "front-1".into(),
            request_id: None,
        };
        let events: Vec<_> = (0..3).map(event).collect();
        assert_eq!(decode_ledger_message(&encode_ledger_message(&events)).expect("array"), events);
        // A single object, as fronts published before grouping charges.
        let one = serde_json::to_vec(&events[0]).expect("serialise");
        assert_eq!(decode_ledger_message(&one).expect("object"), vec![events[0].clone()]);
        assert_eq!(
            decode_ledger_message(b" \n [ ] ").map_err(|e| e.to_string()),
            Err("no ledger event in the message".into())
        );
        let full: Vec<_> = (0..LEDGER_EVENTS_PER_MESSAGE).map(|_| event(1)).collect();
        assert_eq!(
            decode_ledger_message(&encode_ledger_message(&full)).expect("full").len(),
            LEDGER_EVENTS_PER_MESSAGE
        );
        let over: Vec<_> = (0..=LEDGER_EVENTS_PER_MESSAGE).map(|_| event(1)).collect();
        assert!(matches!(
            decode_ledger_message(&encode_ledger_message(&over)),
            Err(LedgerPayloadError::TooMany(n)) if n == LEDGER_EVENTS_PER_MESSAGE + 1
        ));
        // Hostile bytes: an error, never a panic; one bad element spoils the message.
        for bytes in [&b""[..], b"[", b"[1,2]", b"{}", b"[{\"event_id\":7}]", b"\xff\xfe", b"null"] {
            assert!(decode_ledger_message(bytes).is_err(), "{bytes:?}");
        }
        let mut mixed = serde_json::to_value(&events).expect("value");
        mixed[1]["credits"] = serde_json::json!("many");
        assert!(decode_ledger_message(&serde_json::to_vec(&mixed).expect("bytes")).is_err());
    }
}
