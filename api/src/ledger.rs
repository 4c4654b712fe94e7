//! The ledger consumer of standalone mode: batches charge events into the store.
//!
//! Events arrive on an in-process channel; up to 512 (or whatever arrived within 20 ms) are applied
//! in one transaction (`ON CONFLICT DO NOTHING` on the event id, plus the per-key monthly usage).
//! A failed batch is retried with back-off, never dropped. When every sender is gone (shutdown),
//! the consumer drains what is left and returns.

use std::sync::Arc;
use std::time::Duration;

use common::messages::LedgerEvent;
use tokio::sync::mpsc;

use crate::store::Store;

/// Largest batch applied in one transaction.
pub const MAX_BATCH: usize = 512;

/// Runs until the channel closes and every received event is applied.
pub async fn run(store: Arc<dyn Store>, mut events: mpsc::UnboundedReceiver<LedgerEvent>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    loop {
        let received = events.recv_many(&mut batch, MAX_BATCH).await;
        if received == 0 {
            return;
        }
        // Let a burst accumulate briefly so one transaction carries many events.
        if batch.len() < MAX_BATCH {
            tokio::time::sleep(Duration::from_millis(5)).await;
            while batch.len() < MAX_BATCH {
                match events.try_recv() {
                    Ok(e) => batch.push(e),
                    Err(_) => break,
                }
            }
        }
        let mut backoff = Duration::from_millis(50);
        loop {
            match store.apply_ledger(batch.clone()).await {
                Ok(applied) => {
                    metrics::counter!("dsa_ledger_events_applied_total").increment(applied);
                    break;
                }
                Err(e) => {
                    tracing::error!(error = ?e, events = batch.len(), "ledger batch failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
            }
        }
        batch.clear();
    }
}

/// The front's half of the fleet ledger: publishes each committed charge to the ledger stream
/// (`Nats-Msg-Id` = event id, so a retried publish is absorbed by JetStream's dedup) and waits
/// for JetStream's ack; an event is retried until acked, so a NATS outage delays charges but
/// loses none while the process lives. Returns when the channel closes and all are acked.
pub async fn forward(
    js: async_nats::jetstream::Context,
    subject: String,
    mut events: mpsc::UnboundedReceiver<LedgerEvent>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    loop {
        if events.recv_many(&mut batch, MAX_BATCH).await == 0 {
            return;
        }
        let mut backoff = Duration::from_millis(50);
        while !batch.is_empty() {
            // Pipeline the batch: publish all, then collect the acks; keep the failures.
            let mut acks = Vec::with_capacity(batch.len());
            for event in batch.drain(..) {
                let payload = match serde_json::to_vec(&event) {
                    Ok(p) => p,
                    Err(e) => {
                        tracing::error!(error = %e, "ledger event not serialisable; dropped");
                        continue;
                    }
                };
                let message = async_nats::jetstream::message::PublishMessage::build()
                    .payload(payload.into())
                    .message_id(event.event_id.to_string());
                let ack = js.send_publish(subject.clone(), message).await;
                acks.push((event, ack));
            }
            let mut failed = Vec::new();
            for (event, ack) in acks {
                let ok = match ack {
                    Ok(future) => future.await.is_ok(),
                    Err(_) => false,
                };
                if ok {
                    metrics::counter!("dsa_ledger_events_published_total").increment(1);
                } else {
                    failed.push(event);
                }
            }
            if !failed.is_empty() {
                tracing::warn!(events = failed.len(), "ledger publish failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
            batch = failed;
        }
    }
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

/// The ledger role: pulls charge events in batches from the ledger stream, applies each batch in
/// one store transaction (`ON CONFLICT DO NOTHING` on the event id), and acks only after the
/// commit. Killed between commit and ack, the batch is redelivered and absorbed; killed before the
/// commit, nothing was written and the batch is redelivered. Poison messages are terminated.
///
/// # Errors
/// When the consumer cannot be reached at start.
pub async fn consume(
    js: async_nats::jetstream::Context,
    names: common::subjects::Names,
    store: Arc<dyn Store>,
    stats: Arc<ConsumerStats>,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> anyhow::Result<()> {
    use async_nats::jetstream::AckKind;
    use futures::StreamExt;
    use std::sync::atomic::Ordering;
    tokio::pin!(shutdown);
    // NATS may be restarting: keep trying until the consumer answers or we are told to stop.
    let consumer: async_nats::jetstream::consumer::PullConsumer = loop {
        let found =
            async { js.get_stream(&names.ledger_stream).await.ok()?.get_consumer(&names.ledger_consumer).await.ok() };
        tokio::select! {
            _ = &mut shutdown => return Ok(()),
            c = found => match c {
                Some(c) => break c,
                None => tokio::time::sleep(Duration::from_millis(500)).await,
            },
        }
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
            match serde_json::from_slice::<LedgerEvent>(&message.payload) {
                Ok(event) => {
                    events.push(event);
                    messages.push(message);
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
        match store.apply_ledger(events).await {
            Ok(applied) => {
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
                // apply one by one and terminate the events the database refuses as data. Any
                // other failure is the store's, not the event's (Postgres restarting, a dropped
                // connection): that event and the rest are redelivered, never terminated, and the
                // pass stops there rather than wait out the store once per event.
                tracing::warn!(error = ?e, events = count, "ledger batch failed; isolating");
                let mut messages = messages.into_iter();
                while let Some(message) = messages.next() {
                    let outcome = match serde_json::from_slice::<LedgerEvent>(&message.payload) {
                        Ok(event) => store.apply_ledger(vec![event]).await,
                        Err(e) => Err(e.into()),
                    };
                    match outcome {
                        Ok(applied) => {
                            stats.applied.fetch_add(applied, Ordering::Relaxed);
                            stats.duplicates.fetch_add(1 - applied.min(1), Ordering::Relaxed);
                            let _ = message.ack().await;
                        }
                        Err(reason) if is_poison(&reason) => {
                            tracing::error!(error = ?reason, "ledger event cannot be applied; terminated");
                            metrics::counter!("dsa_ledger_poison_total").increment(1);
                            let _ = message.ack_with(AckKind::Term).await;
                        }
                        Err(reason) => {
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

/// Whether the store refused an event as data, so that it can never be applied (a key that does
/// not exist, a value out of range, an unparsable payload) and must be terminated. Anything else
/// (connection lost, pool timed out, a serialisation failure) is trouble of the store, which
/// passes.
fn is_poison(error: &anyhow::Error) -> bool {
    use sqlx::error::ErrorKind;
    error.chain().any(|cause| {
        cause.is::<serde_json::Error>()
            || cause.downcast_ref::<sqlx::Error>().and_then(sqlx::Error::as_database_error).is_some_and(|db| {
                matches!(db.kind(), ErrorKind::ForeignKeyViolation | ErrorKind::NotNullViolation | ErrorKind::CheckViolation)
                    // SQLSTATE class 22, data exception (PostgreSQL manual, Appendix A).
                    || db.code().is_some_and(|code| code.starts_with("22"))
            })
    })
}
