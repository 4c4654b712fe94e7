//! The one JetStream pull loop of dsa's roles: fetch a bounded batch, hold at most `slots`
//! messages at once, hand them to a handler (one by one, or in chunks for a handler that settles
//! a batch in one transaction), settle each the way the handler says (ack, `Nak` with a delay,
//! `Term`), keep liveness counters for readiness, and drain on shutdown.
//!
//! ```text
//! consumer ──fetch ≤ min(batch, free slots)──► chunks of ≤ chunk ──► handler(Vec<Message>)
//!    ▲                                                                  │ Vec<Settle>
//!    └───────────── ack / nak(delay) / term / leave ◄───────────────────┘
//! ```
//!
//! The handler decides what a message deserves; the loop does the JetStream side only. While a
//! chunk is being handled the loop tells JetStream every `progress_every` that it is still being
//! worked on, so a short ack wait redelivers quickly after a crash without redelivering slow but
//! live work. A panic in a handler ends that chunk only: it is logged, its messages are left
//! unsettled (redelivered after their ack wait) and its slots come back.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_nats::jetstream::{self, AckKind, consumer};
use futures::StreamExt;
use tokio::sync::Semaphore;

use crate::job_panic;

/// How long past a fetch's expiry the loop waits for the server's next word on it (a message, or
/// the status that ends the fetch) before taking the pull request as lost and fetching again.
pub const LOST_FETCH_AFTER: Duration = Duration::from_secs(1);

/// What to do with one message once its handler is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// Done: acknowledge (a work queue deletes it).
    Ack,
    /// Not done, may succeed later: hand it back for redelivery after this delay.
    Nak(Duration),
    /// Never workable (poison payload, expired): terminate it, no redelivery (the reason is for
    /// the handler's own metrics and the log).
    Term(&'static str),
    /// Leave it unsettled (a message that is not ours to ack, or one to redeliver after its ack
    /// wait).
    Leave,
}

/// Liveness counters of a role's pull loops (its `/readyz`).
pub trait Liveness: Send + Sync + 'static {
    /// Pull loops running.
    fn live_loops(&self) -> &AtomicUsize;
    /// Pull loops fetching right now: their consumer answered and NATS is connected.
    fn fetching_loops(&self) -> &AtomicUsize;
}

/// Where and how much to pull.
#[derive(Debug, Clone)]
pub struct Pull {
    /// The stream.
    pub stream: String,
    /// Its durable pull consumer.
    pub consumer: String,
    /// Most messages fetched at once.
    pub batch: usize,
    /// Messages handed to the handler together: 1 runs one task per message; more lets a
    /// handler settle a batch at once (the ledger's one transaction). Each chunk holds this many
    /// slots, however few messages it has.
    pub chunk: usize,
    /// Slots: messages held at once, fetched and not yet settled (the concurrency); `slots ==
    /// chunk` handles one chunk at a time.
    pub slots: usize,
    /// How long one fetch waits for messages.
    pub expires: Duration,
    /// How often held messages are reported in progress (`None`: never).
    pub progress_every: Option<Duration>,
}

/// Counts a running pull loop in [`Liveness::live_loops`] (and, while it fetches, in
/// [`Liveness::fetching_loops`]) for as long as it lives, however it ends (return, panic, abort).
pub struct LiveLoop {
    counters: Arc<dyn Liveness>,
    fetching: bool,
}

impl LiveLoop {
    /// Counts one more live loop in `counters` (before the loop's task starts, so readiness
    /// never reports a pool whose loops have not started yet as fine).
    pub fn new(counters: Arc<dyn Liveness>) -> Self {
        counters.live_loops().fetch_add(1, Ordering::SeqCst);
        Self { counters, fetching: false }
    }

