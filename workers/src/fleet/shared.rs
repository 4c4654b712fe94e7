//! What the workers of a fleet share about availability checks: the verdict cache (a NATS KV
//! bucket of definitive verdicts by domain) and lookup claims (a KV bucket of the names some
//! worker is asking a registry about right now).
//!
//! Without claims, two workers that receive a check of the same uncached name at the same moment
//! (one job each from two fronts) both ask the registry, and WHOIS registries that allow one query
//! a second count both. With them, a worker that misses both caches first *claims* the name with
//! an atomic KV create. The winner asks the registry, shares its verdict, then releases the claim;
//! a loser waits for the winner's verdict instead of asking:
//!
//! ```text
//! worker A: create claims/<name> ──ok──► registry ──► put verdicts/<name> ──► delete claims/<name>
//! worker B: create claims/<name> ──exists──► subscribe $KV…verdicts.<name> and $KV…claims.<name>
//!           ──► verdict message: answer from it (no registry query)
//!           ──► claim deleted without a verdict (A got no definitive answer), the claim's own
//!               deadline passed, or half the check deadline waited: ask the registry itself
//! ```
//!
//! The wait is bounded so that a crashed claimer costs a waiting job time, never its answer: a
//! claim carries the instant after which it is void (its maker's start plus the check deadline,
//! `engine.check_deadline_secs`), a void claim is taken over with a revision-checked update, and
//! nobody waits longer than half the check deadline. Waiting uses two core NATS subscriptions on
//! the buckets' subjects (no JetStream consumer per wait), opened before the verdict is read
//! again so that nothing published in between is missed.
//!
//! Every read of a bucket and every claim write is bounded by [`KV_TIMEOUT`]: a bucket whose
//! stream is electing a leader (a NATS server was lost; 4–9 s in nats-server's Raft) takes no
//! writes meanwhile, and a check must not wait for it. A read that does not answer in time is a
//! miss; a claim that cannot be made in time is no claim (the worker asks the registry without
//! one: politeness still holds, only the fleet-wide coalescing of that name is lost; a claim the
//! bucket stores after the bound is never released by this worker and lapses at its own deadline,
//! as a crashed worker's does). Sharing the verdict and releasing the claim are bounded by the
//! caller (`crate::jobs`), which lets them finish in the background.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::kv::{self, CreateErrorKind};
use common::domain::DomainName;
use common::verdict::{Method, Status, Verdict};
use futures::StreamExt;
use time::OffsetDateTime;

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::engine::Engine;
use crate::jobs::{Claim, Claimed, SharedChecks};

/// The KV header naming a message's operation (`DEL`, `PURGE`; absent or `PUT` for a value).
const KV_OPERATION: &str = "KV-Operation";

/// Longest wait for one read of the verdict or claims bucket, or one claim write, before the
/// check goes on without it (a healthy R3 bucket answers in milliseconds).
pub(super) const KV_TIMEOUT: Duration = Duration::from_millis(500);

/// Runs one bucket operation within [`KV_TIMEOUT`]; `None` (counted by `op`) when it did not
/// answer in time.
async fn bounded<T>(op: &'static str, work: impl std::future::Future<Output = T>) -> Option<T> {
    match tokio::time::timeout(KV_TIMEOUT, work).await {
        Ok(done) => Some(done),
        Err(_) => {
            // Each metric named by a literal, so the operator files' checker sees it.
            metrics::counter!("dsa_worker_kv_timeouts_total", "op" => op).increment(1);
            tracing::debug!(op, "fleet bucket did not answer in time; going on without it");
            None
        }
    }
}

/// The fleet-wide verdict bucket and, when present, the claims bucket of one worker pool: the
/// fleet's [`SharedChecks`].
#[derive(Clone)]
pub(super) struct SharedVerdicts {
    client: async_nats::Client,
    verdicts: kv::Store,
    claims: Option<kv::Store>,
    /// This pool's name in the claims it makes (for operators reading the bucket).
    owner: Arc<str>,
}

