//! The verdict: the order in which the engine asks, and what each answer proves.
//!
//! For one registrable domain:
//! 1. a fresh cached verdict answers at once (method `cache`);
//! 2. a restricted zone (`.gov.af`, brand TLDs…) answers `restricted` by policy, no query;
//! 3. the DNS pre-check asks the zone's authoritative servers: a delegation proves `taken`;
//! 4. otherwise each registry method of the catalogue's chain (RDAP, then WHOIS) is asked until
//!    one is definitive: RDAP 200 → taken (or pending delete), RDAP 404 from the suffix's own
//!    registry server (not one reached by redirect) → available; WHOIS markers → available /
//!    taken / reserved. While RDAP keeps failing for a suffix and WHOIS answers, WHOIS is asked
//!    first there for a while, fleet-wide in a fleet (see [`crate::routing`] and `engine.routing`);
//! 5. an `available` answer where the suffix requires consensus (catalogue, configuration, or a
//!    recent disagreement; see [`consensus`]) is confirmed by a second, independent signal —
//!    the other registry service, else the TLD's authoritative name servers — and becomes
//!    `unknown` when that signal says the name is registered (or none can be had);
//! 6. nothing definitive → `unknown`, which the front reports as 502 and never as available.
//!
//! "Available" is therefore only ever the registry's own word (house rule: never a DNS-only
//! inference, a registrar's "no match", or text that matched no marker).
//!
//! Every probe exchange is also noted in the [`HealthBook`] (per suffix and method, last hour),
//! and every definitive verdict is kept in the cache's last known store, from which
//! [`Engine::stale`] answers (flagged) when the registry gives no definitive answer.

// Registry text is read here too (registration fields, referrals): no string is sliced with an
// offset found in another (house rule 15).
#![deny(clippy::string_slice)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use common::catalogue::{Catalogue, CatalogueError, LookupMethod, RegistrationPolicy, TldEntry};
use common::domain::{DomainError, DomainName};
use common::record::DomainRecord;
use common::verdict::{Method, Status, Verdict};
use time::OffsetDateTime;
use tracing::{debug, instrument};

pub mod consensus;
pub mod registration;

use crate::book::VerdictBook;
use crate::config::EngineConfig;
use crate::health::{HealthBook, Reroute};
use crate::parse::rdap::{RdapClass, read_rdap_for};
use crate::parse::whois::{WhoisClass, read_whois_for};
use crate::politeness::{Budget, Politeness, UpstreamBudget};
use crate::probe::dns::{Delegation, DnsProbe};
use crate::probe::rdap::RdapProbe;
use crate::probe::whois::WhoisProbe;
use crate::probe::{ProbeError, Protocol};
use crate::routing::RouteBook;

/// Errors of the engine that are the caller's fault or configuration faults (never upstream
/// trouble, which becomes an `unknown` verdict).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The suffix is in the root zone but dsa has no registry method for it.
    #[error("Unsupported TLD: .{suffix} ({reason})")]
    UnsupportedTld {
        /// The registry suffix.
        suffix: String,
        /// Why it is unsupported.
        reason: String,
    },
    /// The catalogue could not be loaded.
    #[error(transparent)]
    Catalogue(#[from] CatalogueError),
    /// The HTTP client could not be built.
    #[error("cannot build the RDAP client: {0}")]
    Http(#[from] reqwest::Error),
    /// The WHOIS marker data shipped with the binary is invalid.
    #[error("WHOIS marker data: {0}")]
    Markers(String),
}

/// One probe step taken while deciding a verdict (the evidence trail of `dsa check`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Step {
    /// Protocol asked.
    pub protocol: Protocol,
    /// Upstream asked (host or address).
    pub upstream: String,
    /// What it said, in words.
    pub outcome: String,
}

/// Longest time the DNS pre-check may take, seconds (it also gets at most a quarter of the check
/// deadline), so the registry methods always have time left.
pub const DNS_PRECHECK_MAX_SECS: f64 = 2.0;

