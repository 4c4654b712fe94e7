//! The portal's limits on anonymous and signed-in traffic (issue 32): sign-in attempts per client
//! address, failed sign-ins per (e-mail address, client address) with a capped exponential
//! back-off, sign-ups per client address per UTC day, and key creations per account per hour.
//!
//! Every map here is keyed by client input, so every map is a bounded `moka` cache
//! ([`TRACKED_MAX`] entries, least-recently/frequently used evicted first) with a lifetime: an
//! anonymous client can fill it, never grow it. What eviction costs: a client address or a pair
//! pushed out under a flood starts again from zero, which the per-address limit still bounds.
//!
//! Why per (e-mail, address) and not per e-mail: a per-e-mail limit lets anyone who knows an
//! address lock its owner out from everywhere by failing on purpose (the finding of issue 32).
//! Counting the pair slows the attacker's address only; the coarse per-address limit bounds how
//! many e-mail addresses one address can try.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use moka::ops::compute::Op;
use moka::sync::Cache;

use crate::front::policy::PortalConfig;

/// Most entries of each limiter map (client addresses, (e-mail, address) pairs, …). At about
/// 300 bytes an entry (an e-mail address is at most 254 bytes), a full map holds about 6 MiB.
pub(super) const TRACKED_MAX: u64 = 20_000;

/// At most one verification mail per account this often.
const VERIFICATION_MAIL_EVERY: Duration = Duration::from_secs(600);

/// A refusal: seconds until the client may try again (`Retry-After`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RetryAfter(pub(super) u64);

impl RetryAfter {
    /// Whole seconds, rounded up (at least 1), so a client that waits them is let through.
    fn of(left: Duration) -> Self {
        Self((left.as_secs() + u64::from(left.subsec_nanos() > 0)).max(1))
    }
}

/// A count in a fixed window that started at `start`.
#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    count: u32,
}

/// Failed sign-ins of one (e-mail, address) pair.
#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    blocked_until: Option<Instant>,
}

/// The limiters of one front.
pub(super) struct Limits {
    signin_per_ip: u32,
    per_ip: Cache<IpAddr, Window>,
    free_failures: u32,
    backoff_max: Duration,
    failures: Cache<(String, Option<IpAddr>), Failures>,
    signups_per_ip_per_day: u32,
    signups: Cache<(IpAddr, i64), u32>,
    key_creations_per_hour: u32,
    key_creations: Cache<String, Window>,
    verification_mails: Cache<String, Window>,
}

fn bounded<K, V>(lifetime: Duration) -> Cache<K, V>
where
    K: std::hash::Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    Cache::builder().max_capacity(TRACKED_MAX).time_to_idle(lifetime).build()
}

/// Counts one event in the fixed window of `key` (`every` long) unless `limit` were passed:
/// `Err` with the seconds left in the window then. A limit of 0 allows everything.
fn count_in_window<K>(cache: &Cache<K, Window>, key: K, limit: u32, every: Duration) -> Result<(), RetryAfter>
where
    K: std::hash::Hash + Eq + Send + Sync + Clone + 'static,
{
    if limit == 0 {
        return Ok(());
    }
    let now = Instant::now();
    let mut refused = None;
    cache.entry(key).and_compute_with(|entry| {
        let window = match entry.map(|e| e.into_value()) {
            Some(w) if now.duration_since(w.start) < every => w,
            _ => Window { start: now, count: 0 },
        };
        if window.count >= limit {
            let left = every.saturating_sub(now.duration_since(window.start));
            refused = Some(RetryAfter::of(left));
            Op::Nop
        } else {
            Op::Put(Window { count: window.count + 1, ..window })
        }
    });
    refused.map_or(Ok(()), Err)
}

impl Limits {
    /// The limiters for these settings.
    pub(super) fn new(config: &PortalConfig) -> Self {
        let backoff_max = Duration::from_secs(config.signin_backoff_max_secs.max(1));
        Self {
            signin_per_ip: config.signin_per_ip_per_minute,
            per_ip: bounded(Duration::from_secs(60)),
            free_failures: config.signin_free_failures,
            backoff_max,
            // Failures are forgotten after an hour without one (or the back-off cap, if longer).
            failures: bounded(backoff_max.max(Duration::from_secs(3_600))),
            signups_per_ip_per_day: config.signups_per_ip_per_day,
            signups: bounded(Duration::from_secs(86_400)),
            key_creations_per_hour: config.key_creations_per_hour,
            key_creations: bounded(Duration::from_secs(3_600)),
            verification_mails: bounded(VERIFICATION_MAIL_EVERY),
        }
    }

    /// Counts one sign-in or sign-up attempt from `ip` (the coarse per-address limit).
    pub(super) fn attempt(&self, ip: Option<IpAddr>) -> Result<(), RetryAfter> {
        match ip {
            Some(ip) => count_in_window(&self.per_ip, ip, self.signin_per_ip, Duration::from_secs(60)),
            None => Ok(()),
        }
    }

