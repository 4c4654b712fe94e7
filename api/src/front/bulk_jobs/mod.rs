//! Bulk jobs (issue 26): up to 100,000 names checked asynchronously for one server key.
//!
//! The path of a job:
//!
//! ```text
//! POST /v1/jobs/bulk-check ─► routes::submit
//!     ├─ upload::Entries        the body streamed (JSON array, NDJSON, CSV/text) entry by entry
//!     ├─ store (chunks of 1,000) every entry normalised as a single check's domain, stored once
//!     ├─ credits::Credits::reserve  the whole cost checked against the allowance (429) ─► the
//!     │                         job opens with `held` credits (a row every front counts, see
//!     │                         `store::bulk_jobs::held_credits`) ─► 202 + Location
//! runner (every front process, standalone and fleet)
//!     ├─ store.claim            a lease on up to `max_jobs` open jobs (a dead runner's lease
//!     │                         runs out and another front's runner takes the job over)
//!     ├─ round-robin            one name per job in turn; each job's names interleaved across
//!     │                         registries, at most `concurrency` checks in flight per front
//!     ├─ routes::check::evaluate  the single check's path: cache, single-flight, job bus
//!     ├─ ledger                 a definitive verdict: 1 credit, ledger event id derived from
//!     │                         (job, name), so a re-run after a crash charges nothing twice
//!     └─ store.record           the result written once (batched), numbered for the cursor
//! GET /v1/jobs/{id}, …/results, DELETE, GET /v1/jobs ─► routes
//! ```
//!
//! Credits: the hold is `held` minus the job's charges already settled, counted by every front
//! as part of the other fronts' usage ([`crate::front::credits`]); a job's charges are recorded
//! with `front = "bulk-job:<id>"`. When a job ends (done or cancelled) the hold disappears with
//! its state, so whatever was not charged is released.
//!
//! When a job ends, a `job.finished` event ([`finished_event`]) is recorded in the same
//! transaction as its final state, so the key's webhooks that take it hear of it exactly once.

pub mod routes;
pub mod runner;
pub mod upload;

use serde::{Deserialize, Serialize};

/// Bulk job settings (`[policy.bulk_jobs]`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct BulkJobsConfig {
    /// Most entries one job may carry; more is a 413.
    pub max_names: usize,
    /// Largest upload read, bytes; more is a 413.
    pub max_body_bytes: usize,
    /// Checks of bulk jobs one front runs at once (interactive checks are not limited by it:
    /// a job never takes more than this share of the front's checks).
    pub concurrency: usize,
    /// Jobs one front works on at once, one name of each in turn.
    pub max_jobs: usize,
    /// How long a runner's claim on a job lasts without renewal, seconds: after a front dies,
    /// another takes its jobs over after this long.
    pub lease_secs: f64,
    /// Checks of one name before it is reported unknown (not charged).
    pub attempts: u32,
    /// How long a finished job's results are kept, seconds.
    pub results_ttl_secs: u64,
    /// Whether this process runs jobs (off: it only takes submissions and serves results).
    pub run: bool,
}

impl Default for BulkJobsConfig {
    fn default() -> Self {
        Self {
            max_names: 100_000,
            max_body_bytes: 32 * 1024 * 1024,
            concurrency: 16,
            max_jobs: 8,
            lease_secs: 30.0,
            attempts: 3,
            results_ttl_secs: 7 * 24 * 3600,
            run: true,
        }
    }
}

/// The `job.finished` event of `job` ending in `final_state` (`done` or `cancelled`) at
/// `finished_at`, with its verdict counts: recorded by the store in the same transaction as the
/// final state (`BulkJobStore::complete` and `cancel`), under an id derived from the job, so it
/// is recorded once however often the ending is tried.
pub(crate) fn finished_event(
    job: &crate::store::bulk_jobs::BulkJob,
    final_state: routes::JobState,
    counts: routes::VerdictCounts,
    finished_at: time::OffsetDateTime,
) -> crate::events::NewEvent {
    let checked = counts.available + counts.taken + counts.pending_delete + counts.reserved + counts.restricted;
    let data = routes::JobEventData {
        job_id: job.id.clone(),
        state: final_state,
        total: job.total,
        invalid: job.invalid,
        checked: checked + counts.unknown,
        credits_charged: checked,
        credits_released: (job.held - checked).max(0),
        counts,
        // As `GET /v1/jobs/{id}` shows it (the store keeps milliseconds).
        finished_at: routes::rfc3339(unix_ms(finished_at)),
        results_url: format!("/v1/jobs/{}/results", job.id),
    };
    crate::events::NewEvent {
        id: crate::events::event_id(&["bulk_job", &job.id, "finished"]),
        key_id: job.key_id.clone(),
        event_type: JOB_FINISHED.to_owned(),
        subject: Some(job.id.clone()),
        occurred_at: finished_at,
        data: serde_json::to_value(data).unwrap_or_else(|_| serde_json::json!({})),
    }
}

/// The event type of a job that ended (done or cancelled).
pub const JOB_FINISHED: &str = "job.finished";

/// Unix milliseconds of an instant.
pub(crate) fn unix_ms(at: time::OffsetDateTime) -> i64 {
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

/// The ledger event id of the charge of `domain` in job `job_id`: the same for every attempt and
/// every runner, so the ledger (`ON CONFLICT DO NOTHING` on the id) applies it once. A UUID v8
/// (RFC 9562 §5.8) over the first 16 bytes of SHA-256 of the pair.
pub fn charge_event_id(job_id: &str, domain: &str) -> uuid::Uuid {
    use sha2::Digest;
    let digest =
        sha2::Sha256::new().chain_update(job_id.as_bytes()).chain_update(b"\n").chain_update(domain).finalize();
    let mut bytes = [0_u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes).into_uuid()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_charge_id_is_stable_per_job_and_name() {
        let a = charge_event_id("job-1", "example.com");
        assert_eq!(a, charge_event_id("job-1", "example.com"));
        assert_ne!(a, charge_event_id("job-2", "example.com"));
        assert_ne!(a, charge_event_id("job-1", "example.net"));
        assert_eq!(a.get_version_num(), 8);
    }
}
