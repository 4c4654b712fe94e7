//! The availability-check job: a fresh verdict from this worker's cache (filled by the jobs of
//! every front), else from the fleet-wide bucket (filled by every worker), else the verdict of the
//! worker that has claimed the name's lookup, else one upstream check under this worker's claim,
//! whose definitive verdict goes into both caches (see `crate::fleet::shared`). Standalone has no
//! bucket and no claims ([`SharedChecks`] absent): the cache, then the engine.
//!
//! Concurrent jobs of one name in this process share one run (single-flight), whichever fronts
//! sent them.

use std::sync::Arc;

use common::domain::DomainName;
use common::lookup::LookupKind;
use common::messages::JobAnswer;
use common::verdict::Verdict;
use futures::FutureExt;
use futures::future::BoxFuture;

use super::{Handled, Jobs, Source};
use crate::engine::{Engine, Report};
use crate::job_panic;
use crate::singleflight::SingleFlight;

/// What the workers of a fleet share about checks: the verdict bucket and lookup claims
/// (implemented over NATS KV by `crate::fleet`; absent in standalone mode).
pub trait SharedChecks: Send + Sync + 'static {
    /// A fresh definitive verdict for `domain` from the fleet, marked as a cache answer.
    fn fresh<'a>(&'a self, engine: &'a Engine, domain: &'a DomainName) -> BoxFuture<'a, Option<Verdict>>;

    /// Claims `domain`'s registry lookup for this worker, or waits for the worker that holds it.
    fn claim<'a>(&'a self, engine: &'a Engine, domain: &'a DomainName) -> BoxFuture<'a, Claimed>;

    /// Shares a definitive verdict with the fleet (an unknown one is never shared).
    fn share<'a>(&'a self, verdict: &'a Verdict) -> BoxFuture<'a, ()>;

    /// Releases a claim this worker holds (after [`SharedChecks::share`], so that waiters see the
    /// verdict first).
    fn release(&self, claim: Claim) -> BoxFuture<'_, ()>;
}

/// What a claim attempt came to.
pub enum Claimed {
    /// This worker holds the claim: ask the registry, then release it.
    Owned(Claim),
    /// Another worker's lookup answered while this one waited.
    Peer(Verdict),
    /// Ask the registry without a claim (no claims bucket, NATS trouble, or the wait ran out).
    Ask,
}

/// A claim this worker holds: its bucket key and revision.
#[derive(Debug)]
pub struct Claim {
    /// The claimed name (the bucket key).
    pub key: String,
    /// The revision the claim was written with.
    pub revision: u64,
}

/// Check lookups in flight in one process, by domain (A-label).
pub(super) type Flights = SingleFlight<String, Result<(Report, Source), String>>;

/// Longest a check's answer waits for its verdict to be shared with the fleet and its claim
/// released. Both are KV writes, done in milliseconds by a healthy bucket but not at all while
/// the bucket elects a leader (4–9 s after a NATS server is lost): past this bound the answer goes
/// out and the two finish in the background, in that order (waiters on the claim still see the
/// verdict first).
const SHARE_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// Decides a check job (see the module documentation).
pub(super) async fn handle(jobs: &Jobs, domain: &str, parsed: Option<DomainName>) -> Handled {
    let domain = match jobs.domain(domain, parsed) {
        Ok(domain) => domain,
        Err(reason) => return Handled::rejected(reason),
    };
    let (engine, shared, asked) = (jobs.engine().clone(), jobs.inner.shared.clone(), domain.clone());
    let (outcome, joined) =
        jobs.inner.checks.run(domain.as_str().to_owned(), move || decide(engine, shared, asked).boxed()).await;
    match outcome {
        // A panic outside the registry read (caches, claims): every job of the name answers
        // unknown; the leader reports it once.
        Err(panicked) => {
            if !joined {
                panicked.report(LookupKind::Check, domain.as_str());
            }
            Handled::answer(JobAnswer::Check { verdict: panicked.verdict(domain.as_str()) })
        }
        Ok(Err(reason)) => Handled::rejected(reason),
        Ok(Ok((report, source))) => {
            let source = if joined && source == Source::Registry { Source::Joined } else { source };
            // Retry only trouble that may pass; an answer that will not change (an oversized
            // body, an unreadable text) goes back at once.
            let retryable = !report.verdict.status.is_definitive() && report.retryable;
            let mut handled = Handled::answer(JobAnswer::Check { verdict: report.verdict });
            handled.retryable = retryable;
            handled.source = source;
            handled
        }
    }
}

