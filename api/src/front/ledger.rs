//! The ledger: every charge made durable before its response is sent, then settled in the store.
//!
//! A handler that keeps credits calls [`LedgerSink::record`] (through
//! [`crate::front::credits::Reservation::commit`]) and answers 200 only once the charge is durable:
//!
//! * **standalone** ([`run`]): the charge is in SQLite. Charges queue on a bounded channel; the
//!   writer applies whatever has queued since its last transaction in one transaction
//!   (`ON CONFLICT DO NOTHING` on the event id, plus the per-key monthly usage) and wakes every
//!   handler of the batch once a disk sync begun after the commit has finished (a group commit;
//!   the sync runs beside the next transaction). A failed transaction is retried with back-off
//!   and never dropped. A failed *sync* stops the ledger for good ([`LedgerSink::disk_fault`]):
//!   after a failed `fdatasync` the kernel may have dropped the unwritten pages and a later sync
//!   can succeed without them, so no later sync proves anything; charges are refused (503,
//!   nothing kept) and `/readyz` answers 503 until the process is restarted.
//! * **fleet** ([`forward`]): the charge is stored by JetStream in `DSA_LEDGER` (publish ack).
//!   Charges queue on a bounded channel; the forwarder publishes what queued as one message of
//!   up to [`EVENTS_PER_MESSAGE`] charges (a `Nats-Msg-Id` of its own, so a retried publish is
//!   absorbed by the stream's dedup), keeps a few messages in flight, and wakes a message's
//!   handlers when its ack arrives: a group commit. NATS disconnected → the charges are refused
//!   at once (the handlers answer 503 and keep nothing).
//!
//! Nothing waits in memory once a client has its 200, so a front killed at any moment loses no
//! charge. The reverse can happen: a charge durable just before the front died (or whose ack
//! came after the handler gave up) has a ledger entry though its client saw no 200
//! (`docs/fleet.md`, "Durable charges").
//!
//! Both queues are bounded ([`QUEUE_CAPACITY`]): a full queue is a fast 503, never unbounded
//! memory.
//!
//! The fleet's other half, the ledger consumer settling the stream into Postgres, is a
//! worker-side role: [`workers::ledger`] (re-exported here for the role launcher and the tests).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

// Tokio's clock (the same as std's unless a test pauses it): the durability waits feed the
// front's pressure readings, which tests drive on a paused clock.
use tokio::time::Instant;

use backon::{ExponentialBuilder, Retryable};
use common::messages::LedgerEvent;
use tokio::sync::{mpsc, oneshot};

use crate::store::Store;

use workers::ledger::SETTLE_LAG_ALERT_FRACTION;

pub use workers::ledger::{ConsumerStats, consume};

/// Largest batch the standalone writer applies in one transaction.
pub const MAX_BATCH: usize = 512;

/// Charges that may wait for the ledger writer at once; past it a charge is refused (503).
pub const QUEUE_CAPACITY: usize = 8192;

/// How long a handler waits for its charge to become durable before answering 503 (seconds).
pub const DURABLE_WAIT: Duration = Duration::from_secs(3);

/// How long the fleet forwarder waits for JetStream's ack of a charge before it also writes the
/// charge to Postgres itself ([`forward`]).
pub const STORE_FALLBACK_AFTER: Duration = Duration::from_millis(1000);

/// Why a charge was not confirmed durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The queue to the ledger writer is full: the charge was not taken (nothing recorded).
    #[error("ledger queue full")]
    Full,
    /// The ledger is unreachable (NATS disconnected, writer gone): nothing was recorded.
    #[error("ledger unavailable")]
    Unavailable,
    /// No confirmation in time: the charge may still be recorded (it is never recorded twice).
    #[error("ledger confirmation timed out")]
    Unconfirmed,
}

impl RecordError {
    /// A metric label for the reason (`full`, `unavailable`, `unconfirmed`).
    pub fn label(self) -> &'static str {
        match self {
            RecordError::Full => "full",
            RecordError::Unavailable => "unavailable",
            RecordError::Unconfirmed => "unconfirmed",
        }
    }
}

