//! The job bus: how the front hands a [`Job`] to a worker and waits for its [`JobReply`].
//!
//! The front speaks only `common` types here ([`Job`], [`JobAnswer`], [`BusError`]); what a job
//! does is written once, in `workers::jobs`, for both buses:
//!
//! * [`InProcessBus`] (standalone mode): per kind of job, a bounded channel consumed by that
//!   kind's worker tasks, each running [`workers::jobs::Jobs::run`]. The front's parsed
//!   [`DomainName`] travels with the job, so it is not parsed again.
//! * [`NatsBus`] (fleet mode): the job is published to the JetStream jobs stream on its kind's
//!   subject, with the request id in [`common::request_id::NATS_HEADER`]; the reply comes back on
//!   this front's own inbox subject (`<inbox>.<job id>`), one subscription for every request.
//!   An interactive job whose publish is not acked, or that no worker says it started, within
//!   [`HEDGE_AFTER`] is also sent on the direct path (core NATS,
//!   `dsa.direct.<kind>`; `workers::fleet` documents the worker's side), so that losing the NATS
//!   server that led the jobs stream or its consumer does not stop users' lookups for the 4–9 s
//!   of a leader election. The first reply wins; later ones find no waiter and are dropped.
//!
//! Every kind has its own queue and its own workers, so a slow WHOIS registry never starves
//! availability checks. Background jobs ([`common::priority`]: a bulk job's checks) never hold a
//! worker: in process they run beside the workers (as many at once as there are workers); in the
//! fleet the worker pool runs them outside its pull slots (`workers::fleet::pool`). The front
//! answers check cache hits itself, without a job.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::domain::DomainName;
use common::lookup::{DnsAnswer, DnsType, LookupKind, LookupOutcome, WhoisAnswer};
use common::messages::{Job, JobAnswer, JobReply, JobWork};
use common::request_id;
use common::verdict::Verdict;
use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};
use workers::jobs::Jobs;

/// Why a job brought no answer: the bus boundary's one error type (cloned to every request that
/// shares a check).
#[derive(Debug, Clone, thiserror::Error)]
pub enum BusError {
    /// No reply before the deadline (502).
    #[error("no reply within {0:.1} s")]
    Timeout(f64),
    /// The queue is full (back-pressure) or the workers are gone (502).
    #[error("job queue unavailable: {0}")]
    Unavailable(String),
    /// The worker refused the job (unsupported TLD, unparsable name): a 400 with this text.
    #[error("{0}")]
    Rejected(String),
    /// No upstream gave a definitive answer (502, not charged).
    #[error("{0}")]
    Failed(String),
}

/// Hands jobs to workers, one queue per [`LookupKind`]. Speaks no worker type: adding a kind of
/// job changes nothing here.
pub trait JobBus: Send + Sync + 'static {
    /// Hands `job` to a worker of its kind and waits for its answer until the job's deadline.
    /// `parsed` is the job's domain as the front parsed it, for a worker in this process.
    fn ask(&self, job: Job, parsed: Option<DomainName>) -> BoxFuture<'_, Result<JobAnswer, BusError>>;

    /// Whether jobs can be handed over and answered right now (readiness): the fleet's bus is
    /// connected to NATS; the in-process bus has live worker tasks for every kind it serves.
    ///
    /// # Errors
    /// Why not, in words for the operator reading `/readyz`.
    fn readiness(&self) -> Result<(), String>;

    /// Worker tasks alive now per kind, when the workers run in this process (the in-process
    /// bus); empty when they run elsewhere (the fleet's bus).
    fn live_workers(&self) -> Vec<(LookupKind, usize)> {
        Vec::new()
    }

    /// Stops this bus's in-process worker tasks at once, as a crash would, so tests can see
    /// readiness fail; a bus whose workers run elsewhere has none to stop.
    #[doc(hidden)]
    fn abort_workers(&self) {}

    /// Whether the workers' probes run in this process and keep their verdicts in the front's
    /// own verdict book (the in-process bus: the front must not write them again); false for the
    /// fleet's bus, whose workers probe elsewhere.
    fn probes_in_process(&self) -> bool {
        true
    }
}

