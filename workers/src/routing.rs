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
//!
//! The same books keep the consensus holds (`[engine.consensus]`, issue 28): when two signals
//! disagreed about a name under a suffix, the engine records a [`Disagreement`] with
//! [`RouteBook::disagreed`], which counts it and requires a second signal before "available"
//! for that suffix until `now + hold_secs` ([`ConsensusHold`]), for every worker of a fleet.

use std::collections::HashMap;
use std::sync::Mutex;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// Two signals that disagreed about one name: the first said "available", the second did not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Disagreement {
    /// When it was seen (UTC).
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The name asked (A-label).
    pub domain: String,
    /// The first signal, in words (`rdap rdap.nic.io: available (HTTP 404)`).
    pub first: String,
    /// The second signal, in words (`whois whois.nic.io: taken`).
    pub second: String,
}

/// Consensus switched on for a suffix by observed disagreements.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsensusHold {
    /// Until when a second signal is required before "available" (UTC).
    #[serde(with = "time::serde::rfc3339")]
    pub until: OffsetDateTime,
    /// Disagreements counted for the suffix while this record lived (in a fleet: fleet-wide,
    /// forgotten with the record an hour after the last one, the bucket's max age).
    pub disagreements: u64,
    /// The latest disagreement.
    pub last: Disagreement,
}

impl ConsensusHold {
    /// The record after one more disagreement `d` holding until `until`: counted, the later
    /// deadline kept.
    pub fn after(previous: Option<&ConsensusHold>, d: Disagreement, until: OffsetDateTime) -> ConsensusHold {
        match previous {
            // Saturating: the count comes from a shared bucket, and a garbled or forged record (any
            // bytes a holder of the bucket wrote) must not overflow it.
            Some(p) => {
                ConsensusHold { until: p.until.max(until), disagreements: p.disagreements.saturating_add(1), last: d }
            }
            None => ConsensusHold { until, disagreements: 1, last: d },
        }
    }

    /// Whether the hold still requires consensus at `now`.
    pub fn active(&self, now: OffsetDateTime) -> bool {
        now < self.until
    }
}

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

    /// The consensus record of `suffix`, if disagreements were recorded there (active or not;
    /// see [`ConsensusHold::active`]).
    fn consensus_hold<'a>(&'a self, suffix: &'a str) -> BoxFuture<'a, Option<ConsensusHold>>;

    /// Records a disagreement under `suffix`: counted, and consensus required there until at
    /// least `until`. Returns the record as written.
    fn disagreed<'a>(
        &'a self,
        suffix: &'a str,
        disagreement: Disagreement,
        until: OffsetDateTime,
    ) -> BoxFuture<'a, ConsensusHold>;
}

/// In-process routing decisions: one deadline per demoted suffix. Memory is bounded by the
/// catalogue (one entry per catalogue suffix at most).
#[derive(Debug, Default)]
pub struct LocalRoutes {
    until: Mutex<HashMap<String, OffsetDateTime>>,
    consensus: Mutex<HashMap<String, ConsensusHold>>,
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

    fn holds(&self) -> std::sync::MutexGuard<'_, HashMap<String, ConsensusHold>> {
        self.consensus.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// [`RouteBook::consensus_hold`] without the future.
    pub fn hold(&self, suffix: &str) -> Option<ConsensusHold> {
        self.holds().get(suffix).cloned()
    }

    /// [`RouteBook::disagreed`] without the future.
    pub fn count_disagreement(&self, suffix: &str, d: Disagreement, until: OffsetDateTime) -> ConsensusHold {
        let mut holds = self.holds();
        let next = ConsensusHold::after(holds.get(suffix), d, until);
        holds.insert(suffix.to_owned(), next.clone());
        next
    }

    /// Keeps `hold` as the record of `suffix` (a fleet member's copy of the bucket's record).
    pub fn keep_hold(&self, suffix: &str, hold: ConsensusHold) {
        self.holds().insert(suffix.to_owned(), hold);
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

    fn consensus_hold<'a>(&'a self, suffix: &'a str) -> BoxFuture<'a, Option<ConsensusHold>> {
        let found = self.hold(suffix);
        Box::pin(async move { found })
    }

    fn disagreed<'a>(
        &'a self,
        suffix: &'a str,
        disagreement: Disagreement,
        until: OffsetDateTime,
    ) -> BoxFuture<'a, ConsensusHold> {
        let hold = self.count_disagreement(suffix, disagreement, until);
        Box::pin(async move { hold })
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

    #[tokio::test]
    async fn disagreements_are_counted_and_hold_consensus_until_the_later_deadline() {
        let book = LocalRoutes::default();
        let d = |n: i64| Disagreement {
            at: at(n),
            domain: format!("n{n}.io"),
            first: "rdap: available".into(),
            second: "whois: taken".into(),
        };
        assert_eq!(book.consensus_hold("io").await, None);
        let first = book.disagreed("io", d(0), at(600)).await;
        assert_eq!((first.disagreements, first.until), (1, at(600)));
        assert!(first.active(at(599)) && !first.active(at(600)));
        let second = book.disagreed("io", d(10), at(300)).await;
        assert_eq!((second.disagreements, second.until), (2, at(600)), "the later deadline is kept");
        assert_eq!(second.last.domain, "n10.io");
        assert_eq!(book.consensus_hold("io").await, Some(second));
        assert_eq!(book.consensus_hold("co").await, None, "per suffix");
    }

    /// The record as the fleet's routing bucket holds it: JSON written by any worker, so read as
    /// hostile bytes. Garbage is no hold; a forged count at the top of its range is counted on
    /// without overflowing.
    #[test]
    fn a_garbled_or_forged_hold_record_is_read_safely() {
        for garbage in [&b""[..], b"null", b"{", b"\xff\xfe", b"{\"until\":\"never\",\"disagreements\":-1}", b"[1,2,3]"]
        {
            assert!(serde_json::from_slice::<ConsensusHold>(garbage).is_err(), "{garbage:?}");
        }
        let d = Disagreement { at: at(0), domain: "x.io".into(), first: "a".into(), second: "b".into() };
        let forged = ConsensusHold { until: at(100), disagreements: u64::MAX, last: d.clone() };
        let bytes = serde_json::to_vec(&forged).expect("JSON");
        let read: ConsensusHold = serde_json::from_slice(&bytes).expect("a well-formed record reads back");
        let next = ConsensusHold::after(Some(&read), d, at(50));
        assert_eq!((next.disagreements, next.until), (u64::MAX, at(100)));
    }
}
