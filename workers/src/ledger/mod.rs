//! The ledger role: charges settled from the ledger stream into the store.
//!
//! The path of a charge in the fleet:
//!
//! ```text
//! front: Reservation::commit ──publish [LedgerEvent, …] (a group a message)──► stream DSA_LEDGER
//!                                                                               │ pull consumer
//!                                                                               ▼ dsa-ledger
//!   store (Postgres) ◄── LedgerStore::settle, one transaction a batch ◄── consumer::consume, then ack
//! ```
//!
//! * [`consumer`]: the pull loop — fetch a batch, settle it, ack after the commit; isolate a
//!   failing batch event by event, terminate what the store refuses as data.
//! * [`LedgerStore`]: the one thing the consumer needs of the store. The store itself (keys,
//!   accounts, the SQL of both dialects) belongs to the front's crate, which implements this
//!   trait; so the consumer needs neither the store's types nor its database driver, and the
//!   crates depend one way (`api` → `workers`).
//!
//! The front's side of the ledger (queueing a charge, publishing it, watching the lag of the
//! stream) stays in the front (`api::ledger`).

pub mod consumer;

use futures::future::BoxFuture;

use common::messages::LedgerEvent;

pub use consumer::{ConsumerStats, LEDGER_STREAM_MAX_AGE_SECS, SETTLE_LAG_ALERT_FRACTION, consume};

/// Where the ledger consumer settles charges.
pub trait LedgerStore: Send + Sync {
    /// Applies `events` in one transaction: each new event id adds a ledger entry and its credits
    /// to the key's usage of its period; an event id seen before is skipped (`ON CONFLICT DO
    /// NOTHING`), so a redelivered batch settles nothing twice. Returns how many were new.
    ///
    /// # Errors
    /// [`SettleError::Refused`] when the store refuses an event as data (nothing of the batch is
    /// applied); [`SettleError::Unavailable`] on any trouble of the store itself.
    fn settle(&self, events: Vec<LedgerEvent>) -> BoxFuture<'_, Result<u64, SettleError>>;
}

/// Why a batch was not settled. Either way nothing of it was applied (one transaction).
#[derive(Debug, thiserror::Error)]
pub enum SettleError {
    /// The store refused the data (a key that does not exist, a value out of range): this event
    /// can never be applied, and a batch holding it never will. The consumer terminates it.
    #[error("the store refused the event: {0:#}")]
    Refused(anyhow::Error),
    /// The store failed (connection lost, pool timed out, a serialisation failure): applying
    /// again later may succeed. The consumer redelivers.
    #[error("the store failed: {0:#}")]
    Unavailable(anyhow::Error),
}
