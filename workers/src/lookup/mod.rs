//! Record lookups beside the availability check: the registration record behind `/v1/whois`
//! ([`Engine::registration`](crate::engine::Engine::registration), fields in
//! [`crate::engine::registration::fields`], thin-registry referrals in
//! [`crate::engine::registration::referral`]) and DNS records behind `/v1/dns` ([`dns`]).
//!
//! [`Lookups`] bundles them for the job handlers ([`crate::jobs`], run by standalone's in-process
//! bus and a fleet worker alike): the engine, the recursive resolver and a short cache of
//! registration answers.

pub mod dns;

use std::time::Duration;

use common::domain::DomainName;
use common::lookup::{DnsAnswer, DnsType, WhoisAnswer};

use crate::engine::Engine;
use crate::engine::registration::RegistrationError;
use dns::{DnsLookupError, RecordResolver};

/// What a worker needs to answer every kind of lookup. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Lookups {
    engine: Engine,
    resolver: RecordResolver,
    whois_cache: moka::future::Cache<String, WhoisAnswer>,
}

impl Lookups {
    /// Builds the lookups over `engine` (its `[engine.records]` settings).
    ///
    /// # Errors
    /// A bad resolver address or an unreadable system resolver configuration.
    pub fn new(engine: Engine) -> Result<Self, DnsLookupError> {
        let config = &engine.config().records;
        let resolver = RecordResolver::new(config)?;
        let ttl = Duration::from_secs(config.whois_cache_ttl_secs.max(1));
        let capacity = if config.whois_cache_ttl_secs == 0 { 0 } else { 50_000 };
        let whois_cache = moka::future::Cache::builder().max_capacity(capacity).time_to_live(ttl).build();
        crate::engine::count_probes(1);
        Ok(Self { engine, resolver, whois_cache })
    }

    /// The engine (check jobs, catalogue, parsing).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The registration record of `domain`, from the cache when fresh.
    ///
    /// # Errors
    /// As [`Engine::registration`].
    pub async fn whois(&self, domain: &DomainName) -> Result<WhoisAnswer, RegistrationError> {
        if let Some(hit) = self.whois_cache.get(domain.as_str()).await {
            return Ok(hit);
        }
        let answer = self.engine.registration(domain).await?;
        self.whois_cache.insert(domain.as_str().to_owned(), answer.clone()).await;
        Ok(answer)
    }

    /// DNS records of `name` (subdomains and underscore labels allowed) for `types`, in parallel.
    ///
    /// # Errors
    /// As [`RecordResolver::lookup`].
    pub async fn dns(&self, name: &str, types: &[DnsType]) -> Result<DnsAnswer, DnsLookupError> {
        self.resolver.lookup(name, types).await
    }
}