/// A job for `work`, due within `wait`, carrying the current request's id and priority
/// ([`common::priority`]: background inside a watch re-check or a bulk job's check).
fn job(work: JobWork, wait: Duration) -> Job {
    Job {
        job_id: uuid::Uuid::now_v7(),
        request_id: request_id::current(),
        deadline: time::OffsetDateTime::now_utc() + wait,
        priority: common::priority::current(),
        work,
    }
}

/// An answer of another kind than asked: a broken or hostile worker.
fn mismatch(answer: &JobAnswer) -> BusError {
    tracing::error!(?answer, "a worker answered a job with an answer of another kind");
    BusError::Unavailable("a worker answered with an answer of another kind".to_owned())
}

impl dyn JobBus {
    /// A fresh verdict on `domain` from a worker, waiting at most `wait`.
    ///
    /// # Errors
    /// As [`JobBus::ask`]; an answer of another kind is [`BusError::Unavailable`].
    pub async fn check(&self, domain: &DomainName, wait: Duration) -> Result<Verdict, BusError> {
        let work = JobWork::Check { domain: domain.as_str().to_owned() };
        match self.ask(job(work, wait), Some(domain.clone())).await? {
            JobAnswer::Check { verdict } => Ok(verdict),
            other => Err(mismatch(&other)),
        }
    }

    /// The registration record of `domain` (`/v1/whois`), waiting at most `wait`.
    ///
    /// # Errors
    /// As [`JobBus::ask`]; an answer of another kind is [`BusError::Unavailable`].
    pub async fn whois(&self, domain: &DomainName, wait: Duration) -> Result<WhoisAnswer, BusError> {
        let work = JobWork::Whois { domain: domain.as_str().to_owned() };
        match self.ask(job(work, wait), Some(domain.clone())).await? {
            JobAnswer::Whois { answer } => Ok(*answer),
            other => Err(mismatch(&other)),
        }
    }

    /// A watch re-check of `domain` (the watch scheduler), waiting at most `wait`.
    ///
    /// # Errors
    /// As [`JobBus::ask`]; an answer of another kind is [`BusError::Unavailable`].
    pub async fn watch(&self, domain: &str, wait: Duration) -> Result<common::lookup::WatchObservation, BusError> {
        self.watch_job(domain, false, wait).await
    }

    /// A watch's cheap look between registry checks: only whether `domain` is delegated in DNS
    /// (the observation's `delegated`; its `status` is `None`), waiting at most `wait`.
    ///
    /// # Errors
    /// As [`JobBus::ask`]; an answer of another kind is [`BusError::Unavailable`].
    pub async fn watch_delegation(
        &self,
        domain: &str,
        wait: Duration,
    ) -> Result<common::lookup::WatchObservation, BusError> {
        self.watch_job(domain, true, wait).await
    }

    async fn watch_job(
        &self,
        domain: &str,
        delegation_only: bool,
        wait: Duration,
    ) -> Result<common::lookup::WatchObservation, BusError> {
        let work = JobWork::Watch { domain: domain.to_owned(), delegation_only };
        match self.ask(job(work, wait), None).await? {
            JobAnswer::Watch { observation } => Ok(observation),
            other => Err(mismatch(&other)),
        }
    }

    /// The `types` records of `name` (`/v1/dns`), waiting at most `wait`.
    ///
    /// # Errors
    /// As [`JobBus::ask`]; an answer of another kind is [`BusError::Unavailable`].
    pub async fn dns(&self, name: String, types: Vec<DnsType>, wait: Duration) -> Result<DnsAnswer, BusError> {
        match self.ask(job(JobWork::Dns { name, types }, wait), None).await? {
            JobAnswer::Dns { answer } => Ok(answer),
            other => Err(mismatch(&other)),
        }
    }
}

/// The answer of a reply's outcome.
fn answer_of(outcome: LookupOutcome<JobAnswer>) -> Result<JobAnswer, BusError> {
    match outcome {
        LookupOutcome::Answer { answer } => Ok(answer),
        LookupOutcome::Rejected { reason } => Err(BusError::Rejected(reason)),
        LookupOutcome::Failed { reason } => Err(BusError::Failed(reason)),
    }
}

