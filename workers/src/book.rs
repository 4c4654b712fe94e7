//! The verdict book: what is known about suffixes and names without asking anyone, the part of
//! the engine a front reads.
//!
//! It holds the TLD catalogue (parsing a [`DomainName`], the entry governing it, the lookup chain
//! as configured), the verdict cache with its last known store (fresh hits, serve-stale), the
//! health book (`GET /v1/tlds/{tld}`) and the route book (WHOIS first while RDAP fails). It builds
//! no probe and no politeness limiter: a fleet front holds a book of its own and never an
//! [`crate::engine::Engine`]; a standalone front reads the book of the engine its in-process
//! workers share ([`crate::engine::Engine::book`]), so a verdict is cached once.

use std::sync::{Arc, OnceLock};

use common::catalogue::{Catalogue, LookupMethod, RegistrationPolicy, TldEntry};
use common::domain::{DomainError, DomainName};
use common::verdict::{Method, Verdict};
use time::OffsetDateTime;

use crate::cache::VerdictCache;
use crate::config::EngineConfig;
use crate::engine::{ChainStep, EngineError, StaleVerdict};
use crate::health::HealthBook;
use crate::politeness::{Budget, Politeness};
use crate::probe::Protocol;
use crate::routing::{ConsensusHold, LocalRoutes, RouteBook};

/// Why a suffix requires a second signal before "available" now (see
/// [`crate::config::ConsensusConfig`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConsensusSource {
    /// The operator's `engine.consensus.suffixes`.
    Config,
    /// The catalogue entry's `consensus` member (a record of false "not found" answers).
    Catalogue,
    /// Two signals disagreed there less than `engine.consensus.hold_secs` ago.
    Disagreement,
}

/// Consensus for one suffix as this book sees it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsensusState {
    /// Whether consensus may be used at all for the suffix (enabled, not overridden off): where
    /// it is not required, an audit may still confirm an "available".
    pub allowed: bool,
    /// Why a second signal is required now; `None`: one registry answer decides.
    pub required: Option<ConsensusSource>,
    /// The record of observed disagreements, when there is one (in a fleet, the shared one).
    pub hold: Option<ConsensusHold>,
}

/// The verdict book. Cheap to clone (one `Arc` inside).
#[derive(Debug, Clone)]
pub struct VerdictBook {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    catalogue: Arc<Catalogue>,
    config: EngineConfig,
    cache: VerdictCache,
    health: HealthBook,
    /// Routing decisions of this process (standalone, or a fleet member without the bucket).
    local_routes: LocalRoutes,
    /// Routing decisions shared by the fleet (set once, fleet mode).
    shared_routes: OnceLock<Arc<dyn RouteBook>>,
    /// The politeness state of the engine probing in this process, when one does (standalone):
    /// `GET /v1/tlds/{tld}` shows its budgets.
    politeness: OnceLock<Arc<Politeness>>,
}

impl VerdictBook {
    /// A book with the catalogue named by the config (or the embedded one).
    ///
    /// # Errors
    /// When the catalogue cannot be loaded.
    pub fn new(config: EngineConfig) -> Result<Self, EngineError> {
        let catalogue = match &config.catalogue {
            Some(path) => Catalogue::load(path)?,
            None => Catalogue::embedded()?,
        };
        Ok(Self::with_catalogue(config, Arc::new(catalogue)))
    }

    /// A book over an already loaded catalogue.
    pub fn with_catalogue(config: EngineConfig, catalogue: Arc<Catalogue>) -> Self {
        let inner = Inner {
            cache: VerdictCache::new(&config.cache, &config.stale),
            health: HealthBook::new(config.routing.clone()),
            local_routes: LocalRoutes::default(),
            shared_routes: OnceLock::new(),
            politeness: OnceLock::new(),
            catalogue,
            config,
        };
        Self { inner: Arc::new(inner) }
    }

    /// The TLD catalogue in use.
    pub fn catalogue(&self) -> &Arc<Catalogue> {
        &self.inner.catalogue
    }

    /// The configuration in use.
    pub fn config(&self) -> &EngineConfig {
        &self.inner.config
    }

    /// Parses user input into a registrable domain with this book's catalogue.
    ///
    /// # Errors
    /// See [`DomainName::parse`].
    pub fn parse(&self, input: &str) -> Result<DomainName, DomainError> {
        DomainName::parse(input, &self.inner.catalogue)
    }

    /// The catalogue entry governing `domain`, if its suffix is supported.
    ///
    /// # Errors
    /// [`EngineError::UnsupportedTld`] when dsa cannot give a definitive answer for the suffix.
    pub fn entry(&self, domain: &DomainName) -> Result<&TldEntry, EngineError> {
        let unsupported = |reason: String| EngineError::UnsupportedTld { suffix: domain.suffix().to_owned(), reason };
        let entry = self.inner.catalogue.resolve(domain.suffix()).map_err(unsupported)?.entry();
        if entry.is_supported() { Ok(entry) } else { Err(unsupported(entry.reason.clone())) }
    }

