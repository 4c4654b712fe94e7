//! The fleet side of the engine: JetStream declarations, the worker pool, and fleet-wide
//! upstream budgets.
//!
//! The path of a job in the fleet:
//!
//! ```text
//! front ──publish CheckJob (Nats-Msg-Id = job id, Dsa-Reply-To = inbox)──► stream DSA_JOBS
//!   ▲                                                                       │ pull consumer
//!   │                                                                       ▼ dsa-workers
//!   └──────── core publish CheckReply to the inbox ◄── worker: Engine::check_uncached, then ack
//! ```
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
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_nats::jetstream::{self, AckKind, consumer, kv, stream};
use bytes::Bytes;
use common::domain::DomainName;
use common::lookup::{LookupKind, LookupOutcome};
use common::messages::{CheckJob, CheckOutcome, CheckReply, DnsJob, DnsReply, WhoisJob, WhoisReply};
use common::subjects::{Names, REPLY_HEADER};
use common::verdict::Status;
use futures::{FutureExt, StreamExt};
use time::OffsetDateTime;
use tokio::sync::Semaphore;

use crate::engine::registration::RegistrationError;
use crate::engine::{Engine, Report};
use crate::lookup::Lookups;
use crate::lookup::dns::DnsLookupError;
use crate::singleflight::SingleFlight;

/// Errors declaring or running the fleet side.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// A JetStream call failed.
    #[error("JetStream: {0}")]
    JetStream(String),
}

fn js_err(e: impl std::fmt::Display) -> FleetError {
    FleetError::JetStream(e.to_string())
}

/// Deliveries of one job at most (then it is dropped; the front has long given up).
pub const JOB_MAX_DELIVER: i64 = 5;

/// Timing of the JetStream consumers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// How long a worker may hold a job without a sign of life before JetStream redelivers it
    /// (workers send progress acks every half of it while probing), seconds.
    pub job_ack_wait_secs: f64,
    /// How long the ledger consumer may hold a batch before redelivery, seconds.
    pub ledger_ack_wait_secs: f64,
    /// Most messages the jobs stream holds (then new publishes are refused).
    pub jobs_max_msgs: i64,
    /// Most bytes the jobs stream holds (then new publishes are refused).
    pub jobs_max_bytes: i64,
}

impl Default for Tuning {
    fn default() -> Self {
        Self {
            job_ack_wait_secs: 3.0,
            ledger_ack_wait_secs: 10.0,
            jobs_max_msgs: JOBS_MAX_MSGS,
            jobs_max_bytes: JOBS_MAX_BYTES,
        }
    }
}

/// Default bound on the jobs waiting in the jobs stream: at about 200 bytes a job, far more than
/// any pool drains within a check deadline, so only a runaway backlog reaches it.
pub const JOBS_MAX_MSGS: i64 = 100_000;
/// Default bound on the bytes of the jobs stream (64 MiB).
pub const JOBS_MAX_BYTES: i64 = 64 * 1024 * 1024;
/// Longest a verdict stays in the fleet-wide verdict bucket, seconds; each read also applies the
/// engine's per-status freshness (`engine.cache`: taken-like verdicts hours, available minutes).
pub const VERDICT_BUCKET_MAX_AGE_SECS: u64 = 86_400;
/// Longest a routing decision stays in the routing bucket, seconds. Each entry carries its own
/// deadline (`engine.routing.prefer_whois_secs` after the demotion), checked on read; this bound
/// only clears entries nobody promoted back, and caps a longer hold at one hour.
pub const ROUTING_BUCKET_MAX_AGE_SECS: u64 = 3_600;

/// Duplicate window of the jobs stream (a re-published job id within it is not a new job).
pub const JOB_DUPLICATE_WINDOW_SECS: u64 = 120;
/// Duplicate window of the ledger stream.
pub const LEDGER_DUPLICATE_WINDOW_SECS: u64 = 600;