/// A charge waiting for the ledger writer, with the handler to wake.
#[derive(Debug)]
pub struct Pending {
    event: LedgerEvent,
    done: oneshot::Sender<Result<(), RecordError>>,
}

/// The handlers' end of the ledger: a bounded queue to [`run`] or [`forward`].
#[derive(Debug, Clone)]
pub struct LedgerSink {
    queue: mpsc::Sender<Pending>,
    wait: Arc<RecentWait>,
    /// Set once a disk sync of the standalone ledger failed ([`LedgerSink::disk_fault`]).
    disk_failed: Arc<AtomicBool>,
}

/// How long the last charges took to become durable (queue wait plus write), as a load signal
/// for the front (`policy/pressure.rs`): a reading counts for [`RecentWait::FRESH`] only, so that a
/// front which refuses everything while its backlog drains cannot keep seeing the old wait.
#[derive(Debug)]
struct RecentWait {
    epoch: Instant,
    /// Longest wait noted in the current slot, microseconds.
    wait_us: AtomicU64,
    /// Start of the current slot, microseconds after `epoch`.
    slot_us: AtomicU64,
}

impl RecentWait {
    /// How long a noted wait counts.
    const FRESH: Duration = Duration::from_millis(200);

    fn now_us(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn note(&self, wait: Duration) {
        let now = self.now_us();
        let wait = u64::try_from(wait.as_micros()).unwrap_or(u64::MAX);
        let slot = self.slot_us.load(Ordering::Relaxed);
        if now.saturating_sub(slot) > Self::FRESH.as_micros() as u64 / 2 {
            // A new slot: this wait replaces the old maximum.
            self.slot_us.store(now, Ordering::Relaxed);
            self.wait_us.store(wait, Ordering::Relaxed);
        } else {
            self.wait_us.fetch_max(wait, Ordering::Relaxed);
        }
    }

    fn recent(&self) -> Duration {
        let slot = self.slot_us.load(Ordering::Relaxed);
        if self.now_us().saturating_sub(slot) > Self::FRESH.as_micros() as u64 {
            return Duration::ZERO;
        }
        Duration::from_micros(self.wait_us.load(Ordering::Relaxed))
    }
}

/// The writer's end of a [`LedgerSink`]: give it to [`run`] or [`forward`].
#[derive(Debug)]
pub struct LedgerQueue(mpsc::Receiver<Pending>, Arc<AtomicBool>);

impl LedgerQueue {
    /// The next event without its handler (tests that stand in for the writer); `None` when
    /// nothing is queued. The handler is told its charge is durable.
    pub fn try_take(&mut self) -> Option<LedgerEvent> {
        let pending = self.0.try_recv().ok()?;
        let _ = pending.done.send(Ok(()));
        Some(pending.event)
    }
}

/// A bounded ledger queue of `capacity` charges.
pub fn queue(capacity: usize) -> (LedgerSink, LedgerQueue) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    let wait = Arc::new(RecentWait { epoch: Instant::now(), wait_us: AtomicU64::new(0), slot_us: AtomicU64::new(0) });
    let disk_failed = Arc::new(AtomicBool::new(false));
    (LedgerSink { queue: tx, wait, disk_failed: disk_failed.clone() }, LedgerQueue(rx, disk_failed))
}

impl LedgerSink {
    /// The longest time a charge took to become durable (queue wait and write) among those
    /// confirmed in the last 100–200 ms; zero when none was.
    pub fn recent_wait(&self) -> Duration {
        self.wait.recent()
    }

