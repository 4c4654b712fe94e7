//! Live health per registry suffix: how each lookup method (DNS, RDAP, WHOIS) fared over the last
//! hour, and when a definitive verdict was last seen. Served by `GET /v1/tlds/{tld}`.
//!
//! One [`Window`] per (suffix, method): 60 one-minute buckets (attempts and successes) reused in
//! a ring, plus a bounded sample of the latest latencies for the median. Memory is bounded: the
//! book is keyed by the catalogue entry that answers for a name (at most one per catalogue
//! entry, about two thousand), each window is fixed size.
//!
//! What counts as a *success*: the method gave a definitive answer (DNS: the zone's server
//! answered delegated or not delegated; RDAP: the answer read as registered, pending delete or
//! not found; WHOIS: a known marker matched). Timeouts, resets, throttling, 5xx and unreadable
//! answers are failures. An attempt refused by our own politeness (cooldown, no slot in time) is
//! not an attempt on the upstream and is not counted.
//!
//! The book also notices when **self-correcting routing** ([`RoutingConfig`]) should act: when
//! RDAP fails `rdap_failures` times in a row for a suffix and WHOIS then answers definitively,
//! [`HealthBook::record`] returns [`Reroute::WhoisFirstUntil`] (now + `prefer_whois_secs`). The
//! decision itself is kept in a [`crate::routing::RouteBook`]: in process when standalone, in
//! the fleet's KV bucket when the engine runs in a fleet, so one worker's failures reroute them all.
//!
//! The book is per process. In standalone mode that is every probe; in fleet mode the probes run
//! on the workers, so a front's windows stay empty and only `last_definitive_at` (from the
//! verdicts its workers return, see [`crate::engine::Engine::remember`]) moves.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;
use time::OffsetDateTime;

use crate::config::RoutingConfig;
use crate::probe::Protocol;

/// Minutes in a window (one bucket a minute): the last hour.
pub const WINDOW_MINUTES: u64 = 60;

/// Latencies kept per window for the median (the most recent ones).
pub const LATENCY_SAMPLE: usize = 128;

#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    /// Minutes since the Unix epoch this bucket counts (a stale bucket is reset on reuse).
    minute: u64,
    attempts: u32,
    successes: u32,
}

/// One method's outcomes on one suffix over the last [`WINDOW_MINUTES`] minutes.
#[derive(Debug, Clone)]
pub struct Window {
    buckets: [Bucket; WINDOW_MINUTES as usize],
    /// (minute, latency in ms), oldest first, at most [`LATENCY_SAMPLE`].
    latencies: VecDeque<(u64, u32)>,
}

impl Default for Window {
    fn default() -> Self {
        Self { buckets: [Bucket::default(); WINDOW_MINUTES as usize], latencies: VecDeque::new() }
    }
}

/// A window's figures, as `GET /v1/tlds/{tld}` shows them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WindowStats {
    /// Exchanges with the upstream in the last hour.
    pub attempts: u64,
    /// Of which gave a definitive answer (see the module documentation).
    pub successes: u64,
    /// `successes / attempts` (0 to 1); `None` without attempts.
    pub success_rate: Option<f64>,
    /// Median latency of the sampled exchanges in the last hour, milliseconds; `None` without any.
    pub p50_ms: Option<u64>,
}

fn minute_of(at: OffsetDateTime) -> u64 {
    u64::try_from(at.unix_timestamp()).unwrap_or(0) / 60
}

impl Window {
    /// Records one exchange at `at`.
    pub fn record(&mut self, at: OffsetDateTime, latency: Duration, success: bool) {
        let minute = minute_of(at);
        let bucket = &mut self.buckets[(minute % WINDOW_MINUTES) as usize];
        if bucket.minute != minute {
            *bucket = Bucket { minute, attempts: 0, successes: 0 };
        }
        bucket.attempts = bucket.attempts.saturating_add(1);
        if success {
            bucket.successes = bucket.successes.saturating_add(1);
        }
        if self.latencies.len() == LATENCY_SAMPLE {
            self.latencies.pop_front();
        }
        let ms = u32::try_from(latency.as_millis()).unwrap_or(u32::MAX);
        self.latencies.push_back((minute, ms));
    }

    /// The figures of the hour ending at `now`.
    pub fn stats(&self, now: OffsetDateTime) -> WindowStats {
        let now_minute = minute_of(now);
        let recent = |minute: u64| minute <= now_minute && now_minute - minute < WINDOW_MINUTES;
        let (mut attempts, mut successes) = (0_u64, 0_u64);
        for b in self.buckets.iter().filter(|b| b.attempts > 0 && recent(b.minute)) {
            attempts += u64::from(b.attempts);
            successes += u64::from(b.successes);
        }
        let mut sample: Vec<u32> = self.latencies.iter().filter(|(m, _)| recent(*m)).map(|(_, ms)| *ms).collect();
        sample.sort_unstable();
        // The lower median for an even count: a latency that was actually observed.
        let p50_ms = (!sample.is_empty()).then(|| u64::from(sample[(sample.len() - 1) / 2]));
        #[expect(clippy::cast_precision_loss, reason = "counts of one hour are far below 2^52")]
        let success_rate = (attempts > 0).then(|| successes as f64 / attempts as f64);
        WindowStats { attempts, successes, success_rate, p50_ms }
    }
}