/// The value of a claim: who made it and when it becomes void.
#[derive(serde::Serialize, serde::Deserialize)]
struct ClaimValue {
    owner: String,
    /// Unix time in milliseconds after which the claim is void.
    void_after_ms: i64,
}

impl SharedVerdicts {
    /// The shared buckets of a pool: `verdicts` is required, `claims` optional (a fleet from
    /// before claims, or a server refusing the bucket, still shares verdicts).
    pub(super) fn new(client: async_nats::Client, verdicts: kv::Store, claims: Option<kv::Store>) -> Self {
        let owner = format!("worker-{}", uuid::Uuid::now_v7().simple()).into();
        Self { client, verdicts, claims, owner }
    }

    /// A fresh definitive verdict for `domain` from the fleet bucket, marked as a cache answer.
    pub(super) async fn fresh(&self, engine: &Engine, domain: &DomainName) -> Option<Verdict> {
        let bytes = bounded("verdict_read", self.verdicts.get(domain.as_str())).await?.ok()??;
        usable(engine, domain, &bytes)
    }

    /// Claims `domain`'s registry lookup for this worker, or waits for the worker that holds it.
    pub(super) async fn claim(&self, engine: &Engine, domain: &DomainName) -> Claimed {
        let Some(claims) = &self.claims else { return Claimed::Ask };
        let key = domain.as_str();
        let deadline = Duration::from_secs_f64(engine.config().check_deadline_secs.max(0.1));
        let value = |now: OffsetDateTime| {
            let void_after = now + deadline;
            let value = ClaimValue { owner: self.owner.to_string(), void_after_ms: unix_ms(void_after) };
            serde_json::to_vec(&value).map(bytes::Bytes::from).unwrap_or_default()
        };
        let Some(created) = bounded("claim_create", claims.create(key, value(OffsetDateTime::now_utc()))).await else {
            return Claimed::Ask;
        };
        let holder = match created {
            Ok(revision) => return Claimed::Owned(Claim { key: key.to_owned(), revision }),
            Err(e) if e.kind() == CreateErrorKind::AlreadyExists => {
                match bounded("claim_read", claims.entry(key)).await {
                    Some(Ok(Some(entry))) if entry.operation == kv::Operation::Put => entry,
                    // Released between the two calls: the verdict is probably there now.
                    Some(Ok(_)) => return self.fresh(engine, domain).await.map_or(Claimed::Ask, Claimed::Peer),
                    Some(Err(_)) | None => return Claimed::Ask,
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, domain = %key, "claim not made; asking without one");
                return Claimed::Ask;
            }
        };
        let void_after = serde_json::from_slice::<ClaimValue>(&holder.value).map(|c| c.void_after_ms).unwrap_or(0);
        let now = OffsetDateTime::now_utc();
        if unix_ms(now) >= void_after {
            // A void claim (its maker crashed or was cut off): take it over, once.
            return match bounded("claim_takeover", claims.update(key, value(now), holder.revision)).await {
                Some(Ok(revision)) => Claimed::Owned(Claim { key: key.to_owned(), revision }),
                Some(Err(_)) | None => Claimed::Ask,
            };
        }
        let left = Duration::from_millis(u64::try_from(void_after - unix_ms(now)).unwrap_or(0));
        metrics::counter!("dsa_worker_claim_waits_total").increment(1);
        match self.wait(engine, domain, left.min(deadline / 2)).await {
            Some(verdict) => Claimed::Peer(verdict),
            None => Claimed::Ask,
        }
    }

