//! The job bus: how the front hands a lookup to a worker and waits for the answer.
//!
//! Every kind of lookup ([`LookupKind`]: `check`, `whois`, `dns`) has its own queue and its own
//! workers, so a slow WHOIS registry never starves availability checks. Standalone mode uses
//! [`InProcessBus`]: one bounded channel per kind consumed by that kind's worker tasks. The fleet
//! implements the same [`JobBus`] over NATS JetStream request-reply, one subject per kind. The
//! front answers check cache hits itself, without a round trip to a worker.
//!
//! A panic inside a job ([`workers::job_panic`]) is answered like a registry that gave no
//! definitive answer (an `unknown` verdict, a failed lookup: 502, not charged); the worker task
//! lives on. Each in-process worker task is counted while it lives, so readiness fails when a
//! kind has none left.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::domain::DomainName;
use common::lookup::{DnsAnswer, DnsType, LookupKind, LookupOutcome, WhoisAnswer};
use common::verdict::Verdict;
use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};
use workers::engine::registration::RegistrationError;
use workers::job_panic;
use workers::lookup::Lookups;
use workers::lookup::dns::DnsLookupError;

/// Why no verdict came back.
#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    /// No reply before the deadline.
    #[error("no verdict within {0:.1} s")]
    Timeout(f64),
    /// The queue is full (back-pressure) or the workers are gone.
    #[error("job queue unavailable: {0}")]
    Unavailable(String),
    /// The engine refused the job (unsupported TLD).
    #[error(transparent)]
    Engine(#[from] workers::engine::EngineError),
    /// A remote worker refused the job (unsupported TLD, unparsable domain).
    #[error("{0}")]
    Rejected(String),
    /// No upstream gave a definitive answer (WHOIS/DNS lookups): 502, not charged.
    #[error("{0}")]
    NoAnswer(String),
}

/// Hands lookup jobs to workers, one queue per [`LookupKind`].
pub trait JobBus: Send + Sync + 'static {
    /// Asks a worker for a fresh verdict on `domain`, waiting at most `deadline`.
    fn check(&self, domain: DomainName, deadline: Duration) -> BoxFuture<'_, Result<Verdict, DispatchError>>;

    /// Asks a worker for the registration record of `domain` (`/v1/whois`).
    fn whois(&self, domain: DomainName, deadline: Duration) -> BoxFuture<'_, Result<WhoisAnswer, DispatchError>>;

    /// Asks a worker for the `types` records of `name` (`/v1/dns`).
    fn dns(
        &self,
        name: String,
        types: Vec<DnsType>,
        deadline: Duration,
    ) -> BoxFuture<'_, Result<DnsAnswer, DispatchError>>;

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

    /// Whether the workers' probes run in this process, so its engine sees every upstream
    /// exchange (the in-process bus); false for the fleet's bus, whose workers probe elsewhere.
    fn probes_in_process(&self) -> bool {
        true
    }
}

/// One in-process job of any kind, with its reply slot.
enum Job {
    Check { domain: DomainName, reply: oneshot::Sender<Result<Verdict, DispatchError>> },
    Whois { domain: DomainName, reply: oneshot::Sender<Result<WhoisAnswer, DispatchError>> },
    Dns { name: String, types: Vec<DnsType>, reply: oneshot::Sender<Result<DnsAnswer, DispatchError>> },
}

impl Job {
    fn abandoned(&self) -> bool {
        match self {
            Job::Check { reply, .. } => reply.is_closed(),
            Job::Whois { reply, .. } => reply.is_closed(),
            Job::Dns { reply, .. } => reply.is_closed(),
        }
    }

    /// Runs the job and replies. A panic in its work is contained ([`job_panic::contain`]) and
    /// answered: `unknown` for a check, no answer for a lookup.
    async fn run(self, lookups: &Lookups) {
        match self {
            Job::Check { domain, reply } => {
                let work = lookups.engine().check_uncached(&domain);
                let result = match job_panic::contain(LookupKind::Check, domain.as_str(), work).await {
                    Ok(checked) => checked.map(|r| r.verdict).map_err(DispatchError::from),
                    Err(panicked) => Ok(panicked.verdict(&domain)),
                };
                let _ = reply.send(result);
            }
            Job::Whois { domain, reply } => {
                let result = match job_panic::contain(LookupKind::Whois, domain.as_str(), lookups.whois(&domain)).await
                {
                    Ok(found) => found.map_err(|e| match e {
                        RegistrationError::Engine(e) => DispatchError::Engine(e),
                        RegistrationError::NoAnswer(why) => DispatchError::NoAnswer(why),
                    }),
                    Err(panicked) => Err(DispatchError::NoAnswer(panicked.to_string())),
                };
                let _ = reply.send(result);
            }
            Job::Dns { name, types, reply } => {
                let result = match job_panic::contain(LookupKind::Dns, &name, lookups.dns(&name, &types)).await {
                    Ok(found) => found.map_err(|e| match e {
                        DnsLookupError::NoAnswer(why) => DispatchError::NoAnswer(why),
                        other => DispatchError::Rejected(other.to_string()),
                    }),
                    Err(panicked) => Err(DispatchError::NoAnswer(panicked.to_string())),
                };
                let _ = reply.send(result);
            }
        }
    }
}

