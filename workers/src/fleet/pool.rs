//! The worker pool: one pull loop per kind of lookup, each on its own consumer with its own
//! concurrency.
//!
//! Every kind of lookup ([`LookupKind`]) has its own subject and its own durable consumer
//! (`dsa.jobs.whois` → `dsa-workers-whois`, `dsa.jobs.dns` → `dsa-workers-dns`), and a pool runs
//! one pull loop per kind it serves with its own concurrency, so a slow WHOIS registry never
//! holds the slots of availability checks; `dsa worker --kinds whois,dns` serves only those.
//!
//! Ack after replying; `Nak` with a delay when the upstream gave no definitive answer and the
//! job's deadline leaves room for another try (possibly on another worker); `Term` for a payload
//! that cannot be parsed (poison message) or a job whose deadline has passed. On shutdown the pool
//! stops fetching, finishes what it holds, and acks.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use async_nats::jetstream::{self, AckKind, consumer};
use bytes::Bytes;
use common::domain::DomainName;
use common::lookup::{LookupKind, LookupOutcome};
use common::messages::{CheckJob, CheckOutcome, CheckReply, DnsJob, DnsReply, WhoisJob, WhoisReply};
use common::subjects::{Names, REPLY_HEADER};
use common::verdict::Status;
use futures::{FutureExt, StreamExt};
use time::OffsetDateTime;
use tokio::sync::Semaphore;

use super::shared::{Claimed, SharedVerdicts};
use super::{FleetError, Tuning};
use crate::engine::registration::RegistrationError;
use crate::engine::{Engine, Report};
use crate::job_panic::{self, Panicked};
use crate::lookup::Lookups;
use crate::lookup::dns::DnsLookupError;
use crate::singleflight::SingleFlight;

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
}

/// Counts a running pull loop in [`PoolStats::live_loops`] (and, while it fetches, in
/// [`PoolStats::fetching_loops`]) for as long as it lives, however it ends (return, panic,
/// abort).
struct LiveLoop {
    stats: Arc<PoolStats>,
    fetching: bool,
}

impl LiveLoop {
    fn new(stats: Arc<PoolStats>) -> Self {
        stats.live_loops.fetch_add(1, Ordering::SeqCst);
        Self { stats, fetching: false }
    }