/// One in-process job with the front's parse of its domain and its reply slot.
struct Task {
    job: Job,
    parsed: Option<DomainName>,
    reply: oneshot::Sender<LookupOutcome<JobAnswer>>,
}

/// The in-process bus of standalone mode: per kind, a bounded queue and its own worker tasks.
#[derive(Debug, Clone)]
pub struct InProcessBus {
    queues: BTreeMap<LookupKind, mpsc::Sender<Task>>,
    /// Worker tasks alive, per kind (readiness).
    live: BTreeMap<LookupKind, Arc<AtomicUsize>>,
    /// Every worker task, for [`JobBus::abort_workers`].
    tasks: Arc<Vec<tokio::task::AbortHandle>>,
}

/// Counts a worker task in its kind's live count for as long as it lives, however it ends
/// (queue closed, panic, abort).
struct LiveWorker(Arc<AtomicUsize>);

impl LiveWorker {
    fn new(count: Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count)
    }
}

impl Drop for LiveWorker {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl InProcessBus {
    /// Starts, for each `(kind, workers)`, that many worker tasks running `jobs`, each kind with a
    /// queue of `queue` jobs. A kind not listed has no queue (its requests get 502 at once).
    pub fn start(jobs: Jobs, kinds: &[(LookupKind, usize)], queue: usize) -> Self {
        let mut queues = BTreeMap::new();
        let mut live = BTreeMap::new();
        let mut tasks = Vec::new();
        for &(kind, workers) in kinds {
            let (tx, rx) = mpsc::channel::<Task>(queue.max(1));
            let rx = Arc::new(tokio::sync::Mutex::new(rx));
            let alive = Arc::new(AtomicUsize::new(0));
            // Background jobs run beside the workers, at most as many at once as there are
            // workers: a worker hands one off and takes the next job, so users' jobs never
            // queue behind background work waiting for its share of a budget.
            let background = Arc::new(tokio::sync::Semaphore::new(workers.max(1)));
            for _ in 0..workers.max(1) {
                let (rx, jobs, background) = (rx.clone(), jobs.clone(), background.clone());
                let worker = LiveWorker::new(alive.clone());
                let task = tokio::spawn(async move {
                    let _alive = worker;
                    loop {
                        let task = { rx.lock().await.recv().await };
                        let Some(Task { job, parsed, reply }) = task else { return };
                        if reply.is_closed() {
                            continue; // the requester gave up: drop stale work
                        }
                        if job.priority == common::priority::Priority::Background {
                            let (jobs, background) = (jobs.clone(), background.clone());
                            tokio::spawn(async move {
                                let Ok(_slot) = background.acquire_owned().await else { return };
                                if let Some(handled) = jobs.run(job, parsed).await {
                                    let _ = reply.send(handled.outcome);
                                }
                            });
                            continue;
                        }
                        // `None`: the deadline passed; dropping the reply slot tells the front.
                        if let Some(handled) = jobs.run(job, parsed).await {
                            let _ = reply.send(handled.outcome);
                        }
                    }
                });
                tasks.push(task.abort_handle());
            }
            queues.insert(kind, tx);
            live.insert(kind, alive);
        }
        Self { queues, live, tasks: Arc::new(tasks) }
    }
}

impl JobBus for InProcessBus {
    fn ask(&self, job: Job, parsed: Option<DomainName>) -> BoxFuture<'_, Result<JobAnswer, BusError>> {
        Box::pin(async move {
            let kind = job.work.kind();
            let wait = jobs_wait(&job);
            let queue = self.queues.get(&kind).ok_or_else(|| BusError::Unavailable(format!("no {kind} workers")))?;
            let (reply, answer) = oneshot::channel();
            queue
                .try_send(Task { job, parsed, reply })
                .map_err(|e| BusError::Unavailable(format!("{kind} queue: {e}")))?;
            match tokio::time::timeout(wait, answer).await {
                Err(_) => Err(BusError::Timeout(wait.as_secs_f64())),
                Ok(Err(_)) => Err(BusError::Unavailable("worker dropped the job".into())),
                Ok(Ok(outcome)) => answer_of(outcome),
            }
        })
    }

