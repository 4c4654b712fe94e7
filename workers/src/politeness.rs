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
//!
//! Background work (watch re-checks and bulk jobs' checks, run inside [`background`]) yields to
//! users, and leaves nothing idle:
//! * while a user's query waits at a host (for a slot or a token), background work takes no
//!   token, so the user gets the next one; when none waits, it takes every token free;
//! * it holds at most all but one of the host's slots, so a user always finds one it does not
//!   hold;
//! * with `background_share` below 1, its queries also take a slot from a background-only share
//!   of the host's budget (that share of its rate, burst and concurrency; in the fleet also a
//!   fleet-wide budget under the key [`background_key`]): a hard cap, for registries whose budget
//!   must keep headroom whatever users do.
//!
//! The first two hold per process: in a fleet, users' queries on one worker do not hold back
//! background work on another beyond the fleet-wide budget they share.

use std::collections::HashMap;
use std::future::Future;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, FutureExt};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::{HostLimit, LimitsConfig};
use crate::probe::{ProbeError, Protocol};

tokio::task_local! {
    /// Set while background work runs (see [`background`]).
    static BACKGROUND: ();
}

/// Runs `work` as background work: every upstream slot it takes (RDAP, WHOIS, DNS) also takes a
/// slot from the host's background share (`engine.limits.background_share`), so it never uses
/// more than that share of a registry's budget and users' checks keep the rest. Probes that
/// `work` spawns on other tasks are not covered.
pub async fn background<F: Future>(work: F) -> F::Output {
    BACKGROUND.scope((), work).await
}

/// Whether the current task runs inside [`background`].
pub(crate) fn is_background() -> bool {
    BACKGROUND.try_with(|()| ()).is_ok()
}

/// The host name under which background work also asks the [`UpstreamBudget`] for a slot (with
/// the background share's limit): `host` with a `~background~` prefix.
pub fn background_key(host: &str) -> String {
    format!("~background~{host}")
}

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
    /// The background-only share of the host's budget; `None` when the share is the whole.
    background: Option<BackgroundShare>,
    /// Users' queries waiting for a slot or a token of this host now: while any does, background
    /// work takes no token.
    users_waiting: AtomicUsize,
    /// The host's slots background work may hold at once: all but one (at least one), so a
    /// user's query always finds a slot that background work does not hold.
    background_slots: Arc<Semaphore>,
}

/// Counts a user's query as waiting at a host for as long as it lives.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        Self(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Longest background work sleeps before it looks again whether users still wait at a host.
const YIELD_POLL: Duration = Duration::from_millis(5);

/// Waits for a token of `limiter` as background work: never while users wait at the host
/// (`users_waiting`), so every token a user waits for goes to the user; otherwise as soon as
/// one is free (the budget is never left idle for want of users).
async fn token_after_users(limiter: &DefaultDirectRateLimiter, users_waiting: &AtomicUsize) {
    use governor::clock::Clock;
    loop {
        if users_waiting.load(Ordering::Acquire) > 0 {
            tokio::time::sleep(YIELD_POLL).await;
            continue;
        }
        match limiter.check() {
            Ok(()) => return,
            Err(not_until) => {
                let wait = not_until.wait_time_from(governor::clock::DefaultClock::default().now());
                tokio::time::sleep(wait.clamp(Duration::from_micros(100), YIELD_POLL)).await;
            }
        }
    }
}

#[derive(Debug)]
struct BackgroundShare {
    limit: HostLimit,
    limiter: DefaultDirectRateLimiter,
    slots: Arc<Semaphore>,
}

