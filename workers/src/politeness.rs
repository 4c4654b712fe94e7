//! Politeness towards upstreams: per-host rate limit (governor), concurrency cap and cooldown.
//!
//! Registries throttle hard (port-43 WHOIS servers typically allow about one query a second per
//! client and answer "limit exceeded" beyond it), so every probe first takes a [`Permit`] for the
//! host it is about to query. A host that fails `failures_before_cooldown` times in a row is left
//! alone for `cooldown_secs`: its checks answer unknown at once instead of piling up.
//!
//! These limits hold per process. Beyond them, every RDAP and WHOIS slot also takes a slot from
//! an [`UpstreamBudget`]: [`InProcessBudget`] (grants at once: one process doing all its own
//! probing, as in standalone mode) unless another is set, such as the fleet's budget over NATS KV
//! (`fleet::budget`), which makes the per-host limits hold for all workers together.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, FutureExt};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::{HostLimit, LimitsConfig};
use crate::probe::{ProbeError, Protocol};

/// A per-host query budget shared beyond this process (its own limits are [`Politeness`]'s).
pub trait UpstreamBudget: Send + Sync + std::fmt::Debug {
    /// Waits until `host` may be queried again under `limit`'s rate (`per_second`, `burst`), at
    /// most `max_wait`. Returns false when no slot came in time (or the budget is unreachable).
    fn acquire<'a>(&'a self, host: &'a str, limit: &'a HostLimit, max_wait: Duration) -> BoxFuture<'a, bool>;
}

/// The budget of a process that does all its own probing (standalone mode, or a worker without
/// `fleet.fleet_rate_limits`): the per-process limits already are the whole budget, so it grants
/// every slot at once.
#[derive(Debug, Clone, Copy, Default)]
pub struct InProcessBudget;

impl UpstreamBudget for InProcessBudget {
    fn acquire<'a>(&'a self, _host: &'a str, _limit: &'a HostLimit, _max_wait: Duration) -> BoxFuture<'a, bool> {
        futures::future::ready(true).boxed()
    }
}

/// Shared per-host politeness state for every probe of one engine.
#[derive(Debug)]
pub struct Politeness {
    config: LimitsConfig,
    hosts: Mutex<HashMap<(Protocol, String), Arc<HostState>>>,
    /// The budget shared beyond this process, when one is set (else [`InProcessBudget`]).
    shared: std::sync::OnceLock<Arc<dyn UpstreamBudget>>,
}

#[derive(Debug)]
struct HostState {
    limiter: DefaultDirectRateLimiter,
    slots: Arc<Semaphore>,
    failures: AtomicU32,
    cooldown_until: Mutex<Option<Instant>>,
}

/// Permission to send one query to one host. Report the outcome with [`Permit::succeeded`] or
/// [`Permit::failed`]; dropping it without a report counts as neither.
#[derive(Debug)]
pub struct Permit {
    state: Arc<HostState>,
    _slot: OwnedSemaphorePermit,
    failures_before_cooldown: u32,
    cooldown: Duration,
}

impl Permit {
    /// The host answered (whatever the answer): resets its failure count.
    pub fn succeeded(self) {
        self.state.failures.store(0, Ordering::Relaxed);
    }

    /// The host failed (timeout, reset, 5xx, throttled): counts towards its cooldown.
    pub fn failed(self) {
        let n = self.state.failures.fetch_add(1, Ordering::Relaxed) + 1;
        if n >= self.failures_before_cooldown {
            if let Ok(mut until) = self.state.cooldown_until.lock() {
                *until = Some(Instant::now() + self.cooldown);
            }
            self.state.failures.store(0, Ordering::Relaxed);
        }
    }
}

/// One upstream host's politeness budget as configured, and how much of it is in use now.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Budget {
    /// Sustained queries per second allowed to the host (governor quota).
    pub per_second: f64,
    /// Queries allowed at once after an idle period.
    pub burst: u32,
    /// Queries allowed in flight at once.
    pub concurrency: usize,
    /// Queries in flight now from this process.
    pub in_flight: usize,
    /// Seconds left of the host's cooldown (repeated failures), if it is cooling down.
    pub cooldown_remaining_secs: Option<f64>,
}