    fn readiness(&self) -> Result<(), String> {
        match self.live.iter().find(|(_, n)| n.load(Ordering::SeqCst) == 0) {
            Some((kind, _)) => Err(format!("No live {kind} workers: {kind} jobs cannot be answered.")),
            None => Ok(()),
        }
    }

    fn live_workers(&self) -> Vec<(LookupKind, usize)> {
        self.live.iter().map(|(kind, n)| (*kind, n.load(Ordering::SeqCst))).collect()
    }

    fn abort_workers(&self) {
        for task in self.tasks.iter() {
            task.abort();
        }
    }
}

/// How long the front waits for `job`: until its deadline.
fn jobs_wait(job: &Job) -> Duration {
    Duration::try_from(job.deadline - time::OffsetDateTime::now_utc()).unwrap_or(Duration::ZERO)
}

/// How long a front waits, for an interactive job, for the jobs stream's publish ack or a worker's
/// "started" notice before it also sends the job on the direct path; and how long it waits for a
/// direct copy to be started before it sends another. A healthy stream acks in milliseconds and a
/// worker with a free slot starts a job as soon as it is delivered (on the 2-core development
/// machine under the cluster test's load: ack p99 54 ms, "started" p99 143 ms); a leader
/// election takes 4–9 s. A copy sent needlessly costs one message: a worker takes a copy of a
/// job the stream may still deliver only while its stream delivers nothing.
pub const HEDGE_AFTER: Duration = Duration::from_millis(500);

/// Most direct copies of one job: a worker whose slots are all busy, or whose stream is moving,
/// drops a direct copy, and the next may reach another worker of the queue group.
pub const MAX_DIRECT_COPIES: u32 = 4;

/// A job the front waits for: the slot for its reply and the flag its "started" notice sets.
struct Waiter {
    reply: oneshot::Sender<bytes::Bytes>,
    started: tokio::sync::watch::Sender<bool>,
}

/// Reply slots of the jobs a front waits for, by job id.
type Pending = Arc<Mutex<HashMap<uuid::Uuid, Waiter>>>;

/// Whether a failed publish means the jobs stream itself refused the job (it is full, the job is
/// too large): a JetStream answer, which a second path must not get around. No answer at all (no
/// responders while the stream has no leader, a timeout, a broken connection) is what the direct
/// path is for.
fn refused_by_stream(e: &async_nats::jetstream::context::PublishError) -> bool {
    use async_nats::jetstream::context::PublishErrorKind;
    !matches!(e.kind(), PublishErrorKind::StreamNotFound | PublishErrorKind::TimedOut | PublishErrorKind::BrokenPipe)
}

/// The fleet's bus: jobs go to the JetStream jobs stream on their kind's subject, replies come
/// back on this front's own inbox subject (`<inbox>.<job id>`), one subscription for all requests
/// of every kind.
#[derive(Clone)]
pub struct NatsBus {
    client: async_nats::Client,
    js: async_nats::jetstream::Context,
    names: common::subjects::Names,
    inbox: String,
    pending: Pending,
}

impl std::fmt::Debug for NatsBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsBus").field("inbox", &self.inbox).finish_non_exhaustive()
    }
}

/// Removes a pending reply slot however the wait ends.
struct PendingGuard<'a> {
    bus: &'a NatsBus,
    job_id: uuid::Uuid,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut pending) = self.bus.pending.lock() {
            pending.remove(&self.job_id);
        }
    }
}