#[derive(Debug, Default)]
struct SuffixHealth {
    dns: Window,
    rdap: Window,
    whois: Window,
    last_definitive_at: Option<OffsetDateTime>,
    /// RDAP failures in a row (reset by an RDAP success or a switch to WHOIS first).
    rdap_failures_in_a_row: u32,
}

impl SuffixHealth {
    fn window(&mut self, protocol: Protocol) -> &mut Window {
        match protocol {
            Protocol::Dns => &mut self.dns,
            Protocol::Rdap => &mut self.rdap,
            Protocol::Whois => &mut self.whois,
        }
    }
}

/// A suffix's health as of one moment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuffixStats {
    /// The DNS pre-check.
    pub dns: WindowStats,
    /// RDAP.
    pub rdap: WindowStats,
    /// WHOIS.
    pub whois: WindowStats,
    /// The last time this process saw a definitive verdict for a name under the suffix (UTC).
    pub last_definitive_at: Option<OffsetDateTime>,
}

impl SuffixStats {
    /// The figures of one method.
    pub fn of(&self, protocol: Protocol) -> WindowStats {
        match protocol {
            Protocol::Dns => self.dns,
            Protocol::Rdap => self.rdap,
            Protocol::Whois => self.whois,
        }
    }
}

/// The health of every suffix this process has asked about (see the module documentation).
#[derive(Debug, Default)]
pub struct HealthBook {
    suffixes: Mutex<HashMap<String, SuffixHealth>>,
    routing: RoutingConfig,
}

/// What one recorded exchange changed in the routing of its suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reroute {
    /// Nothing.
    Unchanged,
    /// RDAP kept failing and WHOIS answered: WHOIS is to be asked first until the given time
    /// (the engine records it in its [`crate::routing::RouteBook`]).
    WhoisFirstUntil(OffsetDateTime),
}

impl HealthBook {
    /// An empty book with the given routing rule.
    pub fn new(routing: RoutingConfig) -> Self {
        Self { suffixes: Mutex::default(), routing }
    }

    fn with<R>(&self, suffix: &str, f: impl FnOnce(&mut SuffixHealth) -> R) -> R {
        let mut map = self.suffixes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(h) = map.get_mut(suffix) {
            return f(h);
        }
        f(map.entry(suffix.to_owned()).or_default())
    }

    /// Records one exchange of `protocol` for `suffix` (the catalogue entry's suffix) at `at`,
    /// and applies the routing rule (see the module documentation).
    pub fn record(
        &self,
        suffix: &str,
        protocol: Protocol,
        at: OffsetDateTime,
        latency: Duration,
        success: bool,
    ) -> Reroute {
        let routing = &self.routing;
        self.with(suffix, |h| {
            h.window(protocol).record(at, latency, success);
            match (protocol, success) {
                (Protocol::Rdap, true) => h.rdap_failures_in_a_row = 0,
                (Protocol::Rdap, false) => h.rdap_failures_in_a_row = h.rdap_failures_in_a_row.saturating_add(1),
                (Protocol::Whois, true)
                    if routing.enabled && h.rdap_failures_in_a_row >= routing.rdap_failures.max(1) =>
                {
                    let hold = time::Duration::seconds(i64::try_from(routing.prefer_whois_secs).unwrap_or(i64::MAX));
                    let until = at.saturating_add(hold);
                    h.rdap_failures_in_a_row = 0;
                    return Reroute::WhoisFirstUntil(until);
                }
                _ => {}
            }
            Reroute::Unchanged
        })
    }

    /// Notes a definitive verdict for a name under `suffix`, obtained at `at` (keeps the latest).
    pub fn definitive(&self, suffix: &str, at: OffsetDateTime) {
        self.with(suffix, |h| {
            if h.last_definitive_at.is_none_or(|last| last < at) {
                h.last_definitive_at = Some(at);
            }
        });
    }

    /// The figures of `suffix` for the hour ending at `now` (all zero for a suffix never seen).
    pub fn stats(&self, suffix: &str, now: OffsetDateTime) -> SuffixStats {
        let map = self.suffixes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let empty = SuffixHealth::default();
        let h = map.get(suffix).unwrap_or(&empty);
        SuffixStats {
            dns: h.dns.stats(now),
            rdap: h.rdap.stats(now),
            whois: h.whois.stats(now),
            last_definitive_at: h.last_definitive_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_800_000_000 + secs).expect("valid time")
    }