/// Permission to send one query to one host. Report the outcome with [`Permit::succeeded`] or
/// [`Permit::failed`]; dropping it without a report counts as neither.
#[derive(Debug)]
pub struct Permit {
    state: Arc<HostState>,
    _slot: OwnedSemaphorePermit,
    _background_slot: Option<OwnedSemaphorePermit>,
    _background_host_slot: Option<OwnedSemaphorePermit>,
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

/// The governor quota of `limit`'s paced schedule ([`HostLimit::paced`]: a little inside the
/// limit, so jitter on the way never makes a query arrive early at the upstream).
fn quota(limit: &HostLimit) -> Quota {
    let limit = limit.paced();
    let per_second = if limit.per_second.is_finite() && limit.per_second > 0.0 { limit.per_second } else { 1.0 };
    let period = Duration::from_secs_f64(1.0 / per_second).max(Duration::from_nanos(1));
    let burst = NonZeroU32::new(limit.burst.max(1)).unwrap_or(NonZeroU32::MIN);
    Quota::with_period(period).unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN)).allow_burst(burst)
}

/// `limit` scaled down to `share` (clamped to 0.01..=1; the default when not a number), or
/// `None` when the share is the whole budget.
fn background_limit(limit: &HostLimit, share: f64) -> Option<HostLimit> {
    let share = if share.is_finite() { share.clamp(0.01, 1.0) } else { LimitsConfig::default().background_share };
    if share >= 1.0 {
        return None;
    }
    let burst = (f64::from(limit.burst.max(1)) * share).floor();
    let concurrency = (limit.concurrency.max(1) as f64 * share).ceil();
    Some(HostLimit {
        per_second: limit.per_second * share,
        // Both rounded within 1..=the whole budget's (the casts saturate).
        burst: (burst as u32).max(1),
        concurrency: (concurrency as usize).clamp(1, limit.concurrency.max(1)),
    })
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
                let background = background_limit(limit, self.config.background_share).map(|limit| BackgroundShare {
                    limiter: RateLimiter::direct(quota(&limit)),
                    slots: Arc::new(Semaphore::new(limit.concurrency.max(1))),
                    limit,
                });
                let concurrency = limit.concurrency.max(1);
                Arc::new(HostState {
                    limiter: RateLimiter::direct(quota(limit)),
                    slots: Arc::new(Semaphore::new(concurrency)),
                    failures: AtomicU32::new(0),
                    cooldown_until: Mutex::new(None),
                    background,
                    users_waiting: AtomicUsize::new(0),
                    background_slots: Arc::new(Semaphore::new(concurrency.saturating_sub(1).max(1))),
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
    /// `max_queue_wait_secs`. Inside [`background`], first for a slot of the host's background
    /// share, at most `background_max_wait_secs`.
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
        let busy = || ProbeError::Busy { host: host.to_owned() };
        let wait = Duration::from_secs_f64(self.config.max_queue_wait_secs.max(0.0));
        let mut background_slot = None;
        if let (true, Some(share)) = (is_background(), &state.background) {
            // Background work queues for its share (nobody waits for it), then for the host's
            // own slot like everyone else.
            let background_wait = Duration::from_secs_f64(self.config.background_max_wait_secs.max(0.0)).max(wait);
            let share_deadline = tokio::time::Instant::now() + background_wait;
            let slots = share.slots.clone();
            let acquired = tokio::time::timeout_at(share_deadline, async {
                let slot = slots.acquire_owned().await;
                share.limiter.until_ready().await;
                slot
            })
            .await;
            let Ok(Ok(slot)) = acquired else { return Err(busy()) };
            if matches!(protocol, Protocol::Rdap | Protocol::Whois) {
                let left = share_deadline.saturating_duration_since(tokio::time::Instant::now());
                if !self.upstream_budget().acquire(&background_key(host), &share.limit.paced(), left).await {
                    return Err(busy());
                }
            }
            background_slot = Some(slot);
        }
        let background = is_background();
        // Background work waits for the host the way it waits for its share (nobody waits for
        // it); users' queries within `max_queue_wait_secs`.
        let deadline = tokio::time::Instant::now()
            + if background {
                Duration::from_secs_f64(self.config.background_max_wait_secs.max(0.0)).max(wait)
            } else {
                wait
            };
        let mut background_host_slot = None;
        if background {
            let slots = state.background_slots.clone();
            match tokio::time::timeout_at(deadline, slots.acquire_owned()).await {
                Ok(Ok(slot)) => background_host_slot = Some(slot),
                _ => return Err(busy()),
            }
        }
        let slots = state.slots.clone();
        let limiter_state = state.clone();
        let acquired = tokio::time::timeout_at(deadline, async move {
            if background {
                let slot = slots.acquire_owned().await;
                token_after_users(&limiter_state.limiter, &limiter_state.users_waiting).await;
                slot
            } else {
                let _waiting = Waiting::new(&limiter_state.users_waiting);
                let slot = slots.acquire_owned().await;
                limiter_state.limiter.until_ready().await;
                slot
            }
        })
        .await;
        if let (Ok(Ok(_)), Protocol::Rdap | Protocol::Whois) = (&acquired, protocol) {
            let limit = self.limit_for(protocol, host);
            if !self.upstream_budget().acquire(host, &limit.paced(), wait).await {
                return Err(busy());
            }
        }
        match acquired {
            Ok(Ok(slot)) => Ok(Permit {
                state,
                _slot: slot,
                _background_slot: background_slot,
                _background_host_slot: background_host_slot,
                failures_before_cooldown: self.config.failures_before_cooldown.max(1),
                cooldown: Duration::from_secs_f64(self.config.cooldown_secs.max(0.0)),
            }),
            _ => Err(busy()),
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
    async fn a_hosts_burst_keeps_one_token_back() {
        // The upstream allows 3 at once at 1 a second: dsa takes 2 (jitter on the way must not
        // make the third arrive before the upstream's bucket refilled).
        let p = Politeness::new(limits(1.0, 3, 8));
        for _ in 0..2 {
            p.acquire(Protocol::Rdap, "rdap.example").await.expect("within the burst, less one").succeeded();
        }
        let third = p.acquire(Protocol::Rdap, "rdap.example").await;
        assert!(matches!(third, Err(ProbeError::Busy { .. })), "{third:?}");
    }

    #[test]
    fn the_paced_schedule_is_a_little_inside_the_limit() {
        let rdap = HostLimit { per_second: 10.0, burst: 10, concurrency: 8 }.paced();
        assert_eq!((rdap.per_second, rdap.burst, rdap.concurrency), (10.0, 9, 8));
        let single = HostLimit { per_second: 1.0, burst: 1, concurrency: 1 }.paced();
        assert_eq!(single.burst, 1);
        assert!((single.per_second - 1.0 / 1.1).abs() < 1e-9, "{single:?}");
        let zero = HostLimit { per_second: 2.0, burst: 0, concurrency: 1 }.paced();
        assert_eq!(zero.burst, 1);
        assert!(zero.per_second < 2.0);
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

    /// Real time, not a paused clock: governor keeps its own clock and timers.
    #[tokio::test]
    async fn background_work_keeps_to_its_share_and_users_are_served_meanwhile() {
        // 20/s with a burst of 2 and 8 in flight; the background share (0.25) is 5/s, a burst of
        // 1 and 2 in flight, paced at 5/1.1 a second.
        let mut config = limits(20.0, 2, 8);
        config.max_queue_wait_secs = 2.0;
        config.background_share = 0.25;
        let p = Arc::new(Politeness::new(config));
        let window = Duration::from_millis(1500);
        let start = std::time::Instant::now();
        let granted = Arc::new(AtomicU32::new(0));
        let mut tasks = Vec::new();
        for _ in 0..16 {
            let (p, granted) = (p.clone(), granted.clone());
            tasks.push(tokio::spawn(background(async move {
                while start.elapsed() < window {
                    if let Ok(permit) = p.acquire(Protocol::Rdap, "rdap.example").await {
                        if start.elapsed() <= window {
                            granted.fetch_add(1, Ordering::Relaxed);
                        }
                        permit.succeeded();
                    }
                }
            })));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut slowest = Duration::ZERO;
        while start.elapsed() + Duration::from_millis(300) < window {
            let asked = std::time::Instant::now();
            p.acquire(Protocol::Rdap, "rdap.example").await.expect("a user's slot").succeeded();
            slowest = slowest.max(asked.elapsed());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for task in tasks {
            task.await.expect("background task");
        }
        // A user's slot comes within a few of the host's 50 ms periods, not behind 16 waiters.
        assert!(slowest <= Duration::from_millis(250), "slowest user acquisition {slowest:?}");
        // GCRA at 5/1.1 a second with a burst of 1: at most 1 + 1.5 s × 4.5 in the window, and
        // not starved.
        let granted = granted.load(Ordering::Relaxed);
        assert!((3..=9).contains(&granted), "background slots in {window:?}: {granted}");
    }

    /// Without a share (the default), background work still yields: while a user's query waits
    /// at the host it takes no token, and it never holds the host's last slot; when no user waits
    /// it takes every token (the budget is not left idle). Real time: governor keeps its own clock.
    #[tokio::test]
    async fn background_work_yields_every_token_a_user_waits_for_and_takes_the_rest() {
        // 20/s with a burst of 2 and 4 in flight; no share.
        let mut config = limits(20.0, 2, 4);
        config.max_queue_wait_secs = 2.0;
        let p = Arc::new(Politeness::new(config));
        let window = Duration::from_millis(1500);
        let start = std::time::Instant::now();
        let granted = Arc::new(AtomicU32::new(0));
        let mut tasks = Vec::new();
        for _ in 0..16 {
            let (p, granted) = (p.clone(), granted.clone());
            tasks.push(tokio::spawn(background(async move {
                while start.elapsed() < window {
                    if let Ok(permit) = p.acquire(Protocol::Rdap, "rdap.example").await {
                        if start.elapsed() <= window {
                            granted.fetch_add(1, Ordering::Relaxed);
                        }
                        // Holds its slot a while, as a query does.
                        tokio::time::sleep(Duration::from_millis(30)).await;
                        permit.succeeded();
                    }
                }
            })));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let (mut slowest, mut users) = (Duration::ZERO, 0_u32);
        while start.elapsed() + Duration::from_millis(300) < window {
            let asked = std::time::Instant::now();
            p.acquire(Protocol::Rdap, "rdap.example").await.expect("a user's slot").succeeded();
            slowest = slowest.max(asked.elapsed());
            users += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        for task in tasks {
            task.await.expect("background task");
        }
        // One token period (50 ms) and scheduling, not behind 16 background waiters (800 ms).
        assert!(slowest <= Duration::from_millis(150), "slowest user acquisition {slowest:?}");
        // The rest of the budget went to background work: 20/s over 1.5 s, a burst of 2 (1 once
        // paced), less the users' tokens; a share-less budget left idle would show far fewer.
        let granted = granted.load(Ordering::Relaxed);
        assert!(granted + users >= 24 && granted + users <= 33, "background {granted} + users {users} in {window:?}");
    }

    #[test]
    fn the_background_share_scales_the_limit_within_bounds() {
        let limit = HostLimit { per_second: 10.0, burst: 10, concurrency: 8 };
        let share = background_limit(&limit, 0.25).expect("a share");
        assert_eq!((share.per_second, share.burst, share.concurrency), (2.5, 2, 2));
        assert!(background_limit(&limit, 1.0).is_none());
        assert!(background_limit(&limit, 7.0).is_none());
        let tiny = background_limit(&HostLimit { per_second: 1.0, burst: 1, concurrency: 1 }, 0.0).expect("a share");
        assert_eq!((tiny.per_second, tiny.burst, tiny.concurrency), (0.01, 1, 1));
    }
}