    fn fetching(&mut self, now: bool) {
        if now != self.fetching {
            self.fetching = now;
            if now {
                self.counters.fetching_loops().fetch_add(1, Ordering::SeqCst);
            } else {
                self.counters.fetching_loops().fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}

impl Drop for LiveLoop {
    fn drop(&mut self) {
        self.fetching(false);
        self.counters.live_loops().fetch_sub(1, Ordering::SeqCst);
    }
}

/// Pulls from `pull.consumer` until `shutdown` resolves, then drains: stops fetching and waits
/// until every message held is settled. `handler` gets up to `pull.chunk` messages and returns
/// one [`Settle`] per message, in order (a missing one is [`Settle::Leave`]).
///
/// While NATS or the consumer cannot be reached (a restart) the loop keeps trying, not fetching
/// (`live` says so), until it can or is told to stop.
pub async fn pull<H, Fut>(
    client: async_nats::Client,
    pull: Pull,
    live: LiveLoop,
    shutdown: impl Future<Output = ()> + Send,
    handler: H,
) where
    H: Fn(Vec<jetstream::Message>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Vec<Settle>> + Send + 'static,
{
    let slots = Arc::new(Semaphore::new(pull.slots.max(1)));
    pull_with_slots(client, pull, slots, live, shutdown, handler).await;
}

/// As [`pull`], holding its messages in `slots` (a semaphore of `pull.slots` permits) shared with
/// other work of the same budget: the worker pool's direct path (`super::direct`) takes a free
/// slot from it for each job it runs, so the pool's concurrency holds whichever way a job came.
/// The loop fetches only as many messages as there are free slots, and the drain waits for every
/// permit, the other work's included.
pub async fn pull_with_slots<H, Fut>(
    client: async_nats::Client,
    pull: Pull,
    slots: Arc<Semaphore>,
    mut live: LiveLoop,
    shutdown: impl Future<Output = ()> + Send,
    handler: H,
) where
    H: Fn(Vec<jetstream::Message>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Vec<Settle>> + Send + 'static,
{
    let js = jetstream::new(client.clone());
    tokio::pin!(shutdown);
    let consumer: consumer::PullConsumer = loop {
        let found = async { js.get_stream(&pull.stream).await.ok()?.get_consumer(&pull.consumer).await.ok() };
        tokio::select! {
            _ = &mut shutdown => return,
            c = found => match c {
                Some(c) => break c,
                None => tokio::time::sleep(Duration::from_millis(500)).await,
            },
        }
    };
    let slots_total = pull.slots.max(1);
    let chunk_size = pull.chunk.clamp(1, slots_total);
    let consumer_name: Arc<str> = pull.consumer.as_str().into();
    tracing::info!(consumer = %consumer_name, slots = slots_total, "pulling");
    loop {
        live.fetching(client.connection_state() == async_nats::connection::State::Connected);
        let available = slots.available_permits();
        if available == 0 {
            tokio::select! {
                _ = &mut shutdown => break,
                permit = slots.clone().acquire_owned() => { drop(permit); continue; }
            }
        }
        let max = available.min(pull.batch.max(1));
        let batch = tokio::select! {
            _ = &mut shutdown => break,
            batch = consumer.fetch().max_messages(max).expires(pull.expires).messages() => batch,
        };
        let mut batch = match batch {
            Ok(b) => b,
            Err(e) => {
                live.fetching(false);
                tracing::warn!(error = %e, consumer = %consumer_name, "fetching failed; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        let mut chunk = Vec::with_capacity(chunk_size);
        let connected_as = connects(&client);
        loop {
            // The server ends a fetch at its expiry (a timeout status); nothing at all for longer
            // means the pull request was lost with its server (a NATS server killed, a consumer
            // leader gone), and so it is when the client had to connect again meanwhile: fetch
            // again rather than wait for the client's own timer (expiry + 5 s).
            let next = tokio::select! {
                next = tokio::time::timeout(pull.expires + LOST_FETCH_AFTER, batch.next()) => next.ok(),
                () = reconnected(&client, connected_as) => None,
            };
            let next = match next {
                Some(next) => next,
                None => {
                    // Each metric named by a literal, so the operator files' checker sees it.
                    metrics::counter!("dsa_pull_fetches_lost_total", "consumer" => consumer_name.to_string())
                        .increment(1);
                    None
                }
            };
            let ended = next.is_none();
            if let Some(Ok(message)) = next {
                chunk.push(message);
            }
            if chunk.len() == chunk_size || (ended && !chunk.is_empty()) {
                let held = std::mem::replace(&mut chunk, Vec::with_capacity(chunk_size));
                // A chunk holds `chunk` slots however few messages it has: with `slots == chunk`
                // (the ledger) one chunk is handled at a time.
                let n = u32::try_from(chunk_size).unwrap_or(u32::MAX);
                let Ok(permit) = slots.clone().acquire_many_owned(n).await else { return };
                let (handler, consumer_name, every) = (handler.clone(), consumer_name.clone(), pull.progress_every);
                tokio::spawn(async move {
                    let work = with_progress(&held, every, handler(held.clone()));
                    match job_panic::catch(work).await {
                        Ok(settles) => {
                            for (i, message) in held.iter().enumerate() {
                                settle(message, settles.get(i).copied().unwrap_or(Settle::Leave), &consumer_name).await;
                            }
                        }
                        Err(panicked) => {
                            tracing::error!(consumer = %consumer_name, panic = %panicked.message(), "a pull handler panicked; its messages are redelivered after their ack wait");
                            metrics::counter!("dsa_pull_panics_total", "consumer" => consumer_name.to_string())
                                .increment(1);
                        }
                    }
                    drop(permit);
                });
            }
            if ended {
                break;
            }
        }
    }
    // Drain: wait until every message held is settled.
    let _all = slots.acquire_many(u32::try_from(slots_total).unwrap_or(u32::MAX)).await;
}

/// Works on one message outside the loop's slots: runs `work` (telling JetStream every `every`
/// that the message is still being worked on, so it is not redelivered meanwhile), then settles
/// the message as `work` says. A panic in `work` leaves it unsettled (redelivered after its ack
/// wait). The caller bounds how many such messages it holds (JetStream's `max_ack_pending` bounds
/// them per consumer in any case).
pub async fn detached(
    message: jetstream::Message,
    every: Option<Duration>,
    consumer: &str,
    work: impl Future<Output = Settle>,
) {
    let held = std::slice::from_ref(&message);
    match job_panic::catch(with_progress(held, every, work)).await {
        Ok(how) => settle(&message, how, consumer).await,
        Err(panicked) => {
            tracing::error!(consumer, panic = %panicked.message(), "a detached handler panicked; its message is redelivered after its ack wait");
            metrics::counter!("dsa_pull_panics_total", "consumer" => consumer.to_owned()).increment(1);
        }
    }
}

/// Connections the client has made so far (one more after each reconnect).
fn connects(client: &async_nats::Client) -> u64 {
    client.statistics().connects.load(Ordering::Relaxed)
}

/// Resolves once the client has connected again since it had made `connected_as` connections.
async fn reconnected(client: &async_nats::Client, connected_as: u64) {
    while connects(client) == connected_as {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn settle(message: &jetstream::Message, how: Settle, consumer: &str) {
    let settled = match how {
        Settle::Ack => message.ack().await,
        Settle::Nak(delay) => message.ack_with(AckKind::Nak(Some(delay))).await,
        Settle::Term(_) => message.ack_with(AckKind::Term).await,
        Settle::Leave => Ok(()),
    };
    if let Err(e) = settled {
        tracing::warn!(error = %e, consumer, ?how, "settling failed; the message may be delivered again");
    }
}

/// Runs `work`, telling JetStream every `every` that `held` are still being worked on.
async fn with_progress<T>(held: &[jetstream::Message], every: Option<Duration>, work: impl Future<Output = T>) -> T {
    let Some(every) = every else { return work.await };
    tokio::pin!(work);
    let mut ticker = tokio::time::interval(every);
    ticker.tick().await;
    loop {
        tokio::select! {
            out = &mut work => return out,
            _ = ticker.tick() => {
                for message in held {
                    let _ = message.ack_with(AckKind::Progress).await;
                }
            }
        }
    }
}
