//! The ledger consumer: pulls charge events from the ledger stream, settles each batch in one
//! store transaction and acks only after the commit.
//!
//! Moved here from the front's crate as it was (issue 24); the fleet's generic JetStream pull
//! loop (`fleet`) is meant to replace the loop of [`consume`].

use std::sync::Arc;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use common::messages::LedgerEvent;

use super::{LedgerStore, SettleError};

/// Largest batch fetched and settled at once.
pub const MAX_BATCH: usize = 512;

/// Back-off while the consumer is not reachable yet: 50 ms doubling to 2 s, jittered.
fn backoff() -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(50))
        .with_max_delay(Duration::from_secs(2))
        .with_jitter()
}

/// Counters of a ledger consumer.
#[derive(Debug, Default)]
pub struct ConsumerStats {
    /// Events applied (new rows).
    pub applied: std::sync::atomic::AtomicU64,
    /// Events seen again and absorbed (already applied: redelivery or duplicate publish).
    pub duplicates: std::sync::atomic::AtomicU64,
    /// Batches committed.
    pub batches: std::sync::atomic::AtomicU64,
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

/// The ledger role: pulls charge events in batches from the ledger stream, settles each batch in
/// one store transaction ([`LedgerStore::settle`]) (`ON CONFLICT DO NOTHING` on the event id), and acks only after the
/// commit. Killed between commit and ack, the batch is redelivered and absorbed; killed before the
/// commit, nothing was written and the batch is redelivered. Poison messages are terminated.
///
/// # Errors
/// When the consumer cannot be reached at start.
pub async fn consume<S: LedgerStore + ?Sized>(
    js: async_nats::jetstream::Context,
    names: common::subjects::Names,
    store: Arc<S>,
    stats: Arc<ConsumerStats>,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> anyhow::Result<()> {
    use async_nats::jetstream::AckKind;
    use futures::StreamExt;
    use std::sync::atomic::Ordering;
    tokio::pin!(shutdown);
    // NATS may be restarting: keep trying until the consumer answers or we are told to stop.
    let find = || async {
        let stream = js.get_stream(&names.ledger_stream).await.map_err(anyhow::Error::from)?;
        stream.get_consumer(&names.ledger_consumer).await.map_err(|e| anyhow::anyhow!("{e}"))
    };
    let found = find
        .retry(backoff().without_max_times())
        .notify(|e, _| tracing::debug!(error = %e, "ledger consumer not reachable yet; retrying"));
    let consumer: async_nats::jetstream::consumer::PullConsumer = tokio::select! {
        _ = &mut shutdown => return Ok(()),
        c = found => c?,
    };
    loop {
        let fetched = tokio::select! {
            _ = &mut shutdown => return Ok(()),
            f = consumer.fetch().max_messages(MAX_BATCH).expires(Duration::from_millis(200)).messages() => f,
        };
        let mut fetched = match fetched {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(error = %e, "ledger fetch failed; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        let mut messages = Vec::new();
        let mut events = Vec::new();
        while let Some(message) = fetched.next().await {
            let Ok(message) = message else { continue };
            if let Err(reason) = delivered_by_the_ledger_stream(&message, &names) {
                // Not a delivery of our consumer: something published into this fetch inbox.
                // Never applied, never acked (an ack would go to a subject of its choosing).
                tracing::error!(subject = %message.subject, reply = ?message.reply, reason, "foreign message in the ledger's inbox dropped");
                metrics::counter!("dsa_ledger_foreign_total").increment(1);
                continue;
            }
            match serde_json::from_slice::<LedgerEvent>(&message.payload) {
                Ok(event) if event.credits > 0 => {
                    events.push(event);
                    messages.push(message);
                }
                Ok(event) => {
                    // A charge never gives credits back: a non-positive one is forged or broken.
                    tracing::error!(event = %event.event_id, credits = event.credits, "non-positive ledger event terminated");
                    metrics::counter!("dsa_ledger_poison_total").increment(1);
                    let _ = message.ack_with(AckKind::Term).await;
                }
                Err(e) => {
                    tracing::error!(error = %e, "poison ledger event terminated");
                    metrics::counter!("dsa_ledger_poison_total").increment(1);
                    let _ = message.ack_with(AckKind::Term).await;
                }
            }
        }
        if events.is_empty() {
            continue;
        }
        observe_settle_lag(&events);
        let count = events.len() as u64;
        let traced = tracing::enabled!(tracing::Level::DEBUG).then(|| settled_trace(&events));
        match store.settle(events).await {
            Ok(applied) => {
                if let Some(traced) = traced {
                    log_settled(&traced, applied);
                }
                stats.applied.fetch_add(applied, Ordering::Relaxed);
                stats.duplicates.fetch_add(count - applied, Ordering::Relaxed);
                stats.batches.fetch_add(1, Ordering::Relaxed);
                metrics::counter!("dsa_ledger_events_applied_total").increment(applied);
                for message in messages {
                    if let Err(e) = message.ack().await {
                        tracing::warn!(error = %e, "ack after commit failed; the event will be redelivered and absorbed");
                    }
                }
            }
            Err(e) => {
                // One bad event (say, for a key that does not exist) must not block the ledger:
                // apply one by one and terminate the events the store refuses as data. Any
                // other failure is the store's, not the event's (Postgres restarting, a dropped
                // connection): that event and the rest are redelivered, never terminated, and the
                // pass stops there rather than wait out the store once per event.
                tracing::warn!(error = ?e, events = count, "ledger batch failed; isolating");
                let mut messages = messages.into_iter();
                while let Some(message) = messages.next() {
                    let outcome = match serde_json::from_slice::<LedgerEvent>(&message.payload) {
                        Ok(event) => store.settle(vec![event]).await,
                        Err(e) => Err(SettleError::Refused(e.into())),
                    };
                    match outcome {
                        Ok(applied) => {
                            stats.applied.fetch_add(applied, Ordering::Relaxed);
                            stats.duplicates.fetch_add(1 - applied.min(1), Ordering::Relaxed);
                            let _ = message.ack().await;
                        }
                        Err(reason @ SettleError::Refused(_)) => {
                            tracing::error!(error = ?reason, "ledger event cannot be applied; terminated");
                            metrics::counter!("dsa_ledger_poison_total").increment(1);
                            let _ = message.ack_with(AckKind::Term).await;
                        }
                        Err(reason @ SettleError::Unavailable(_)) => {
                            tracing::warn!(error = ?reason, "ledger store failing; redelivering the rest of the batch");
                            for message in std::iter::once(message).chain(messages.by_ref()) {
                                let _ = message.ack_with(AckKind::Nak(Some(Duration::from_secs(1)))).await;
                            }
                        }
                    }
                }
            }
        }
    }
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
