//! The ledger consumer: pulls charge messages (each one charge or a front's group of them) from
//! the ledger stream, settles each fetched batch in one store transaction and acks only after the
//! commit.
//!
//! It runs on the fleet's one JetStream pull loop ([`crate::fleet::pull`]), like the job pool.

use std::sync::Arc;
use std::time::Duration;

use common::messages::LedgerEvent;

use super::{LedgerStore, SettleError};
use crate::fleet::pull::{LiveLoop, Liveness, Pull, Settle, pull};

/// Largest batch fetched and settled at once.
pub const MAX_BATCH: usize = 512;

/// Counters of a ledger consumer.
#[derive(Debug, Default)]
pub struct ConsumerStats {
    /// Events applied (new rows).
    pub applied: std::sync::atomic::AtomicU64,
    /// Events seen again and absorbed (already applied: redelivery or duplicate publish).
    pub duplicates: std::sync::atomic::AtomicU64,
    /// Batches committed.
    pub batches: std::sync::atomic::AtomicU64,
    /// Pull loops running (one).
    pub live_loops: std::sync::atomic::AtomicUsize,
    /// Pull loops fetching right now.
    pub fetching_loops: std::sync::atomic::AtomicUsize,
}

impl Liveness for ConsumerStats {
    fn live_loops(&self) -> &std::sync::atomic::AtomicUsize {
        &self.live_loops
    }

    fn fetching_loops(&self) -> &std::sync::atomic::AtomicUsize {
        &self.fetching_loops
    }
}

/// How long the ledger stream keeps an unsettled charge event (`DSA_LEDGER` max age, 7 days); a
/// settlement lag approaching it means charges are about to expire unsettled.
pub const LEDGER_STREAM_MAX_AGE_SECS: f64 = 7.0 * 86_400.0;

/// Fraction of [`LEDGER_STREAM_MAX_AGE_SECS`] past which the lag is alerted on.
pub const SETTLE_LAG_ALERT_FRACTION: f64 = 0.5;

/// Exports the age of the oldest event of a batch as `dsa_ledger_settle_lag_seconds` and logs an
/// error when it passes [`SETTLE_LAG_ALERT_FRACTION`] of the stream's max age (alert on it: the
/// ledger consumer is down or falling behind, and events older than the max age are lost).
fn observe_settle_lag(events: &[LedgerEvent]) {
    let now = time::OffsetDateTime::now_utc();
    let Some(oldest) = events.iter().map(|e| e.charged_at).min() else { return };
    let lag = (now - oldest).as_seconds_f64().max(0.0);
    metrics::gauge!("dsa_ledger_settle_lag_seconds").set(lag);
    let alert = LEDGER_STREAM_MAX_AGE_SECS * SETTLE_LAG_ALERT_FRACTION;
    if lag > alert {
        metrics::counter!("dsa_ledger_settle_lag_alerts_total").increment(1);
        tracing::error!(
            lag_secs = lag,
            stream_max_age_secs = LEDGER_STREAM_MAX_AGE_SECS,
            "ledger settlement lag is past half the ledger stream's max age: unsettled charges will expire"
        );
    }
}

/// The ledger role: pulls charge events in batches from the ledger stream through the fleet's
/// one pull loop ([`crate::fleet::pull`], one batch held at a time), settles each batch in one
/// store transaction ([`LedgerStore::settle`]) (`ON CONFLICT DO NOTHING` on the event id), and
/// acks only after the commit. Killed between commit and ack, the batch is redelivered and
/// absorbed; killed before the commit, nothing was written and the batch is redelivered. Poison
/// messages are terminated; messages that are not deliveries of the ledger stream are left alone.
///
/// # Errors
/// None today: an unreachable consumer is retried until `shutdown`; the `Result` is kept for
/// the role launcher.
pub async fn consume<S: LedgerStore + ?Sized + 'static>(
    js: async_nats::jetstream::Context,
    names: common::subjects::Names,
    store: Arc<S>,
    stats: Arc<ConsumerStats>,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> anyhow::Result<()> {
    let config = Pull {
        stream: names.ledger_stream.clone(),
        consumer: names.ledger_consumer.clone(),
        batch: MAX_BATCH,
        chunk: MAX_BATCH,
        slots: MAX_BATCH,
        expires: Duration::from_millis(200),
        progress_every: None,
    };
    let live = LiveLoop::new(stats.clone());
    let names = Arc::new(names);
    let handler = move |messages: Vec<async_nats::jetstream::Message>| {
        let (store, stats, names) = (store.clone(), stats.clone(), names.clone());
        async move { settle_batch(&*store, &stats, &names, &messages).await }
    };
    let idle = tokio::spawn(clear_settle_lag_when_idle(js.clone(), config.stream.clone(), config.consumer.clone()));
    pull(js.client(), config, live, shutdown, handler).await;
    idle.abort();
    Ok(())
}

