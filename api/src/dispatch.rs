//! The job bus: how the front hands a lookup to a worker and waits for the verdict.
//!
//! Standalone mode uses [`InProcessBus`]: a bounded channel consumed by worker tasks that run the
//! engine. The fleet implements the same [`JobBus`] over NATS JetStream request-reply. The front
//! answers cache hits itself, without a round trip to a worker.

use std::time::Duration;

use common::domain::DomainName;
use common::verdict::Verdict;
use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};
use workers::engine::Engine;

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
}

/// Hands availability jobs to workers.
pub trait JobBus: Send + Sync + 'static {
    /// Asks a worker for a fresh verdict on `domain`, waiting at most `deadline`.
    fn check(&self, domain: DomainName, deadline: Duration) -> BoxFuture<'_, Result<Verdict, DispatchError>>;

    /// Whether jobs can be handed over right now (readiness): the fleet's bus is connected to
    /// NATS; the in-process bus always can.
    fn ready(&self) -> bool {
        true
    }
}

struct Job {
    domain: DomainName,
    reply: oneshot::Sender<Result<Verdict, workers::engine::EngineError>>,
}

/// The in-process bus of standalone mode.
#[derive(Debug, Clone)]
pub struct InProcessBus {
    jobs: mpsc::Sender<Job>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job").field("domain", &self.domain.as_str()).finish()
    }
}

impl InProcessBus {
    /// Starts `workers` worker tasks over `engine` with a queue of `queue` jobs.
    pub fn start(engine: Engine, workers: usize, queue: usize) -> Self {
        let (tx, rx) = mpsc::channel::<Job>(queue.max(1));
        let rx = std::sync::Arc::new(tokio::sync::Mutex::new(rx));
        for _ in 0..workers.max(1) {
            let rx = rx.clone();
            let engine = engine.clone();
            tokio::spawn(async move {
                loop {
                    let job = { rx.lock().await.recv().await };
                    let Some(job) = job else { return };
                    if job.reply.is_closed() {
                        continue; // the requester gave up: drop stale work
                    }
                    let result = engine.check_uncached(&job.domain).await.map(|r| r.verdict);
                    let _ = job.reply.send(result);
                }
            });
        }
        Self { jobs: tx }
    }
}

impl JobBus for InProcessBus {
    fn check(&self, domain: DomainName, deadline: Duration) -> BoxFuture<'_, Result<Verdict, DispatchError>> {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            self.jobs.try_send(Job { domain, reply }).map_err(|e| DispatchError::Unavailable(e.to_string()))?;
            match tokio::time::timeout(deadline, answer).await {
                Err(_) => Err(DispatchError::Timeout(deadline.as_secs_f64())),
                Ok(Err(_)) => Err(DispatchError::Unavailable("worker dropped the job".into())),
                Ok(Ok(result)) => Ok(result?),
            }
        })
    }
}

/// The fleet's bus: jobs go to the JetStream jobs stream, replies come back on this front's own
/// inbox subject (`<inbox>.<job id>`), one subscription for all requests.
#[derive(Clone)]
pub struct NatsBus {
    client: async_nats::Client,
    js: async_nats::jetstream::Context,
    subject: String,
    inbox: String,
    pending: std::sync::Arc<
        std::sync::Mutex<std::collections::HashMap<uuid::Uuid, oneshot::Sender<common::messages::CheckReply>>>,
    >,
}

impl std::fmt::Debug for NatsBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsBus").field("subject", &self.subject).field("inbox", &self.inbox).finish_non_exhaustive()
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
        let inbox = client.new_inbox();
        let mut replies = client.subscribe(format!("{inbox}.*")).await?;
        let bus = Self {
            js: async_nats::jetstream::new(client.clone()),
            client,
            subject: names.jobs_check.clone(),
            inbox,
            pending: Default::default(),
        };
        let pending = bus.pending.clone();
        tokio::spawn(async move {
            while let Some(message) = replies.next().await {
                let Ok(reply) = serde_json::from_slice::<common::messages::CheckReply>(&message.payload) else {
                    tracing::warn!(subject = %message.subject, "unparsable reply dropped");
                    continue;
                };
                let waiter = pending.lock().ok().and_then(|mut p| p.remove(&reply.job_id));
                if let Some(waiter) = waiter {
                    let _ = waiter.send(reply);
                }
                // No waiter: the front gave up (or a redelivered job answered twice); drop it.
            }
        });
        Ok(bus)
    }
}

impl JobBus for NatsBus {
    fn ready(&self) -> bool {
        self.client.connection_state() == async_nats::connection::State::Connected
    }

    fn check(&self, domain: DomainName, deadline: Duration) -> BoxFuture<'_, Result<Verdict, DispatchError>> {
        Box::pin(async move {
            use async_nats::connection::State;
            if self.client.connection_state() != State::Connected {
                return Err(DispatchError::Unavailable("NATS is not connected".into()));
            }
            let job_id = uuid::Uuid::now_v7();
            let deadline_at = time::OffsetDateTime::now_utc() + deadline;
            let job = common::messages::CheckJob { job_id, domain: domain.as_str().to_owned(), deadline: deadline_at };
            let payload = serde_json::to_vec(&job).map_err(|e| DispatchError::Unavailable(e.to_string()))?;
            let (tx, rx) = oneshot::channel();
            if let Ok(mut pending) = self.pending.lock() {
                pending.insert(job_id, tx);
            }
            let _guard = PendingGuard { bus: self, job_id };
            let publish = async_nats::jetstream::message::PublishMessage::build()
                .payload(payload.into())
                .message_id(job_id.to_string())
                .header(common::subjects::REPLY_HEADER, format!("{}.{job_id}", self.inbox).as_str());
            let waited = tokio::time::timeout(deadline, async {
                let ack = self
                    .js
                    .send_publish(self.subject.clone(), publish)
                    .await
                    .map_err(|e| DispatchError::Unavailable(e.to_string()))?;
                ack.await.map_err(|e| DispatchError::Unavailable(e.to_string()))?;
                rx.await.map_err(|_| DispatchError::Unavailable("reply channel closed".into()))
            })
            .await;
            let reply = match waited {
                Err(_) => return Err(DispatchError::Timeout(deadline.as_secs_f64())),
                Ok(result) => result?,
            };
            match reply.outcome {
                common::messages::CheckOutcome::Verdict { verdict } => Ok(verdict),
                common::messages::CheckOutcome::Rejected { reason } => Err(DispatchError::Rejected(reason)),
            }
        })
    }
}
