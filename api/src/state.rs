//! The one cheap-to-clone application state (an `Arc` inside) shared by every handler.

use std::sync::Arc;
use std::time::Duration;

use moka::future::Cache;
use workers::engine::Engine;

use crate::credits::Credits;
use crate::dispatch::JobBus;
use crate::error::ApiError;
use crate::keys::{KeyRecord, hash_key};
use crate::pricing::PriceTable;
use crate::purchase::CheckoutUrl;
use crate::store::Store;

/// How long a key record is cached in a front: a state change made with `dsa keys …` takes
/// effect within this many seconds.
pub const KEY_CACHE_TTL_SECS: u64 = 5;

/// Shared state.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    bus: Arc<dyn JobBus>,
    store: Arc<dyn Store>,
    credits: Credits,
    prices: PriceTable,
    platform_checkout: Option<CheckoutUrl>,
    keys: Cache<String, Option<Arc<KeyRecord>>>,
    check_deadline: Duration,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").finish_non_exhaustive()
    }
}

/// Everything the state is made of.
pub struct Parts {
    /// The availability engine (catalogue, cache, probes).
    pub engine: Engine,
    /// The job bus to workers.
    pub bus: Arc<dyn JobBus>,
    /// Keys and ledger storage.
    pub store: Arc<dyn Store>,
    /// Credit accounting.
    pub credits: Credits,
    /// Prices per suffix.
    pub prices: PriceTable,
    /// Platform checkout URL (`redirect_checkout=1`).
    pub platform_checkout: Option<CheckoutUrl>,
}

impl AppState {
    /// Assembles the state.
    pub fn new(parts: Parts) -> Self {
        let check_deadline = Duration::from_secs_f64(parts.engine.config().check_deadline_secs.max(0.01));
        let keys = Cache::builder().max_capacity(100_000).time_to_live(Duration::from_secs(KEY_CACHE_TTL_SECS)).build();
        Self {
            inner: Arc::new(Inner {
                engine: parts.engine,
                bus: parts.bus,
                store: parts.store,
                credits: parts.credits,
                prices: parts.prices,
                platform_checkout: parts.platform_checkout,
                keys,
                check_deadline,
            }),
        }
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// The job bus.
    pub fn bus(&self) -> &dyn JobBus {
        self.inner.bus.as_ref()
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// Credit accounting.
    pub fn credits(&self) -> &Credits {
        &self.inner.credits
    }

    /// Price table.
    pub fn prices(&self) -> &PriceTable {
        &self.inner.prices
    }

    /// Platform checkout URL.
    pub fn platform_checkout(&self) -> Option<&CheckoutUrl> {
        self.inner.platform_checkout.as_ref()
    }

    /// Deadline of one fresh check (the job bus wait).
    pub fn check_deadline(&self) -> Duration {
        self.inner.check_deadline
    }

    /// The active key for a presented client key.
    ///
    /// # Errors
    /// [`ApiError::InvalidKey`] when not found, disabled or suspended (spec §5.2);
    /// [`ApiError::Internal`] when the store fails.
    pub async fn key(&self, presented: &str) -> Result<Arc<KeyRecord>, ApiError> {
        let hash = hash_key(presented);
        let store = self.inner.store.clone();
        let found = self
            .inner
            .keys
            .try_get_with(hash.clone(), async move { store.find_key(&hash).await.map(|k| k.map(Arc::new)) })
            .await
            .map_err(|e| ApiError::Internal(anyhow::anyhow!("key lookup failed: {e}")))?;
        match found {
            Some(key) if key.state == crate::keys::KeyState::Active => Ok(key),
            _ => Err(ApiError::InvalidKey),
        }
    }
}
