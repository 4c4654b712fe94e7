//! The worker pool: one pull loop per kind of job, each on its own consumer with its own
//! concurrency, every job handled by [`crate::jobs::Jobs`].
//!
//! Every kind of job ([`LookupKind`]) has its own subject and its own durable consumer
//! (`dsa.jobs.whois` → `dsa-workers-whois`, `dsa.jobs.dns` → `dsa-workers-dns`), and a pool runs
//! one [`pull`] loop per kind it serves with its own concurrency, so a slow WHOIS registry never
//! holds the slots of availability checks; `dsa worker --kinds whois,dns` serves only those.
//!
//! What this module adds to the jobs is the JetStream side: ack after replying on the job's
//! reply subject; `Nak` with a delay when the upstream gave no definitive answer that may change
//! and the job's deadline leaves room for another try (possibly on another worker); `Term` for a
//! payload that cannot be parsed or has no reply subject (poison) or a job whose deadline has
//! passed. On shutdown the pool stops fetching, finishes what it holds, and acks.
//!
//! Background jobs ([`common::priority`]: a bulk job's checks) do not hold the kind's pull
//! slots: each is handed to a task of its own at once and waits there for one of the kind's
//! background slots (as many as its pull slots), so however many a bulk job sends, users' jobs
//! of the same kind find their slots free. JetStream's `max_ack_pending` bounds the messages a
//! worker holds this way.
//!
//! Interactive jobs may also arrive on the direct path ([`super::direct`]) while the jobs stream
//! or its consumer elects a leader; those take a free slot of the same kind (the pull loop and the
//! direct path share one semaphore), and a worker says "started" on the job's reply subject when
//! the front asked for it. The stream copy of a job this pool answered already is acked at once,
//! not run again; a direct copy of a job it runs right now is dropped.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use async_nats::jetstream::{self, Message};
use bytes::Bytes;
use common::lookup::LookupKind;
use common::messages::{Job, JobReply};
use common::request_id::{NATS_HEADER, RequestId};
use common::subjects::{Names, REPLY_HEADER};
use time::OffsetDateTime;

use super::direct::{self, Recent};
use super::pull::{self, LiveLoop, Liveness, Pull, Settle};
use super::shared::SharedVerdicts;
use super::{FleetError, Tuning};
use crate::job_panic;
use crate::jobs::{Jobs, Source};
use crate::lookup::Lookups;

/// Counters of one worker pool (for tests and metrics).
#[derive(Debug, Default)]
pub struct PoolStats {
    /// Jobs answered (a reply was published, then the job acked).
    pub answered: AtomicU64,
    /// Jobs handed back for another try (`Nak` with delay).
    pub retried: AtomicU64,
    /// Poison or expired jobs terminated.
    pub terminated: AtomicU64,
    /// Check jobs answered from the worker's verdict cache (no registry query).
    pub cache_hits: AtomicU64,
    /// Check jobs that joined a lookup of the same name already in flight in this pool.
    pub coalesced: AtomicU64,
    /// Check jobs answered from the fleet-wide verdict bucket (another worker asked the registry).
    pub fleet_cache_hits: AtomicU64,
    /// Check jobs answered by another worker's lookup in flight, waited for under its claim on
    /// the name (no registry query by this worker).
    pub peer_lookups: AtomicU64,
    /// Pull loops running, one per kind served: fewer than the kinds served means a kind takes
    /// no work (readiness).
    pub live_loops: AtomicUsize,
    /// Pull loops fetching jobs right now: their consumer answered and NATS is connected.
    pub fetching_loops: AtomicUsize,
    /// Jobs answered that came on the direct path (also counted in `answered`).
    pub direct_answered: AtomicU64,
    /// Copies of a job not run again: the stream copy of a job this pool answered already, or a
    /// direct copy of a job it runs right now.
    pub duplicates_skipped: AtomicU64,
}

impl Liveness for PoolStats {
    fn live_loops(&self) -> &AtomicUsize {
        &self.live_loops
    }

    fn fetching_loops(&self) -> &AtomicUsize {
        &self.fetching_loops
    }
}

impl PoolStats {
    /// Whether a pool serving `kinds` kinds of lookup can take work (a worker's `/readyz`):
    /// every pull loop alive and fetching.
    ///
    /// # Errors
    /// Why not, in words for the operator.
    pub fn readiness(&self, kinds: usize) -> Result<(), String> {
        let live = self.live_loops.load(Ordering::SeqCst);
        let fetching = self.fetching_loops.load(Ordering::SeqCst);
        if live < kinds {
            Err(format!("The worker pool is not running: {live} of {kinds} pull loops alive."))
        } else if fetching < kinds {
            Err(format!(
                "The worker pool cannot fetch jobs: {fetching} of {kinds} pull loops reach NATS and their consumer."
            ))
        } else {
            Ok(())
        }
    }