    /// A fresh cached verdict for `domain`, reported with method `cache`.
    pub async fn cached(&self, domain: &DomainName) -> Option<Verdict> {
        let mut verdict = self.inner.cache.get(domain.as_str()).await?;
        verdict.evidence = format!("cached: {}", verdict.evidence);
        verdict.method = Method::Cache;
        verdict.authoritative = false;
        Some(verdict)
    }

    /// Keeps a verdict about `domain` obtained elsewhere (a fleet front caches what its workers
    /// answered, so a repeated check costs no NATS round trip, and keeps it as the last known
    /// one). Unknown verdicts are ignored. A definitive verdict also moves its suffix's
    /// `last_definitive_at` in the [`HealthBook`] (which is how a fleet front, which runs no
    /// probes, knows it).
    pub async fn remember(&self, domain: &DomainName, verdict: &Verdict) {
        if !verdict.status.is_definitive() {
            return;
        }
        self.inner.cache.put(verdict).await;
        if let Ok(resolution) = self.inner.catalogue.resolve(domain.suffix()) {
            self.inner.health.definitive(&resolution.entry().suffix, verdict.checked_at);
        }
    }

    /// Keeps the verdict the engine decided (unknown ones are ignored by the cache), and moves
    /// `last_definitive_at` of the catalogue suffix `suffix` for a definitive one.
    pub(crate) async fn decided(&self, suffix: &str, verdict: &Verdict) {
        self.inner.cache.put(verdict).await;
        if verdict.status.is_definitive() {
            self.inner.health.definitive(suffix, verdict.checked_at);
        }
    }

    /// The last known definitive verdict for `domain`, if serve-stale is enabled and it is
    /// younger than its bound (`engine.stale.available_max_age_secs` for available,
    /// `engine.stale.max_age_secs` for every other status), else `None`. For use only when the
    /// registry gave no definitive answer now.
    pub async fn stale(&self, domain: &DomainName) -> Option<StaleVerdict> {
        let config = &self.inner.config.stale;
        if !config.enabled {
            return None;
        }
        let mut verdict = self.inner.cache.last_known(domain.as_str()).await?;
        let age = (OffsetDateTime::now_utc() - verdict.checked_at).max(time::Duration::ZERO);
        let bound = if verdict.status.is_available() { config.available_max_age_secs } else { config.max_age_secs };
        // Where consensus is required now, only a confirmed "available" may stand in.
        if verdict.status.is_available()
            && verdict.confirmed_by.is_none()
            && let Ok(entry) = self.entry(domain)
            && self.consensus(entry, false).await.required.is_some()
        {
            return None;
        }
        let bound = time::Duration::seconds(i64::try_from(bound).unwrap_or(i64::MAX));
        if age > bound {
            return None;
        }
        let age_secs = u64::try_from(age.whole_seconds()).unwrap_or(0);
        verdict.evidence = format!("stale ({age_secs} s old): {}", verdict.evidence);
        verdict.method = Method::Cache;
        verdict.authoritative = false;
        Some(StaleVerdict { verdict, age_secs })
    }

    /// Per-suffix, per-method outcomes of this process's probes over the last hour.
    pub fn health(&self) -> &HealthBook {
        &self.inner.health
    }

    /// Keeps the self-correcting routing decisions in `book` instead of in this process (fleet
    /// mode: [`crate::fleet::FleetRoutes`], shared by every worker and front). Can be set once.
    pub fn set_route_book(&self, book: Arc<dyn RouteBook>) {
        let _ = self.inner.shared_routes.set(book);
    }

    /// The route book in use (the fleet's when set, else this process's).
    pub(crate) fn routes(&self) -> &dyn RouteBook {
        match self.inner.shared_routes.get() {
            Some(book) => book.as_ref(),
            None => &self.inner.local_routes,
        }
    }

    /// While RDAP is demoted for the catalogue suffix `suffix` (see [`crate::routing`]): until
    /// when WHOIS is asked first. In a fleet this is the fleet's shared state.
    pub async fn whois_first_until(&self, suffix: &str) -> Option<OffsetDateTime> {
        self.routes().whois_first_until(suffix, OffsetDateTime::now_utc()).await
    }