    /// Why this ledger takes no more charges, for `/readyz`: a disk sync of the standalone ledger
    /// failed (`None`: none did; the fleet's ledger never sets it). Lasts until the process
    /// restarts: after a failed `fdatasync` Linux may drop the pages it could not write and mark
    /// them clean, so a later sync that succeeds does not make the earlier commits durable
    /// (and SQLite's WAL, read back after a crash, stops at the first frame missing from it).
    pub fn disk_fault(&self) -> Option<&'static str> {
        self.disk_failed.load(Ordering::Acquire).then_some(DISK_FAULT)
    }

    /// Hands `event` to the ledger writer and waits until it is durable (in the store, or stored
    /// by JetStream), at most [`DURABLE_WAIT`].
    ///
    /// # Errors
    /// [`RecordError::Full`] at once when the queue is full, [`RecordError::Unavailable`] when
    /// the ledger cannot take it (nothing recorded; every charge once a disk sync failed,
    /// [`LedgerSink::disk_fault`]), [`RecordError::Unconfirmed`] when no
    /// confirmation came in time (it may yet be recorded, once).
    pub async fn record(&self, event: LedgerEvent) -> Result<(), RecordError> {
        if self.disk_failed.load(Ordering::Acquire) {
            return Err(RecordError::Unavailable);
        }
        let (done, confirmed) = oneshot::channel();
        let queued = Instant::now();
        self.queue.try_send(Pending { event, done }).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => RecordError::Full,
            mpsc::error::TrySendError::Closed(_) => RecordError::Unavailable,
        })?;
        metrics::gauge!("dsa_ledger_queue_depth").set((self.queue.max_capacity() - self.queue.capacity()) as f64);
        match tokio::time::timeout(DURABLE_WAIT, confirmed).await {
            Ok(Ok(outcome)) => {
                self.wait.note(queued.elapsed());
                outcome
            }
            // The writer dropped the charge unanswered (its task ended): it may have written it.
            Ok(Err(_)) | Err(_) => Err(RecordError::Unconfirmed),
        }
    }
}

/// Back-off of the retry loops: 50 ms doubling to 5 s, jittered.
fn backoff() -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(50))
        .with_max_delay(Duration::from_secs(5))
        .with_jitter()
}

/// The standalone ledger writer: applies queued charges in batches (group commit) and confirms
/// each batch's charges once its transaction is durable. Runs until every [`LedgerSink`] is
/// dropped and everything queued is applied and confirmed.
///
/// A batch is committed, then made durable beside the next one: the writer hands the committed
/// batch to a syncer task and commits what queued meanwhile while the syncer flushes the disk
/// ([`Store::commit_ledger`], [`crate::store::LedgerSync`]). One sync confirms every batch
/// committed before it began, so the disk's sync time no longer holds the next commit back.
/// A sync that fails answers its batches' handlers [`RecordError::Unconfirmed`] (503; the
/// charges may be in the store: never twice), and so every batch committed before it was known
/// to have failed; from then on the ledger takes no charge ([`LedgerSink::disk_fault`]): what is
/// queued, and every later charge, is answered [`RecordError::Unavailable`] (503, nothing kept).
pub async fn run(store: Arc<dyn Store>, LedgerQueue(mut queue, disk_failed): LedgerQueue) {
    let (to_sync, committed) = mpsc::channel(COMMITS_AWAITING_SYNC);
    let syncer = tokio::spawn(confirm_when_durable(committed, disk_failed.clone()));
    let mut batch = Vec::with_capacity(MAX_BATCH);
    loop {
        // No timed wait to let a batch fill: what queued during the last transaction is the next
        // batch, and so is what the handlers ready to run now add to it.
        if queue.recv_many(&mut batch, MAX_BATCH).await == 0 {
            break;
        }
        fill_from_ready_handlers(&mut queue, &mut batch, MAX_BATCH).await;
        if disk_failed.load(Ordering::Acquire) {
            // Not committed: refused with nothing kept.
            for pending in batch.drain(..) {
                let _ = pending.done.send(Err(RecordError::Unavailable));
            }
            continue;
        }
        let (events, waiting): (Vec<LedgerEvent>, Vec<_>) = batch.drain(..).map(|p: Pending| (p.event, p.done)).unzip();
        // Never dropped: a charge confirmed to nobody yet may have been answered 200 after a
        // timeout, so the batch is retried until the store takes it.
        let (applied, sync) = (|| store.commit_ledger(&events))
            .retry(backoff().without_max_times())
            .notify(
                |e, wait| tracing::error!(error = ?e, events = events.len(), ?wait, "ledger batch failed; retrying"),
            )
            .await
            .unwrap_or((0, None));
        metrics::counter!("dsa_ledger_events_applied_total").increment(applied);
        if to_sync.send(Committed { sync, waiting }).await.is_err() {
            break;
        }
    }
    drop(to_sync);
    let _ = syncer.await;
}

