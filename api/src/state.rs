//! The one cheap-to-clone application state (an `Arc` inside) shared by every handler.

use std::sync::Arc;
use std::time::Duration;

use moka::future::Cache;
use workers::engine::Engine;

use crate::credits::Credits;
use crate::dispatch::JobBus;
use crate::error::ApiError;
use crate::keys::{KeyRecord, hash_key};
use crate::policy::{Demo, IpLimiter, PolicyConfig, RateState, RateWindows};
use crate::pricing::PriceTable;
use crate::purchase::CheckoutUrl;
use crate::singleflight::SingleFlight;
use crate::store::Store;
use time::OffsetDateTime;

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
    lookups: SingleFlight<String, Result<common::verdict::Verdict, LookupError>>,
    ip_limiter: IpLimiter,
    policy: PolicyConfig,
    windows: RateWindows,
    demo: Demo,
    clock: Clock,
    tls: bool,
}

/// Why a shared availability lookup gave no verdict (cloned to every waiter of the lookup).
#[derive(Debug, Clone)]
pub enum LookupError {
    /// The workers refused the name (unsupported TLD, unparsable domain): a 400 with this text.
    Rejected(String),
    /// No verdict in time, or the job bus is unavailable: a 502 (the text is logged, not shown).
    Upstream(String),
}

/// The time source (UTC). Tests inject a controllable one to cross month and minute boundaries.
pub type Clock = Arc<dyn Fn() -> OffsetDateTime + Send + Sync>;

/// The real clock.
pub fn system_clock() -> Clock {
    Arc::new(OffsetDateTime::now_utc)
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
    /// Rate limits, demo mode, origin defaults.
    pub policy: PolicyConfig,
    /// Time source.
    pub clock: Clock,
    /// Whether the server speaks TLS (demo cookies get `Secure`).
    pub tls: bool,
    /// Where per-minute windows are counted.
    pub rate: RateWindows,
    /// The fleet's demo bucket and client (none in standalone mode).
    pub demo_bucket: Option<(async_nats::jetstream::kv::Store, async_nats::Client)>,
    /// The demo-cookie signing secret kept in the database (used when none is configured).
    pub demo_secret: String,
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
                lookups: SingleFlight::default(),
                ip_limiter: IpLimiter::new(parts.policy.per_ip_per_minute, parts.policy.proxy_hops()),
                windows: parts.rate,
                demo: {
                    let demo = Demo::new(parts.policy.demo.clone(), parts.policy.proxy_hops(), &parts.demo_secret);
                    match parts.demo_bucket {
                        Some((bucket, client)) => demo.with_fleet(bucket, client),
                        None => demo,
                    }
                },
                policy: parts.policy,
                clock: parts.clock,
                tls: parts.tls,
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

    /// Requests per minute per client address, ahead of the key lookup.
    pub fn ip_limiter(&self) -> &IpLimiter {
        &self.inner.ip_limiter
    }

    /// Availability lookups in flight, by domain: concurrent checks of one name share one job.
    pub fn lookups(&self) -> &SingleFlight<String, Result<common::verdict::Verdict, LookupError>> {
        &self.inner.lookups
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

    /// Now, from the state's clock.
    pub fn now(&self) -> OffsetDateTime {
        (self.inner.clock)()
    }

    /// Policy settings.
    pub fn policy(&self) -> &PolicyConfig {
        &self.inner.policy
    }

    /// Demo-mode state.
    pub fn demo(&self) -> &Demo {
        &self.inner.demo
    }

    /// Whether the server speaks TLS.
    pub fn tls(&self) -> bool {
        self.inner.tls
    }

    /// Counts one request of `key` in its per-minute window.
    ///
    /// # Errors
    /// 429 with the state for the headers when over the plan's limit.
    pub async fn rate_limit(&self, key: &KeyRecord) -> Result<RateState, (ApiError, RateState)> {
        let limit = self.inner.policy.per_minute.of(key.plan);
        self.inner.windows.hit(&key.id, limit, self.now()).await
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
