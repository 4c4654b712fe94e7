//! Verdict cache (moka) with tiered time-to-live: taken-like verdicts live long, available ones
//! briefly (a name can be registered at any moment), unknown ones are never stored.

use std::time::{Duration, Instant};

use common::verdict::{Status, Verdict};
use moka::Expiry;
use moka::future::Cache;

use crate::config::CacheConfig;

/// Cache of definitive verdicts keyed by registrable domain (A-label).
#[derive(Debug, Clone)]
pub struct VerdictCache {
    inner: Cache<String, Verdict>,
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
    /// An empty cache with the configured capacity and lifetimes.
    pub fn new(config: &CacheConfig) -> Self {
        let inner = Cache::builder()
            .max_capacity(config.capacity)
            .expire_after(TieredExpiry {
                taken: Duration::from_secs(config.taken_ttl_secs),
                available: Duration::from_secs(config.available_ttl_secs),
            })
            .build();
        Self { inner }
    }

    /// The cached verdict for `domain`, if still fresh.
    pub async fn get(&self, domain: &str) -> Option<Verdict> {
        self.inner.get(domain).await
    }

    /// Stores a verdict; unknown verdicts are ignored (they must be asked again).
    pub async fn put(&self, verdict: &Verdict) {
        if verdict.status != Status::Unknown {
            self.inner.insert(verdict.domain.clone(), verdict.clone()).await;
        }
    }

    /// Forgets everything (tests, operator reload).
    pub fn clear(&self) {
        self.inner.invalidate_all();
    }
}
