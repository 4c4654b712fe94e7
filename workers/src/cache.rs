//! Verdict cache (moka) with tiered time-to-live: taken-like verdicts live long, available ones
//! briefly (a name can be registered at any moment), unknown ones are never stored.
//!
//! Beside the fresh cache, a bounded *last known* store keeps every definitive verdict for the
//! longest serve-stale bound ([`StaleConfig`]), so the engine can answer from it, flagged stale,
//! when the registry gives no definitive answer.

use std::time::{Duration, Instant};

use common::verdict::{Status, Verdict};
use moka::Expiry;
use moka::future::Cache;

use crate::config::{CacheConfig, StaleConfig};

/// Cache of definitive verdicts keyed by registrable domain (A-label).
#[derive(Debug, Clone)]
pub struct VerdictCache {
    inner: Cache<String, Verdict>,
    /// Last definitive verdict per domain, kept past its fresh TTL (none when serve-stale is off).
    last_known: Option<Cache<String, Verdict>>,
}

struct TieredExpiry {
    taken: Duration,
    available: Duration,
}

impl Expiry<String, Verdict> for TieredExpiry {
    fn expire_after_create(&self, _key: &String, value: &Verdict, _created_at: Instant) -> Option<Duration> {
        Some(if value.status.is_available() { self.available } else { self.taken })
    }
}

impl VerdictCache {
    /// An empty cache with the configured capacity and lifetimes, and a last known store when
    /// serve-stale is enabled.
    pub fn new(config: &CacheConfig, stale: &StaleConfig) -> Self {
        let inner = Cache::builder()
            .max_capacity(config.capacity)
            .expire_after(TieredExpiry {
                taken: Duration::from_secs(config.taken_ttl_secs),
                available: Duration::from_secs(config.available_ttl_secs),
            })
            .build();
        let keep = stale.max_age_secs.max(stale.available_max_age_secs);
        let last_known = (stale.enabled && keep > 0 && stale.capacity > 0)
            .then(|| Cache::builder().max_capacity(stale.capacity).time_to_live(Duration::from_secs(keep)).build());
        Self { inner, last_known }
    }

    /// The cached verdict for `domain`, if still fresh.
    pub async fn get(&self, domain: &str) -> Option<Verdict> {
        self.inner.get(domain).await
    }

    /// The last definitive verdict stored for `domain`, fresh or not (within the store's
    /// lifetime); the caller applies the per-status age bound.
    pub async fn last_known(&self, domain: &str) -> Option<Verdict> {
        self.last_known.as_ref()?.get(domain).await
    }

    /// Stores a verdict (fresh cache and last known store); unknown verdicts are ignored (they
    /// must be asked again, and must not overwrite the last definitive one).
    pub async fn put(&self, verdict: &Verdict) {
        if verdict.status != Status::Unknown {
            self.inner.insert(verdict.domain.clone(), verdict.clone()).await;
            if let Some(last_known) = &self.last_known {
                last_known.insert(verdict.domain.clone(), verdict.clone()).await;
            }
        }
    }

    /// Forgets `domain` (fresh and last known).
    pub async fn forget(&self, domain: &str) {
        self.inner.invalidate(domain).await;
        if let Some(last_known) = &self.last_known {
            last_known.invalidate(domain).await;
        }
    }

    /// Forgets everything, the last known verdicts included (tests, operator reload).
    pub fn clear(&self) {
        self.inner.invalidate_all();
        if let Some(last_known) = &self.last_known {
            last_known.invalidate_all();
        }
    }
}