/// A check of `domain` straight from the registry (no cache read; the verdict is cached for
/// everyone), joined with any check of the name already in flight in this process: a watch
/// re-check's confirmation, which must not be answered by a verdict older than the registry
/// answer it confirms.
pub(super) async fn fresh(jobs: &Jobs, domain: &DomainName) -> Report {
    let (engine, asked) = (jobs.engine().clone(), domain.clone());
    let (outcome, _joined) = jobs
        .inner
        .checks
        .run(domain.as_str().to_owned(), move || {
            async move { Ok((ask(&engine, &asked).await?, Source::Registry)) }.boxed()
        })
        .await;
    let unknown = |evidence: String| Report {
        verdict: Verdict {
            domain: domain.as_str().to_owned(),
            status: common::verdict::Status::Unknown,
            method: common::verdict::Method::Rdap,
            authoritative: false,
            checked_at: time::OffsetDateTime::now_utc(),
            evidence,
            confirmed_by: None,
        },
        steps: Vec::new(),
        record: None,
        retryable: true,
    };
    match outcome {
        Err(panicked) => {
            Report { verdict: panicked.verdict(domain.as_str()), steps: Vec::new(), record: None, retryable: false }
        }
        Ok(Ok((report, _))) => report,
        Ok(Err(reason)) => unknown(reason),
    }
}

async fn decide(
    engine: Engine,
    shared: Option<Arc<dyn SharedChecks>>,
    domain: DomainName,
) -> Result<(Report, Source), String> {
    let report = |verdict| Report { verdict, steps: Vec::new(), record: None, retryable: false };
    if let Some(verdict) = engine.cached(&domain).await {
        return Ok((report(verdict), Source::Cache));
    }
    let Some(shared) = shared else {
        return Ok((ask(&engine, &domain).await?, Source::Registry));
    };
    if let Some(verdict) = shared.fresh(&engine, &domain).await {
        engine.remember(&domain, &verdict).await;
        return Ok((report(verdict), Source::FleetCache));
    }
    let claim = match shared.claim(&engine, &domain).await {
        Claimed::Peer(verdict) => {
            engine.remember(&domain, &verdict).await;
            return Ok((report(verdict), Source::PeerLookup));
        }
        Claimed::Owned(claim) => Some(claim),
        Claimed::Ask => None,
    };
    let checked = ask(&engine, &domain).await;
    let verdict = checked.as_ref().ok().map(|report| report.verdict.clone());
    let finish = tokio::spawn(async move {
        if let Some(verdict) = &verdict {
            shared.share(verdict).await;
        }
        if let Some(claim) = claim {
            shared.release(claim).await;
        }
    });
    if tokio::time::timeout(SHARE_WAIT, finish).await.is_err() {
        // Each metric named by a literal, so the operator files' checker sees it.
        metrics::counter!("dsa_worker_share_detached_total").increment(1);
        tracing::debug!(domain = %domain.as_str(), "sharing the verdict goes on after the answer");
    }
    Ok((checked?, Source::Registry))
}

/// One upstream check. A panic while reading the registry's answer is contained here and
/// answered unknown, not worth a retry (the same answer would panic again), so that a claim is
/// never left held until its deadline (other workers would wait on it).
async fn ask(engine: &Engine, domain: &DomainName) -> Result<Report, String> {
    match job_panic::contain(LookupKind::Check, domain.as_str(), engine.check_uncached(domain)).await {
        Ok(checked) => checked.map_err(|e| e.to_string()),
        Err(panicked) => {
            Ok(Report { verdict: panicked.verdict(domain.as_str()), steps: Vec::new(), record: None, retryable: false })
        }
    }
}
