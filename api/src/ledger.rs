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
