//! Load shedding on CPU saturation: the async runtime's **scheduling lag**.
//!
//! `policy.max_in_flight` bounds how many requests a front holds, but in-flight counts checks
//! that wait seconds on registries as well as cached answers that take microseconds, so it cannot
//! tell a busy front from an overloaded one. A front flooded past its CPU falls behind in a way
//! that can be measured directly: a task that asks to wake every [`TICK`] wakes late, by as long as
//! the runtime's run queues take to drain (the time every request now waits before it is even
//! looked at). [`Pressure`] keeps that lag; the middleware [`shed`] answers new requests with a
//! fast 503 in the spec's error shape (`Retry-After: 1`, spec §7) while the lag is past
//! `policy.shed_scheduling_lag_ms` **and** the front is busy: at least
//! `policy.shed_min_in_flight` requests in flight — the second condition keeps a lone slow
//! handler or a noisy neighbour on a quiet front from turning into refusals. Admitted requests then wait at most about the lag bound, instead of
//! an ever-growing queue, and the front is back to normal as soon as the flood stops.
//!
//! The lag is the larger of the last tick's lateness and how late the *pending* tick already is,
//! so a runtime that has stopped running timers at all is seen at once, not one tick later.
//!
//! The second queue a request can wait in is the ledger's: every charged answer waits until its
//! charge is durable (spec §8; `ledger.rs`). When charges arrive faster than the writer makes them
//! durable — SQLite's writer thread or JetStream short of CPU — requests pile up there while the
//! runtime itself is idle, so the bound applies to the durability wait of the last charges too
//! ([`Pressure::delay`]).
//! Metrics: `dsa_scheduling_lag_seconds` (gauge, each tick), `dsa_requests_shed_total{reason}`.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

// Tokio's clock (the same as std's unless a test pauses it, which makes the adaptive limit's
// tests deterministic).
use tokio::time::Instant;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::front::error::ApiError;
use crate::front::ledger::LedgerSink;

/// How often the lag probe asks to wake (milliseconds of wall time).
pub const TICK: Duration = Duration::from_millis(5);

/// Default of `policy.shed_scheduling_lag_ms` (milliseconds).
pub const DEFAULT_SHED_SCHEDULING_LAG_MS: u64 = 50;

/// Default of `policy.shed_min_in_flight` (requests).
pub const DEFAULT_SHED_MIN_IN_FLIGHT: usize = 64;

/// The front's view of its own load: the scheduling lag and the requests in flight.
#[derive(Debug)]
pub struct Pressure {
    /// Reference point of the microsecond clocks below.
    epoch: Instant,
    /// When the pending tick is due, microseconds after `epoch`.
    next_due_us: AtomicU64,
    /// How late the last tick woke, microseconds.
    last_lag_us: AtomicU64,
    /// Requests inside [`shed`] now.
    in_flight: AtomicUsize,
    /// Shed past this lag; zero: never.
    max_lag: Duration,
    /// ... and only with at least this many requests in flight.
    min_in_flight: usize,
    /// The ledger queue whose durability wait counts as lag too.
    ledger: Option<LedgerSink>,
    /// The adaptive in-flight limit: lowered while requests are delayed past `max_lag`, raised
    /// again while they are not and the limit is what holds them back (AIMD, each tick).
    limit: AtomicUsize,
    /// Its ceiling (`policy.max_in_flight`, or [`DEFAULT_CEILING`] when that is off).
    ceiling: usize,
}

/// Ceiling of the adaptive limit when `policy.max_in_flight` is 0.
pub const DEFAULT_CEILING: usize = 4_096;