/// The in-process bus of standalone mode: per kind, a bounded queue and its own worker tasks.
#[derive(Debug, Clone)]
pub struct InProcessBus {
    queues: std::collections::BTreeMap<LookupKind, mpsc::Sender<Job>>,
    /// Worker tasks alive, per kind (readiness).
    live: std::collections::BTreeMap<LookupKind, Arc<AtomicUsize>>,
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
    /// Starts, for each `(kind, workers)`, that many worker tasks over `lookups`, each kind with a
    /// queue of `queue` jobs. A kind not listed has no queue (its requests get 502 at once).
    pub fn start(lookups: Lookups, kinds: &[(LookupKind, usize)], queue: usize) -> Self {
        let mut queues = std::collections::BTreeMap::new();
        let mut live = std::collections::BTreeMap::new();
        let mut tasks = Vec::new();
        for &(kind, workers) in kinds {
            let (tx, rx) = mpsc::channel::<Job>(queue.max(1));
            let rx = Arc::new(tokio::sync::Mutex::new(rx));
            let alive = Arc::new(AtomicUsize::new(0));
            for _ in 0..workers.max(1) {
                let rx = rx.clone();
                let lookups = lookups.clone();
                let worker = LiveWorker::new(alive.clone());
                let task = tokio::spawn(async move {
                    let _alive = worker;
                    loop {
                        let job = { rx.lock().await.recv().await };
                        let Some(job) = job else { return };
                        if job.abandoned() {
                            continue; // the requester gave up: drop stale work
                        }
                        job.run(&lookups).await;
                    }
                });
                tasks.push(task.abort_handle());
            }
            queues.insert(kind, tx);
            live.insert(kind, alive);
        }
        Self { queues, live, tasks: Arc::new(tasks) }
    }

    async fn ask<T>(
        &self,
        kind: LookupKind,
        job: Job,
        answer: oneshot::Receiver<Result<T, DispatchError>>,
        deadline: Duration,
    ) -> Result<T, DispatchError> {
        let queue = self.queues.get(&kind).ok_or_else(|| DispatchError::Unavailable(format!("no {kind} workers")))?;
        queue.try_send(job).map_err(|e| DispatchError::Unavailable(format!("{kind} queue: {e}")))?;
        match tokio::time::timeout(deadline, answer).await {
            Err(_) => Err(DispatchError::Timeout(deadline.as_secs_f64())),
            Ok(Err(_)) => Err(DispatchError::Unavailable("worker dropped the job".into())),
            Ok(Ok(result)) => result,
        }
    }
}

impl JobBus for InProcessBus {
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

    fn check(&self, domain: DomainName, deadline: Duration) -> BoxFuture<'_, Result<Verdict, DispatchError>> {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            self.ask(LookupKind::Check, Job::Check { domain, reply }, answer, deadline).await
        })
    }

    fn whois(&self, domain: DomainName, deadline: Duration) -> BoxFuture<'_, Result<WhoisAnswer, DispatchError>> {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            self.ask(LookupKind::Whois, Job::Whois { domain, reply }, answer, deadline).await
        })
    }

    fn dns(
        &self,
        name: String,
        types: Vec<DnsType>,
        deadline: Duration,
    ) -> BoxFuture<'_, Result<DnsAnswer, DispatchError>> {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            self.ask(LookupKind::Dns, Job::Dns { name, types, reply }, answer, deadline).await
        })
    }
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
    pending: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<uuid::Uuid, oneshot::Sender<bytes::Bytes>>>>,
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
                let waiter = pending.lock().ok().and_then(|mut p| p.remove(&id.job_id));
                if let Some(waiter) = waiter {
                    let _ = waiter.send(message.payload);
                }
                // No waiter: the front gave up (or a redelivered job answered twice); drop it.
            }
        });
        Ok(bus)
    }
}

