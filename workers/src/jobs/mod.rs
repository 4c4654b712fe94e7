//! Every kind of job, handled in one place: the in-process bus of standalone mode and the fleet's
//! worker pool both hand a [`Job`] to [`Jobs::run`] and send back what it returns.
//!
//! ```text
//! Job { kind, job id, request id, deadline } ──► Jobs::run ──► span "job", request id in scope,
//!        │                                                     deadline, panic contained
//!        ├─ check ─► check::handle: worker cache → fleet bucket → peer's claim → engine (+ share)
//!        ├─ whois ─► whois::handle: Lookups::whois (registration record, short cache)
//!        ├─ dns   ─► dns::handle:   Lookups::dns (recursive resolver)
//!        └─ watch ─► watch::handle: registration record, then a fresh check when not registered
//!                                         │
//!        Handled { outcome: answer | rejected (400) | failed (502), retryable, source }
//! ```
//!
//! The kinds are listed once, in [`JobWork`]: adding a kind is an arm there (and its
//! [`JobAnswer`]) and a handler here. What differs between the modes is outside: the fleet's pool
//! adds the shared verdict bucket and lookup claims ([`SharedChecks`], absent in standalone),
//! turns [`Handled`] into an ack, a `Nak` with delay or a `Term`, and publishes the reply; the
//! in-process bus hands the outcome to the waiting request.
//!
//! A panic in a job's work ([`crate::job_panic`]) is answered like a registry that gave no
//! definitive answer: an `unknown` verdict for a check, a failed lookup for the other kinds.

mod check;
mod dns;
mod watch;
mod whois;

use std::sync::Arc;
use std::time::Duration;

use common::domain::DomainName;
use common::lookup::{LookupKind, LookupOutcome};
use common::messages::{Job, JobAnswer, JobWork};
use common::priority::Priority;
use common::request_id::{self, RequestId};
use futures::FutureExt;
use time::OffsetDateTime;
use tracing::Instrument;

pub use check::{Claim, Claimed, SharedChecks};

use crate::engine::Engine;
use crate::job_panic;
use crate::lookup::Lookups;

/// Where a check's verdict came from (the pool counts them; standalone ignores them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// This job's own upstream lookup (or no lookup at all: a rejection, a WHOIS or DNS job).
    Registry,
    /// A lookup of the same name already in flight in this process, joined.
    Joined,
    /// This worker's verdict cache.
    Cache,
    /// The fleet-wide verdict bucket.
    FleetCache,
    /// Another worker's lookup, waited for under its claim.
    PeerLookup,
}

/// What a job came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handled {
    /// The reply's outcome: the answer, a rejection (400) or no definitive answer (502).
    pub outcome: LookupOutcome<JobAnswer>,
    /// For an `unknown` verdict: whether asking again may give a definitive one (the fleet hands
    /// the job back with a `Nak` while its deadline leaves room).
    pub retryable: bool,
    /// Where a check's verdict came from.
    pub source: Source,
}

impl Handled {
    fn answer(answer: JobAnswer) -> Self {
        Self { outcome: LookupOutcome::Answer { answer }, retryable: false, source: Source::Registry }
    }

    fn rejected(reason: impl Into<String>) -> Self {
        Self { outcome: LookupOutcome::Rejected { reason: reason.into() }, retryable: false, source: Source::Registry }
    }

    fn failed(reason: impl Into<String>) -> Self {
        Self { outcome: LookupOutcome::Failed { reason: reason.into() }, retryable: false, source: Source::Registry }
    }
}

/// The handlers of every kind of job, with what they share: the worker's engine and lookups, the
/// check single-flight, and in a fleet the shared verdicts and claims. Cheap to clone.
#[derive(Clone)]
pub struct Jobs {
    inner: Arc<Inner>,
}

struct Inner {
    lookups: Lookups,
    checks: check::Flights,
    shared: Option<Arc<dyn SharedChecks>>,
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jobs").field("shared", &self.inner.shared.is_some()).finish_non_exhaustive()
    }
}

impl Jobs {
    /// The handlers over `lookups` (standalone: nothing shared beyond this process).
    pub fn new(lookups: Lookups) -> Self {
        Self::build(lookups, None)
    }