/// How often the ledger consumer asks whether anything is waiting to be settled.
const IDLE_CHECK_EVERY: Duration = Duration::from_secs(5);

/// Sets `dsa_ledger_settle_lag_seconds` to 0 whenever the consumer has nothing waiting (no
/// pending and no unacknowledged event), so the gauge reads "no lag" while the ledger idles
/// instead of keeping the last batch's age for ever. While events wait, the batches set it.
async fn clear_settle_lag_when_idle(js: async_nats::jetstream::Context, stream: String, consumer: String) {
    let mut tick = tokio::time::interval(IDLE_CHECK_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let info = async {
            let stream = js.get_stream(&stream).await.ok()?;
            let mut consumer =
                stream.get_consumer::<async_nats::jetstream::consumer::pull::Config>(&consumer).await.ok()?;
            consumer.info().await.ok().map(|i| (i.num_pending, i.num_ack_pending))
        };
        if let Some((0, 0)) = info.await {
            metrics::gauge!("dsa_ledger_settle_lag_seconds").set(0.0);
        }
    }
}

/// What each message of a fetched batch deserves: the batch's charges settled in one
/// transaction and acked after the commit; poison terminated; foreign messages left alone.
///
/// A message carries one charge or up to [`common::messages::LEDGER_EVENTS_PER_MESSAGE`]
/// ([`common::messages::decode_ledger_message`]). A charge the consumer refuses (non-positive
/// credits, one the store refuses as data) is counted as poison and skipped; its message is
/// acked when any other charge of it settled, terminated when none did, and redelivered whole
/// when any of its charges could not be settled for the store's own trouble (the settled ones
/// are absorbed on redelivery: an event id is applied once).
async fn settle_batch<S: LedgerStore + ?Sized>(
    store: &S,
    stats: &ConsumerStats,
    names: &common::subjects::Names,
    messages: &[async_nats::jetstream::Message],
) -> Vec<Settle> {
    use std::sync::atomic::Ordering;
    let mut settles = vec![Settle::Leave; messages.len()];
    // (index in `messages`, event) of the charges to settle.
    let mut events: Vec<(usize, LedgerEvent)> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        if let Err(reason) = delivered_by_the_ledger_stream(message, names) {
            // Not a delivery of our consumer: something published into this fetch inbox.
            // Never applied, never acked (an ack would go to a subject of its choosing).
            tracing::error!(subject = %message.subject, reply = ?message.reply, reason, "foreign message in the ledger's inbox dropped");
            metrics::counter!("dsa_ledger_foreign_total").increment(1);
            continue;
        }
        match common::messages::decode_ledger_message(&message.payload) {
            Ok(decoded) => {
                for event in decoded {
                    if event.credits > 0 {
                        events.push((i, event));
                    } else {
                        // A charge never gives credits back: a non-positive one is forged or broken.
                        tracing::error!(event = %event.event_id, credits = event.credits, "non-positive ledger event terminated");
                        metrics::counter!("dsa_ledger_poison_total").increment(1);
                        settles[i] = merge(settles[i], Settle::Term("non_positive"));
                    }
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "poison ledger message terminated");
                metrics::counter!("dsa_ledger_poison_total").increment(1);
                settles[i] = Settle::Term("unparsable");
            }
        }
    }
    if events.is_empty() {
        return settles;
    }
    let batch: Vec<LedgerEvent> = events.iter().map(|(_, e)| e.clone()).collect();
    observe_settle_lag(&batch);
    let count = batch.len() as u64;
    let traced = tracing::enabled!(tracing::Level::DEBUG).then(|| settled_trace(&batch));
    match store.settle(batch).await {
        Ok(applied) => {
            if let Some(traced) = traced {
                log_settled(&traced, applied);
            }
            stats.applied.fetch_add(applied, Ordering::Relaxed);
            stats.duplicates.fetch_add(count - applied, Ordering::Relaxed);
            stats.batches.fetch_add(1, Ordering::Relaxed);
            metrics::counter!("dsa_ledger_events_applied_total").increment(applied);
            for (i, _) in &events {
                settles[*i] = merge(settles[*i], Settle::Ack);
            }
        }
        Err(e) => {
            // One bad event (say, for a key that does not exist) must not block the ledger:
            // apply one by one and terminate the events the store refuses as data. Any other
            // failure is the store's, not the event's (Postgres restarting, a dropped
            // connection): that event and the rest are redelivered, never terminated, and the
            // pass stops there rather than wait out the store once per event.
            tracing::warn!(error = ?e, events = count, "ledger batch failed; isolating");
            let mut rest = events.into_iter();
            while let Some((i, event)) = rest.next() {
                match store.settle(vec![event]).await {
                    Ok(applied) => {
                        stats.applied.fetch_add(applied, Ordering::Relaxed);
                        stats.duplicates.fetch_add(1 - applied.min(1), Ordering::Relaxed);
                        settles[i] = merge(settles[i], Settle::Ack);
                    }
                    Err(reason @ SettleError::Refused(_)) => {
                        tracing::error!(error = ?reason, "ledger event cannot be applied; terminated");
                        metrics::counter!("dsa_ledger_poison_total").increment(1);
                        settles[i] = merge(settles[i], Settle::Term("refused"));
                    }
                    Err(reason @ SettleError::Unavailable(_)) => {
                        tracing::warn!(error = ?reason, "ledger store failing; redelivering the rest of the batch");
                        settles[i] = merge(settles[i], Settle::Nak(Duration::from_secs(1)));
                        for (j, _) in rest.by_ref() {
                            settles[j] = merge(settles[j], Settle::Nak(Duration::from_secs(1)));
                        }
                    }
                }
            }
        }
    }
    settles
}