/// A verdict with the evidence trail and the registration facts read on the way.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    /// The verdict.
    pub verdict: Verdict,
    /// Every probe step, in order.
    pub steps: Vec<Step>,
    /// Registration facts from the registry answer, when one was read.
    pub record: Option<DomainRecord>,
    /// For an unknown verdict: whether a retry may give a definitive one (false for answers that
    /// will not change, such as an oversized body). Always false for definitive verdicts.
    pub retryable: bool,
}

/// Why a registry method gave no definitive answer, kept typed up to the verdict so the worker
/// can tell trouble that may pass (timeouts, resets, throttling, 5xx) from answers that will not
/// change on a retry (an oversized body, an unreadable text). Private to the engine: it ends as
/// an unknown verdict's evidence and [`Report::retryable`], never as an error of the check path.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Failure {
    /// The method that failed.
    method: Method,
    /// What happened, for the evidence.
    message: String,
    /// Whether asking again may give a definitive answer.
    retryable: bool,
}

impl Failure {
    fn new(method: Method, message: impl Into<String>, retryable: bool) -> Self {
        Self { method, message: message.into(), retryable }
    }

    fn probe(method: Method, e: &ProbeError) -> Self {
        Self::new(method, e.to_string(), e.is_retryable())
    }
}

/// The availability engine. Cheap to clone (one `Arc` inside).
#[derive(Debug, Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Catalogue, configuration, verdict cache, health and routes (shared with a standalone
    /// front, which reads it).
    book: VerdictBook,
    dns: DnsProbe,
    rdap: RdapProbe,
    whois: WhoisProbe,
    politeness: Arc<Politeness>,
    rdap_hosts: BTreeSet<String>,
    /// "Available" answers seen where consensus is not required (the audit samples one in
    /// `engine.consensus.audit_one_in`).
    unconfirmed: AtomicU64,
}

/// What the DNS pre-check came to.
#[derive(Debug)]
enum Precheck {
    /// A delegation: the name is taken (the verdict).
    Taken(Verdict),
    /// The name server at this address said the name is not delegated.
    NotDelegated(String),
    /// No answer (no server, errors, politeness).
    Nothing,
}

/// Probes (DNS, RDAP, WHOIS, politeness limiters and record resolvers) built by this process so
/// far: a fleet front builds none (its test reads this after serving checks).
static PROBES_BUILT: AtomicU64 = AtomicU64::new(0);

/// How many probes (DNS, RDAP, WHOIS clients, politeness limiters, record resolvers) this process
/// has built: four per [`Engine`], one per [`crate::lookup::Lookups`]; zero in a fleet front.
pub fn probes_built() -> u64 {
    PROBES_BUILT.load(Ordering::Relaxed)
}

/// Counts `n` probes built (see [`probes_built`]).
pub(crate) fn count_probes(n: u64) {
    PROBES_BUILT.fetch_add(n, Ordering::Relaxed);
}

/// A last known verdict served because the registry gave no definitive answer now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleVerdict {
    /// The verdict as first obtained, reported with method `cache` and not authoritative.
    pub verdict: Verdict,
    /// Seconds since the evidence was obtained (`now - checked_at`, whole seconds, rounded down).
    pub age_secs: u64,
}

/// One step of a suffix's lookup chain as this engine runs it, with the upstream it asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainStep {
    /// The protocol.
    pub protocol: Protocol,
    /// The upstream host (RDAP host, WHOIS host, a name server) this engine would ask, when one
    /// is known without resolving anything.
    pub upstream: Option<String>,
}

impl Engine {
    /// An engine with the catalogue named by the config (or the embedded one).
    ///
    /// # Errors
    /// When the catalogue cannot be loaded or the HTTP client cannot be built.
    pub fn new(config: EngineConfig) -> Result<Self, EngineError> {
        Self::with_book(VerdictBook::new(config)?)
    }