    fn fetching(&mut self, now: bool) {
        if now != self.fetching {
            self.fetching = now;
            if now {
                self.stats.fetching_loops.fetch_add(1, Ordering::SeqCst);
            } else {
                self.stats.fetching_loops.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}

impl Drop for LiveLoop {
    fn drop(&mut self) {
        self.fetching(false);
        self.stats.live_loops.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs a worker pool until `shutdown` resolves, then drains: stops fetching, finishes the jobs it
/// holds, acks them. One pull loop per kind in `kinds`, each on its own consumer with its own
/// concurrency (`(kind, slots)`), so a slow kind never takes another kind's slots.
///
/// # Errors
/// When the consumer cannot be reached at start.
pub async fn run_pool(
    client: async_nats::Client,
    names: Names,
    lookups: Lookups,
    kinds: &[(LookupKind, usize)],
    stats: Arc<PoolStats>,
    tuning: Tuning,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), FleetError> {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut loops = Vec::new();
    for &(kind, concurrency) in kinds {
        let (client, names, lookups, stats) = (client.clone(), names.clone(), lookups.clone(), stats.clone());
        let mut stop = stop_rx.clone();
        let live = LiveLoop::new(stats.clone());
        loops.push(tokio::spawn(async move {
            let stopped = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            kind_loop(client, names, lookups, kind, concurrency, stats, tuning, live, stopped).await;
        }));
    }
    shutdown.await;
    let _ = stop_tx.send(true);
    for l in loops {
        let _ = l.await;
    }
    tracing::info!("worker pool drained");
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn kind_loop(
    client: async_nats::Client,
    names: Names,
    lookups: Lookups,
    kind: LookupKind,
    concurrency: usize,
    stats: Arc<PoolStats>,
    tuning: Tuning,
    mut live: LiveLoop,
    shutdown: impl Future<Output = ()> + Send,
) {
    let progress_every = Duration::from_secs_f64((tuning.job_ack_wait_secs / 2.0).max(0.2));
    let js = jetstream::new(client.clone());
    tokio::pin!(shutdown);
    let consumer_name = names.jobs_consumer(kind).to_owned();
    // NATS may be restarting: keep trying until the consumer answers or we are told to stop.
    let consumer: consumer::PullConsumer = loop {
        let found = async { js.get_stream(&names.jobs_stream).await.ok()?.get_consumer(&consumer_name).await.ok() };
        tokio::select! {
            _ = &mut shutdown => return,
            c = found => match c {
                Some(c) => break c,
                None => tokio::time::sleep(Duration::from_millis(500)).await,
            },
        }
    };
    tracing::info!(kind = %kind, consumer = %consumer_name, concurrency, "worker pool fetching");
    let slots = Arc::new(Semaphore::new(concurrency.max(1)));
    let inflight: Arc<CheckFlights> = Arc::new(SingleFlight::default());
    let shared = match js.get_key_value(&names.verdict_bucket).await {
        Ok(verdicts) => {
            let claims = match js.get_key_value(&names.claim_bucket).await {
                Ok(claims) => Some(claims),
                Err(e) => {
                    tracing::warn!(error = %e, bucket = %names.claim_bucket, "no lookup claims; workers may ask a registry about one name at once");
                    None
                }
            };
            Some(SharedVerdicts::new(client.clone(), verdicts, claims))
        }
        Err(e) => {
            tracing::warn!(error = %e, bucket = %names.verdict_bucket, "no fleet-wide verdict cache; this worker's own cache only");
            None
        }
    };
    loop {
        live.fetching(client.connection_state() == async_nats::connection::State::Connected);
        let available = slots.available_permits();
        if available == 0 {
            tokio::select! {
                _ = &mut shutdown => break,
                permit = slots.clone().acquire_owned() => { drop(permit); continue; }
            }
        }
        let batch = tokio::select! {
            _ = &mut shutdown => break,
            batch = consumer.fetch().max_messages(available).expires(Duration::from_millis(500)).messages() => batch,
        };
        let mut batch = match batch {
            Ok(b) => b,
            Err(e) => {
                live.fetching(false);
                tracing::warn!(error = %e, kind = %kind, "fetching jobs failed; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        while let Some(message) = batch.next().await {
            let Ok(message) = message else { continue };
            let Ok(permit) = slots.clone().acquire_owned().await else { break };
            let (client, lookups, stats, inflight) = (client.clone(), lookups.clone(), stats.clone(), inflight.clone());
            let shared = shared.clone();
            tokio::spawn(async move {
                let work = async {
                    match kind {
                        LookupKind::Check => {
                            let pool =
                                CheckPool { engine: lookups.engine(), inflight: &inflight, shared, stats: &stats };
                            handle(&client, pool, message, progress_every).await;
                        }
                        LookupKind::Whois | LookupKind::Dns => {
                            handle_lookup(&client, &lookups, kind, &stats, message, progress_every).await;
                        }
                    }
                };
                // The last line: the handlers answer a panic in a job's work themselves; one
                // anywhere else ends this job only (unanswered, redelivered after its ack wait),
                // never the pool, and its slot comes back.
                if let Err(panicked) = job_panic::catch(work).await {
                    panicked.report(kind, "(outside the lookup)");
                }
                drop(permit);
            });
        }
    }
    // Drain: wait until every in-flight job has released its slot.
    let _all = slots.acquire_many(u32::try_from(concurrency.max(1)).unwrap_or(u32::MAX)).await;
}

/// Terminates a job that cannot be worked on (poison payload, no reply subject, expired).
async fn terminate(stats: &PoolStats, message: &jetstream::Message, reason: &'static str) {
    metrics::counter!("dsa_jobs_terminated_total", "reason" => reason).increment(1);
    stats.terminated.fetch_add(1, Ordering::Relaxed);
    let _ = message.ack_with(AckKind::Term).await;
}

/// Publishes `reply` to the job's inbox, then acks (or naks for redelivery when publishing failed).
async fn reply_and_ack(
    client: &async_nats::Client,
    stats: &PoolStats,
    message: &jetstream::Message,
    reply_to: String,
    reply: &impl serde::Serialize,
) {
    match serde_json::to_vec(reply) {
        Ok(payload) => {
            if let Err(e) = client.publish(reply_to, Bytes::from(payload)).await {
                tracing::warn!(error = %e, "reply not published; job will be redelivered");
                let _ = message.ack_with(AckKind::Nak(Some(Duration::from_millis(200)))).await;
                return;
            }
        }
        Err(e) => tracing::error!(error = %e, "reply not serialisable"),
    }
    stats.answered.fetch_add(1, Ordering::Relaxed);
    if let Err(e) = message.ack().await {
        tracing::warn!(error = %e, "ack failed; the job may be answered twice");
    }
}

/// Answers a WHOIS or DNS job. No definitive answer is replied as `Failed` (the front's 502)
/// rather than retried: the front's deadline is short and the engine already tried every method.
async fn handle_lookup(
    client: &async_nats::Client,
    lookups: &Lookups,
    kind: LookupKind,
    stats: &PoolStats,
    message: jetstream::Message,
    progress_every: Duration,
) {
    let reply_to = message.headers.as_ref().and_then(|h| h.get(REPLY_HEADER)).map(|v| v.as_str().to_owned());
    let Some(reply_to) = reply_to else {
        tracing::error!(subject = %message.subject, "job without reply subject terminated");
        return terminate(stats, &message, "no_reply_subject").await;
    };
    match kind {
        LookupKind::Whois => {
            let Ok(job) = serde_json::from_slice::<WhoisJob>(&message.payload) else {
                tracing::error!(subject = %message.subject, "poison whois job terminated");
                return terminate(stats, &message, "bad_payload").await;
            };
            let Some(left) = time_left(job.deadline) else { return terminate(stats, &message, "expired").await };
            let outcome = match lookups.whois_domain(&job.domain) {
                Err(reason) => LookupOutcome::Rejected { reason },
                Ok(domain) => {
                    let work = job_panic::contain(kind, domain.as_str(), lookups.whois(&domain));
                    match tokio::time::timeout(left, with_progress(&message, progress_every, work)).await {
                        Err(_) => return terminate(stats, &message, "expired").await,
                        Ok(Ok(Ok(answer))) => LookupOutcome::Answer { answer },
                        Ok(Ok(Err(RegistrationError::Engine(e)))) => LookupOutcome::Rejected { reason: e.to_string() },
                        Ok(Ok(Err(e))) => LookupOutcome::Failed { reason: e.to_string() },
                        Ok(Err(panicked)) => LookupOutcome::Failed { reason: panicked.to_string() },
                    }
                }
            };
            reply_and_ack(client, stats, &message, reply_to, &WhoisReply { job_id: job.job_id, outcome }).await;
        }
        LookupKind::Dns => {
            let Ok(job) = serde_json::from_slice::<DnsJob>(&message.payload) else {
                tracing::error!(subject = %message.subject, "poison dns job terminated");
                return terminate(stats, &message, "bad_payload").await;
            };
            let Some(left) = time_left(job.deadline) else { return terminate(stats, &message, "expired").await };
            let work = job_panic::contain(kind, &job.name, lookups.dns(&job.name, &job.types));
            let outcome = match tokio::time::timeout(left, with_progress(&message, progress_every, work)).await {
                Err(_) => return terminate(stats, &message, "expired").await,
                Ok(Ok(Ok(answer))) => LookupOutcome::Answer { answer },
                Ok(Ok(Err(DnsLookupError::NoAnswer(reason)))) => LookupOutcome::Failed { reason },
                Ok(Ok(Err(e))) => LookupOutcome::Rejected { reason: e.to_string() },
                Ok(Err(panicked)) => LookupOutcome::Failed { reason: panicked.to_string() },
            };
            reply_and_ack(client, stats, &message, reply_to, &DnsReply { job_id: job.job_id, outcome }).await;
        }
        LookupKind::Check => {}
    }
}

fn time_left(deadline: OffsetDateTime) -> Option<Duration> {
    let left = deadline - OffsetDateTime::now_utc();
    if left <= time::Duration::ZERO { None } else { Duration::try_from(left).ok() }
}

/// Where a worker's check answer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The registry (this job's lookup, or one it joined).
    Registry,
    /// This worker's verdict cache.
    Cache,
    /// The fleet-wide verdict bucket.
    FleetCache,
    /// Another worker's lookup, waited for under its claim.
    PeerLookup,
}

/// Check lookups in flight in one worker pool, by domain (A-label).
type CheckFlights = SingleFlight<String, Result<(Report, Source), String>>;

/// What a check job needs from its worker pool.
struct CheckPool<'a> {
    engine: &'a Engine,
    inflight: &'a CheckFlights,
    shared: Option<SharedVerdicts>,
    stats: &'a PoolStats,
}

/// A check for the worker: a fresh verdict from this worker's cache (filled by the jobs of every
/// front), else from the fleet-wide bucket (filled by every worker), else the verdict of the
/// worker that has claimed the name's lookup, else one upstream check under this worker's claim,
/// whose definitive verdict goes into both caches (see [`super::shared`]).
async fn decide(
    engine: Engine,
    shared: Option<SharedVerdicts>,
    domain: DomainName,
) -> Result<(Report, Source), String> {
    let report = |verdict| Report { verdict, steps: Vec::new(), record: None, retryable: false };
    if let Some(verdict) = engine.cached(&domain).await {
        return Ok((report(verdict), Source::Cache));
    }
    let Some(shared) = shared else {
        let checked = job_panic::contain(LookupKind::Check, domain.as_str(), engine.check_uncached(&domain)).await;
        let report = match checked {
            Ok(checked) => checked.map_err(|e| e.to_string())?,
            Err(panicked) => panicked_report(&panicked, &domain),
        };
        return Ok((report, Source::Registry));
    };
    if let Some(verdict) = shared.fresh(&engine, &domain).await {
        engine.remember(&verdict).await;
        return Ok((report(verdict), Source::FleetCache));
    }
    let claim = match shared.claim(&engine, &domain).await {
        Claimed::Peer(verdict) => {
            engine.remember(&verdict).await;
            return Ok((report(verdict), Source::PeerLookup));
        }
        Claimed::Owned(claim) => Some(claim),
        Claimed::Ask => None,
    };
    // A panic while reading the registry's answer must not leave the claim held until its
    // deadline (other workers would wait on it): contained here, answered unknown, released.
    let checked = match job_panic::contain(LookupKind::Check, domain.as_str(), engine.check_uncached(&domain)).await {
        Ok(checked) => checked.map_err(|e| e.to_string()),
        Err(panicked) => Ok(panicked_report(&panicked, &domain)),
    };
    if let Ok(report) = &checked {
        shared.share(&report.verdict).await;
    }
    if let Some(claim) = claim {
        shared.release(claim).await;
    }
    Ok((checked?, Source::Registry))
}

/// The report of a check whose work panicked: unknown, and not worth a retry (the same answer
/// would panic again), so the front gets it at once.
fn panicked_report(panicked: &Panicked, domain: &DomainName) -> Report {
    Report { verdict: panicked.verdict(domain), steps: Vec::new(), record: None, retryable: false }
}

async fn handle(
    client: &async_nats::Client,
    pool: CheckPool<'_>,
    message: jetstream::Message,
    progress_every: Duration,
) {
    let (engine, stats) = (pool.engine, pool.stats);
    let reply_to = message.headers.as_ref().and_then(|h| h.get(REPLY_HEADER)).map(|v| v.as_str().to_owned());
    let job: CheckJob = match serde_json::from_slice(&message.payload) {
        Ok(job) => job,
        Err(e) => {
            tracing::error!(error = %e, subject = %message.subject, "poison job terminated");
            metrics::counter!("dsa_jobs_terminated_total", "reason" => "bad_payload").increment(1);
            stats.terminated.fetch_add(1, Ordering::Relaxed);
            let _ = message.ack_with(AckKind::Term).await;
            return;
        }
    };
    let Some(reply_to) = reply_to else {
        tracing::error!(job_id = %job.job_id, "job without reply subject terminated");
        stats.terminated.fetch_add(1, Ordering::Relaxed);
        let _ = message.ack_with(AckKind::Term).await;
        return;
    };
    let left = job.deadline - OffsetDateTime::now_utc();
    if left <= time::Duration::ZERO {
        metrics::counter!("dsa_jobs_terminated_total", "reason" => "expired").increment(1);
        stats.terminated.fetch_add(1, Ordering::Relaxed);
        let _ = message.ack_with(AckKind::Term).await;
        return;
    }
    let left = Duration::try_from(left).unwrap_or(Duration::ZERO);
    let outcome = match engine.parse(&job.domain) {
        Err(e) => CheckOutcome::Rejected { reason: e.to_string() },
        Ok(domain) => {
            let key = domain.as_str().to_owned();
            let (engine, shared, asked) = (engine.clone(), pool.shared.clone(), domain.clone());
            let work = pool.inflight.run(key, move || decide(engine, shared, asked).boxed());
            match tokio::time::timeout(left, with_progress(&message, progress_every, work)).await {
                Err(_) => {
                    // The deadline passed while probing: the front has given up; end the job.
                    stats.terminated.fetch_add(1, Ordering::Relaxed);
                    metrics::counter!("dsa_jobs_terminated_total", "reason" => "expired").increment(1);
                    let _ = message.ack_with(AckKind::Term).await;
                    return;
                }
                // A panic outside the registry read (caches, claims): every job of the name
                // answers unknown; the leader reports it once.
                Ok((Err(panicked), joined)) => {
                    if !joined {
                        panicked.report(LookupKind::Check, domain.as_str());
                    }
                    CheckOutcome::Verdict { verdict: panicked.verdict(&domain) }
                }
                Ok((Ok(Err(reason)), _)) => CheckOutcome::Rejected { reason },
                Ok((Ok(Ok((report, source))), joined)) => {
                    if source == Source::Cache {
                        stats.cache_hits.fetch_add(1, Ordering::Relaxed);
                        metrics::counter!("dsa_worker_cache_hits_total").increment(1);
                    } else if source == Source::FleetCache {
                        stats.fleet_cache_hits.fetch_add(1, Ordering::Relaxed);
                        metrics::counter!("dsa_worker_fleet_cache_hits_total").increment(1);
                    } else if source == Source::PeerLookup {
                        stats.peer_lookups.fetch_add(1, Ordering::Relaxed);
                        metrics::counter!("dsa_worker_peer_lookups_total").increment(1);
                    } else if joined {
                        stats.coalesced.fetch_add(1, Ordering::Relaxed);
                        metrics::counter!("dsa_worker_coalesced_total").increment(1);
                    }
                    let still_left = job.deadline - OffsetDateTime::now_utc();
                    // Retry (Nak) only trouble that may pass; an answer that will not change
                    // (an oversized body, an unreadable text) goes back to the front at once.
                    if report.verdict.status == Status::Unknown
                        && report.retryable
                        && still_left > time::Duration::milliseconds(1500)
                    {
                        stats.retried.fetch_add(1, Ordering::Relaxed);
                        metrics::counter!("dsa_jobs_retried_total").increment(1);
                        let _ = message.ack_with(AckKind::Nak(Some(Duration::from_millis(300)))).await;
                        return;
                    }
                    CheckOutcome::Verdict { verdict: report.verdict }
                }
            }
        }
    };
    let reply = CheckReply { job_id: job.job_id, outcome };
    match serde_json::to_vec(&reply) {
        Ok(payload) => {
            if let Err(e) = client.publish(reply_to, Bytes::from(payload)).await {
                tracing::warn!(error = %e, "reply not published; job will be redelivered");
                let _ = message.ack_with(AckKind::Nak(Some(Duration::from_millis(200)))).await;
                return;
            }
        }
        Err(e) => tracing::error!(error = %e, "reply not serialisable"),
    }
    stats.answered.fetch_add(1, Ordering::Relaxed);
    if let Err(e) = message.ack().await {
        tracing::warn!(error = %e, job_id = %job.job_id, "ack failed; the job may be answered twice");
    }
}

/// Runs `work`, telling JetStream every `every` that the job is still being worked on (so a short
/// ack wait redelivers quickly after a crash without redelivering slow but live work).
async fn with_progress<T>(message: &jetstream::Message, every: Duration, work: impl Future<Output = T>) -> T {
    tokio::pin!(work);
    let mut ticker = tokio::time::interval(every);
    ticker.tick().await;
    loop {
        tokio::select! {
            out = &mut work => return out,
            _ = ticker.tick() => { let _ = message.ack_with(AckKind::Progress).await; }
        }
    }
}