impl NatsBus {
    /// Publishes `job` (serialised) on `kind`'s subject and waits for the reply payload.
    async fn request(
        &self,
        kind: LookupKind,
        job_id: uuid::Uuid,
        payload: Vec<u8>,
        deadline: Duration,
    ) -> Result<bytes::Bytes, DispatchError> {
        use async_nats::connection::State;
        if self.client.connection_state() != State::Connected {
            return Err(DispatchError::Unavailable("NATS is not connected".into()));
        }
        let (tx, rx) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(job_id, tx);
        }
        let _guard = PendingGuard { bus: self, job_id };
        let publish = async_nats::jetstream::message::PublishMessage::build()
            .payload(payload.into())
            .message_id(job_id.to_string())
            .header(common::subjects::REPLY_HEADER, format!("{}.{job_id}", self.inbox).as_str());
        let subject = self.names.jobs_subject(kind).to_owned();
        let waited = tokio::time::timeout(deadline, async {
            let ack =
                self.js.send_publish(subject, publish).await.map_err(|e| DispatchError::Unavailable(e.to_string()))?;
            ack.await.map_err(|e| DispatchError::Unavailable(e.to_string()))?;
            rx.await.map_err(|_| DispatchError::Unavailable("reply channel closed".into()))
        })
        .await;
        match waited {
            Err(_) => Err(DispatchError::Timeout(deadline.as_secs_f64())),
            Ok(result) => result,
        }
    }
}

fn deadline_at(deadline: Duration) -> time::OffsetDateTime {
    time::OffsetDateTime::now_utc() + deadline
}

fn unparsable(e: serde_json::Error) -> DispatchError {
    DispatchError::Unavailable(format!("unparsable reply: {e}"))
}

fn lookup_result<T>(outcome: LookupOutcome<T>) -> Result<T, DispatchError> {
    match outcome {
        LookupOutcome::Answer { answer } => Ok(answer),
        LookupOutcome::Rejected { reason } => Err(DispatchError::Rejected(reason)),
        LookupOutcome::Failed { reason } => Err(DispatchError::NoAnswer(reason)),
    }
}

impl JobBus for NatsBus {
    fn readiness(&self) -> Result<(), String> {
        match self.client.connection_state() {
            async_nats::connection::State::Connected => Ok(()),
            _ => Err("Job bus (NATS) unavailable.".to_owned()),
        }
    }

    fn probes_in_process(&self) -> bool {
        false
    }

    fn check(&self, domain: DomainName, deadline: Duration) -> BoxFuture<'_, Result<Verdict, DispatchError>> {
        Box::pin(async move {
            let job_id = uuid::Uuid::now_v7();
            let job = common::messages::CheckJob {
                job_id,
                domain: domain.as_str().to_owned(),
                deadline: deadline_at(deadline),
            };
            let payload = serde_json::to_vec(&job).map_err(|e| DispatchError::Unavailable(e.to_string()))?;
            let raw = self.request(LookupKind::Check, job_id, payload, deadline).await?;
            let reply: common::messages::CheckReply = serde_json::from_slice(&raw).map_err(unparsable)?;
            match reply.outcome {
                common::messages::CheckOutcome::Verdict { verdict } => Ok(verdict),
                common::messages::CheckOutcome::Rejected { reason } => Err(DispatchError::Rejected(reason)),
            }
        })
    }

    fn whois(&self, domain: DomainName, deadline: Duration) -> BoxFuture<'_, Result<WhoisAnswer, DispatchError>> {
        Box::pin(async move {
            let job_id = uuid::Uuid::now_v7();
            let job = common::messages::WhoisJob {
                job_id,
                domain: domain.as_str().to_owned(),
                deadline: deadline_at(deadline),
            };
            let payload = serde_json::to_vec(&job).map_err(|e| DispatchError::Unavailable(e.to_string()))?;
            let raw = self.request(LookupKind::Whois, job_id, payload, deadline).await?;
            let reply: common::messages::WhoisReply = serde_json::from_slice(&raw).map_err(unparsable)?;
            lookup_result(reply.outcome)
        })
    }

    fn dns(
        &self,
        name: String,
        types: Vec<DnsType>,
        deadline: Duration,
    ) -> BoxFuture<'_, Result<DnsAnswer, DispatchError>> {
        Box::pin(async move {
            let job_id = uuid::Uuid::now_v7();
            let job = common::messages::DnsJob { job_id, name, types, deadline: deadline_at(deadline) };
            let payload = serde_json::to_vec(&job).map_err(|e| DispatchError::Unavailable(e.to_string()))?;
            let raw = self.request(LookupKind::Dns, job_id, payload, deadline).await?;
            let reply: common::messages::DnsReply = serde_json::from_slice(&raw).map_err(unparsable)?;
            lookup_result(reply.outcome)
        })
    }
}