/// Lets every task ready to run on this runtime take its turn once (`yield_now`), then adds what
/// they queued to `batch` (up to `limit` charges), without waiting for more.
///
/// Why: when the front's threads share few cores, the standalone writer's transaction and sync
/// take the core from the handlers, so what queued meanwhile is little, and on one core the
/// batches shrank to a charge or two, each transaction writing the same hot pages (the ledger's
/// last leaf, its index leaves, the usage row) to the WAL again. Handlers ready to run are
/// usually a step from their charge; one turn each lets them add it to this batch (the fleet
/// front's message). With nothing else ready (a lone request) the turn comes back at once.
async fn fill_from_ready_handlers(queue: &mut mpsc::Receiver<Pending>, batch: &mut Vec<Pending>, limit: usize) {
    if batch.len() >= limit {
        return;
    }
    tokio::task::yield_now().await;
    while batch.len() < limit {
        match queue.try_recv() {
            Ok(pending) => batch.push(pending),
            Err(_) => break,
        }
    }
}

/// [`LedgerSink::disk_fault`]'s reason.
pub const DISK_FAULT: &str =
    "The ledger's disk failed to sync a write (fdatasync); charges are refused until dsa is restarted.";

/// Committed batches that may wait for their sync at once; past it the writer waits.
const COMMITS_AWAITING_SYNC: usize = 64;

/// A committed batch: what makes it durable (`None`: it already is) and its handlers.
struct Committed {
    sync: Option<crate::store::LedgerSync>,
    waiting: Vec<oneshot::Sender<Result<(), RecordError>>>,
}

/// The standalone writer's syncer: takes every batch committed so far, runs one sync for them
/// all (the newest batch's: it began after every one of their commits) and wakes their handlers.
/// Once a sync has failed (`disk_failed`, which it sets) no sync is trusted again: every batch
/// still to confirm is answered [`RecordError::Unconfirmed`].
async fn confirm_when_durable(mut committed: mpsc::Receiver<Committed>, disk_failed: Arc<AtomicBool>) {
    let mut ready = Vec::with_capacity(COMMITS_AWAITING_SYNC);
    while committed.recv_many(&mut ready, COMMITS_AWAITING_SYNC).await > 0 {
        let sync = ready.iter_mut().rev().find_map(|c| c.sync.take());
        let outcome = match sync {
            _ if disk_failed.load(Ordering::Acquire) => Err(RecordError::Unconfirmed),
            None => Ok(()),
            Some(sync) => sync.run().await.map_err(|e| {
                disk_failed.store(true, Ordering::Release);
                metrics::counter!("dsa_ledger_sync_failures_total").increment(1);
                tracing::error!(error = %e, "{DISK_FAULT} The charges of this sync are not confirmed (they may be in the ledger).");
                RecordError::Unconfirmed
            }),
        };
        metrics::counter!("dsa_ledger_syncs_total").increment(1);
        for done in ready.drain(..).flat_map(|c| c.waiting) {
            let _ = done.send(outcome);
        }
    }
}