    /// An engine over an already loaded catalogue.
    ///
    /// # Errors
    /// When the HTTP client cannot be built.
    pub fn with_catalogue(config: EngineConfig, catalogue: Arc<Catalogue>) -> Result<Self, EngineError> {
        Self::with_book(VerdictBook::with_catalogue(config, catalogue))
    }

    /// An engine that keeps what it learns in `book` (and shows its politeness budgets there).
    ///
    /// # Errors
    /// When the HTTP client cannot be built or the WHOIS marker data is invalid.
    pub fn with_book(book: VerdictBook) -> Result<Self, EngineError> {
        crate::parse::whois::validate_marker_data().map_err(|e| EngineError::Markers(e.to_string()))?;
        let (config, catalogue) = (book.config(), book.catalogue());
        let mut rdap_hosts = BTreeSet::new();
        let bases = catalogue.entries().flat_map(|e| e.rdap.iter()).chain(config.rdap.base_overrides.values());
        for base in bases {
            if let Some(host) = url::Url::parse(base).ok().and_then(|u| u.host_str().map(str::to_ascii_lowercase)) {
                rdap_hosts.insert(host);
            }
        }
        let politeness = Arc::new(Politeness::new(config.limits.clone()));
        book.attach_politeness(politeness.clone());
        let inner = Inner {
            dns: DnsProbe::new(config.dns.clone(), config.overrides_only),
            rdap: RdapProbe::new(config.rdap.clone())?,
            whois: WhoisProbe::new(config.whois.clone()),
            politeness,
            rdap_hosts,
            book,
            unconfirmed: AtomicU64::new(0),
        };
        count_probes(4);
        Ok(Self { inner: Arc::new(inner) })
    }

    /// Makes every RDAP and WHOIS slot also take a slot from `budget` (in fleet mode the
    /// fleet-wide one; see [`Politeness::set_upstream_budget`]).
    pub fn set_upstream_budget(&self, budget: Arc<dyn UpstreamBudget>) {
        self.inner.politeness.set_upstream_budget(budget);
    }

    /// Keeps the self-correcting routing decisions in `book` instead of in this process (fleet
    /// mode: [`crate::fleet::FleetRoutes`], shared by every worker and front). Can be set once.
    pub fn set_route_book(&self, book: Arc<dyn RouteBook>) {
        self.inner.book.set_route_book(book);
    }

    fn routes(&self) -> &dyn RouteBook {
        self.inner.book.routes()
    }

    /// The verdict book this engine keeps what it learns in (catalogue, cache, health, routes):
    /// what a standalone front reads.
    pub fn book(&self) -> &VerdictBook {
        &self.inner.book
    }

    /// While RDAP is demoted for the catalogue suffix `suffix` (see [`crate::routing`]): until
    /// when WHOIS is asked first. In a fleet this is the fleet's shared state.
    pub async fn whois_first_until(&self, suffix: &str) -> Option<OffsetDateTime> {
        self.inner.book.whois_first_until(suffix).await
    }

    /// The TLD catalogue in use.
    pub fn catalogue(&self) -> &Arc<Catalogue> {
        self.inner.book.catalogue()
    }

    /// The configuration in use.
    pub fn config(&self) -> &EngineConfig {
        self.inner.book.config()
    }

    /// Parses user input into a registrable domain with this engine's catalogue.
    ///
    /// # Errors
    /// See [`DomainName::parse`].
    pub fn parse(&self, input: &str) -> Result<DomainName, DomainError> {
        self.inner.book.parse(input)
    }

    /// The catalogue entry governing `domain`, if its suffix is supported.
    ///
    /// # Errors
    /// [`EngineError::UnsupportedTld`] when dsa cannot give a definitive answer for the suffix.
    pub fn entry(&self, domain: &DomainName) -> Result<&TldEntry, EngineError> {
        self.inner.book.entry(domain)
    }

