//! Credits: "may this key spend N credits now?", answered in memory, settled through the ledger.
//!
//! Each (key, month) has a counter initialised once from the settled usage in the store, then
//! moved by reservations. A [`Reservation`] is a must-settle guard: [`Reservation::commit`]
//! sends a [`LedgerEvent`] to the ledger consumer and keeps the credits spent; dropping it
//! uncommitted (an error, an unknown verdict, a cancelled request) gives them back and logs why.
//! Because the check and the increment are one atomic step, N concurrent requests on a key with
//! R credits left succeed exactly min(N, R) times in one process.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use common::messages::{LedgerEvent, billing_period};
use time::OffsetDateTime;
use tokio::sync::{OnceCell, mpsc};
use uuid::Uuid;

use crate::error::ApiError;
use crate::keys::KeyRecord;
use crate::store::Store;

/// Per-key monthly credit accounting of one process.
pub struct Credits {
    store: Arc<dyn Store>,
    counters: Mutex<HashMap<(String, String), Arc<OnceCell<AtomicI64>>>>,
    ledger: mpsc::UnboundedSender<LedgerEvent>,
}

impl std::fmt::Debug for Credits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credits").finish_non_exhaustive()
    }
}

/// Credits held for one request until it is answered.
#[derive(Debug)]
#[must_use = "a reservation must be committed or it is released on drop"]
pub struct Reservation {
    counter: Arc<OnceCell<AtomicI64>>,
    credits: i64,
    allowance: i64,
    key_id: String,
    period: String,
    endpoint: &'static str,
    ledger: mpsc::UnboundedSender<LedgerEvent>,
    settled: bool,
}

impl Reservation {
    /// Keeps the credits: emits the ledger event and returns the credits remaining this month.
    pub fn commit(mut self) -> i64 {
        self.settled = true;
        let used = self.counter.get().map_or(0, |c| c.load(Ordering::Acquire));
        let event = LedgerEvent {
            event_id: Uuid::now_v7(),
            key_id: self.key_id.clone(),
            period: self.period.clone(),
            endpoint: self.endpoint.to_owned(),
            credits: self.credits,
            charged_at: OffsetDateTime::now_utc(),
        };
        if self.ledger.send(event).is_err() {
            tracing::error!(key_id = %self.key_id, "ledger consumer gone; charge not recorded");
        }
        (self.allowance - used).max(0)
    }

    /// Credits held.
    pub fn credits(&self) -> i64 {
        self.credits
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.settled
            && let Some(counter) = self.counter.get()
        {
            counter.fetch_sub(self.credits, Ordering::AcqRel);
            tracing::debug!(key_id = %self.key_id, credits = self.credits, endpoint = self.endpoint, "credits released (no definitive answer)");
        }
    }
}

impl Credits {
    /// Accounting over `store`, sending committed charges to `ledger`.
    pub fn new(store: Arc<dyn Store>, ledger: mpsc::UnboundedSender<LedgerEvent>) -> Self {
        Self { store, counters: Mutex::new(HashMap::new()), ledger }
    }

    /// Holds `credits` of `key`'s allowance for the current month (UTC).
    ///
    /// # Errors
    /// [`ApiError::CreditsExhausted`] when fewer remain; [`ApiError::Internal`] when the settled
    /// usage cannot be read.
    pub async fn reserve(&self, key: &KeyRecord, endpoint: &'static str, credits: i64, now: OffsetDateTime) -> Result<Reservation, ApiError> {
        let period = billing_period(now);
        let cell = {
            let mut counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
            counters.entry((key.id.clone(), period.clone())).or_default().clone()
        };
        let counter = cell
            .get_or_try_init(|| async {
                let settled = self.store.settled_usage(&key.id, &period).await?;
                Ok::<_, anyhow::Error>(AtomicI64::new(settled))
            })
            .await?;
        let allowance = key.monthly_allowance;
        counter
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| (used + credits <= allowance).then_some(used + credits))
            .map_err(|_| ApiError::CreditsExhausted)?;
        Ok(Reservation {
            counter: cell.clone(),
            credits,
            allowance,
            key_id: key.id.clone(),
            period,
            endpoint,
            ledger: self.ledger.clone(),
            settled: false,
        })
    }
}