impl Pressure {
    /// A monitor shedding past `max_lag` (zero: off) with at least `min_in_flight` requests in
    /// flight, with its probe task spawned on the current Tokio runtime. The task ends when the
    /// last `Arc` is dropped. Outside a runtime (or with `max_lag` zero) no probe runs and nothing
    /// is ever shed.
    pub fn start(
        max_lag: Duration,
        min_in_flight: usize,
        max_in_flight: usize,
        ledger: Option<LedgerSink>,
    ) -> Arc<Self> {
        let ceiling = if max_in_flight == 0 { DEFAULT_CEILING } else { max_in_flight }.max(min_in_flight).max(1);
        let pressure = Arc::new(Self {
            epoch: Instant::now(),
            next_due_us: AtomicU64::new(0),
            last_lag_us: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            max_lag,
            min_in_flight,
            ledger,
            limit: AtomicUsize::new(ceiling),
            ceiling,
        });
        if !max_lag.is_zero()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            pressure.next_due_us.store(pressure.micros(Instant::now() + TICK), Ordering::Relaxed);
            runtime.spawn(probe(Arc::downgrade(&pressure)));
        }
        pressure
    }

    fn micros(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_micros()).unwrap_or(u64::MAX)
    }

    /// The scheduling lag now: how late the last tick woke, or how late the pending one already
    /// is, whichever is larger. Zero when no probe runs.
    pub fn lag(&self) -> Duration {
        let due = self.next_due_us.load(Ordering::Relaxed);
        if due == 0 {
            return Duration::ZERO;
        }
        let pending = self.micros(Instant::now()).saturating_sub(due);
        Duration::from_micros(pending.max(self.last_lag_us.load(Ordering::Relaxed)))
    }

    /// How long requests wait now beyond their own work: the scheduling lag, or the time the
    /// last charges took to become durable ([`LedgerSink::recent_wait`]), whichever is larger.
    pub fn delay(&self) -> Duration {
        self.lag().max(self.ledger.as_ref().map_or(Duration::ZERO, LedgerSink::recent_wait))
    }

    /// Requests in flight now (those that passed [`shed`] and have not answered yet).
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// The adaptive in-flight limit now (requests).
    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// Why a new request should be refused now, if it should: `"scheduling_lag"` (the runtime is
    /// behind and the front busy) or `"adaptive_limit"` (as many requests in flight as the
    /// adaptive limit allows).
    pub fn refusal(&self) -> Option<&'static str> {
        if self.max_lag.is_zero() {
            return None;
        }
        if self.lag() > self.max_lag && self.in_flight() >= self.min_in_flight {
            return Some("scheduling_lag");
        }
        (self.in_flight() >= self.limit()).then_some("adaptive_limit")
    }

    /// Whether a new request should be refused now ([`Pressure::refusal`]).
    pub fn overloaded(&self) -> bool {
        self.refusal().is_some()
    }

    /// One step of the adaptive limit, each tick: −5% (not below the busy floor) while requests
    /// are delayed past the bound, +1% (at least one, up to the ceiling) while they are not and
    /// the limit is nearly reached. A drop to 36% takes 100 ms; a rise back, about 1.5 s per
    /// doubling, so that a flood that ends is let back in smoothly, not all at once.
    fn adapt(&self) {
        let limit = self.limit();
        let floor = self.min_in_flight.max(1);
        let next = if self.delay() > self.max_lag {
            limit.saturating_sub((limit / 20).max(1)).max(floor)
        } else if self.in_flight() * 10 >= limit * 9 {
            (limit + (limit / 100).max(1)).min(self.ceiling)
        } else {
            limit
        };
        if next != limit {
            self.limit.store(next, Ordering::Relaxed);
            metrics::gauge!("dsa_adaptive_in_flight_limit").set(next as f64);
        }
    }
}

/// The probe: sleeps [`TICK`] at a time and records how late it woke.
async fn probe(pressure: Weak<Pressure>) {
    loop {
        let Some(p) = pressure.upgrade() else { return };
        let due = Instant::now() + TICK;
        p.next_due_us.store(p.micros(due), Ordering::Relaxed);
        drop(p);
        tokio::time::sleep_until(due).await;
        let Some(p) = pressure.upgrade() else { return };
        let late = Instant::now().saturating_duration_since(due);
        p.last_lag_us.store(u64::try_from(late.as_micros()).unwrap_or(u64::MAX), Ordering::Relaxed);
        metrics::gauge!("dsa_scheduling_lag_seconds").set(late.as_secs_f64());
        p.adapt();
    }
}