    /// Keeps a verdict about `domain` obtained elsewhere (see [`VerdictBook::remember`]).
    pub async fn remember(&self, domain: &DomainName, verdict: &Verdict) {
        self.inner.book.remember(domain, verdict).await;
    }

    /// The last known definitive verdict for `domain`, if serve-stale is enabled and it is
    /// younger than its bound (`engine.stale.available_max_age_secs` for available,
    /// `engine.stale.max_age_secs` for every other status), else `None`. For use only when the
    /// registry gave no definitive answer now.
    pub async fn stale(&self, domain: &DomainName) -> Option<StaleVerdict> {
        self.inner.book.stale(domain).await
    }

    /// Per-suffix, per-method outcomes of this process's probes over the last hour.
    pub fn health(&self) -> &HealthBook {
        self.inner.book.health()
    }

    /// The politeness budget of one upstream host (see [`Politeness::budget`]).
    pub fn budget(&self, protocol: Protocol, host: &str) -> Budget {
        self.inner.politeness.budget(protocol, host)
    }

    /// The lookup chain of a catalogue entry as this engine runs it, in order: the DNS pre-check
    /// (when enabled and the zone has name servers), then the registry methods of the catalogue's
    /// chain that are enabled. Empty for a restricted zone (answered by policy, no query). The
    /// upstream of each step honours the configured overrides.
    pub fn chain(&self, entry: &TldEntry) -> Vec<ChainStep> {
        self.inner.book.chain(entry)
    }

    /// A fresh cached verdict for `domain`, reported with method `cache`.
    pub async fn cached(&self, domain: &DomainName) -> Option<Verdict> {
        self.inner.book.cached(domain).await
    }

    /// Decides availability: the cache first, then the probes (see the module documentation).
    ///
    /// # Errors
    /// [`EngineError::UnsupportedTld`] only; upstream trouble is an `unknown` verdict.
    pub async fn check(&self, domain: &DomainName) -> Result<Verdict, EngineError> {
        if let Some(v) = self.cached(domain).await {
            return Ok(v);
        }
        Ok(self.check_uncached(domain).await?.verdict)
    }

    /// Decides availability from the upstreams (no cache read; the result is cached), with the
    /// evidence trail. Bounded by `check_deadline_secs`.
    ///
    /// # Errors
    /// [`EngineError::UnsupportedTld`] only.
    #[instrument(skip(self), fields(domain = %domain, tld = %domain.tld()))]
    pub async fn check_uncached(&self, domain: &DomainName) -> Result<Report, EngineError> {
        let entry = self.entry(domain)?.clone();
        let deadline = Duration::from_secs_f64(self.config().check_deadline_secs.max(0.01));
        let mut steps = Vec::new();
        let report = match tokio::time::timeout(deadline, self.decide(domain, &entry, &mut steps)).await {
            Ok(report) => report,
            Err(_) => {
                let evidence = format!("no definitive answer within {:.1} s", deadline.as_secs_f64());
                let method = steps.last().map_or(Method::Rdap, |s| method_of(s.protocol));
                Report {
                    verdict: self.verdict(domain, Status::Unknown, method, false, evidence),
                    steps,
                    record: None,
                    retryable: true,
                }
            }
        };
        self.inner.book.decided(&entry.suffix, &report.verdict).await;
        debug!(status = ?report.verdict.status, method = ?report.verdict.method, "verdict");
        Ok(report)
    }

    fn verdict(
        &self,
        domain: &DomainName,
        status: Status,
        method: Method,
        authoritative: bool,
        evidence: String,
    ) -> Verdict {
        Verdict {
            domain: domain.as_str().to_owned(),
            status,
            method,
            authoritative,
            checked_at: OffsetDateTime::now_utc(),
            evidence,
            confirmed_by: None,
        }
    }