/// What a message deserves given what one more of its charges deserves: redelivery if any charge
/// must be settled again, else an ack if any settled, else termination (every charge refused).
fn merge(message: Settle, charge: Settle) -> Settle {
    fn rank(settle: Settle) -> u8 {
        match settle {
            Settle::Leave => 0,
            Settle::Term(_) => 1,
            Settle::Ack => 2,
            Settle::Nak(_) => 3,
        }
    }
    if rank(charge) > rank(message) { charge } else { message }
}

/// What the debug log says of each settled charge: its event id, key id, credits and the request
/// that caused it (so a request id found in a front's log is found in the ledger's).
type SettledTrace = Vec<(uuid::Uuid, String, i64, Option<common::request_id::RequestId>)>;

fn settled_trace(events: &[LedgerEvent]) -> SettledTrace {
    events.iter().map(|e| (e.event_id, e.key_id.clone(), e.credits, e.request_id.clone())).collect()
}

/// One debug line per charge of a committed batch, inside a `settle` span of the batch.
fn log_settled(traced: &SettledTrace, applied: u64) {
    let span = tracing::debug_span!("settle", events = traced.len(), applied);
    let _entered = span.enter();
    for (event_id, key_id, credits, request_id) in traced {
        let request_id = request_id.as_ref().map_or("-", |id| id.as_str());
        tracing::debug!(%event_id, key_id, credits, request_id, "charge settled");
    }
}

/// Whether `message` is a JetStream delivery of the ledger stream to the ledger consumer: its
/// reply subject is the server's ack subject (`$JS.ACK.<stream>.<consumer>.…`, ADR-15) naming
/// both. Anything else in the fetch inbox was published there by a client, which the NATS
/// permissions should already refuse (nats/README.md "Credentials"); this is the second wall.
///
/// # Errors
/// Why the message is not a delivery (for the log).
fn delivered_by_the_ledger_stream(
    message: &async_nats::jetstream::Message,
    names: &common::subjects::Names,
) -> Result<(), &'static str> {
    let info = message.info().map_err(|_| "no JetStream ack subject")?;
    if info.stream != names.ledger_stream {
        return Err("another stream");
    }
    if info.consumer != names.ledger_consumer {
        return Err("another consumer");
    }
    Ok(())
}