    /// Whether `email` may be tried from `ip` now: `Err` while the pair is backing off.
    pub(super) fn may_try(&self, email: &str, ip: Option<IpAddr>) -> Result<(), RetryAfter> {
        let Some(failures) = self.failures.get(&(email.to_owned(), ip)) else { return Ok(()) };
        match failures.blocked_until {
            Some(until) => match until.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Err(RetryAfter::of(left)),
                _ => Ok(()),
            },
            None => Ok(()),
        }
    }

    /// Records a failed sign-in of `email` from `ip`: past `signin_free_failures`, the pair waits
    /// 1, 2, 4, … seconds (at most `signin_backoff_max_secs`) before its next attempt.
    pub(super) fn failed(&self, email: &str, ip: Option<IpAddr>) {
        let (free, max) = (self.free_failures, self.backoff_max);
        self.failures.entry((email.to_owned(), ip)).and_upsert_with(|entry| {
            let count = entry.map_or(0, |e| e.into_value().count).saturating_add(1);
            let blocked_until = (count >= free.max(1)).then(|| {
                let exponent = (count - free.max(1)).min(30);
                Instant::now() + Duration::from_secs(1u64 << exponent).min(max)
            });
            Failures { count, blocked_until }
        });
    }

    /// Forgets the failures of `email` from `ip` (a successful sign-in).
    pub(super) fn succeeded(&self, email: &str, ip: Option<IpAddr>) {
        self.failures.invalidate(&(email.to_owned(), ip));
    }

    /// Whether `ip` may create another account on UTC day `day` (days since 1970-01-01).
    pub(super) fn may_sign_up(&self, ip: Option<IpAddr>, day: i64) -> bool {
        match ip {
            Some(ip) if self.signups_per_ip_per_day > 0 => {
                self.signups.get(&(ip, day)).unwrap_or(0) < self.signups_per_ip_per_day
            }
            _ => true,
        }
    }

    /// Counts an account about to be created from `ip` on `day`; false (nothing counted) when
    /// the address has made its accounts of the day.
    pub(super) fn sign_up(&self, ip: Option<IpAddr>, day: i64) -> bool {
        let (Some(ip), limit) = (ip, self.signups_per_ip_per_day) else { return true };
        if limit == 0 {
            return true;
        }
        let mut admitted = false;
        self.signups.entry((ip, day)).and_compute_with(|entry| {
            let used = entry.map_or(0, |e| e.into_value());
            admitted = used < limit;
            if admitted { Op::Put(used + 1) } else { Op::Nop }
        });
        admitted
    }

    /// Gives back a sign-up counted by [`Limits::sign_up`] that made no account.
    pub(super) fn sign_up_undone(&self, ip: Option<IpAddr>, day: i64) {
        if let Some(ip) = ip {
            self.signups.entry((ip, day)).and_compute_with(|entry| match entry.map(|e| e.into_value()) {
                Some(used) if used > 1 => Op::Put(used - 1),
                Some(_) => Op::Remove,
                None => Op::Nop,
            });
        }
    }

    /// Counts one key creation by `account_id` (per hour): `Err` when over the rate.
    pub(super) fn create_key(&self, account_id: &str) -> Result<(), RetryAfter> {
        count_in_window(
            &self.key_creations,
            account_id.to_owned(),
            self.key_creations_per_hour,
            Duration::from_secs(3_600),
        )
    }

    /// Whether another mail of one kind may go to an account now (one per
    /// [`VERIFICATION_MAIL_EVERY`]), and counts it: the portal is no way to flood a mailbox.
    /// `budget` is the account id for the verification mail, a labelled id (`exists:<id>`) for
    /// other kinds.
    pub(super) fn verification_mail(&self, budget: &str) -> bool {
        count_in_window(&self.verification_mails, budget.to_owned(), 1, VERIFICATION_MAIL_EVERY).is_ok()
    }

    /// Entries held by the maps keyed by client input (after pending evictions).
    #[cfg(test)]
    pub(super) fn tracked(&self) -> u64 {
        self.per_ip.run_pending_tasks();
        self.failures.run_pending_tasks();
        self.signups.run_pending_tasks();
        self.per_ip.entry_count() + self.failures.entry_count() + self.signups.entry_count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_back_off_exponentially_up_to_the_cap() {
        let config = PortalConfig { signin_free_failures: 2, signin_backoff_max_secs: 4, ..PortalConfig::default() };
        let limits = Limits::new(&config);
        let ip = Some(IpAddr::from([192, 0, 2, 1]));
        let other = Some(IpAddr::from([192, 0, 2, 2]));
        limits.failed("a@example.com", ip);
        assert_eq!(limits.may_try("a@example.com", ip), Ok(()), "one failure is free");
        limits.failed("a@example.com", ip);
        assert_eq!(limits.may_try("a@example.com", ip), Err(RetryAfter(1)));
        limits.failed("a@example.com", ip);
        assert_eq!(limits.may_try("a@example.com", ip), Err(RetryAfter(2)));
        for _ in 0..10 {
            limits.failed("a@example.com", ip);
        }
        assert_eq!(limits.may_try("a@example.com", ip), Err(RetryAfter(4)), "capped");
        assert_eq!(limits.may_try("a@example.com", other), Ok(()), "another address is not slowed");
        limits.succeeded("a@example.com", ip);
        assert_eq!(limits.may_try("a@example.com", ip), Ok(()));
    }

    #[test]
    fn windows_count_and_refuse() {
        let limits = Limits::new(&PortalConfig { signin_per_ip_per_minute: 2, ..PortalConfig::default() });
        let ip = Some(IpAddr::from([192, 0, 2, 1]));
        assert!(limits.attempt(ip).is_ok() && limits.attempt(ip).is_ok());
        assert!(limits.attempt(ip).is_err_and(|r| (1..=60).contains(&r.0)));
        assert!(limits.attempt(Some(IpAddr::from([192, 0, 2, 9]))).is_ok());
    }
}