    async fn decide(&self, domain: &DomainName, entry: &TldEntry, steps: &mut Vec<Step>) -> Report {
        let done = |v: Verdict, steps: &mut Vec<Step>, record: Option<DomainRecord>| Report {
            verdict: v,
            steps: std::mem::take(steps),
            record,
            retryable: false,
        };
        if let RegistrationPolicy::Restricted { reason } = &entry.policy {
            let v = self.verdict(domain, Status::Restricted, Method::Policy, true, reason.clone());
            return done(v, steps, None);
        }
        let mut not_delegated = None;
        if self.config().dns.enabled {
            // The pre-check has its own sub-budget, so RDAP and WHOIS always get time before the
            // deadline: a quarter of the check deadline, at most DNS_PRECHECK_MAX_SECS.
            let budget = self.dns_budget();
            match tokio::time::timeout(budget, self.dns_precheck(domain, entry, steps)).await {
                Ok(Precheck::Taken(v)) => return done(v, steps, None),
                Ok(Precheck::NotDelegated(host)) => not_delegated = Some(host),
                Ok(Precheck::Nothing) => {}
                Err(_) => steps.push(Step {
                    protocol: Protocol::Dns,
                    upstream: domain.suffix().to_owned(),
                    outcome: format!(
                        "DNS pre-check over its {:.2} s budget; asking the registry",
                        budget.as_secs_f64()
                    ),
                }),
            }
        }
        let mut failures: Vec<Failure> = Vec::new();
        let (order, rdap_demoted) = self.registry_order(entry).await;
        for method in &order {
            let outcome = match method {
                LookupMethod::Rdap if self.config().rdap.enabled => self.ask_rdap(domain, entry, steps).await,
                LookupMethod::Whois if self.config().whois.enabled => self.ask_whois(domain, entry, steps).await,
                _ => continue,
            };
            match outcome {
                Ok((verdict, record)) => {
                    if rdap_demoted && *method == LookupMethod::Rdap {
                        self.promote_rdap(entry).await;
                    }
                    if verdict.status.is_available() {
                        let first = consensus::First { method: *method, not_delegated: not_delegated.as_deref() };
                        let (verdict, retryable) = self.confirm(domain, entry, first, verdict, steps).await;
                        return Report { retryable, ..done(verdict, steps, record) };
                    }
                    return done(verdict, steps, record);
                }
                Err(failure) => failures.push(failure),
            }
        }
        // No definitive answer: report the method last tried, the evidence of every method tried,
        // and whether any of them may answer on a retry.
        let method = failures.last().map_or(Method::Rdap, |f| f.method);
        let evidence = if failures.is_empty() {
            "no registry method answered".to_owned()
        } else {
            failures.iter().map(|f| f.message.as_str()).collect::<Vec<_>>().join("; ")
        };
        let retryable = failures.iter().any(|f| f.retryable);
        let v = self.verdict(domain, Status::Unknown, method, false, evidence);
        Report { retryable, ..done(v, steps, None) }
    }

    /// Whether the registry's name servers delegate `domain` (its NS in the TLD zone), from the
    /// same DNS pre-check a check starts with: no registry query, the DNS politeness limits and
    /// the pre-check's budget. `None` when DNS is off for this process or the suffix, or no name
    /// server answered in time. An early signal only (a held or deleted name is not delegated
    /// either): watches use it to re-check at the registry sooner, never to decide a state.
    ///
    /// # Errors
    /// [`EngineError`] for a suffix the catalogue does not serve.
    pub async fn delegation(&self, domain: &DomainName) -> Result<Option<bool>, EngineError> {
        let entry = self.entry(domain)?.clone();
        if !self.config().dns.enabled {
            return Ok(None);
        }
        let mut steps = Vec::new();
        Ok(match tokio::time::timeout(self.dns_budget(), self.dns_precheck(domain, &entry, &mut steps)).await {
            Ok(Precheck::Taken(_)) => Some(true),
            Ok(Precheck::NotDelegated(_)) => Some(false),
            Ok(Precheck::Nothing) | Err(_) => None,
        })
    }

