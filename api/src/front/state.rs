//! The one cheap-to-clone application state (an `Arc` inside) shared by every handler.

use std::sync::Arc;
use std::time::Duration;

use moka::future::Cache;
use workers::book::VerdictBook;

use crate::front::credits::Credits;
use crate::front::dispatch::{BusError, JobBus};
use crate::front::error::ApiError;
use crate::front::keys::{KeyRecord, hash_key};
use crate::front::policy::{Demo, IpLimiter, PolicyConfig, RateState, RateWindows};
use crate::pricing::PriceTable;
use crate::pricing::purchase::CheckoutUrl;
use crate::singleflight::SingleFlight;
use crate::store::Store;
use time::OffsetDateTime;

/// How long a key record is cached in a front: a state change made with `dsa keys …` takes
/// effect within this many seconds.
pub const KEY_CACHE_TTL_SECS: u64 = 5;

/// How long a front keeps serving a key it has seen when the store cannot be reached: the last
/// record read is used (stale) for at most this many seconds after it was read. A revocation made
/// during an outage takes effect as soon as the store answers again.
pub const STALE_KEY_MAX_AGE_SECS: u64 = 3_600;

/// The longest wait for the store on a key lookup before the front treats it as unreachable.
pub const KEY_LOOKUP_TIMEOUT: Duration = Duration::from_secs(2);

/// After a failed key lookup, how long lookups skip the store (serving known keys from their
/// last record, unknown keys a fast 503) before one tries it again.
pub const KEY_STORE_RETRY: Duration = Duration::from_secs(2);

/// Shared state.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    book: VerdictBook,
    bus: Arc<dyn JobBus>,
    store: Arc<dyn Store>,
    credits: Credits,
    prices: PriceTable,
    platform_checkout: Option<CheckoutUrl>,
    keys: Cache<String, Option<Arc<KeyRecord>>>,
    known_keys: Cache<String, Arc<KeyRecord>>,
    key_store_down_until: std::sync::Mutex<Option<std::time::Instant>>,
    check_deadline: Duration,
    lookups: SingleFlight<String, Result<common::verdict::Verdict, BusError>>,
    ip_limiter: IpLimiter,
    policy: PolicyConfig,
    windows: RateWindows,
    demo: Demo,
    clock: Clock,
    tls: bool,
    request_timeout: Duration,
    portal: crate::portal::service::Portal,
    webhooks: crate::webhooks::WebhookConfig,
    /// The `GET /v1/tlds` body, built on first use (catalogue, engine config and prices are fixed
    /// for the life of the state).
    tld_listing: std::sync::OnceLock<bytes::Bytes>,
    /// The `[watches]` settings, set once by whoever assembles the state (default otherwise).
    watches: std::sync::OnceLock<crate::watches::WatchesConfig>,
}

/// An [`AppState`] that does not keep it alive ([`AppState::downgrade`]).
#[derive(Clone)]
pub struct WeakAppState(std::sync::Weak<Inner>);

impl WeakAppState {
    /// The state, while some part of the application still holds it.
    pub fn upgrade(&self) -> Option<AppState> {
        self.0.upgrade().map(|inner| AppState { inner })
    }
}

impl std::fmt::Debug for WeakAppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeakAppState").finish_non_exhaustive()
    }
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
    /// What the front knows without asking a worker: catalogue, verdict cache, health and
    /// routes (standalone: the book of the engine its in-process workers share; fleet: the
    /// front's own, with no probe behind it).
    pub book: VerdictBook,
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
    /// Longest time one request may take (`server.request_timeout_secs`): past it, a 500 in the
    /// spec's shape.
    pub request_timeout: Duration,
    /// Where per-minute windows are counted.
    pub rate: RateWindows,
    /// The fleet's demo bucket and client (none in standalone mode).
    pub demo_bucket: Option<(async_nats::jetstream::kv::Store, async_nats::Client)>,
    /// The demo-cookie signing secret kept in the database (used when none is configured).
    pub demo_secret: String,
    /// Webhook settings (issue 25).
    pub webhooks: crate::webhooks::WebhookConfig,
}