impl NatsBus {
    /// Subscribes this front's inbox and starts routing replies.
    ///
    /// # Errors
    /// When the subscription fails.
    pub async fn start(client: async_nats::Client, names: &common::subjects::Names) -> anyhow::Result<Self> {
        use futures::StreamExt;
        // In the job-reply space, not the client's inbox prefix (`common::subjects::JOB_REPLIES`).
        let inbox = format!("{}.{}", names.job_replies, uuid::Uuid::new_v4().simple());
        let mut replies = client.subscribe(format!("{inbox}.*")).await?;
        let bus = Self {
            js: async_nats::jetstream::new(client.clone()),
            client,
            names: names.clone(),
            inbox,
            pending: Default::default(),
        };
        let pending = bus.pending.clone();
        tokio::spawn(async move {
            while let Some(message) = replies.next().await {
                let Ok(id) = serde_json::from_slice::<common::messages::JobId>(&message.payload) else {
                    tracing::warn!(subject = %message.subject, "unparsable reply dropped");
                    continue;
                };
                let notice =
                    message.headers.as_ref().is_some_and(|h| h.get(common::subjects::STARTED_HEADER).is_some());
                if notice {
                    // A worker started the job: no direct copy needed (the waiter stays).
                    if let Ok(pending) = pending.lock()
                        && let Some(waiter) = pending.get(&id.job_id)
                    {
                        waiter.started.send_replace(true);
                    }
                    continue;
                }
                let waiter = pending.lock().ok().and_then(|mut p| p.remove(&id.job_id));
                if let Some(waiter) = waiter {
                    let _ = waiter.reply.send(message.payload);
                }
                // No waiter: the front gave up, or the job was answered twice (a redelivery, or
                // both the stream copy and a direct copy); drop it.
            }
        });
        Ok(bus)
    }

    /// Sends `job` on its kind's direct subject (the second path) with `why` in
    /// [`common::subjects::DIRECT_REASON_HEADER`] (the worker reads it), counting `reason` (`why`
    /// for a job's first copy, `resend` for a later one).
    async fn send_direct(
        &self,
        job: &Job,
        headers: &async_nats::HeaderMap,
        payload: &bytes::Bytes,
        why: &'static str,
        reason: &'static str,
    ) {
        let subject = self.names.direct_subject(job.work.kind());
        let mut headers = headers.clone();
        headers.insert(common::subjects::DIRECT_REASON_HEADER, why);
        match self.client.publish_with_headers(subject, headers, payload.clone()).await {
            Ok(()) => {
                // Each metric named by a literal, so the operator files' checker sees it.
                metrics::counter!("dsa_jobs_direct_total", "reason" => reason).increment(1);
                tracing::debug!(job_id = %job.job_id, why, "job also sent on the direct path");
            }
            Err(e) => tracing::debug!(error = %e, job_id = %job.job_id, "direct copy not sent"),
        }
    }

    /// Waits for the reply of an interactive job published with `ack` pending, sending a direct
    /// copy every [`HEDGE_AFTER`] (at most [`MAX_DIRECT_COPIES`]) while the stream does not move
    /// it. Why a copy goes, as the worker reads it:
    ///
    /// * `publish_failed`: the stream gave no answer at all (no responders: no leader); it does
    ///   not hold the job.
    /// * `reconnected`: this front's NATS connection was made again since the job was published
    ///   (it moved off a lost server): the publish, or the reply of a started job, may be lost.
    /// * `publish_slow`: no ack yet; `not_started`: acked, but no worker said it started the job.
    ///   The stream may move it after all: a worker takes these copies only while its stream
    ///   delivers nothing.
    async fn hedged(
        &self,
        job: &Job,
        headers: &async_nats::HeaderMap,
        payload: &bytes::Bytes,
        ack: async_nats::jetstream::context::PublishAckFuture,
        mut reply: oneshot::Receiver<bytes::Bytes>,
        mut started: tokio::sync::watch::Receiver<bool>,
    ) -> Result<bytes::Bytes, BusError> {
        use std::future::IntoFuture;
        let ack = ack.into_future();
        tokio::pin!(ack);
        let connects = || self.client.statistics().connects.load(Ordering::Relaxed);
        let published_on = connects();
        // Connections made since the last copy for a started job (its reply may be lost).
        let mut started_on = published_on;
        // `None` while the ack is awaited; then whether the stream took the job.
        let mut stored: Option<bool> = None;
        let (mut watching, mut copies) = (true, 0u32);
        let mut next = tokio::time::Instant::now() + HEDGE_AFTER;
        loop {
            let is_started = *started.borrow();
            tokio::select! {
                biased;
                answer = &mut reply => {
                    return answer.map_err(|_| BusError::Unavailable("reply channel closed".into()));
                }
                published = &mut ack, if stored.is_none() => {
                    stored = Some(published.is_ok());
                    match published {
                        Ok(_) => {}
                        Err(e) if copies == 0 && !is_started && refused_by_stream(&e) => {
                            return Err(BusError::Unavailable(e.to_string()));
                        }
                        Err(_) if copies == 0 && !is_started => {
                            self.send_direct(job, headers, payload, "publish_failed", "publish_failed").await;
                            copies += 1;
                            next = tokio::time::Instant::now() + HEDGE_AFTER;
                        }
                        Err(_) => {}
                    }
                }
                changed = started.changed(), if watching && !is_started => {
                    // The sender lives in the pending map until the reply arrives (handled above).
                    watching = changed.is_ok();
                }
                () = tokio::time::sleep_until(next) => {
                    next = tokio::time::Instant::now() + HEDGE_AFTER;
                    let now_on = connects();
                    let why = match (is_started, stored) {
                        _ if copies >= MAX_DIRECT_COPIES => None,
                        (true, _) if now_on != started_on => Some("reconnected"),
                        (true, _) => None,
                        (false, Some(false)) => Some("publish_failed"),
                        (false, None) if now_on != published_on => Some("reconnected"),
                        (false, None) => Some("publish_slow"),
                        (false, Some(true)) => Some("not_started"),
                    };
                    started_on = now_on;
                    if let Some(why) = why {
                        let reason = if copies == 0 { why } else { "resend" };
                        self.send_direct(job, headers, payload, why, reason).await;
                        copies += 1;
                    }
                }
            }
        }
    }

