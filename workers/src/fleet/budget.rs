//! The fleet-wide upstream budget: one GCRA arrival time per upstream host in the `dsa_rate` KV
//! bucket, so N workers together stay within one registry's limit. It is the
//! [`UpstreamBudget`] a worker's politeness layer holds in fleet mode.
//!
//! Every read and write of the bucket is bounded by [`FleetBudget::KV_TIMEOUT`]. A bucket that
//! does not answer in time (its stream electing a leader after a NATS server was lost, 4–9 s in
//! nats-server's Raft; no majority) or fails is left alone for [`FleetBudget::FALLBACK_HOLD`]:
//! meanwhile each worker grants slots from a schedule of its own at **its share of the limit**,
//! `per_second / n` with a burst of `burst / n` (at least 1), `n` being the worker pools heard
//! from on the presence subject ([`super::presence`]). So the fleet together still stays within
//! the registry's limit; the fallback is bounded, never unlimited (a worker that cannot count the
//! pools grants nothing locally). One caller per worker then asks the bucket again; the first
//! answer ends the fallback.
//!
//! What the fallback cannot know: grants of the seconds just before the failure are in the
//! bucket's schedule, not in the local ones, so the first fallback second may add one burst's
//! worth at most.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use async_nats::jetstream::kv::{self, CreateErrorKind, UpdateErrorKind};
use async_nats::jetstream::{self};
use bytes::Bytes;
use common::subjects::Names;
use futures::FutureExt;
use futures::future::BoxFuture;

use super::presence::Presence;
use super::{FleetError, js_err};
use crate::config::HostLimit;
use crate::politeness::UpstreamBudget;

/// A fleet-wide rate limit for upstream hosts held in a JetStream KV bucket (GCRA: one key per
/// host holding its theoretical arrival time, updated with compare-and-set), so N workers
/// together stay within one registry's limit; with a bounded local fallback while the bucket
/// cannot be written (see the module documentation).
#[derive(Clone)]
pub struct FleetBudget {
    kv: kv::Store,
    presence: Arc<Presence>,
    fallback: Arc<Fallback>,
}

impl std::fmt::Debug for FleetBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetBudget").finish_non_exhaustive()
    }
}

/// Whether the bucket is asked, and the local schedules used while it is not.
#[derive(Debug, Default)]
struct Fallback {
    state: Mutex<BucketState>,
    /// Per bucket key (`up.<host>`): the theoretical arrival time of the local schedule.
    local: Mutex<HashMap<String, Instant>>,
}

/// The bucket as this worker last found it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum BucketState {
    /// Answering: every caller asks it.
    #[default]
    Healthy,
    /// Failed or timed out: not asked before this instant.
    Down { until: Instant },
    /// One caller is asking it again; the others keep to the local share meanwhile.
    Probing,
}

/// What one attempt on the bucket came to.
enum Asked {
    Granted,
    /// No slot within the caller's wait (a definitive "no", as before the fallback existed).
    Refused,
    /// The bucket did not answer in time or failed: use the local share.
    Unreachable(&'static str),
}

impl FleetBudget {
    /// Longest wait for one read or write of the bucket before falling back to the local share.
    /// A healthy R3 bucket answers in milliseconds; a leader election takes seconds.
    pub const KV_TIMEOUT: Duration = Duration::from_millis(500);
    /// How long the bucket is left alone after it failed, before one caller asks it again.
    pub const FALLBACK_HOLD: Duration = Duration::from_secs(1);

    /// The budget in `names.rate_bucket`, with this worker's presence announced on
    /// `names.worker_presence` (the count of pools sets the fallback share).
    ///
    /// # Errors
    /// When the bucket does not exist.
    pub async fn open(js: &jetstream::Context, names: &Names) -> Result<Self, FleetError> {
        let kv = js.get_key_value(&names.rate_bucket).await.map_err(js_err)?;
        let presence = Presence::start(js.client(), names.worker_presence.clone());
        Ok(Self::with_presence(kv, presence))
    }

    /// The budget in `kv`, counting pools with `presence`.
    fn with_presence(kv: kv::Store, presence: Arc<Presence>) -> Self {
        Self { kv, presence, fallback: Arc::default() }
    }