impl AppState {
    /// Assembles the state.
    pub fn new(parts: Parts) -> Self {
        // The suggestion word model loads in the background so no request waits for it.
        std::thread::spawn(crate::suggest::Words::warm_up);
        let check_deadline = Duration::from_secs_f64(parts.book.config().check_deadline_secs.max(0.01));
        let keys = Cache::builder().max_capacity(100_000).time_to_live(Duration::from_secs(KEY_CACHE_TTL_SECS)).build();
        Self {
            inner: Arc::new(Inner {
                book: parts.book,
                bus: parts.bus,
                store: parts.store,
                credits: parts.credits,
                prices: parts.prices,
                platform_checkout: parts.platform_checkout,
                keys,
                known_keys: Cache::builder()
                    .max_capacity(1_000_000)
                    .time_to_live(Duration::from_secs(STALE_KEY_MAX_AGE_SECS))
                    .build(),
                key_store_down_until: std::sync::Mutex::new(None),
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
                portal: crate::portal::service::Portal::new(parts.policy.portal.clone(), parts.policy.proxy_hops()),
                policy: parts.policy,
                clock: parts.clock,
                tls: parts.tls,
                request_timeout: parts.request_timeout,
                tld_listing: std::sync::OnceLock::new(),
                webhooks: parts.webhooks,
                watches: std::sync::OnceLock::new(),
            }),
        }
    }

    /// A handle that does not keep the state alive (a background task such as the bulk job
    /// runner stops when the state is gone, so it never holds the ledger channel open).
    pub fn downgrade(&self) -> WeakAppState {
        WeakAppState(Arc::downgrade(&self.inner))
    }

    /// The account portal's settings and sign-in limiters.
    pub fn portal(&self) -> &crate::portal::service::Portal {
        &self.inner.portal
    }

    /// The verdict book: catalogue, verdict cache (hits, stale), health and routes.
    pub fn book(&self) -> &VerdictBook {
        &self.inner.book
    }

    /// The job bus.
    pub fn bus(&self) -> &dyn JobBus {
        self.inner.bus.as_ref()
    }

    /// A handle on the job bus for work that outlives the request (a shared lookup).
    pub fn bus_handle(&self) -> Arc<dyn JobBus> {
        self.inner.bus.clone()
    }

    /// Requests per minute per client address, ahead of the key lookup.
    pub fn ip_limiter(&self) -> &IpLimiter {
        &self.inner.ip_limiter
    }