    /// Publishes `job` on its kind's subject and waits for the reply payload until its deadline.
    async fn request(&self, job: &Job) -> Result<bytes::Bytes, BusError> {
        use async_nats::connection::State;
        if self.client.connection_state() != State::Connected {
            return Err(BusError::Unavailable("NATS is not connected".into()));
        }
        let payload = bytes::Bytes::from(serde_json::to_vec(job).map_err(|e| BusError::Unavailable(e.to_string()))?);
        let (tx, rx) = oneshot::channel();
        let (started_tx, started_rx) = tokio::sync::watch::channel(false);
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(job.job_id, Waiter { reply: tx, started: started_tx });
        }
        let _guard = PendingGuard { bus: self, job_id: job.job_id };
        // Users wait for interactive jobs: those may also go the direct path, and ask the worker
        // that starts them to say so. Background work waits for the stream.
        let hedge = job.priority == common::priority::Priority::Interactive;
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(common::subjects::REPLY_HEADER, format!("{}.{}", self.inbox, job.job_id).as_str());
        if let Some(id) = &job.request_id {
            headers.insert(request_id::NATS_HEADER, id.as_str());
        }
        if hedge {
            headers.insert(common::subjects::WANT_STARTED_HEADER, "1");
        }
        let publish = async_nats::jetstream::message::PublishMessage::build()
            .payload(payload.clone())
            .headers(headers.clone())
            .message_id(job.job_id.to_string());
        let subject = self.names.jobs_subject(job.work.kind()).to_owned();
        let wait = jobs_wait(job);
        let waited = tokio::time::timeout(wait, async {
            let ack = self.js.send_publish(subject, publish).await.map_err(|e| BusError::Unavailable(e.to_string()))?;
            if hedge {
                return self.hedged(job, &headers, &payload, ack, rx, started_rx).await;
            }
            ack.await.map_err(|e| BusError::Unavailable(e.to_string()))?;
            rx.await.map_err(|_| BusError::Unavailable("reply channel closed".into()))
        })
        .await;
        match waited {
            Err(_) => Err(BusError::Timeout(wait.as_secs_f64())),
            Ok(result) => result,
        }
    }
}

impl JobBus for NatsBus {
    fn ask(&self, job: Job, _parsed: Option<DomainName>) -> BoxFuture<'_, Result<JobAnswer, BusError>> {
        Box::pin(async move {
            let raw = self.request(&job).await?;
            let reply: JobReply =
                serde_json::from_slice(&raw).map_err(|e| BusError::Unavailable(format!("unparsable reply: {e}")))?;
            answer_of(reply.outcome)
        })
    }

    fn readiness(&self) -> Result<(), String> {
        match self.client.connection_state() {
            async_nats::connection::State::Connected => Ok(()),
            _ => Err("Job bus (NATS) unavailable.".to_owned()),
        }
    }

    fn probes_in_process(&self) -> bool {
        false
    }
}
