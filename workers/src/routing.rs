//! Where self-correcting routing keeps its decisions: which suffixes ask WHOIS before RDAP, and
//! until when (`[engine.routing]`, issue 14).
//!
//! The [`crate::health::HealthBook`] notices the trouble (RDAP failing `rdap_failures` times in a
//! row for a suffix while WHOIS answers); the engine then *demotes* RDAP for that suffix in a
//! [`RouteBook`] until `now + prefer_whois_secs`, reads the book before every check of a suffix
//! whose chain has both methods, and *promotes* RDAP back as soon as RDAP answers definitively
//! again while it was demoted (asked after a failing WHOIS). Once the hold has passed, RDAP leads
//! again by itself.
//!
//! Two books behind the one small trait:
//! * [`LocalRoutes`]: in-process (standalone mode, and the fallback of a worker that cannot reach
//!   the bucket);
//! * [`crate::fleet::FleetRoutes`]: the NATS KV bucket `dsa_routing` shared by every worker and
//!   front of a fleet, so one worker's failures reroute them all and `GET /v1/tlds/{tld}` on any
//!   front shows the fleet's state.

use std::collections::HashMap;
use std::sync::Mutex;

use futures::future::BoxFuture;
use time::OffsetDateTime;

/// The routing decisions of one engine (see the module documentation). Implementations never
/// fail: trouble reaching a shared store falls back to what this process knows.
pub trait RouteBook: Send + Sync + std::fmt::Debug {
    /// Until when WHOIS is asked before RDAP for `suffix` (a catalogue suffix), if that time is
    /// after `now`.
    fn whois_first_until<'a>(&'a self, suffix: &'a str, now: OffsetDateTime) -> BoxFuture<'a, Option<OffsetDateTime>>;

    /// Demotes RDAP for `suffix`: WHOIS is asked first until `until`.
    fn demote<'a>(&'a self, suffix: &'a str, until: OffsetDateTime) -> BoxFuture<'a, ()>;

    /// Promotes RDAP back for `suffix` (the catalogue's order applies again).
    fn promote<'a>(&'a self, suffix: &'a str) -> BoxFuture<'a, ()>;
}

/// In-process routing decisions: one deadline per demoted suffix. Memory is bounded by the
/// catalogue (one entry per catalogue suffix at most).
#[derive(Debug, Default)]
pub struct LocalRoutes {
    until: Mutex<HashMap<String, OffsetDateTime>>,
}

impl LocalRoutes {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, OffsetDateTime>> {
        self.until.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// [`RouteBook::whois_first_until`] without the future (for callers holding the concrete type).
    pub fn get(&self, suffix: &str, now: OffsetDateTime) -> Option<OffsetDateTime> {
        self.map().get(suffix).copied().filter(|until| now < *until)
    }

    /// [`RouteBook::demote`] without the future.
    pub fn set(&self, suffix: &str, until: OffsetDateTime) {
        self.map().insert(suffix.to_owned(), until);
    }

    /// [`RouteBook::promote`] without the future.
    pub fn clear(&self, suffix: &str) {
        self.map().remove(suffix);
    }
}

impl RouteBook for LocalRoutes {
    fn whois_first_until<'a>(&'a self, suffix: &'a str, now: OffsetDateTime) -> BoxFuture<'a, Option<OffsetDateTime>> {
        let found = self.get(suffix, now);
        Box::pin(async move { found })
    }

    fn demote<'a>(&'a self, suffix: &'a str, until: OffsetDateTime) -> BoxFuture<'a, ()> {
        self.set(suffix, until);
        Box::pin(async {})
    }

    fn promote<'a>(&'a self, suffix: &'a str) -> BoxFuture<'a, ()> {
        self.clear(suffix);
        Box::pin(async {})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_800_000_000 + secs).expect("valid time")
    }

    #[tokio::test]
    async fn local_routes_hold_until_the_deadline_or_a_promotion() {
        let book = LocalRoutes::default();
        assert_eq!(book.whois_first_until("com", at(0)).await, None);
        book.demote("com", at(300)).await;
        assert_eq!(book.whois_first_until("com", at(10)).await, Some(at(300)));
        assert_eq!(book.whois_first_until("net", at(10)).await, None, "per suffix");
        assert_eq!(book.whois_first_until("com", at(300)).await, None, "the hold is over");
        book.demote("com", at(600)).await;
        book.promote("com").await;
        assert_eq!(book.whois_first_until("com", at(10)).await, None, "promoted back");
    }
}