/// The fleet front's ledger forwarder: publishes queued charges to `subject` on the ledger
/// stream, the charges that queued meanwhile as one message
/// ([`common::messages::encode_ledger_message`], up to [`EVENTS_PER_MESSAGE`]), with up to
/// [`MESSAGES_IN_FLIGHT`] messages awaiting their acks (a message slower than [`SLOW_ACK`] stops
/// counting), and confirms a message's charges when JetStream acks it. A message whose publish fails is retried (same `Nats-Msg-Id`, same
/// charges) until [`DURABLE_WAIT`] has passed; with NATS disconnected its charges are refused at
/// once. Returns when every [`LedgerSink`] is dropped and the messages in flight are settled.
///
/// One message for many charges is the fleet's group commit: a stream that syncs every write
/// (`sync_interval: always`, `nats/nats.conf`) syncs once per message, so a lone charge waits for
/// one sync and a busy front's charges share theirs.
///
/// With `store` (the fleet's Postgres), a message not acked within [`STORE_FALLBACK_AFTER`] has
/// its charges applied to the store directly, and confirmed once either has them. On a NATS
/// cluster the ledger stream takes no writes while it elects a new leader (4–9 s after its
/// leader's server is lost, nats-server's Raft timing); the charges are durable in Postgres
/// meanwhile, and when the publish lands too the ledger consumer skips them (an event id is
/// applied once).
pub async fn forward(
    js: async_nats::jetstream::Context,
    subject: String,
    store: Option<Arc<dyn Store>>,
    LedgerQueue(mut queue, _): LedgerQueue,
) {
    let client = js.client();
    let slots = Arc::new(tokio::sync::Semaphore::new(MESSAGES_IN_FLIGHT));
    let mut in_flight = tokio::task::JoinSet::new();
    loop {
        // The slot first: what queues while every slot waits for its ack is the next message.
        let Ok(slot) = slots.clone().acquire_owned().await else { break };
        let mut group = Vec::with_capacity(EVENTS_PER_MESSAGE);
        if queue.recv_many(&mut group, EVENTS_PER_MESSAGE).await == 0 {
            break;
        }
        fill_from_ready_handlers(&mut queue, &mut group, EVENTS_PER_MESSAGE).await;
        if client.connection_state() != async_nats::connection::State::Connected {
            // Not published at all, so definitely not recorded: the handlers answer 503.
            metrics::counter!("dsa_ledger_refused_total").increment(group.len() as u64);
            tracing::warn!(events = group.len(), "NATS disconnected; charges refused");
            for pending in group {
                let _ = pending.done.send(Err(RecordError::Unavailable));
            }
            continue;
        }
        let (js, subject, store) = (js.clone(), subject.clone(), store.clone());
        let message = Grouped::new(group);
        let first = js.send_publish(subject.clone(), message.publish()).await;
        in_flight.spawn(async move {
            let confirming = confirm(&js, &subject, store.as_ref(), message, first);
            tokio::pin!(confirming);
            // A message whose ack is slow (a stream electing its leader, a publish retried, the
            // store fallback) gives its slot up: the charges queued behind it go out meanwhile.
            tokio::select! {
                () = &mut confirming => return,
                () = tokio::time::sleep(SLOW_ACK) => drop(slot),
            }
            confirming.await;
        });
        while in_flight.try_join_next().is_some() {}
    }
    while in_flight.join_next().await.is_some() {}
}

/// Most charges in one ledger stream message ([`common::messages::LEDGER_EVENTS_PER_MESSAGE`]).
pub const EVENTS_PER_MESSAGE: usize = common::messages::LEDGER_EVENTS_PER_MESSAGE;

/// Ledger messages a fleet front keeps awaiting their acks. Few, so that under load each
/// carries many charges (the stream syncs once per message); more than one, so that a message
/// never waits for the one before it to be acked. Two, measured against four (the check bench's
/// fleet, 64 connections, four runs each in one sitting): 6.2 charges per message instead of 4.2,
/// 18% more cached checks a second, the same open-loop p99; one in flight carried 9.6 a message
/// but once let the p99 at 2,000/s reach 46 ms.
pub const MESSAGES_IN_FLIGHT: usize = 2;