    /// Availability lookups in flight, by domain: concurrent checks of one name share one job.
    pub fn lookups(&self) -> &SingleFlight<String, Result<common::verdict::Verdict, BusError>> {
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

    /// Webhook settings.
    pub fn webhooks(&self) -> &crate::webhooks::WebhookConfig {
        &self.inner.webhooks
    }

    /// The `[watches]` settings (the fee, the limits, the scheduler's rhythm).
    pub fn watches_config(&self) -> &crate::watches::WatchesConfig {
        static DEFAULT: std::sync::OnceLock<crate::watches::WatchesConfig> = std::sync::OnceLock::new();
        self.inner.watches.get().unwrap_or_else(|| DEFAULT.get_or_init(Default::default))
    }

    /// Sets the `[watches]` settings (once; a second call changes nothing).
    pub fn set_watches_config(&self, config: crate::watches::WatchesConfig) {
        let _ = self.inner.watches.set(config);
    }

    /// The state's clock itself (background work that must share the requests' time: the webhook
    /// delivery loop, the watch scheduler).
    pub fn clock(&self) -> Clock {
        self.inner.clock.clone()
    }

    /// Rate limits, demo mode, origin defaults.
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

    /// Whether a key lookup failed within the last [`KEY_STORE_RETRY`] (lookups then skip the
    /// store instead of each waiting for it).
    fn key_store_down(&self) -> bool {
        let until = self.inner.key_store_down_until.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        until.is_some_and(|t| std::time::Instant::now() < t)
    }

    fn mark_key_store_down(&self) {
        let mut until = self.inner.key_store_down_until.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *until = Some(std::time::Instant::now() + KEY_STORE_RETRY);
    }

    /// Longest time one request may take before the front answers 500 (`server.request_timeout_secs`).
    pub fn request_timeout(&self) -> Duration {
        self.inner.request_timeout
    }

    /// Whether session cookies get `Secure`: dsa serves TLS itself, or `policy.demo.cookie_secure`
    /// says a proxy in front of it does.
    pub fn cookie_secure(&self) -> bool {
        self.inner.tls || self.inner.policy.demo.cookie_secure
    }

    /// The `GET /v1/tlds` JSON body: built by `build` on the first call, the same bytes after.
    pub fn tld_listing(&self, build: impl FnOnce(&Self) -> bytes::Bytes) -> bytes::Bytes {
        self.inner.tld_listing.get_or_init(|| build(self)).clone()
    }

    /// Deadline of one fresh check (the job bus wait).
    pub fn check_deadline(&self) -> Duration {
        self.inner.check_deadline
    }

    /// The active key for a presented client key.
    ///
    /// # Errors
    /// [`ApiError::InvalidKey`] when not found, disabled or suspended (spec §5.2);
    /// [`ApiError::Unavailable`] (503) when the store does not answer within
    /// [`KEY_LOOKUP_TIMEOUT`] and this front has not seen the key in the last
    /// [`STALE_KEY_MAX_AGE_SECS`] (a key it has seen is served from its last record).
    pub async fn key(&self, presented: &str) -> Result<Arc<KeyRecord>, ApiError> {
        let hash = hash_key(presented);
        // A cache hit (every request of a known key but one each `KEY_CACHE_TTL_SECS`) costs one
        // read: the last-record store below is written only when the store is read.
        let found = if let Some(found) = self.inner.keys.get(&hash).await {
            Ok(found)
        } else if self.key_store_down() {
            // While the store is known to be down, don't make every request wait for it: the
            // last record read, else a fast 503.
            Err(Arc::new(anyhow::anyhow!("key store marked unreachable")))
        } else {
            let (store, known) = (self.inner.store.clone(), self.inner.known_keys.clone());
            let lookup_hash = hash.clone();
            let found = self
                .inner
                .keys
                .try_get_with(hash.clone(), async move {
                    let found = match tokio::time::timeout(KEY_LOOKUP_TIMEOUT, store.find_key(&lookup_hash)).await {
                        Ok(found) => found?.map(Arc::new),
                        Err(_) => anyhow::bail!("no answer within {} s", KEY_LOOKUP_TIMEOUT.as_secs()),
                    };
                    match &found {
                        Some(key) => known.insert(lookup_hash, key.clone()).await,
                        None => known.invalidate(&lookup_hash).await,
                    }
                    Ok(found)
                })
                .await;
            if found.is_err() {
                self.mark_key_store_down();
            }
            found
        };
        let found = match found {
            Ok(found) => found,
            Err(e) => match self.inner.known_keys.get(&hash).await {
                Some(stale) => {
                    tracing::warn!(error = %e, key_id = %stale.id, "key store unreachable; serving the last record read");
                    metrics::counter!("dsa_stale_key_records_total").increment(1);
                    Some(stale)
                }
                None => {
                    tracing::error!(error = %e, "key lookup failed and the key is not known to this front");
                    return Err(ApiError::Unavailable);
                }
            },
        };
        match found {
            Some(key) if key.state == crate::front::keys::KeyState::Active => Ok(key),
            _ => Err(ApiError::InvalidKey),
        }
    }
}
