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
}

/// Hands availability jobs to workers.
pub trait JobBus: Send + Sync + 'static {
    /// Asks a worker for a fresh verdict on `domain`, waiting at most `deadline`.
    fn check(&self, domain: DomainName, deadline: Duration) -> BoxFuture<'_, Result<Verdict, DispatchError>>;
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
            self.jobs
                .try_send(Job { domain, reply })
                .map_err(|e| DispatchError::Unavailable(e.to_string()))?;
            match tokio::time::timeout(deadline, answer).await {
                Err(_) => Err(DispatchError::Timeout(deadline.as_secs_f64())),
                Ok(Err(_)) => Err(DispatchError::Unavailable("worker dropped the job".into())),
                Ok(Ok(result)) => Ok(result?),
            }
        })
    }
}