    /// Waits until `host` may be queried again under `per_second` with `burst`, at most
    /// `max_wait`. Returns false when no slot came in time. While the bucket is unreachable the
    /// slot comes from this worker's share of the limit (module documentation).
    pub async fn acquire(&self, host: &str, per_second: f64, burst: u32, max_wait: Duration) -> bool {
        let key = format!("up.{}", host.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_"));
        let give_up = Instant::now() + max_wait;
        if self.fallback.use_bucket(Instant::now()) {
            match self.ask_bucket(&key, per_second, burst, give_up).await {
                Asked::Granted => {
                    self.fallback.answered();
                    return true;
                }
                Asked::Refused => {
                    self.fallback.answered();
                    return false;
                }
                Asked::Unreachable(reason) => {
                    self.fallback.failed(Instant::now());
                    // Each metric named by a literal, so the operator files' checker sees it.
                    metrics::counter!("dsa_upstream_budget_fallback_total", "reason" => reason).increment(1);
                    tracing::warn!(
                        reason,
                        host,
                        "fleet-wide upstream budget unreachable: this worker's share of the limit for now"
                    );
                }
            }
        }
        let Some(pools) = self.presence.pools(std::time::Instant::now()) else {
            // No count (presence beats refused or not coming back): no share can be known, so no
            // slot is granted locally (the query waits for the bucket as without the fallback).
            metrics::gauge!("dsa_worker_pools_seen").set(0.0);
            return false;
        };
        metrics::gauge!("dsa_worker_pools_seen").set(pools as f64);
        let share = per_second / pools as f64;
        let burst = (burst / u32::try_from(pools).unwrap_or(u32::MAX)).max(1);
        let granted = self.fallback.local(&key, share, burst, give_up).await;
        if granted {
            metrics::counter!("dsa_upstream_budget_local_grants_total").increment(1);
        }
        granted
    }

    /// The GCRA schedule of `key` in the bucket: read, wait if the schedule says so, compare and
    /// set; every call bounded by [`Self::KV_TIMEOUT`].
    async fn ask_bucket(&self, key: &str, per_second: f64, burst: u32, give_up: Instant) -> Asked {
        let interval = 1.0 / per_second.max(0.001);
        let tolerance = interval * f64::from(burst.max(1).saturating_sub(1));
        // The revision this caller last lost a compare-and-set race on, and since when every
        // read shows that same revision.
        let mut stuck_on: Option<(u64, Instant)> = None;
        loop {
            let now = unix_now();
            let entry = match tokio::time::timeout(Self::KV_TIMEOUT, self.kv.entry(key)).await {
                Ok(Ok(entry)) => entry,
                Ok(Err(_)) => return Asked::Unreachable("read_failed"),
                Err(_) => return Asked::Unreachable("read_timeout"),
            };
            let (tat, revision) = match &entry {
                Some(e) if e.operation == kv::Operation::Put => (
                    std::str::from_utf8(&e.value).ok().and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0),
                    Some(e.revision),
                ),
                Some(e) => (0.0, Some(e.revision)),
                None => (0.0, None),
            };
            let start = tat.max(now);
            let wait = start - tolerance - now;
            if wait > 0.0 {
                let wait = Duration::from_secs_f64(wait);
                if Instant::now() + wait > give_up {
                    return Asked::Refused;
                }
                tokio::time::sleep(wait).await;
                continue;
            }
            let value = Bytes::from(format!("{:.6}", start + interval));
            let written = match revision {
                Some(rev) => tokio::time::timeout(Self::KV_TIMEOUT, self.kv.update(key, value, rev)).await.map(|r| {
                    r.map(|_| ()).map_err(|e| e.kind() == UpdateErrorKind::WrongLastRevision || lost_race(&e))
                }),
                None => tokio::time::timeout(Self::KV_TIMEOUT, self.kv.create(key, value))
                    .await
                    .map(|r| r.map(|_| ()).map_err(|e| e.kind() == CreateErrorKind::AlreadyExists || lost_race(&e))),
            };
            match written {
                Ok(Ok(())) => return Asked::Granted,
                Ok(Err(true)) if Instant::now() > give_up => return Asked::Refused,
                // Lost the compare-and-set race: read again.
                Ok(Err(true)) => {
                    // A race lost to another worker moves the revision on. One that stays put
                    // for longer than a bucket call may take is no race: a leader that lost its
                    // majority refuses writes against the revision its followers still serve
                    // (its own uncommitted write is newer), and every retry would lose again.
                    let lost_on = revision.unwrap_or(0);
                    match stuck_on {
                        Some((stuck, since)) if stuck == lost_on && since.elapsed() > Self::KV_TIMEOUT => {
                            return Asked::Unreachable("write_conflict");
                        }
                        Some((stuck, _)) if stuck == lost_on => {}
                        _ => stuck_on = Some((lost_on, Instant::now())),
                    }
                    // A few milliseconds apart (spread by the uuid's random bits), so racing
                    // workers do not retry in step.
                    let spread = uuid::Uuid::new_v4().as_u128() % 8;
                    tokio::time::sleep(Duration::from_millis(2 + u64::try_from(spread).unwrap_or(0))).await;
                }
                Ok(Err(false)) => return Asked::Unreachable("write_failed"),
                Err(_) => return Asked::Unreachable("write_timeout"),
            }
        }
    }
}

impl Fallback {
    /// Whether this caller asks the bucket (else it takes the local share).
    fn use_bucket(&self, now: Instant) -> bool {
        let Ok(mut state) = self.state.lock() else { return true };
        match *state {
            BucketState::Healthy => true,
            BucketState::Down { until } if until > now => false,
            BucketState::Down { .. } => {
                *state = BucketState::Probing;
                true
            }
            BucketState::Probing => false,
        }
    }

    /// The bucket answered (granted or refused a slot).
    fn answered(&self) {
        if let Ok(mut state) = self.state.lock() {
            *state = BucketState::Healthy;
        }
    }