    pub(super) fn count(&self, source: Source) {
        // Each metric named by a literal, so the operator files' checker (ops/check.sh) sees it.
        let counter = match source {
            Source::Registry => return,
            Source::Cache => {
                metrics::counter!("dsa_worker_cache_hits_total").increment(1);
                &self.cache_hits
            }
            Source::FleetCache => {
                metrics::counter!("dsa_worker_fleet_cache_hits_total").increment(1);
                &self.fleet_cache_hits
            }
            Source::PeerLookup => {
                metrics::counter!("dsa_worker_peer_lookups_total").increment(1);
                &self.peer_lookups
            }
            Source::Joined => {
                metrics::counter!("dsa_worker_coalesced_total").increment(1);
                &self.coalesced
            }
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a copy of a job not run again (`path`: the way the copy came).
    pub(super) fn duplicate(&self, path: &'static str) {
        metrics::counter!("dsa_worker_duplicate_jobs_total", "path" => path).increment(1);
        self.duplicates_skipped.fetch_add(1, Ordering::Relaxed);
    }

    fn terminated(&self, reason: &'static str) -> Settle {
        metrics::counter!("dsa_jobs_terminated_total", "reason" => reason).increment(1);
        self.terminated.fetch_add(1, Ordering::Relaxed);
        Settle::Term(reason)
    }
}

/// An unknown verdict is handed back for another try only while this much of the job's deadline
/// is left.
pub(super) const RETRY_MIN_LEFT: time::Duration = time::Duration::milliseconds(1500);

/// Runs a worker pool until `shutdown` resolves, then drains: stops fetching, finishes the jobs it
/// holds, acks them. One pull loop per kind in `kinds`, each on its own consumer with its own
/// concurrency (`(kind, slots)`), so a slow kind never takes another kind's slots.
///
/// # Errors
/// None today (the consumers are awaited inside the loops, which keep trying while NATS
/// restarts); kept for callers that treat the pool as fallible.
pub async fn run_pool(
    client: async_nats::Client,
    names: Names,
    lookups: Lookups,
    kinds: &[(LookupKind, usize)],
    stats: Arc<PoolStats>,
    tuning: Tuning,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), FleetError> {
    let jobs = match shared(&client, &names).await {
        Some(shared) => Jobs::with_shared(lookups, Arc::new(shared)),
        None => Jobs::new(lookups),
    };
    let recent = Arc::new(Recent::default());
    let progress_every = Duration::from_secs_f64((tuning.job_ack_wait_secs / 2.0).max(0.2));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut loops = Vec::new();
    let mut directs = Vec::new();
    let mut backgrounds: Vec<(Arc<tokio::sync::Semaphore>, usize)> = Vec::new();
    for &(kind, concurrency) in kinds {
        let slots = concurrency.max(1);
        // The kind's slots, shared by its pull loop and its direct path.
        let semaphore = Arc::new(tokio::sync::Semaphore::new(slots));
        let pulse = Arc::new(direct::Pulse::default());
        let mut stop = stop_rx.clone();
        directs.push(tokio::spawn(direct::serve(
            direct::Direct {
                client: client.clone(),
                subject: names.direct_subject(kind),
                queue: names.direct_queue(kind).to_owned(),
                kind,
                slots: semaphore.clone(),
                jobs: jobs.clone(),
                stats: stats.clone(),
                recent: recent.clone(),
                pulse: pulse.clone(),
            },
            async move {
                let _ = stop.wait_for(|s| *s).await;
            },
        )));
        let config = Pull {
            stream: names.jobs_stream.clone(),
            consumer: names.jobs_consumer(kind).to_owned(),
            batch: slots,
            chunk: 1,
            slots,
            expires: Duration::from_millis(500),
            progress_every: Some(progress_every),
        };
        let (pulling, client, jobs, stats) = (client.clone(), client.clone(), jobs.clone(), stats.clone());
        let live = LiveLoop::new(stats.clone());
        let mut stop = stop_rx.clone();
        let stopped = async move {
            let _ = stop.wait_for(|s| *s).await;
        };
        let background = Arc::new(tokio::sync::Semaphore::new(slots));
        backgrounds.push((background.clone(), slots));
        let consumer_name: Arc<str> = names.jobs_consumer(kind).into();
        let recent = recent.clone();
        let handler = move |messages: Vec<Message>| {
            pulse.beat();
            let (client, jobs, stats, recent) = (client.clone(), jobs.clone(), stats.clone(), recent.clone());
            let (background, consumer_name) = (background.clone(), consumer_name.clone());
            async move {
                let mut settles = Vec::with_capacity(messages.len());
                for message in messages {
                    if is_background(&message.payload) {
                        let (client, jobs, stats, recent, background, consumer_name) = (
                            client.clone(),
                            jobs.clone(),
                            stats.clone(),
                            recent.clone(),
                            background.clone(),
                            consumer_name.clone(),
                        );
                        tokio::spawn(async move {
                            let work = async {
                                let Ok(_slot) = background.acquire_owned().await else { return Settle::Leave };
                                match job_panic::catch(answer(&client, &jobs, &stats, &recent, &message)).await {
                                    Ok(settle) => settle,
                                    Err(panicked) => {
                                        panicked.report(kind, "(outside the lookup)");
                                        Settle::Leave
                                    }
                                }
                            };
                            pull::detached(message.clone(), Some(progress_every), &consumer_name, work).await;
                        });
                        settles.push(Settle::Leave);
                        continue;
                    }
                    // The jobs answer panics in their work themselves; one anywhere else here
                    // ends this job only (unanswered, redelivered after its ack wait).
                    let settle = match job_panic::catch(answer(&client, &jobs, &stats, &recent, &message)).await {
                        Ok(settle) => settle,
                        Err(panicked) => {
                            panicked.report(kind, "(outside the lookup)");
                            Settle::Leave
                        }
                    };
                    settles.push(settle);
                }
                settles
            }
        };
        loops.push(tokio::spawn(pull::pull_with_slots(pulling, config, semaphore, live, stopped, handler)));
    }
    shutdown.await;
    let _ = stop_tx.send(true);
    // The direct paths stop taking jobs; the jobs they run hold pull slots, which the pull loops'
    // drain waits for.
    for d in directs {
        let _ = d.await;
    }
    for l in loops {
        let _ = l.await;
    }
    // The background jobs running now finish too (their deadlines bound the wait).
    for (background, slots) in backgrounds {
        let _ = tokio::time::timeout(
            Duration::from_secs(30),
            background.acquire_many(u32::try_from(slots).unwrap_or(u32::MAX)),
        )
        .await;
    }
    tracing::info!("worker pool drained");
    Ok(())
}

/// Whether a job message is background work ([`common::priority`]); unreadable bytes are not
/// (the slot's handler terminates them as poison).
fn is_background(payload: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Priority {
        #[serde(default, deserialize_with = "common::priority::lenient")]
        priority: common::priority::Priority,
    }
    serde_json::from_slice::<Priority>(payload).is_ok_and(|p| p.priority == common::priority::Priority::Background)
}

/// The fleet's verdict bucket and claims, when the server has them.
async fn shared(client: &async_nats::Client, names: &Names) -> Option<SharedVerdicts> {
    let js = jetstream::new(client.clone());
    let verdicts = match js.get_key_value(&names.verdict_bucket).await {
        Ok(verdicts) => verdicts,
        Err(e) => {
            tracing::warn!(error = %e, bucket = %names.verdict_bucket, "no fleet-wide verdict cache; this worker's own cache only");
            return None;
        }
    };
    let claims = match js.get_key_value(&names.claim_bucket).await {
        Ok(claims) => Some(claims),
        Err(e) => {
            tracing::warn!(error = %e, bucket = %names.claim_bucket, "no lookup claims; workers may ask a registry about one name at once");
            None
        }
    };
    Some(SharedVerdicts::new(client.clone(), verdicts, claims))
}

/// Answers one job message: runs it ([`Jobs::run`]), publishes the reply on the job's reply
/// subject, and says how to settle the message. A job this pool answered already (on the direct
/// path) is acked without running again.
async fn answer(
    client: &async_nats::Client,
    jobs: &Jobs,
    stats: &PoolStats,
    recent: &Arc<Recent>,
    message: &Message,
) -> Settle {
    let headers = message.headers.as_ref();
    let Some(reply_to) = headers.and_then(|h| h.get(REPLY_HEADER)).map(|v| v.as_str().to_owned()) else {
        tracing::error!(subject = %message.subject, "job without reply subject terminated");
        return stats.terminated("no_reply_subject");
    };
    let mut job: Job = match serde_json::from_slice(&message.payload) {
        Ok(job) => job,
        Err(e) => {
            tracing::error!(error = %e, subject = %message.subject, "poison job terminated");
            return stats.terminated("bad_payload");
        }
    };
    if job.request_id.is_none() {
        job.request_id = headers.and_then(|h| h.get(NATS_HEADER)).and_then(|v| RequestId::parse(v.as_str()));
    }
    let (job_id, deadline) = (job.job_id, job.deadline);
    if recent.answered(job_id) {
        stats.duplicate("stream");
        return Settle::Ack;
    }
    if headers.is_some_and(direct::wants_started) {
        direct::started(client, &reply_to, job_id).await;
    }
    let running = recent.running(job_id);
    // Expired before or while it ran: the front has given up; end the job.
    let Some(handled) = jobs.run(job, None).await else { return stats.terminated("expired") };
    stats.count(handled.source);
    if handled.retryable && deadline - OffsetDateTime::now_utc() > RETRY_MIN_LEFT {
        stats.retried.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("dsa_jobs_retried_total").increment(1);
        return Settle::Nak(Duration::from_millis(300));
    }
    let reply = JobReply { job_id, outcome: handled.outcome };
    match serde_json::to_vec(&reply) {
        Ok(payload) => {
            if let Err(e) = client.publish(reply_to, Bytes::from(payload)).await {
                tracing::warn!(error = %e, %job_id, "reply not published; job will be redelivered");
                return Settle::Nak(Duration::from_millis(200));
            }
        }
        Err(e) => tracing::error!(error = %e, %job_id, "reply not serialisable"),
    }
    running.answered();
    stats.answered.fetch_add(1, Ordering::Relaxed);
    Settle::Ack
}