fn quota(limit: &HostLimit) -> Quota {
    let per_second = if limit.per_second.is_finite() && limit.per_second > 0.0 { limit.per_second } else { 1.0 };
    let period = Duration::from_secs_f64(1.0 / per_second).max(Duration::from_nanos(1));
    let burst = NonZeroU32::new(limit.burst.max(1)).unwrap_or(NonZeroU32::MIN);
    Quota::with_period(period).unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN)).allow_burst(burst)
}

impl Politeness {
    /// Politeness state with the given limits and no host seen yet.
    pub fn new(config: LimitsConfig) -> Self {
        Self { config, hosts: Mutex::new(HashMap::new()), shared: std::sync::OnceLock::new() }
    }

    /// Makes every RDAP and WHOIS slot also take a slot from `budget` (in fleet mode, the
    /// fleet-wide one, so the per-host rate limits hold for all workers together). Can be set
    /// once; later calls are ignored.
    pub fn set_upstream_budget(&self, budget: Arc<dyn UpstreamBudget>) {
        let _ = self.shared.set(budget);
    }

    fn upstream_budget(&self) -> &dyn UpstreamBudget {
        match self.shared.get() {
            Some(budget) => budget.as_ref(),
            None => &InProcessBudget,
        }
    }

    fn limit_for(&self, protocol: Protocol, host: &str) -> &HostLimit {
        self.config.hosts.get(host).unwrap_or(match protocol {
            Protocol::Dns => &self.config.dns,
            Protocol::Rdap => &self.config.rdap,
            Protocol::Whois => &self.config.whois,
        })
    }

    fn state(&self, protocol: Protocol, host: &str) -> Arc<HostState> {
        let mut hosts = self.hosts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        hosts
            .entry((protocol, host.to_owned()))
            .or_insert_with(|| {
                let limit = self.limit_for(protocol, host);
                Arc::new(HostState {
                    limiter: RateLimiter::direct(quota(limit)),
                    slots: Arc::new(Semaphore::new(limit.concurrency.max(1))),
                    failures: AtomicU32::new(0),
                    cooldown_until: Mutex::new(None),
                })
            })
            .clone()
    }

    /// The budget of `host` for `protocol` and its current use (read only: no slot is taken and no
    /// state is created for a host not yet asked). The rate limiter's remaining tokens are not
    /// shown: governor only tells them by spending one.
    pub fn budget(&self, protocol: Protocol, host: &str) -> Budget {
        let limit = self.limit_for(protocol, host);
        let concurrency = limit.concurrency.max(1);
        let state = {
            let hosts = self.hosts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            hosts.get(&(protocol, host.to_owned())).cloned()
        };
        let (in_flight, cooldown_remaining_secs) = match state {
            Some(state) => {
                let in_flight = concurrency.saturating_sub(state.slots.available_permits());
                let now = Instant::now();
                let cooldown = state
                    .cooldown_until
                    .lock()
                    .ok()
                    .and_then(|until| *until)
                    .filter(|t| *t > now)
                    .map(|t| (t - now).as_secs_f64());
                (in_flight, cooldown)
            }
            None => (0, None),
        };
        Budget {
            per_second: limit.per_second,
            burst: limit.burst.max(1),
            concurrency,
            in_flight,
            cooldown_remaining_secs,
        }
    }