    /// The DNS pre-check's own budget: a quarter of the check deadline, at most
    /// [`DNS_PRECHECK_MAX_SECS`].
    fn dns_budget(&self) -> Duration {
        Duration::from_secs_f64((self.config().check_deadline_secs / 4.0).clamp(0.01, DNS_PRECHECK_MAX_SECS))
    }

    async fn dns_precheck(&self, domain: &DomainName, entry: &TldEntry, steps: &mut Vec<Step>) -> Precheck {
        let servers = self.inner.dns.servers_for(domain.suffix(), &entry.nameservers).await;
        for server in servers.into_iter().take(2) {
            let host = server.to_string();
            let permit = match self.inner.politeness.acquire(Protocol::Dns, &host).await {
                Ok(p) => p,
                Err(e) => {
                    steps.push(Step { protocol: Protocol::Dns, upstream: host, outcome: e.to_string() });
                    continue;
                }
            };
            let started = std::time::Instant::now();
            let answer = self.inner.dns.ns(server, domain.as_str()).await;
            observe(Protocol::Dns, started, answer.is_ok());
            self.note(entry, Protocol::Dns, started, answer.is_ok()).await;
            match answer {
                Ok(Delegation::Delegated(ns)) => {
                    permit.succeeded();
                    let outcome = format!("delegated to {}", ns.join(", "));
                    steps.push(Step { protocol: Protocol::Dns, upstream: host.clone(), outcome: outcome.clone() });
                    return Precheck::Taken(self.verdict(
                        domain,
                        Status::Taken,
                        Method::Dns,
                        true,
                        format!("DNS: {outcome} (asked {host})"),
                    ));
                }
                Ok(Delegation::NotDelegated) => {
                    permit.succeeded();
                    steps.push(Step {
                        protocol: Protocol::Dns,
                        upstream: host.clone(),
                        outcome: "not delegated; asking the registry".into(),
                    });
                    return Precheck::NotDelegated(host);
                }
                Err(e) => {
                    permit.failed();
                    steps.push(Step { protocol: Protocol::Dns, upstream: host, outcome: e.to_string() });
                }
            }
        }
        Precheck::Nothing
    }

    /// Whether `answer_host` is the RDAP server of `entry`'s registry: the host asked first (the
    /// configured base) or a host of the suffix's own bootstrap base URLs (RFC 9224).
    fn is_registry_rdap_host(&self, answer_host: &str, asked_host: &str, entry: &TldEntry) -> bool {
        answer_host.eq_ignore_ascii_case(asked_host)
            || entry.rdap.iter().any(|base| {
                url::Url::parse(base).ok().and_then(|u| u.host_str().map(|h| h.eq_ignore_ascii_case(answer_host)))
                    == Some(true)
            })
    }

    fn rdap_base<'a>(&'a self, domain: &DomainName, entry: &'a TldEntry) -> Option<&'a str> {
        self.inner.book.rdap_base_of(domain.suffix(), entry)
    }

