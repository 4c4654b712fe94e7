//! How many worker pools the fleet has right now: each pool announces itself on the presence
//! subject (`common::subjects::WORKER_PRESENCE`) every [`Presence::EVERY`] with a random id, and
//! counts the ids it heard within [`Presence::FORGET_AFTER`].
//!
//! The count is what a worker needs to keep to its own share of a registry's limit while the
//! fleet-wide budget's bucket cannot be written ([`super::budget`]): with `n` pools each granting
//! `1/n` of the limit on its own, the registry still sees at most the limit. Core NATS, not a KV
//! bucket, on purpose: it keeps working while JetStream elects leaders, which is exactly when the
//! count is needed.
//!
//! A pool that does not hear its own beats come back (the server refuses the subject to its
//! credential, as a `nats.conf` from before this subject does, or NATS is unreachable) knows no
//! count at all ([`Presence::pools`] is `None`), and the budget then grants nothing locally: a
//! count of 1 there would let every worker take the whole limit.
//!
//! Every beat is hostile input (another worker's credential may be in the wrong hands): an id is
//! at most [`MAX_ID_BYTES`] bytes and at most [`MAX_TRACKED`] ids are kept. Forged beats can only
//! make the count larger, which makes every worker's fallback share smaller (slower, never
//! impolite).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use futures::StreamExt;

/// Longest id kept from a beat, bytes (a pool's own is 32 hexadecimal digits).
pub const MAX_ID_BYTES: usize = 64;
/// Most pools tracked at once (bounded memory whatever arrives).
pub const MAX_TRACKED: usize = 1024;

/// The worker pools heard from recently, this one included.
#[derive(Debug)]
pub struct Presence {
    /// This pool's id (never counted from the wire: it is always one of the pools).
    me: String,
    /// Other pools' ids and when each was last heard.
    seen: Mutex<HashMap<String, Instant>>,
    /// When this pool last heard its own beat (the subject works for it).
    echo: Mutex<Option<Instant>>,
}

impl Presence {
    /// How often a pool announces itself.
    pub const EVERY: Duration = Duration::from_secs(2);
    /// A pool not heard from for this long is no longer counted (three beats missed: a pool whose
    /// server was just lost reconnects well within it, so a server loss does not change the count).
    pub const FORGET_AFTER: Duration = Duration::from_secs(6);

    /// A count that has heard nothing yet, not even this pool's own beat (so it knows no count).
    pub fn alone() -> Arc<Self> {
        Arc::new(Self {
            me: uuid::Uuid::new_v4().simple().to_string(),
            seen: Mutex::new(HashMap::new()),
            echo: Mutex::new(None),
        })
    }

    /// This pool's id (its beats carry it).
    pub fn id(&self) -> &str {
        &self.me
    }

    /// Starts announcing this pool on `subject` and counting the others heard there. The tasks end
    /// when the last [`Arc`] of the returned count is dropped (at most one beat later).
    pub fn start(client: async_nats::Client, subject: String) -> Arc<Self> {
        let presence = Self::alone();
        let weak = Arc::downgrade(&presence);
        let me = presence.me.clone();
        let (beats, listen_client) = (client.clone(), client);
        let beat_subject = subject.clone();
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(Self::EVERY);
            loop {
                ticker.tick().await;
                if weak.strong_count() == 0 {
                    return;
                }
                // A lost beat is made up for by the next one (the count forgets after three).
                let _ = beats.publish(beat_subject.clone(), me.clone().into()).await;
            }
        });
        let weak = Arc::downgrade(&presence);
        tokio::spawn(async move {
            let mut beats = match listen_client.subscribe(subject.clone()).await {
                Ok(beats) => beats,
                Err(e) => {
                    tracing::warn!(error = %e, %subject, "no presence beats: the budget's fallback share assumes this worker is alone");
                    return;
                }
            };
            while let Some(message) = beats.next().await {
                let Some(presence) = Weak::upgrade(&weak) else { return };
                if let Ok(id) = std::str::from_utf8(&message.payload) {
                    presence.heard(id, Instant::now());
                }
            }
        });
        presence
    }

    /// Notes a beat from `id` at `now` (this pool's own beat says the subject works; malformed
    /// ids are ignored).
    pub fn heard(&self, id: &str, now: Instant) {
        if id == self.me {
            if let Ok(mut echo) = self.echo.lock() {
                *echo = Some(now);
            }
            return;
        }
        if id.is_empty() || id.len() > MAX_ID_BYTES {
            return;
        }
        let Ok(mut seen) = self.seen.lock() else { return };
        if !seen.contains_key(id) && seen.len() >= MAX_TRACKED {
            seen.retain(|_, at| now.saturating_duration_since(*at) < Self::FORGET_AFTER);
            if seen.len() >= MAX_TRACKED {
                return;
            }
        }
        seen.insert(id.to_owned(), now);
    }

    /// The pools heard from within [`Self::FORGET_AFTER`] of `now`, this one included; `None`
    /// when this pool has not heard its own beat within that time (the count cannot be known).
    pub fn pools(&self, now: Instant) -> Option<usize> {
        let recent = |at: &Instant| now.saturating_duration_since(*at) < Self::FORGET_AFTER;
        if !self.echo.lock().ok().and_then(|echo| *echo).is_some_and(|at| recent(&at)) {
            return None;
        }
        let others = self.seen.lock().map(|seen| seen.values().filter(|at| recent(at)).count()).unwrap_or(0);
        Some(1 + others)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_recent_pools_and_itself_and_ignores_junk() {
        let presence = Presence::alone();
        let t0 = Instant::now();
        presence.heard(presence.id(), t0);
        assert_eq!(presence.pools(t0), Some(1));
        presence.heard("pool-a", t0);
        presence.heard("pool-b", t0);
        presence.heard("pool-a", t0);
        presence.heard("", t0);
        presence.heard(&"x".repeat(MAX_ID_BYTES + 1), t0);
        assert_eq!(presence.pools(t0), Some(3));
        // Silent for longer than FORGET_AFTER: no longer counted.
        let later = t0 + Presence::FORGET_AFTER + Duration::from_millis(1);
        presence.heard(presence.id(), later);
        presence.heard("pool-a", later);
        assert_eq!(presence.pools(later), Some(2));
    }

    #[test]
    fn without_its_own_beat_a_pool_knows_no_count() {
        let presence = Presence::alone();
        let t0 = Instant::now();
        presence.heard("pool-a", t0);
        assert_eq!(presence.pools(t0), None, "its own beat never came back (the subject refused?)");
        presence.heard(presence.id(), t0);
        assert_eq!(presence.pools(t0), Some(2));
        let later = t0 + Presence::FORGET_AFTER + Duration::from_millis(1);
        assert_eq!(presence.pools(later), None, "its own beats stopped coming back");
    }

    #[test]
    fn memory_is_bounded_whatever_arrives() {
        let presence = Presence::alone();
        let t0 = Instant::now();
        presence.heard(presence.id(), t0);
        for i in 0..(MAX_TRACKED * 3) {
            presence.heard(&format!("forged-{i}"), t0);
        }
        assert_eq!(presence.pools(t0), Some(MAX_TRACKED + 1));
        // Forgotten ones make room again.
        let later = t0 + Presence::FORGET_AFTER + Duration::from_millis(1);
        presence.heard(presence.id(), later);
        presence.heard("real", later);
        assert_eq!(presence.pools(later), Some(2));
    }
}