    /// Whether, and why, `entry`'s suffix requires a second signal before "available" now (see
    /// [`crate::config::ConsensusConfig`] for the order of the sources). Reads the route book
    /// (the fleet's bucket in a fleet) only when the configuration and the catalogue leave it
    /// open, or always with `with_hold` (for display).
    pub async fn consensus(&self, entry: &TldEntry, with_hold: bool) -> ConsensusState {
        let config = &self.inner.config.consensus;
        let overridden = config.suffixes.get(entry.suffix.as_str()).or_else(|| config.suffixes.get("*")).copied();
        let allowed = config.enabled && overridden != Some(false);
        let fixed = match overridden {
            _ if !allowed => None,
            Some(true) => Some(ConsensusSource::Config),
            _ if entry.requires_consensus() => Some(ConsensusSource::Catalogue),
            _ => None,
        };
        let hold = if with_hold || (allowed && fixed.is_none()) {
            self.routes().consensus_hold(&entry.suffix).await
        } else {
            None
        };
        let held = allowed && hold.as_ref().is_some_and(|h| h.active(OffsetDateTime::now_utc()));
        let required = fixed.or(held.then_some(ConsensusSource::Disagreement));
        ConsensusState { allowed, required, hold }
    }

    /// Forgets what the cache holds about `domain` (fresh and last known): its signals disagreed,
    /// so an earlier "available" must not be served again, fresh or stale.
    pub(crate) async fn forget(&self, domain: &DomainName) {
        self.inner.cache.forget(domain.as_str()).await;
    }

    /// Shows `politeness` (the engine probing in this process) in [`Self::budget`]. Set once.
    pub(crate) fn attach_politeness(&self, politeness: Arc<Politeness>) {
        let _ = self.inner.politeness.set(politeness);
    }

    /// The politeness budget of one upstream host as this process spends it, when probes run in
    /// this process; `None` where they run elsewhere (a fleet front).
    pub fn budget(&self, protocol: Protocol, host: &str) -> Option<Budget> {
        self.inner.politeness.get().map(|p| p.budget(protocol, host))
    }

    /// The lookup chain of a catalogue entry as the engine runs it, in order: the DNS pre-check
    /// (when enabled and the zone has name servers), then the registry methods of the catalogue's
    /// chain that are enabled. Empty for a restricted zone (answered by policy, no query). The
    /// upstream of each step honours the configured overrides.
    pub fn chain(&self, entry: &TldEntry) -> Vec<ChainStep> {
        let config = &self.inner.config;
        if matches!(entry.policy, RegistrationPolicy::Restricted { .. }) {
            return Vec::new();
        }
        let mut chain = Vec::new();
        let dns_overrides = &config.dns.nameserver_overrides;
        let dns_override = dns_overrides.get(entry.suffix.as_str()).or_else(|| dns_overrides.get("*"));
        let has_servers = !entry.nameservers.is_empty() || dns_override.is_some();
        if config.dns.enabled && has_servers && (dns_override.is_some() || !config.overrides_only) {
            let upstream = dns_override.and_then(|l| l.first()).or_else(|| entry.nameservers.first()).cloned();
            chain.push(ChainStep { protocol: Protocol::Dns, upstream });
        }
        for method in &entry.methods {
            match method {
                LookupMethod::Rdap if config.rdap.enabled => {
                    // No base (overrides_only without an override): the engine skips RDAP.
                    if let Some(base) = self.rdap_base_of(&entry.suffix, entry) {
                        let upstream = url::Url::parse(base).ok().and_then(|u| u.host_str().map(str::to_owned));
                        chain.push(ChainStep { protocol: Protocol::Rdap, upstream });
                    }
                }
                LookupMethod::Whois if config.whois.enabled => {
                    let Some(server) = &entry.whois else { continue };
                    if !config.overrides_only || config.whois.addr_overrides.contains_key(&server.host) {
                        chain.push(ChainStep { protocol: Protocol::Whois, upstream: Some(server.host.clone()) });
                    }
                }
                _ => {}
            }
        }
        chain
    }

    /// The RDAP base URL the engine asks for a registry suffix governed by `entry`:
    /// `engine.rdap.base_overrides` first (the suffix, then `*`), else the catalogue's (HTTPS
    /// first); `None` when there is none or `overrides_only` leaves none.
    pub fn rdap_base_of<'a>(&'a self, suffix: &str, entry: &'a TldEntry) -> Option<&'a str> {
        let overrides = &self.inner.config.rdap.base_overrides;
        if let Some(base) = overrides.get(suffix).or_else(|| overrides.get(entry.suffix.as_str())) {
            return Some(base);
        }
        if !entry.rdap.is_empty()
            && let Some(base) = overrides.get("*")
        {
            return Some(base);
        }
        if self.inner.config.overrides_only {
            return None;
        }
        entry.rdap.iter().find(|b| b.starts_with("https://")).or_else(|| entry.rdap.first()).map(String::as_str)
    }
}