    async fn ask_rdap(
        &self,
        domain: &DomainName,
        entry: &TldEntry,
        steps: &mut Vec<Step>,
    ) -> Result<(Verdict, Option<DomainRecord>), Failure> {
        let Some(base) = self.rdap_base(domain, entry) else {
            return Err(Failure::new(Method::Rdap, "no RDAP base URL", false));
        };
        let host = url::Url::parse(base).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default();
        let step = |outcome: String| Step { protocol: Protocol::Rdap, upstream: host.clone(), outcome };
        let permit = self.inner.politeness.acquire(Protocol::Rdap, &host).await.map_err(|e| {
            steps.push(step(e.to_string()));
            Failure::new(Method::Rdap, e.to_string(), true)
        })?;
        let started = std::time::Instant::now();
        let answer = self.inner.rdap.lookup(base, domain.as_str(), &self.inner.rdap_hosts).await;
        observe(Protocol::Rdap, started, answer.is_ok());
        let answer = match answer {
            Ok(a) => {
                permit.succeeded();
                a
            }
            Err(e) => {
                self.note(entry, Protocol::Rdap, started, false).await;
                permit.failed();
                steps.push(step(e.to_string()));
                return Err(Failure::probe(Method::Rdap, &e));
            }
        };
        let reading = read_rdap_for(domain.as_str(), domain.unicode(), answer.status, &answer.body);
        self.note(entry, Protocol::Rdap, started, reading.class != RdapClass::Unknown).await;
        let outcome = format!("HTTP {} from {}: {}", answer.status, answer.host, reading.detail);
        steps.push(step(outcome.clone()));
        let status = match reading.class {
            RdapClass::Registered => Status::Taken,
            RdapClass::PendingDelete => Status::PendingDelete,
            RdapClass::Reserved => Status::Reserved,
            // A 404 proves nothing unless the suffix's own registry server said it: a redirect
            // may have led to another registry's or a registrar's server, whose "not found" is
            // about its own database.
            RdapClass::NotFound if !self.is_registry_rdap_host(&answer.host, &host, entry) => {
                return Err(Failure::new(
                    Method::Rdap,
                    format!(
                        "RDAP: {outcome}; a 404 from {}, reached by redirect, is not the .{} registry's answer",
                        answer.host, entry.suffix
                    ),
                    false,
                ));
            }
            RdapClass::NotFound => Status::Available,
            RdapClass::Unknown => {
                // Throttling and server errors may pass; a 200 that says nothing will not.
                let retryable = answer.status == 429 || answer.status >= 500;
                return Err(Failure::new(Method::Rdap, format!("RDAP: {outcome}"), retryable));
            }
        };
        let record = (status != Status::Available).then_some(reading.record);
        Ok((self.verdict(domain, status, Method::Rdap, true, format!("RDAP: {outcome}")), record))
    }

    async fn ask_whois(
        &self,
        domain: &DomainName,
        entry: &TldEntry,
        steps: &mut Vec<Step>,
    ) -> Result<(Verdict, Option<DomainRecord>), Failure> {
        let Some(server) = &entry.whois else {
            return Err(Failure::new(Method::Whois, "no WHOIS server", false));
        };
        if self.config().overrides_only && !self.config().whois.addr_overrides.contains_key(&server.host) {
            let message = format!("WHOIS {} skipped: not in whois.addr_overrides (overrides_only)", server.host);
            return Err(Failure::new(Method::Whois, message, false));
        }
        let host = server.host.clone();
        let step = |outcome: String| Step { protocol: Protocol::Whois, upstream: host.clone(), outcome };
        let permit = self.inner.politeness.acquire(Protocol::Whois, &host).await.map_err(|e| {
            steps.push(step(e.to_string()));
            Failure::new(Method::Whois, e.to_string(), true)
        })?;
        let started = std::time::Instant::now();
        let raw = self.inner.whois.query(server, domain.as_str()).await;
        observe(Protocol::Whois, started, raw.is_ok());
        let raw = match raw {
            Ok(raw) => raw,
            Err(e) => {
                self.note(entry, Protocol::Whois, started, false).await;
                permit.failed();
                steps.push(step(e.to_string()));
                return Err(Failure::probe(Method::Whois, &e));
            }
        };
        let reading = read_whois_for(domain.as_str(), &raw, Some(&host), domain.suffix(), server.charset.as_deref());
        let definitive = !matches!(reading.class, WhoisClass::Unknown | WhoisClass::RateLimited);
        self.note(entry, Protocol::Whois, started, definitive).await;
        let marker = reading.marker.clone().unwrap_or_else(|| "no marker matched".into());
        let outcome = format!("{:?} ({marker}), {} bytes", reading.class, raw.len());
        steps.push(step(outcome.clone()));
        let status = match reading.class {
            WhoisClass::Available => Status::Available,
            WhoisClass::Registered if reading.pending_delete => Status::PendingDelete,
            WhoisClass::Registered => Status::Taken,
            WhoisClass::Reserved => Status::Reserved,
            WhoisClass::RateLimited => {
                permit.failed();
                let e = ProbeError::RateLimited { protocol: "whois", host: host.clone() };
                return Err(Failure::probe(Method::Whois, &e));
            }
            WhoisClass::Unknown => {
                permit.succeeded();
                return Err(Failure::new(Method::Whois, format!("WHOIS {host}: {outcome}"), false));
            }
        };
        permit.succeeded();
        let record = matches!(status, Status::Taken | Status::PendingDelete).then_some(reading.record);
        Ok((self.verdict(domain, status, Method::Whois, true, format!("WHOIS {host}: {outcome}")), record))
    }
}

