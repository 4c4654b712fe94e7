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
    ///
    /// Background work ([`common::priority`], [`crate::politeness::background`]: a bulk job's or
    /// a watch's check) refreshes a name
    /// either store already holds but admits no new one: a 100,000-name job would otherwise fill
    /// both stores (`engine.cache.capacity`, `engine.stale.capacity`) with names nobody asks
    /// again, and a process's memory would grow with the size of the jobs it ran.
    pub async fn put(&self, verdict: &Verdict) {
        if verdict.status == Status::Unknown {
            return;
        }
        // A worker runs a background job inside `politeness::background`; a fleet front
        // remembers its workers' answers inside the job's `common::priority` scope.
        let refresh_only =
            crate::politeness::is_background() || common::priority::current() == common::priority::Priority::Background;
        if !refresh_only || self.inner.contains_key(&verdict.domain) {
            self.inner.insert(verdict.domain.clone(), verdict.clone()).await;
        }
        if let Some(last_known) = &self.last_known
            && (!refresh_only || last_known.contains_key(&verdict.domain))
        {
            last_known.insert(verdict.domain.clone(), verdict.clone()).await;
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

#[cfg(test)]
mod tests {
    use common::verdict::Method;

    use super::*;

    fn verdict(domain: &str, status: Status) -> Verdict {
        Verdict {
            domain: domain.to_owned(),
            status,
            method: Method::Rdap,
            authoritative: true,
            checked_at: time::OffsetDateTime::now_utc(),
            evidence: "test".into(),
            confirmed_by: None,
        }
    }

    #[tokio::test]
    async fn background_work_refreshes_the_names_held_and_admits_no_new_one() {
        let cache = VerdictCache::new(&CacheConfig::default(), &StaleConfig::default());
        // A user's check is kept in both stores.
        cache.put(&verdict("asked.com", Status::Taken)).await;
        // A bulk job's check of a new name is kept in neither, whether the worker's scope or the
        // front's says it is background work.
        common::priority::background(cache.put(&verdict("listed.com", Status::Available))).await;
        crate::politeness::background(cache.put(&verdict("listed.org", Status::Available))).await;
        for name in ["listed.com", "listed.org"] {
            assert!(cache.get(name).await.is_none(), "{name}");
            assert!(cache.last_known(name).await.is_none(), "{name}");
        }
        // A bulk job's check of a name held refreshes it in both.
        common::priority::background(cache.put(&verdict("asked.com", Status::PendingDelete))).await;
        assert_eq!(cache.get("asked.com").await.map(|v| v.status), Some(Status::PendingDelete));
        assert_eq!(cache.last_known("asked.com").await.map(|v| v.status), Some(Status::PendingDelete));
    }
}