    /// The bucket failed or timed out: leave it alone for [`FleetBudget::FALLBACK_HOLD`].
    fn failed(&self, now: Instant) {
        if let Ok(mut state) = self.state.lock() {
            *state = BucketState::Down { until: now + FleetBudget::FALLBACK_HOLD };
        }
    }

    /// A slot of `key`'s local schedule at `per_second` with `burst`, waiting until `give_up` at
    /// most (GCRA, as the bucket's).
    async fn local(&self, key: &str, per_second: f64, burst: u32, give_up: Instant) -> bool {
        let interval = Duration::from_secs_f64(1.0 / per_second.max(0.001));
        let tolerance = interval * burst.max(1).saturating_sub(1);
        loop {
            let now = Instant::now();
            let wait = {
                let Ok(mut local) = self.local.lock() else { return false };
                let tat = local.get(key).copied().unwrap_or(now).max(now);
                let allowed_at = tat.checked_sub(tolerance).unwrap_or(now);
                if allowed_at <= now {
                    local.insert(key.to_owned(), tat + interval);
                    return true;
                }
                allowed_at - now
            };
            if now + wait > give_up {
                return false;
            }
            tokio::time::sleep(wait).await;
        }
    }
}

/// Whether a failed compare-and-set write was refused by the bucket because another worker wrote
/// first: the stream's "wrong last sequence" answer (error code 10071, or 10164 from newer servers,
/// which async-nats 0.51 does not map to `WrongLastRevision`) anywhere in the error's chain.
fn lost_race(e: &(dyn std::error::Error + 'static)) -> bool {
    use async_nats::jetstream::{Error, ErrorCode};
    let mut cause = Some(e);
    while let Some(error) = cause {
        if let Some(answer) = error.downcast_ref::<Error>() {
            return [ErrorCode::STREAM_WRONG_LAST_SEQUENCE, ErrorCode::STREAM_WRONG_LAST_SEQUENCE_CONSTANT]
                .contains(&answer.error_code());
        }
        cause = error.source();
    }
    false
}

fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

impl UpstreamBudget for FleetBudget {
    fn acquire<'a>(&'a self, host: &'a str, limit: &'a HostLimit, max_wait: Duration) -> BoxFuture<'a, bool> {
        FleetBudget::acquire(self, host, limit.per_second, limit.burst, max_wait).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_is_left_alone_after_a_failure_then_asked_by_one_caller() {
        let fallback = Fallback::default();
        let t0 = Instant::now();
        assert!(fallback.use_bucket(t0), "healthy: everyone asks");
        assert!(fallback.use_bucket(t0));
        fallback.failed(t0);
        assert!(!fallback.use_bucket(t0), "down: nobody asks");
        let later = t0 + FleetBudget::FALLBACK_HOLD + Duration::from_millis(1);
        assert!(fallback.use_bucket(later), "hold over: one caller probes");
        assert!(!fallback.use_bucket(later), "the others keep to the local share meanwhile");
        fallback.answered();
        assert!(fallback.use_bucket(later) && fallback.use_bucket(later), "healthy again");
    }

    #[test]
    fn a_wrong_last_sequence_answer_is_a_lost_race_whatever_its_code() {
        let answer = |code: u64| -> async_nats::jetstream::Error {
            serde_json::from_value(
                serde_json::json!({"code": 400, "err_code": code, "description": "wrong last sequence"}),
            )
            .expect("a JetStream error answer")
        };
        assert!(lost_race(&answer(10071)));
        assert!(lost_race(&answer(10164)));
        assert!(!lost_race(&answer(10077)), "a full stream is no race");
        assert!(!lost_race(&std::io::Error::other("connection reset")));
    }

    /// The local share is a GCRA schedule: `burst` at once, then one slot per interval; a caller
    /// whose wait would pass its deadline is refused at once.
    #[tokio::test(start_paused = true)]
    async fn the_local_share_keeps_to_its_rate() {
        let fallback = Fallback::default();
        let start = Instant::now();
        let far = start + Duration::from_secs(60);
        // 2 per second with a burst of 2: two at once, then one every 500 ms.
        assert!(fallback.local("up.a", 2.0, 2, far).await);
        assert!(fallback.local("up.a", 2.0, 2, far).await);
        assert!(!fallback.local("up.a", 2.0, 2, Instant::now() + Duration::from_millis(100)).await, "no slot in time");
        let before = tokio::time::Instant::now();
        assert!(fallback.local("up.a", 2.0, 2, far).await);
        let waited = before.elapsed();
        assert!(waited >= Duration::from_millis(450) && waited <= Duration::from_millis(550), "{waited:?}");
        // Another host has its own schedule.
        assert!(fallback.local("up.b", 2.0, 1, far).await);
        // Over 10 s of demand the schedule grants the burst plus the rate, no more.
        let mut granted = 0;
        let until = tokio::time::Instant::now() + Duration::from_secs(10);
        while tokio::time::Instant::now() < until {
            if fallback.local("up.c", 2.0, 2, Instant::now() + Duration::from_secs(1)).await {
                granted += 1;
            }
        }
        assert!((20..=22).contains(&granted), "{granted} slots in 10 s at 2/s with a burst of 2");
    }
}