    /// The handlers of a fleet worker: checks also read and fill `shared` (the fleet's verdict
    /// bucket) and take lookup claims there.
    pub fn with_shared(lookups: Lookups, shared: Arc<dyn SharedChecks>) -> Self {
        Self::build(lookups, Some(shared))
    }

    fn build(lookups: Lookups, shared: Option<Arc<dyn SharedChecks>>) -> Self {
        Self { inner: Arc::new(Inner { lookups, checks: check::Flights::default(), shared }) }
    }

    /// The engine the checks run on.
    pub fn engine(&self) -> &Engine {
        self.inner.lookups.engine()
    }

    fn lookups(&self) -> &Lookups {
        &self.inner.lookups
    }

    /// Runs `job` inside its span (`kind`, `job_id`, `request_id`) with its request id as the
    /// current one, until its deadline. `parsed` is the job's domain when the caller already
    /// parsed it (the in-process bus: the front's [`DomainName`], not parsed twice); a job from
    /// the network is parsed here.
    ///
    /// Returns `None` when the deadline has passed (before or during the work): nobody waits for
    /// the answer any more.
    pub async fn run(&self, job: Job, parsed: Option<DomainName>) -> Option<Handled> {
        let Job { job_id, request_id, deadline, priority, work } = job;
        let left = time_left(deadline)?;
        let kind = work.kind();
        let request_id = request_id.unwrap_or_else(RequestId::generate);
        let span = tracing::info_span!("job", kind = kind.as_str(), job_id = %job_id, request_id = %request_id);
        let name = work.name().to_owned();
        // The handlers answer panics in the registry read themselves; this is the last line for
        // anything else, so the job is answered and the worker lives on.
        let handled = job_panic::contain(kind, &name, self.handle(work, parsed));
        // A background job's upstream queries keep to the background share of each budget.
        let handled = match priority {
            Priority::Background => crate::politeness::background(handled).boxed(),
            Priority::Interactive => handled.boxed(),
        };
        let timed = tokio::time::timeout(left, handled);
        match request_id::scope(request_id, timed.instrument(span)).await {
            Err(_) => None,
            Ok(Ok(handled)) => Some(handled),
            Ok(Err(panicked)) => Some(match kind {
                LookupKind::Check => Handled::answer(JobAnswer::Check { verdict: panicked.verdict(&name) }),
                _ => Handled::failed(panicked.to_string()),
            }),
        }
    }

    /// The one place a kind of job meets its handler. Each handler's future is boxed: some are
    /// large (a DNSSEC-validating lookup), and inline they would grow every future around a job
    /// (the span, the deadline, the panic guard, the bus) until a debug build's stack overflows.
    async fn handle(&self, work: JobWork, parsed: Option<DomainName>) -> Handled {
        match work {
            JobWork::Check { domain } => Box::pin(check::handle(self, &domain, parsed)).await,
            JobWork::Whois { domain } => Box::pin(whois::handle(self, &domain, parsed)).await,
            JobWork::Dns { name, types } => Box::pin(dns::handle(self, &name, &types)).await,
            JobWork::Watch { domain, delegation_only } => {
                Box::pin(watch::handle(self, &domain, parsed, delegation_only)).await
            }
        }
    }

    /// The registrable domain a check or WHOIS job is about, supported by the catalogue: the
    /// caller's parse when it is of this name, else parsed from the job.
    ///
    /// # Errors
    /// Why the job is rejected (the normaliser's or the catalogue's reason).
    fn domain(&self, asked: &str, parsed: Option<DomainName>) -> Result<DomainName, String> {
        let engine = self.engine();
        let domain = match parsed.filter(|d| d.as_str() == asked) {
            Some(domain) => domain,
            None => engine.parse(asked).map_err(|e| e.to_string())?,
        };
        engine.entry(&domain).map_err(|e| e.to_string())?;
        Ok(domain)
    }
}

/// The time left before `deadline`, if any.
pub fn time_left(deadline: OffsetDateTime) -> Option<Duration> {
    let left = deadline - OffsetDateTime::now_utc();
    if left <= time::Duration::ZERO { None } else { Duration::try_from(left).ok() }
}