    /// Waits for a rate-limit slot and a concurrency slot for `host`, at most
    /// `max_queue_wait_secs`.
    ///
    /// # Errors
    /// [`ProbeError::CoolingDown`] when the host is in cooldown, [`ProbeError::Busy`] when no slot
    /// came in time. Both are retryable.
    pub async fn acquire(&self, protocol: Protocol, host: &str) -> Result<Permit, ProbeError> {
        let state = self.state(protocol, host);
        if let Ok(mut until) = state.cooldown_until.lock() {
            match *until {
                Some(t) if t > Instant::now() => {
                    return Err(ProbeError::CoolingDown { host: host.to_owned() });
                }
                Some(_) => *until = None,
                None => {}
            }
        }
        let wait = Duration::from_secs_f64(self.config.max_queue_wait_secs.max(0.0));
        let slots = state.slots.clone();
        let limiter_state = state.clone();
        let acquired = tokio::time::timeout(wait, async move {
            let slot = slots.acquire_owned().await;
            limiter_state.limiter.until_ready().await;
            slot
        })
        .await;
        if let (Ok(Ok(_)), Protocol::Rdap | Protocol::Whois) = (&acquired, protocol) {
            let limit = self.limit_for(protocol, host);
            if !self.upstream_budget().acquire(host, limit, wait).await {
                return Err(ProbeError::Busy { host: host.to_owned() });
            }
        }
        match acquired {
            Ok(Ok(slot)) => Ok(Permit {
                state,
                _slot: slot,
                failures_before_cooldown: self.config.failures_before_cooldown.max(1),
                cooldown: Duration::from_secs_f64(self.config.cooldown_secs.max(0.0)),
            }),
            _ => Err(ProbeError::Busy { host: host.to_owned() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(per_second: f64, burst: u32, concurrency: usize) -> LimitsConfig {
        let limit = HostLimit { per_second, burst, concurrency };
        LimitsConfig {
            rdap: limit.clone(),
            whois: limit.clone(),
            dns: limit,
            max_queue_wait_secs: 0.2,
            failures_before_cooldown: 2,
            cooldown_secs: 60.0,
            ..LimitsConfig::default()
        }
    }

    #[tokio::test]
    async fn rate_limit_makes_callers_wait_then_gives_up() {
        let p = Politeness::new(limits(1.0, 1, 4));
        p.acquire(Protocol::Whois, "whois.example").await.expect("first is free").succeeded();
        // The second within the same second must wait ~1 s, longer than the 0.2 s queue wait.
        let second = p.acquire(Protocol::Whois, "whois.example").await;
        assert!(matches!(second, Err(ProbeError::Busy { .. })), "{second:?}");
        // Another host has its own budget.
        assert!(p.acquire(Protocol::Whois, "whois.other").await.is_ok());
    }

    #[tokio::test]
    async fn repeated_failures_start_a_cooldown() {
        let p = Politeness::new(limits(1000.0, 1000, 4));
        for _ in 0..2 {
            p.acquire(Protocol::Rdap, "rdap.example").await.expect("slot").failed();
        }
        let r = p.acquire(Protocol::Rdap, "rdap.example").await;
        assert!(matches!(r, Err(ProbeError::CoolingDown { .. })), "{r:?}");
    }

    #[tokio::test]
    async fn the_budget_shows_limits_use_and_cooldown_without_taking_a_slot() {
        let p = Politeness::new(limits(5.0, 3, 2));
        let b = p.budget(Protocol::Rdap, "rdap.example");
        assert_eq!((b.per_second, b.burst, b.concurrency, b.in_flight), (5.0, 3, 2, 0));
        assert!(b.cooldown_remaining_secs.is_none());
        let held = p.acquire(Protocol::Rdap, "rdap.example").await.expect("slot");
        assert_eq!(p.budget(Protocol::Rdap, "rdap.example").in_flight, 1);
        held.failed();
        p.acquire(Protocol::Rdap, "rdap.example").await.expect("slot").failed();
        let b = p.budget(Protocol::Rdap, "rdap.example");
        assert_eq!(b.in_flight, 0);
        assert!(b.cooldown_remaining_secs.is_some_and(|s| s > 59.0 && s <= 60.0), "{b:?}");
    }

    #[tokio::test]
    async fn concurrency_cap_holds() {
        let p = Politeness::new(limits(1000.0, 1000, 1));
        let held = p.acquire(Protocol::Dns, "ns.example").await.expect("slot");
        assert!(matches!(p.acquire(Protocol::Dns, "ns.example").await, Err(ProbeError::Busy { .. })));
        held.succeeded();
        assert!(p.acquire(Protocol::Dns, "ns.example").await.is_ok());
    }
}
