//! The simulator's control plane, shared by the three servers: live knobs, per-client rate
//! limiters, counters and the shutdown signal.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use serde::Serialize;
use tokio::sync::watch;

use super::scenario::{Fault, Knobs, Protocol};

/// Counters of one protocol.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ProtocolStats {
    /// Requests received (including those over the limit and those answered with a fault).
    pub queries: u64,
    /// Requests over the per-client rate limit (answered 429 / "limit exceeded").
    pub rate_limit_violations: u64,
    /// Requests answered with a deliberate fault (reset, stall, slow, oversize).
    pub faults: u64,
}

/// A snapshot of the simulator's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SimStats {
    /// DNS queries (UDP and TCP).
    pub dns: ProtocolStats,
    /// RDAP requests.
    pub rdap: ProtocolStats,
    /// WHOIS queries.
    pub whois: ProtocolStats,
}

#[derive(Debug, Default)]
struct Counters {
    queries: AtomicU64,
    violations: AtomicU64,
    faults: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> ProtocolStats {
        ProtocolStats {
            queries: self.queries.load(Ordering::Relaxed),
            rate_limit_violations: self.violations.load(Ordering::Relaxed),
            faults: self.faults.load(Ordering::Relaxed),
        }
    }
}

/// Keyed by (client address, server address): each simulated registry host limits each client
/// on its own, as real registries do (a client of two registries has two budgets).
type Limiter = DefaultKeyedRateLimiter<(IpAddr, IpAddr)>;

/// Knobs plus the limiters built from them; swapped whole by `set_knobs`.
struct Live {
    knobs: Knobs,
    rdap: Option<Arc<Limiter>>,
    whois: Option<Arc<Limiter>>,
}

/// Shared state of a running simulator (one `Arc` for all servers).
pub(crate) struct Control {
    live: RwLock<Live>,
    dns: Counters,
    rdap: Counters,
    whois: Counters,
    shutdown: watch::Sender<bool>,
    /// The simulated registries' clock (timelines): `None` is the real time.
    now: RwLock<Option<time::OffsetDateTime>>,
}

impl Control {
    /// A control plane starting with `knobs`.
    pub(crate) fn new(knobs: Knobs) -> Arc<Self> {
        let live = Live {
            knobs,
            rdap: limiter(knobs.rate_limit.rdap_per_second),
            whois: limiter(knobs.rate_limit.whois_per_second),
        };
        Arc::new(Self {
            live: RwLock::new(live),
            dns: Counters::default(),
            rdap: Counters::default(),
            whois: Counters::default(),
            shutdown: watch::Sender::new(false),
            now: RwLock::new(None),
        })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Live> {
        // A panic while holding the lock cannot leave `Live` half-written (it is replaced
        // field by field from a finished value), so a poisoned lock is still usable.
        self.live.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The registries' time now (the set instant, else the real time).
    pub(crate) fn now(&self) -> time::OffsetDateTime {
        let set = *self.now.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        set.unwrap_or_else(time::OffsetDateTime::now_utc)
    }

    /// Sets the registries' clock (`None`: the real time again).
    pub(crate) fn set_now(&self, now: Option<time::OffsetDateTime>) {
        *self.now.write().unwrap_or_else(std::sync::PoisonError::into_inner) = now;
    }

    /// The current knobs.
    pub(crate) fn knobs(&self) -> Knobs {
        self.read().knobs
    }

    /// Replaces the knobs. A limiter is rebuilt (forgetting its history) only when its rate
    /// changes, so flipping a fault does not reset rate-limit state.
    pub(crate) fn set_knobs(&self, knobs: Knobs) {
        let mut live = self.live.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if live.knobs.rate_limit.rdap_per_second != knobs.rate_limit.rdap_per_second {
            live.rdap = limiter(knobs.rate_limit.rdap_per_second);
        }
        if live.knobs.rate_limit.whois_per_second != knobs.rate_limit.whois_per_second {
            live.whois = limiter(knobs.rate_limit.whois_per_second);
        }
        live.knobs = knobs;
    }

    fn counters(&self, protocol: Protocol) -> &Counters {
        match protocol {
            Protocol::Dns => &self.dns,
            Protocol::Rdap => &self.rdap,
            Protocol::Whois => &self.whois,
        }
    }

    /// Counts one request of `protocol`.
    pub(crate) fn count_query(&self, protocol: Protocol) {
        self.counters(protocol).queries.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one deliberate fault served.
    pub(crate) fn count_fault(&self, protocol: Protocol) {
        self.counters(protocol).faults.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether `client` is within its rate limit for `protocol` at the server listening on
    /// `server` (each simulated host limits its clients on its own); a refusal is counted as a
    /// violation. DNS is never limited.
    pub(crate) fn admit(&self, protocol: Protocol, client: IpAddr, server: IpAddr) -> bool {
        let limiter = match protocol {
            Protocol::Dns => None,
            Protocol::Rdap => self.read().rdap.clone(),
            Protocol::Whois => self.read().whois.clone(),
        };
        let admitted = limiter.is_none_or(|l| l.check_key(&(client, server)).is_ok());
        if !admitted {
            self.counters(protocol).violations.fetch_add(1, Ordering::Relaxed);
        }
        admitted
    }

    /// The configured latency of `protocol`.
    pub(crate) fn latency(&self, protocol: Protocol) -> Duration {
        let l = self.read().knobs.latency_ms;
        Duration::from_millis(match protocol {
            Protocol::Dns => l.dns,
            Protocol::Rdap => l.rdap,
            Protocol::Whois => l.whois,
        })
    }

    /// The configured fault of `protocol` (DNS has none).
    pub(crate) fn fault(&self, protocol: Protocol) -> Fault {
        let f = self.read().knobs.faults;
        match protocol {
            Protocol::Dns => Fault::None,
            Protocol::Rdap => f.rdap,
            Protocol::Whois => f.whois,
        }
    }

    /// A snapshot of all counters.
    pub(crate) fn stats(&self) -> SimStats {
        SimStats { dns: self.dns.snapshot(), rdap: self.rdap.snapshot(), whois: self.whois.snapshot() }
    }

    /// Tells every server and every open connection to stop.
    pub(crate) fn shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    /// Resolves once [`Control::shutdown`] was called.
    pub(crate) fn stopped(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.shutdown.subscribe();
        async move {
            // An error means the sender is gone, which also means "stop".
            let _ = rx.wait_for(|stop| *stop).await;
        }
    }
}

fn limiter(per_second: Option<u32>) -> Option<Arc<Limiter>> {
    let rate = NonZeroU32::new(per_second?)?;
    Some(Arc::new(RateLimiter::keyed(Quota::per_second(rate))))
}