/// Creates (idempotently) the streams, consumers and KV bucket of `names`. The definitions are
/// documented in `nats/README.md` and kept in `nats/*.json`.
///
/// # Errors
/// When JetStream refuses a definition.
pub async fn declare(js: &jetstream::Context, names: &Names, tuning: Tuning) -> Result<(), FleetError> {
    let jobs = js
        .get_or_create_stream(stream::Config {
            name: names.jobs_stream.clone(),
            subjects: vec![names.jobs_subjects.clone()],
            retention: stream::RetentionPolicy::WorkQueue,
            storage: stream::StorageType::File,
            duplicate_window: Duration::from_secs(JOB_DUPLICATE_WINDOW_SECS),
            max_age: Duration::from_secs(600),
            // A full stream refuses new jobs (the front answers at once) rather than dropping
            // jobs already accepted.
            max_messages: tuning.jobs_max_msgs,
            max_bytes: tuning.jobs_max_bytes,
            discard: stream::DiscardPolicy::New,
            ..Default::default()
        })
        .await
        .map_err(js_err)?;
    for kind in LookupKind::ALL {
        let name = names.jobs_consumer(kind).to_owned();
        let filter = names.jobs_subject(kind).to_owned();
        // A consumer from before the kinds existed has no filter and would overlap the others on
        // this work-queue stream: replace it.
        if let Ok(mut existing) = jobs.get_consumer::<consumer::pull::Config>(&name).await
            && let Ok(info) = existing.info().await
            && info.config.filter_subject != filter
        {
            jobs.delete_consumer(&name).await.map_err(|e| {
                FleetError::JetStream(format!(
                    "consumer {name} has filter {:?}, not {filter:?} (from before the lookup kinds?) and could not be \
                     replaced: {e}; delete it once with `nats consumer rm {} {name}`",
                    info.config.filter_subject, names.jobs_stream
                ))
            })?;
        }
        jobs.get_or_create_consumer(
            &name,
            consumer::pull::Config {
                durable_name: Some(name.clone()),
                filter_subject: filter,
                ack_policy: consumer::AckPolicy::Explicit,
                ack_wait: Duration::from_secs_f64(tuning.job_ack_wait_secs.max(0.5)),
                max_deliver: JOB_MAX_DELIVER,
                max_ack_pending: 10_000,
                ..Default::default()
            },
        )
        .await
        .map_err(js_err)?;
    }
    let ledger = js
        .get_or_create_stream(stream::Config {
            name: names.ledger_stream.clone(),
            subjects: vec![names.ledger_subjects.clone()],
            retention: stream::RetentionPolicy::WorkQueue,
            storage: stream::StorageType::File,
            duplicate_window: Duration::from_secs(LEDGER_DUPLICATE_WINDOW_SECS),
            max_age: Duration::from_secs(7 * 86_400),
            ..Default::default()
        })
        .await
        .map_err(js_err)?;
    ledger
        .get_or_create_consumer(
            &names.ledger_consumer,
            consumer::pull::Config {
                durable_name: Some(names.ledger_consumer.clone()),
                ack_policy: consumer::AckPolicy::Explicit,
                ack_wait: Duration::from_secs_f64(tuning.ledger_ack_wait_secs.max(0.5)),
                max_deliver: -1,
                max_ack_pending: 20_000,
                ..Default::default()
            },
        )
        .await
        .map_err(js_err)?;
    for (bucket, max_age, storage) in [
        (&names.rate_bucket, 300, stream::StorageType::File),
        (&names.demo_bucket, 86_400, stream::StorageType::File),
        // A cache: memory is enough, and a restarted server just starts cold.
        (&names.verdict_bucket, VERDICT_BUCKET_MAX_AGE_SECS, stream::StorageType::Memory),
        // Short-lived decisions: a restarted server forgets them and RDAP leads again.
        (&names.routing_bucket, ROUTING_BUCKET_MAX_AGE_SECS, stream::StorageType::Memory),
    ] {
        if js.get_key_value(bucket).await.is_err() {
            js.create_key_value(kv::Config {
                bucket: bucket.clone(),
                history: 1,
                max_age: Duration::from_secs(max_age),
                storage,
                ..Default::default()
            })
            .await
            .map_err(js_err)?;
        }
    }
    Ok(())
}

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
        loops.push(tokio::spawn(async move {
            let stopped = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            kind_loop(client, names, lookups, kind, concurrency, stats, tuning, stopped).await;
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
    let verdicts: Option<kv::Store> = match js.get_key_value(&names.verdict_bucket).await {
        Ok(store) => Some(store),
        Err(e) => {
            tracing::warn!(error = %e, bucket = %names.verdict_bucket, "no fleet-wide verdict cache; this worker's own cache only");
            None
        }
    };
    loop {
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
                tracing::warn!(error = %e, kind = %kind, "fetching jobs failed; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        while let Some(message) = batch.next().await {
            let Ok(message) = message else { continue };
            let Ok(permit) = slots.clone().acquire_owned().await else { break };
            let (client, lookups, stats, inflight) = (client.clone(), lookups.clone(), stats.clone(), inflight.clone());
            let verdicts = verdicts.clone();
            tokio::spawn(async move {
                match kind {
                    LookupKind::Check => {
                        let pool = CheckPool { engine: lookups.engine(), inflight: &inflight, verdicts, stats: &stats };
                        handle(&client, pool, message, progress_every).await;
                    }
                    LookupKind::Whois | LookupKind::Dns => {
                        handle_lookup(&client, &lookups, kind, &stats, message, progress_every).await;
                    }
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
                    match tokio::time::timeout(left, with_progress(&message, progress_every, lookups.whois(&domain)))
                        .await
                    {
                        Err(_) => return terminate(stats, &message, "expired").await,
                        Ok(Ok(answer)) => LookupOutcome::Answer { answer },
                        Ok(Err(RegistrationError::Engine(e))) => LookupOutcome::Rejected { reason: e.to_string() },
                        Ok(Err(e)) => LookupOutcome::Failed { reason: e.to_string() },
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
            let outcome = match tokio::time::timeout(
                left,
                with_progress(&message, progress_every, lookups.dns(&job.name, &job.types)),
            )
            .await
            {
                Err(_) => return terminate(stats, &message, "expired").await,
                Ok(Ok(answer)) => LookupOutcome::Answer { answer },
                Ok(Err(DnsLookupError::NoAnswer(reason))) => LookupOutcome::Failed { reason },
                Ok(Err(e)) => LookupOutcome::Rejected { reason: e.to_string() },
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
}

/// Check lookups in flight in one worker pool, by domain (A-label).
type CheckFlights = SingleFlight<String, Result<(Report, Source), String>>;

/// What a check job needs from its worker pool.
struct CheckPool<'a> {
    engine: &'a Engine,
    inflight: &'a CheckFlights,
    verdicts: Option<kv::Store>,
    stats: &'a PoolStats,
}

/// A check for the worker: a fresh verdict from this worker's cache (filled by the jobs of every
/// front), else from the fleet-wide bucket (filled by every worker), else one upstream check,
/// whose definitive verdict goes into both.
async fn decide(engine: Engine, verdicts: Option<kv::Store>, domain: DomainName) -> Result<(Report, Source), String> {
    let report = |verdict| Report { verdict, steps: Vec::new(), record: None, retryable: false };
    if let Some(verdict) = engine.cached(&domain).await {
        return Ok((report(verdict), Source::Cache));
    }
    if let Some(store) = &verdicts
        && let Ok(Some(bytes)) = store.get(domain.as_str()).await
        && let Ok(mut verdict) = serde_json::from_slice::<common::verdict::Verdict>(&bytes)
        && verdict.domain == domain.as_str()
        && fresh(&engine, &verdict)
    {
        engine.remember(&verdict).await;
        verdict.evidence = format!("fleet cache: {}", verdict.evidence);
        verdict.method = common::verdict::Method::Cache;
        verdict.authoritative = false;
        return Ok((report(verdict), Source::FleetCache));
    }
    let report = engine.check_uncached(&domain).await.map_err(|e| e.to_string())?;
    if report.verdict.status != Status::Unknown
        && let Some(store) = &verdicts
        && let Ok(bytes) = serde_json::to_vec(&report.verdict)
        && let Err(e) = store.put(domain.as_str(), bytes.into()).await
    {
        tracing::debug!(error = %e, "verdict not shared with the fleet");
    }
    Ok((report, Source::Registry))
}

/// Whether a verdict from the fleet bucket is still fresh by the engine's per-status TTLs.
fn fresh(engine: &Engine, verdict: &common::verdict::Verdict) -> bool {
    let cache = &engine.config().cache;
    let ttl = if verdict.status.is_available() { cache.available_ttl_secs } else { cache.taken_ttl_secs };
    let age = OffsetDateTime::now_utc() - verdict.checked_at;
    verdict.status != Status::Unknown && age >= time::Duration::ZERO && age < time::Duration::seconds(ttl as i64)
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
            let (engine, verdicts) = (engine.clone(), pool.verdicts.clone());
            let work = pool.inflight.run(key, move || decide(engine, verdicts, domain).boxed());
            match tokio::time::timeout(left, with_progress(&message, progress_every, work)).await {
                Err(_) => {
                    // The deadline passed while probing: the front has given up; end the job.
                    stats.terminated.fetch_add(1, Ordering::Relaxed);
                    metrics::counter!("dsa_jobs_terminated_total", "reason" => "expired").increment(1);
                    let _ = message.ack_with(AckKind::Term).await;
                    return;
                }
                Ok((Err(reason), _)) => CheckOutcome::Rejected { reason },
                Ok((Ok((report, source)), joined)) => {
                    if source == Source::Cache {
                        stats.cache_hits.fetch_add(1, Ordering::Relaxed);
                        metrics::counter!("dsa_worker_cache_hits_total").increment(1);
                    } else if source == Source::FleetCache {
                        stats.fleet_cache_hits.fetch_add(1, Ordering::Relaxed);
                        metrics::counter!("dsa_worker_fleet_cache_hits_total").increment(1);
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

/// A fleet-wide rate limit for upstream hosts held in a JetStream KV bucket (GCRA: one key per
/// host holding its theoretical arrival time, updated with compare-and-set), so N workers
/// together stay within one registry's limit.
#[derive(Clone)]
pub struct FleetBudget {
    kv: kv::Store,
}

impl std::fmt::Debug for FleetBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetBudget").finish_non_exhaustive()
    }
}

impl FleetBudget {
    /// The budget in `bucket`.
    ///
    /// # Errors
    /// When the bucket does not exist.
    pub async fn open(js: &jetstream::Context, bucket: &str) -> Result<Self, FleetError> {
        Ok(Self { kv: js.get_key_value(bucket).await.map_err(js_err)? })
    }

    /// Waits until `host` may be queried again under `per_second` with `burst`, at most
    /// `max_wait`. Returns false when no slot came in time (or the bucket is unreachable).
    pub async fn acquire(&self, host: &str, per_second: f64, burst: u32, max_wait: Duration) -> bool {
        let key = format!("up.{}", host.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_"));
        let interval = 1.0 / per_second.max(0.001);
        let tolerance = interval * f64::from(burst.max(1).saturating_sub(1));
        let give_up = std::time::Instant::now() + max_wait;
        loop {
            let now = unix_now();
            let entry = match self.kv.entry(key.clone()).await {
                Ok(e) => e,
                Err(_) => return false,
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
                let until = std::time::Instant::now() + Duration::from_secs_f64(wait);
                if until > give_up {
                    return false;
                }
                tokio::time::sleep(Duration::from_secs_f64(wait)).await;
                continue;
            }
            let value = Bytes::from(format!("{:.6}", start + interval));
            let stored = match revision {
                Some(rev) => self.kv.update(&key, value, rev).await.is_ok(),
                None => self.kv.create(&key, value).await.is_ok(),
            };
            if stored {
                return true;
            }
            if std::time::Instant::now() > give_up {
                return false;
            }
            // Lost the compare-and-set race: read again.
        }
    }
}

/// Self-correcting routing decisions shared by the fleet (see [`crate::routing`]): one key per
/// demoted catalogue suffix (`s.<suffix>`) in the routing bucket holding the Unix time (seconds)
/// until which WHOIS is asked first. A demotion is a put, a promotion a delete. Every decision
/// is also kept in process, and read from there when the bucket does not answer (within
/// [`FleetRoutes::TIMEOUT`]), so a NATS outage falls back to per-process routing.
pub struct FleetRoutes {
    kv: kv::Store,
    local: crate::routing::LocalRoutes,
}

impl std::fmt::Debug for FleetRoutes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetRoutes").finish_non_exhaustive()
    }
}

impl FleetRoutes {
    /// Longest wait for the bucket on one read or write before falling back to this process's state.
    pub const TIMEOUT: Duration = Duration::from_millis(500);

    /// The routing decisions in `bucket`.
    ///
    /// # Errors
    /// When the bucket does not exist (or may not be read).
    pub async fn open(js: &jetstream::Context, bucket: &str) -> Result<Self, FleetError> {
        Ok(Self { kv: js.get_key_value(bucket).await.map_err(js_err)?, local: Default::default() })
    }

    /// The bucket key of a catalogue suffix (KV keys allow `[-_.=/a-zA-Z0-9]`; suffixes are
    /// A-labels, so only an unexpected character is replaced).
    fn key(suffix: &str) -> String {
        let clean: String =
            suffix.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect();
        format!("s.{clean}")
    }

    async fn read(&self, suffix: &str) -> Result<Option<OffsetDateTime>, String> {
        let entry = tokio::time::timeout(Self::TIMEOUT, self.kv.entry(Self::key(suffix)))
            .await
            .map_err(|_| "timed out".to_owned())?
            .map_err(|e| e.to_string())?;
        Ok(entry
            .filter(|e| e.operation == kv::Operation::Put)
            .and_then(|e| std::str::from_utf8(&e.value).ok()?.trim().parse::<i64>().ok())
            .and_then(|secs| OffsetDateTime::from_unix_timestamp(secs).ok()))
    }
}

impl crate::routing::RouteBook for FleetRoutes {
    fn whois_first_until<'a>(
        &'a self,
        suffix: &'a str,
        now: OffsetDateTime,
    ) -> futures::future::BoxFuture<'a, Option<OffsetDateTime>> {
        Box::pin(async move {
            match self.read(suffix).await {
                Ok(until) => until.filter(|until| now < *until),
                Err(e) => {
                    tracing::debug!(error = %e, suffix, "routing bucket unreadable; this process's routing");
                    self.local.get(suffix, now)
                }
            }
        })
    }

    fn demote<'a>(&'a self, suffix: &'a str, until: OffsetDateTime) -> futures::future::BoxFuture<'a, ()> {
        self.local.set(suffix, until);
        Box::pin(async move {
            let value = Bytes::from(until.unix_timestamp().to_string());
            match tokio::time::timeout(Self::TIMEOUT, self.kv.put(Self::key(suffix), value)).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, suffix, "routing not shared: bucket refused the demotion"),
                Err(_) => tracing::warn!(suffix, "routing not shared: bucket timed out on the demotion"),
            }
        })
    }

    fn promote<'a>(&'a self, suffix: &'a str) -> futures::future::BoxFuture<'a, ()> {
        self.local.clear(suffix);
        Box::pin(async move {
            match tokio::time::timeout(Self::TIMEOUT, self.kv.delete(Self::key(suffix))).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, suffix, "routing not shared: bucket refused the promotion"),
                Err(_) => tracing::warn!(suffix, "routing not shared: bucket timed out on the promotion"),
            }
        })
    }
}

fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
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