/// How long a ledger message holds its in-flight slot at most: past it the message goes on
/// waiting for its ack (or retrying, or falling back to the store) without one, so a stalled
/// stream never holds more than [`MESSAGES_IN_FLIGHT`] groups of charges back for longer.
pub const SLOW_ACK: Duration = Duration::from_millis(100);

/// One ledger stream message: its charges, their handlers, and what is published (again).
struct Grouped {
    pending: Vec<Pending>,
    /// `Nats-Msg-Id`: a retried publish is absorbed by the stream's duplicate window.
    message_id: String,
    payload: bytes::Bytes,
}

impl Grouped {
    fn new(pending: Vec<Pending>) -> Self {
        let events: Vec<LedgerEvent> = pending.iter().map(|p| p.event.clone()).collect();
        let payload = common::messages::encode_ledger_message(&events).into();
        Grouped { pending, message_id: uuid::Uuid::now_v7().to_string(), payload }
    }

    fn publish(&self) -> async_nats::jetstream::message::PublishMessage {
        let message = async_nats::jetstream::message::PublishMessage::build()
            .payload(self.payload.clone())
            .message_id(&self.message_id);
        // A lone charge keeps its request id in a header too, for a reader of the stream.
        match &self.pending[..] {
            [only] => match &only.event.request_id {
                Some(id) => message.header(common::request_id::NATS_HEADER, id.as_str()),
                None => message,
            },
            _ => message,
        }
    }

    fn events(&self) -> Vec<LedgerEvent> {
        self.pending.iter().map(|p| p.event.clone()).collect()
    }
}

/// Waits for one message's ack, republishing it with back-off on failure, and wakes its
/// handlers; with `store`, applies its charges there too when no ack came within
/// [`STORE_FALLBACK_AFTER`].
async fn confirm(
    js: &async_nats::jetstream::Context,
    subject: &str,
    store: Option<&Arc<dyn Store>>,
    message: Grouped,
    first: Result<async_nats::jetstream::context::PublishAckFuture, async_nats::jetstream::context::PublishError>,
) {
    let started = Instant::now();
    let published = async {
        let acked = match first {
            Ok(ack) => ack.await.is_ok(),
            Err(_) => false,
        };
        if acked {
            return Ok(());
        }
        let publish = || async { js.send_publish(subject.to_owned(), message.publish()).await?.await };
        publish
            .retry(backoff().with_total_delay(Some(DURABLE_WAIT)).without_max_times())
            .notify(|e, _| tracing::warn!(error = %e, message = %message.message_id, events = message.pending.len(), "ledger publish failed; retrying"))
            .await
            .map(|_| ())
            .map_err(|_| RecordError::Unconfirmed)
    };
    let outcome = match store {
        None => published.await,
        Some(store) => {
            tokio::pin!(published);
            tokio::select! {
                outcome = &mut published => outcome,
                () = tokio::time::sleep(STORE_FALLBACK_AFTER) => {
                    let left = DURABLE_WAIT.saturating_sub(started.elapsed());
                    let applied = tokio::time::timeout(left, store.apply_ledger(message.events()));
                    // Whichever has the charges first confirms them; the other is no longer needed.
                    tokio::select! {
                        outcome = &mut published => outcome,
                        stored = applied => match stored {
                            Ok(Ok(_)) => {
                                metrics::counter!("dsa_ledger_store_fallback_total").increment(message.pending.len() as u64);
                                tracing::warn!(message = %message.message_id, events = message.pending.len(), "ledger stream did not ack in time; charges applied to the store directly");
                                Ok(())
                            }
                            _ => published.await,
                        },
                    }
                }
            }
        }
    };
    let events = message.pending.len() as u64;
    match outcome {
        Ok(()) => {
            metrics::counter!("dsa_ledger_events_published_total").increment(events);
            metrics::counter!("dsa_ledger_messages_published_total").increment(1);
        }
        Err(_) => metrics::counter!("dsa_ledger_unconfirmed_total").increment(events),
    }
    for pending in message.pending {
        let _ = pending.done.send(outcome);
    }
}