    /// Waits up to `bound` for another worker's verdict on `domain`; `None` when its claim was
    /// released without one, the bound passed, or the subscriptions could not be made.
    async fn wait(&self, engine: &Engine, domain: &DomainName, bound: Duration) -> Option<Verdict> {
        let claims = self.claims.as_ref()?;
        let key = domain.as_str();
        let mut verdicts = self.client.subscribe(format!("{}{key}", self.verdicts.prefix)).await.ok()?;
        let mut released = self.client.subscribe(format!("{}{key}", claims.prefix)).await.ok()?;
        // Subscribed first, read second: a verdict put in between is in the bucket or on the way.
        if let Some(verdict) = self.fresh(engine, domain).await {
            return Some(verdict);
        }
        let waited = async {
            loop {
                tokio::select! {
                    // A verdict and the release behind it may arrive together: verdict first.
                    biased;
                    Some(message) = verdicts.next() => {
                        if operation(&message).is_none()
                            && let Some(verdict) = usable(engine, domain, &message.payload)
                        {
                            return Some(verdict);
                        }
                    }
                    Some(message) = released.next() => {
                        if operation(&message).is_some() {
                            // Released: with a verdict shared just before (read it back), or
                            // without one (the claimer got no definitive answer).
                            return self.fresh(engine, domain).await;
                        }
                    }
                    else => return None,
                }
            }
        };
        let verdict = tokio::time::timeout(bound, waited).await.ok().flatten();
        let _ = verdicts.unsubscribe().await;
        let _ = released.unsubscribe().await;
        verdict
    }

    /// Shares a definitive verdict with the fleet (an unknown one is never shared).
    pub(super) async fn share(&self, verdict: &Verdict) {
        if verdict.status == Status::Unknown {
            return;
        }
        if let Ok(bytes) = serde_json::to_vec(verdict)
            && let Err(e) = self.verdicts.put(verdict.domain.as_str(), bytes.into()).await
        {
            tracing::debug!(error = %e, "verdict not shared with the fleet");
        }
    }

    /// Releases a claim this worker holds (after [`Self::share`], so waiters see the verdict
    /// first). A claim that cannot be deleted becomes void at its deadline.
    pub(super) async fn release(&self, claim: Claim) {
        if let Some(claims) = &self.claims
            && let Err(e) = claims.delete_expect_revision(&claim.key, Some(claim.revision)).await
        {
            tracing::debug!(error = %e, domain = %claim.key, "claim not released; it lapses at its deadline");
        }
    }
}

impl SharedChecks for SharedVerdicts {
    fn fresh<'a>(&'a self, engine: &'a Engine, domain: &'a DomainName) -> BoxFuture<'a, Option<Verdict>> {
        SharedVerdicts::fresh(self, engine, domain).boxed()
    }

    fn claim<'a>(&'a self, engine: &'a Engine, domain: &'a DomainName) -> BoxFuture<'a, Claimed> {
        SharedVerdicts::claim(self, engine, domain).boxed()
    }

    fn share<'a>(&'a self, verdict: &'a Verdict) -> BoxFuture<'a, ()> {
        SharedVerdicts::share(self, verdict).boxed()
    }

    fn release(&self, claim: Claim) -> BoxFuture<'_, ()> {
        SharedVerdicts::release(self, claim).boxed()
    }
}

/// A verdict from the fleet bucket, if it is about `domain` and fresh by the engine's per-status
/// TTLs (`engine.cache`); marked as a cache answer.
fn usable(engine: &Engine, domain: &DomainName, bytes: &[u8]) -> Option<Verdict> {
    let mut verdict = serde_json::from_slice::<Verdict>(bytes).ok()?;
    if verdict.domain != domain.as_str() || !fresh(engine, &verdict) {
        return None;
    }
    verdict.evidence = format!("fleet cache: {}", verdict.evidence);
    verdict.method = Method::Cache;
    verdict.authoritative = false;
    Some(verdict)
}

/// Whether a verdict from the fleet bucket is still fresh by the engine's per-status TTLs.
fn fresh(engine: &Engine, verdict: &Verdict) -> bool {
    let cache = &engine.config().cache;
    let ttl = if verdict.status.is_available() { cache.available_ttl_secs } else { cache.taken_ttl_secs };
    let age = OffsetDateTime::now_utc() - verdict.checked_at;
    verdict.status != Status::Unknown && age >= time::Duration::ZERO && age < time::Duration::seconds(ttl as i64)
}

/// The KV operation of a message on a bucket's subject: `None` for a value, `Some` for a delete
/// or purge marker.
fn operation(message: &async_nats::Message) -> Option<()> {
    let op = message.headers.as_ref()?.get(KV_OPERATION)?;
    (op.as_str() != "PUT").then_some(())
}

fn unix_ms(at: OffsetDateTime) -> i64 {
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}