    #[test]
    fn counts_attempts_successes_and_the_median() {
        let mut w = Window::default();
        for (i, ms) in [30_u64, 10, 20, 40].iter().enumerate() {
            w.record(at(i as i64), Duration::from_millis(*ms), i != 1);
        }
        let s = w.stats(at(10));
        assert_eq!((s.attempts, s.successes), (4, 3));
        assert_eq!(s.success_rate, Some(0.75));
        assert_eq!(s.p50_ms, Some(20), "lower median of 10, 20, 30, 40");
        let empty = Window::default().stats(at(0));
        assert_eq!((empty.attempts, empty.success_rate, empty.p50_ms), (0, None, None));
    }

    #[test]
    fn forgets_what_is_older_than_an_hour_and_reuses_buckets() {
        let mut w = Window::default();
        w.record(at(0), Duration::from_millis(500), false);
        w.record(at(30 * 60), Duration::from_millis(5), true);
        let s = w.stats(at(30 * 60));
        assert_eq!((s.attempts, s.successes), (2, 1));
        // 61 minutes after the first exchange it is out of the window; the second is still in.
        let s = w.stats(at(61 * 60));
        assert_eq!((s.attempts, s.successes, s.p50_ms), (1, 1, Some(5)));
        // Exactly 60 minutes later the same bucket is reused: the old count is dropped, not added.
        w.record(at(60 * 60), Duration::from_millis(7), true);
        let s = w.stats(at(60 * 60));
        assert_eq!((s.attempts, s.successes), (2, 2), "{s:?}");
        // Two hours of silence: nothing left.
        assert_eq!(w.stats(at(4 * 3600)).attempts, 0);
    }

    #[test]
    fn the_latency_sample_is_bounded() {
        let mut w = Window::default();
        for i in 0..(LATENCY_SAMPLE as u64 * 3) {
            w.record(at(0), Duration::from_millis(if i < LATENCY_SAMPLE as u64 * 2 { 1000 } else { 1 }), true);
        }
        assert_eq!(w.latencies.len(), LATENCY_SAMPLE);
        assert_eq!(w.stats(at(0)).p50_ms, Some(1), "only the latest exchanges are sampled");
        assert_eq!(w.stats(at(0)).attempts, LATENCY_SAMPLE as u64 * 3, "counts are not sampled");
    }

    #[test]
    fn rdap_failing_while_whois_answers_asks_for_whois_first() {
        let book = HealthBook::new(RoutingConfig { enabled: true, rdap_failures: 3, prefer_whois_secs: 300 });
        let ms = Duration::from_millis(5);
        // Two RDAP failures, then WHOIS answers: not enough yet.
        for i in 0..2 {
            assert_eq!(book.record("com", Protocol::Rdap, at(i), ms, false), Reroute::Unchanged);
        }
        assert_eq!(book.record("com", Protocol::Whois, at(2), ms, true), Reroute::Unchanged);
        // An RDAP success in between resets the streak.
        book.record("com", Protocol::Rdap, at(3), ms, true);
        for i in 4..7 {
            book.record("com", Protocol::Rdap, at(i), ms, false);
        }
        // A failing WHOIS does not switch either.
        assert_eq!(book.record("com", Protocol::Whois, at(7), ms, false), Reroute::Unchanged);
        assert_eq!(book.record("com", Protocol::Whois, at(8), ms, true), Reroute::WhoisFirstUntil(at(308)));
        // The streak starts over: one more WHOIS success asks for nothing new.
        assert_eq!(book.record("com", Protocol::Whois, at(9), ms, true), Reroute::Unchanged);
        assert_eq!(book.record("net", Protocol::Whois, at(9), ms, true), Reroute::Unchanged, "per suffix");
        // Switched off: never.
        let off = HealthBook::new(RoutingConfig { enabled: false, ..RoutingConfig::default() });
        for i in 0..10 {
            off.record("com", Protocol::Rdap, at(i), ms, false);
        }
        assert_eq!(off.record("com", Protocol::Whois, at(10), ms, true), Reroute::Unchanged);
    }

    #[test]
    fn the_book_keeps_suffixes_and_the_latest_definitive_time() {
        let book = HealthBook::default();
        book.record("com", Protocol::Rdap, at(0), Duration::from_millis(12), true);
        book.record("com", Protocol::Whois, at(0), Duration::from_millis(90), false);
        book.definitive("com", at(5));
        book.definitive("com", at(2));
        let s = book.stats("com", at(60));
        assert_eq!(s.of(Protocol::Rdap).successes, 1);
        assert_eq!(s.of(Protocol::Whois).success_rate, Some(0.0));
        assert_eq!(s.of(Protocol::Dns).attempts, 0);
        assert_eq!(s.last_definitive_at, Some(at(5)), "an older verdict does not move it back");
        assert_eq!(book.stats("org", at(60)).last_definitive_at, None);
    }
}