/// Watches the ledger stream every `every` and exports the age of its oldest event as
/// `dsa_ledger_oldest_unsettled_seconds` (a work-queue stream keeps only unsettled events, so
/// this is the settlement lag even while no ledger consumer runs), with a warning log and
/// `dsa_ledger_settle_lag_alerts_total` past [`SETTLE_LAG_ALERT_FRACTION`] of the stream's max
/// age. Runs until the process ends; a failed look-up is logged and retried next time.
pub async fn watch_unsettled(js: async_nats::jetstream::Context, stream: String, every: Duration) {
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let info = match js.get_stream(&stream).await {
            Ok(s) => s.get_info().await,
            Err(e) => {
                tracing::debug!(error = %e, %stream, "ledger stream not looked up");
                continue;
            }
        };
        let Ok(info) = info else { continue };
        let age = if info.state.messages == 0 {
            0.0
        } else {
            (time::OffsetDateTime::now_utc() - info.state.first_timestamp).as_seconds_f64().max(0.0)
        };
        metrics::gauge!("dsa_ledger_oldest_unsettled_seconds").set(age);
        metrics::gauge!("dsa_ledger_unsettled_events").set(info.state.messages as f64);
        let max_age = info.config.max_age.as_secs_f64();
        if max_age > 0.0 && age > max_age * SETTLE_LAG_ALERT_FRACTION {
            metrics::counter!("dsa_ledger_settle_lag_alerts_total").increment(1);
            tracing::warn!(
                oldest_unsettled_secs = age,
                unsettled = info.state.messages,
                stream_max_age_secs = max_age,
                "the oldest unsettled charge is past half the ledger stream's max age: is the ledger consumer running?"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::store::LedgerSync;
    use crate::store::tests::charge;

    /// A batch committed after a sync began waits for the next sync; one sync confirms every
    /// batch committed before it began (the newest one's runs, once); a failed sync confirms
    /// nothing (the handlers answer 503), and no later sync is run or trusted.
    #[tokio::test]
    async fn a_batch_is_confirmed_only_by_a_sync_begun_after_its_commit() {
        let log = Arc::new(Mutex::new(Vec::<String>::new()));
        let (release, gate) = std::sync::mpsc::channel::<()>();
        let gate = Arc::new(Mutex::new(gate));
        let sync = |name: &'static str, fail: bool| {
            let (log, gate) = (log.clone(), gate.clone());
            LedgerSync::new(move || {
                log.lock().expect("log").push(format!("{name} began"));
                // Held until the test lets it finish.
                gate.lock().expect("gate").recv().map_err(std::io::Error::other)?;
                log.lock().expect("log").push(format!("{name} done"));
                if fail { Err(std::io::Error::other("disk gone")) } else { Ok(()) }
            })
        };
        let batch = |sync: Option<LedgerSync>| {
            let (done, confirmed) = oneshot::channel();
            (Committed { sync, waiting: vec![done] }, confirmed)
        };
        let (to_sync, committed) = mpsc::channel(COMMITS_AWAITING_SYNC);
        let disk_failed = Arc::new(AtomicBool::new(false));
        let syncer = tokio::spawn(confirm_when_durable(committed, disk_failed.clone()));

        let (first, mut first_confirmed) = batch(Some(sync("sync 1", false)));
        to_sync.send(first).await.expect("send");
        tokio::time::timeout(Duration::from_secs(5), async {
            while log.lock().expect("log").is_empty() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("sync 1 begins");
        // Committed while sync 1 runs: sync 1 does not cover them.
        let (second, mut second_confirmed) = batch(Some(sync("sync 2", false)));
        let (third, third_confirmed) = batch(Some(sync("sync 3", false)));
        to_sync.send(second).await.expect("send");
        to_sync.send(third).await.expect("send");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(first_confirmed.try_recv().is_err(), "not confirmed before its sync is done");
        release.send(()).expect("release");
        assert_eq!(first_confirmed.await.expect("answered"), Ok(()));
        assert!(second_confirmed.try_recv().is_err(), "sync 1 began before batch 2 was committed");
        release.send(()).expect("release");
        assert_eq!(second_confirmed.await.expect("answered"), Ok(()));
        assert_eq!(third_confirmed.await.expect("answered"), Ok(()));
        assert_eq!(*log.lock().expect("log"), ["sync 1 began", "sync 1 done", "sync 3 began", "sync 3 done"]);

        // A batch durable on commit (no sync) is confirmed at once.
        let (durable, durable_confirmed) = batch(None);
        to_sync.send(durable).await.expect("send");
        assert_eq!(durable_confirmed.await.expect("answered"), Ok(()));
        assert!(!disk_failed.load(Ordering::SeqCst));

        // A failed sync: its batches are not confirmed, and no later one is.
        let (failing, failing_confirmed) = batch(Some(sync("sync 4", true)));
        to_sync.send(failing).await.expect("send");
        release.send(()).expect("release");
        assert_eq!(failing_confirmed.await.expect("answered"), Err(RecordError::Unconfirmed));
        assert!(disk_failed.load(Ordering::SeqCst), "the failure is kept");
        let (later, later_confirmed) = batch(Some(sync("sync 5", false)));
        to_sync.send(later).await.expect("send");
        assert_eq!(later_confirmed.await.expect("answered"), Err(RecordError::Unconfirmed));
        let (durable, durable_confirmed) = batch(None);
        to_sync.send(durable).await.expect("send");
        assert_eq!(durable_confirmed.await.expect("answered"), Err(RecordError::Unconfirmed));
        let synced = log.lock().expect("log").clone();
        assert_eq!(synced.last().map(String::as_str), Some("sync 4 done"), "sync 5 never ran: {synced:?}");
        drop(to_sync);
        syncer.await.expect("the syncer ends");
    }

    /// Issue 29: the batch is cut after the handlers ready to run have had their turn, so on a
    /// front whose writer shares the core with them a batch holds their charges too, not only
    /// what queued before the writer woke; up to the limit, the rest left queued; and a lone
    /// charge goes out at once.
    #[tokio::test(flavor = "current_thread")]
    async fn a_batch_takes_the_charges_of_the_handlers_ready_to_run() {
        let (sink, LedgerQueue(mut queue, _)) = queue(64);
        // Five handlers ready to run (spawned, not yet polled on this one-thread runtime), each a
        // step from its charge.
        let handlers: Vec<_> = (0..5)
            .map(|_| {
                let sink = sink.clone();
                tokio::spawn(async move { sink.record(charge("key-1", 1)).await })
            })
            .collect();
        let (done, _confirmed) = oneshot::channel();
        sink.queue.try_send(Pending { event: charge("key-1", 1), done }).expect("queued");
        let mut batch = Vec::new();
        assert_eq!(queue.recv_many(&mut batch, MAX_BATCH).await, 1, "only the first charge had queued");
        fill_from_ready_handlers(&mut queue, &mut batch, 4).await;
        assert_eq!(batch.len(), 4, "the handlers' charges join the batch, up to its limit");
        fill_from_ready_handlers(&mut queue, &mut batch, MAX_BATCH).await;
        assert_eq!(batch.len(), 6, "the rest stayed queued for the next batch");
        for pending in batch.drain(..) {
            let _ = pending.done.send(Ok(()));
        }
        for handler in handlers {
            assert_eq!(handler.await.expect("handler"), Ok(()));
        }

        // A lone charge: nothing else is ready, the batch is cut at once with it alone.
        let (done, _confirmed) = oneshot::channel();
        sink.queue.try_send(Pending { event: charge("key-1", 1), done }).expect("queued");
        assert_eq!(queue.recv_many(&mut batch, MAX_BATCH).await, 1);
        tokio::time::timeout(Duration::from_secs(5), fill_from_ready_handlers(&mut queue, &mut batch, MAX_BATCH))
            .await
            .expect("no wait for more charges");
        assert_eq!(batch.len(), 1);
    }
}