impl Engine {
    /// Notes one upstream exchange of `entry`'s suffix in the health book (see [`crate::health`]
    /// for what counts as a success) and demotes RDAP in the route book when the book asks for it.
    async fn note(&self, entry: &TldEntry, protocol: Protocol, started: std::time::Instant, success: bool) {
        let now = OffsetDateTime::now_utc();
        let reroute = self.health().record(&entry.suffix, protocol, now, started.elapsed(), success);
        if let Reroute::WhoisFirstUntil(until) = reroute {
            self.routes().demote(&entry.suffix, until).await;
            tracing::warn!(
                suffix = %entry.suffix,
                until = %until,
                "RDAP keeps failing while WHOIS answers: asking WHOIS first for this suffix"
            );
            metrics::counter!("dsa_route_whois_first_total", "suffix" => entry.suffix.clone()).increment(1);
        }
    }

    /// RDAP answered definitively while demoted for `entry`'s suffix (asked after WHOIS failed):
    /// the catalogue's order applies again, for the whole fleet in fleet mode.
    async fn promote_rdap(&self, entry: &TldEntry) {
        self.routes().promote(&entry.suffix).await;
        tracing::info!(suffix = %entry.suffix, "RDAP answers again: asking RDAP first for this suffix");
        metrics::counter!("dsa_route_rdap_first_total", "suffix" => entry.suffix.clone()).increment(1);
    }

    /// The registry methods of `entry` in the order to ask them now: the catalogue's, with WHOIS
    /// moved before RDAP while RDAP is demoted for the suffix (see [`crate::routing`]); and
    /// whether it is. The route book is only read for a chain with RDAP before WHOIS.
    async fn registry_order(&self, entry: &TldEntry) -> (Vec<LookupMethod>, bool) {
        let mut order = entry.methods.clone();
        if !self.config().routing.enabled {
            return (order, false);
        }
        let (Some(r), Some(w)) =
            (order.iter().position(|m| *m == LookupMethod::Rdap), order.iter().position(|m| *m == LookupMethod::Whois))
        else {
            return (order, false);
        };
        if r > w || self.whois_first_until(&entry.suffix).await.is_none() {
            return (order, false);
        }
        order.swap(r, w);
        (order, true)
    }
}

/// The verdict method of a probe protocol.
fn method_of(protocol: Protocol) -> Method {
    match protocol {
        Protocol::Dns => Method::Dns,
        Protocol::Rdap => Method::Rdap,
        Protocol::Whois => Method::Whois,
    }
}

/// Records one upstream exchange: `dsa_upstream_seconds{protocol,outcome}` (histogram).
fn observe(protocol: Protocol, started: std::time::Instant, ok: bool) {
    metrics::histogram!("dsa_upstream_seconds", "protocol" => protocol.as_str(), "outcome" => if ok { "answer" } else { "error" })
        .record(started.elapsed().as_secs_f64());
}