/// Counts a request in flight until dropped.
struct InFlight(Arc<Pressure>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Middleware: a fast 503 ([`ApiError::Overloaded`], `Retry-After: 1`) while the front is
/// [`Pressure::overloaded`]; otherwise counts the request in flight and runs it. Liveness and
/// metrics (`/healthz`, `/metrics`) are never shed.
pub async fn shed(State(pressure): State<Arc<Pressure>>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    if path != "/healthz"
        && path != "/metrics"
        && let Some(reason) = pressure.refusal()
    {
        metrics::counter!("dsa_requests_shed_total", "reason" => reason).increment(1);
        return ApiError::Overloaded.into_response();
    }
    pressure.in_flight.fetch_add(1, Ordering::Relaxed);
    let _counted = InFlight(pressure.clone());
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn a_blocked_runtime_shows_as_lag_at_once_and_clears_after() {
        let pressure = Pressure::start(Duration::from_millis(20), 0, 0, None);
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(pressure.lag() < Duration::from_millis(20), "idle runtime: {:?}", pressure.lag());
        assert!(!pressure.overloaded());
        // Block the only runtime thread: the pending tick's lateness shows before it fires.
        std::thread::sleep(Duration::from_millis(60));
        assert!(pressure.lag() >= Duration::from_millis(50), "blocked: {:?}", pressure.lag());
        assert!(pressure.overloaded());
        // Two ticks later the runtime is on time again.
        tokio::time::sleep(TICK * 3).await;
        assert!(pressure.lag() < Duration::from_millis(20), "recovered: {:?}", pressure.lag());
        assert!(!pressure.overloaded());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn lag_alone_does_not_shed_below_the_in_flight_floor_and_off_means_off() {
        let pressure = Pressure::start(Duration::from_millis(20), 2, 0, None);
        tokio::time::sleep(Duration::from_millis(10)).await;
        std::thread::sleep(Duration::from_millis(60));
        assert!(pressure.lag() >= Duration::from_millis(50));
        assert!(!pressure.overloaded(), "one request in flight is not a flood");
        pressure.in_flight.fetch_add(2, Ordering::Relaxed);
        assert!(pressure.overloaded());
        let off = Pressure::start(Duration::ZERO, 0, 0, None);
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(off.lag(), Duration::ZERO);
        assert!(!off.overloaded());
    }

    // On a paused clock: the probe's ticks and the ledger's waits are virtual time, so the
    // readings do not depend on how busy the machine running the test is.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_slow_ledger_lowers_the_adaptive_limit_and_a_quick_one_raises_it_again() {
        let (sink, mut queue) = crate::front::ledger::queue(64);
        let pressure = Pressure::start(Duration::from_millis(40), 8, 100, Some(sink.clone()));
        assert_eq!(pressure.limit(), 100, "starts at the ceiling");
        let event = || common::messages::LedgerEvent {
            event_id: uuid::Uuid::now_v7(),
            key_id: "k".into(),
            period: "2026-11".into(),
            endpoint: "check".into(),
            credits: 1,
            charged_at: time::OffsetDateTime::now_utc(),
            front: "f".into(),
            request_id: None,
        };
        // The writer takes 60 ms to make each charge durable, for half a second.
        for _ in 0..8 {
            let charge = tokio::spawn({
                let sink = sink.clone();
                let event = event();
                async move { sink.record(event).await }
            });
            tokio::time::sleep(Duration::from_millis(60)).await;
            assert!(queue.try_take().is_some());
            charge.await.expect("task").expect("durable");
        }
        assert!(pressure.delay() >= Duration::from_millis(55), "{:?}", pressure.delay());
        assert_eq!(pressure.limit(), 8, "lowered to the busy floor");
        assert_eq!(pressure.refusal(), None, "nothing in flight yet");
        pressure.in_flight.fetch_add(8, Ordering::Relaxed);
        assert_eq!(pressure.refusal(), Some("adaptive_limit"));
        // Charges are quick again (none noted: the old waits stop counting); the limit, reached,
        // grows back a step at a time.
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(pressure.delay() < Duration::from_millis(40), "{:?}", pressure.delay());
        assert!(pressure.limit() > 8 && pressure.limit() < 100, "{}", pressure.limit());
        assert_eq!(pressure.refusal(), None);
    }

    #[test]
    fn the_probe_ends_with_the_last_reference() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let weak = runtime.block_on(async {
            let pressure = Pressure::start(Duration::from_millis(20), 0, 0, None);
            tokio::time::sleep(Duration::from_millis(12)).await;
            Arc::downgrade(&pressure)
        });
        runtime.block_on(async { tokio::time::sleep(TICK * 3).await });
        assert!(weak.upgrade().is_none());
        assert_eq!(runtime.metrics().num_alive_tasks(), 0, "the probe task ended");
    }
}
