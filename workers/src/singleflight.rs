//! Request coalescing ("single-flight"): concurrent lookups of one key share one upstream job.
//!
//! A thousand concurrent checks of one uncached name would otherwise publish a thousand jobs and,
//! against a WHOIS registry allowing one query a second, turn most of them into 502s. Used by the
//! front (one job per name in flight) and by the worker pool (one registry query per name in
//! flight, whichever fronts sent the jobs). The first
//! caller (the leader) starts the work; callers that arrive while it runs wait for the same
//! result. The entry is removed as soon as the work completes, so the next caller after that
//! starts afresh (the verdict cache, not this map, keeps results).
//!
//! A run that panics is no exception: the panic is caught ([`crate::job_panic`]), the entry is
//! removed all the same, and every caller of that run gets the same [`Panicked`] (the leader and
//! the callers that joined it), so none of them hangs or inherits a poisoned future.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};

use crate::job_panic::{Panicked, catch};

/// The shared outcome of one run: its value, or the panic it ended in.
type Outcome<V> = Result<V, Panicked>;

/// One run in flight, awaited by every caller of its key.
type Run<V> = Shared<BoxFuture<'static, Outcome<V>>>;

/// In-flight work by key. `V` is cloned to every waiter.
pub struct SingleFlight<K, V: Clone> {
    inflight: Arc<Mutex<HashMap<K, Run<V>>>>,
}

impl<K, V: Clone> std::fmt::Debug for SingleFlight<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SingleFlight").finish_non_exhaustive()
    }
}

impl<K, V: Clone> Default for SingleFlight<K, V> {
    fn default() -> Self {
        Self { inflight: Arc::new(Mutex::new(HashMap::new())) }
    }
}

impl<K, V> SingleFlight<K, V>
where
    K: Eq + Hash + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// Runs `work` for `key`, or joins the run already in flight for it. Returns the result (or
    /// the panic the run ended in, unreported: the caller logs it, once for the leader) and
    /// whether this caller joined another's run (`true`) rather than starting it.
    ///
    /// The work keeps running while any caller waits for it; if every caller goes away, it is
    /// resumed by the next caller of the same key.
    pub async fn run(&self, key: K, work: impl FnOnce() -> BoxFuture<'static, V>) -> (Outcome<V>, bool) {
        let (shared, joined) = {
            let mut map = self.inflight.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(existing) = map.get(&key) {
                (existing.clone(), true)
            } else {
                let inflight = self.inflight.clone();
                let owned_key = key.clone();
                let fut = work();
                let shared = async move {
                    // Caught, so that the entry is removed and every waiter answered even then.
                    let value = catch(fut).await;
                    inflight.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&owned_key);
                    value
                }
                .boxed()
                .shared();
                map.insert(key, shared.clone());
                (shared, false)
            }
        };
        (shared.await, joined)
    }

    /// Number of keys with work in flight.
    pub fn len(&self) -> usize {
        self.inflight.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len()
    }

    /// Whether no work is in flight.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn concurrent_callers_share_one_run_and_later_callers_start_afresh() {
        let flight: Arc<SingleFlight<String, usize>> = Arc::default();
        let runs = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..100 {
            let flight = flight.clone();
            let runs = runs.clone();
            tasks.push(tokio::spawn(async move {
                flight
                    .run("example.com".into(), move || {
                        async move {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            runs.fetch_add(1, Ordering::SeqCst) + 1
                        }
                        .boxed()
                    })
                    .await
            }));
        }
        let mut joined = 0;
        for t in tasks {
            let (value, j) = t.await.expect("task");
            assert_eq!(value, Ok(1), "every caller sees the one run's result");
            joined += usize::from(j);
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(joined, 99);
        assert!(flight.is_empty(), "the entry is gone once the work completed");
        let (value, j) = flight.run("example.com".into(), || async { 7 }.boxed()).await;
        assert_eq!((value, j), (Ok(7), false));
    }

    #[tokio::test]
    async fn a_cancelled_leader_does_not_strand_its_followers() {
        let flight: Arc<SingleFlight<u8, u8>> = Arc::default();
        let leader = {
            let flight = flight.clone();
            tokio::spawn(async move {
                flight
                    .run(1, || {
                        async {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            42
                        }
                        .boxed()
                    })
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        let follower = {
            let flight = flight.clone();
            tokio::spawn(async move { flight.run(1, || async { 0 }.boxed()).await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        leader.abort();
        let (value, joined) = follower.await.expect("follower");
        assert_eq!((value, joined), (Ok(42), true));
        assert!(flight.is_empty());
    }

    #[tokio::test]
    async fn a_panicking_run_answers_every_waiter_and_leaves_no_entry() {
        let flight: Arc<SingleFlight<u8, u8>> = Arc::default();
        let spawn = |flight: Arc<SingleFlight<u8, u8>>| {
            tokio::spawn(async move {
                flight
                    .run(1, || {
                        async {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            panic!("byte index 9 is not a char boundary")
                        }
                        .boxed()
                    })
                    .await
            })
        };
        let leader = spawn(flight.clone());
        tokio::time::sleep(Duration::from_millis(10)).await;
        let follower = spawn(flight.clone());
        let (led, joined_leader) = leader.await.expect("the leader's task does not panic");
        let (followed, joined) = follower.await.expect("the follower's task does not panic");
        assert!(!joined_leader && joined);
        let panicked = led.expect_err("the leader gets the panic");
        assert_eq!(panicked.message(), "byte index 9 is not a char boundary");
        assert_eq!(followed, Err(panicked), "the follower gets the same answer");
        assert!(flight.is_empty(), "the entry is gone");
        let (value, joined) = flight.run(1, || async { 5 }.boxed()).await;
        assert_eq!((value, joined), (Ok(5), false), "the next caller starts afresh");
    }
}
