//! Credits: "may this key spend N credits now?", answered in memory, settled through the ledger.
//!
//! For each (key, month) a front keeps two numbers:
//! * `others`: credits settled in the store by every *other* front instance (settled total minus
//!   this instance's settled charges), read at start and refreshed every `refresh` interval;
//! * `mine`: every credit this instance has charged or holds right now (settled or not).
//!
//! A request may spend `c` when `others + mine + c ≤ allowance`; the test and the increment are one
//! compare-and-swap, so N concurrent requests through one front on a key with R credits left
//! succeed exactly min(N, R) times. With several fronts, each front's view of the others lags by
//! at most `refresh` plus the ledger's settle lag: the overspend bound (`docs/fleet.md`,
//! "Credits in the fleet"). A key's first request waits for its first read; after that one task
//! per front re-reads, every `refresh`, the views of every key used since its last round, up to
//! [`crate::store::CREDIT_VIEWS_PER_STATEMENT`] keys per statement ([`Store::credit_views`]):
//! the store's load grows with the keys a front serves divided by that, not a statement per key
//! and second.
//!
//! A [`Reservation`] is a must-settle guard: [`Reservation::commit`] makes a [`LedgerEvent`]
//! durable (see [`crate::front::ledger`]) and keeps the credits spent, and only then may the handler
//! answer; dropping it uncommitted (an error, an unknown verdict, a cancelled request) gives them
//! back and logs why.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::messages::{LedgerEvent, billing_period};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::front::error::ApiError;
use crate::front::keys::KeyRecord;
use crate::front::ledger::{LedgerSink, RecordError};
use crate::store::Store;

/// One key's month as seen by this front.
#[derive(Debug)]
struct Account {
    others: AtomicI64,
    mine: AtomicI64,
    /// The part of `mine` held by requests still in flight (neither committed nor released).
    held: AtomicI64,
    ready: std::sync::atomic::AtomicBool,
    /// Whether a request used the account since the refresher's last round.
    used: std::sync::atomic::AtomicBool,
    /// Bumped (under `refreshed`) by every read of `others` for this account alone: a round of
    /// the refresher, whose read began before, must not put an older view over a newer one.
    epoch: std::sync::atomic::AtomicU64,
    /// When `others` was last read; `None` until the first read.
    refreshed: tokio::sync::Mutex<Option<Instant>>,
}

type Accounts = Mutex<HashMap<(String, String), Arc<Account>>>;

/// Per-key monthly credit accounting of one front instance.
pub struct Credits {
    store: Arc<dyn Store>,
    accounts: Arc<Accounts>,
    ledger: LedgerSink,
    front: Arc<str>,
    refresh: Option<Duration>,
    /// Whether the refresher task runs (started by the first request, inside the runtime).
    refresher: std::sync::Once,
}

impl std::fmt::Debug for Credits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credits").field("front", &self.front).finish_non_exhaustive()
    }
}

/// Credits held for one request until it is answered.
#[derive(Debug)]
#[must_use = "a reservation must be committed or it is released on drop"]
pub struct Reservation {
    account: Arc<Account>,
    credits: i64,
    allowance: i64,
    key_id: String,
    period: String,
    endpoint: &'static str,
    charged_at: OffsetDateTime,
    front: Arc<str>,
    ledger: LedgerSink,
    settled: bool,
}

impl Reservation {
    /// Keeps the credits: makes the charge durable (the ledger's store in standalone mode, the
    /// ledger stream in the fleet) and returns the credits remaining this month. Answer the
    /// request only after this returns `Ok`.
    ///
    /// # Errors
    /// 503 when the charge cannot be made durable: [`ApiError::Overloaded`] when the ledger queue
    /// is full, [`ApiError::Unavailable`] when the ledger is unreachable (both give the credits
    /// back: nothing was recorded) or did not confirm in time (the credits stay spent, since the
    /// charge may yet be recorded, once).
    pub async fn commit(self) -> Result<i64, ApiError> {
        self.commit_as(Uuid::now_v7()).await
    }

    /// [`Reservation::commit`] under a ledger event id of the caller's (a watch's fee: one id per
    /// watch and month, so a repeated charge is applied once).
    ///
    /// # Errors
    /// As [`Reservation::commit`].
    pub async fn commit_as(mut self, event_id: Uuid) -> Result<i64, ApiError> {
        // Settled from here on: a request cancelled while the charge is on its way keeps it spent.
        self.settled = true;
        self.account.held.fetch_sub(self.credits, Ordering::AcqRel);
        let event = LedgerEvent {
            event_id,
            key_id: self.key_id.clone(),
            // Settled: nothing reads the reservation's period again (its drop gives nothing back).
            period: std::mem::take(&mut self.period),
            endpoint: self.endpoint.to_owned(),
            credits: self.credits,
            charged_at: self.charged_at,
            front: self.front.to_string(),
            request_id: common::request_id::current(),
        };
        let outcome = self.ledger.record(event).await;
        let used = || self.account.others.load(Ordering::Acquire) + self.account.mine.load(Ordering::Acquire);
        match outcome {
            Ok(()) => Ok((self.allowance - used()).max(0)),
            Err(reason) => {
                metrics::counter!("dsa_ledger_charges_refused_total", "reason" => reason.label()).increment(1);
                tracing::warn!(key_id = %self.key_id, credits = self.credits, %reason, "charge not made durable; answering 503");
                match reason {
                    RecordError::Full | RecordError::Unavailable => {
                        self.account.mine.fetch_sub(self.credits, Ordering::AcqRel);
                        Err(if reason == RecordError::Full { ApiError::Overloaded } else { ApiError::Unavailable })
                    }
                    RecordError::Unconfirmed => Err(ApiError::Unavailable),
                }
            }
        }
    }

    /// Credits held.
    pub fn credits(&self) -> i64 {
        self.credits
    }

    /// Moves `credits` of this reservation into a new one (for a request that is charged per
    /// item, such as a bulk check: spec §8, 1 credit per domain). Nothing is given back or charged:
    /// the key's held total is unchanged, each part is later committed or released on its own.
    /// `None` when `credits` is not in `1..=self.credits()`.
    pub fn split_off(&mut self, credits: i64) -> Option<Reservation> {
        if credits < 1 || credits > self.credits {
            return None;
        }
        self.credits -= credits;
        Some(Reservation {
            account: self.account.clone(),
            credits,
            allowance: self.allowance,
            key_id: self.key_id.clone(),
            period: self.period.clone(),
            endpoint: self.endpoint,
            charged_at: self.charged_at,
            front: self.front.clone(),
            ledger: self.ledger.clone(),
            settled: false,
        })
    }

    /// Gives the credits back now (as dropping does) and returns the credits remaining this month
    /// after that: what a response reports when part or all of a request was not charged.
    pub fn release(self) -> i64 {
        let (account, allowance) = (self.account.clone(), self.allowance);
        drop(self);
        let used = account.others.load(Ordering::Acquire) + account.mine.load(Ordering::Acquire);
        (allowance - used).max(0)
    }
}

impl Reservation {
    /// Takes `other`'s credits into this reservation, so that both are committed as one charge
    /// (one ledger event) or released together: a handler that decides late whether an extra
    /// part is charged (suggestions' pre-check) commits once, and a refused commit leaves nothing
    /// charged. `other` must be of the same key and month (it is, from the same handler).
    pub fn absorb(&mut self, mut other: Reservation) {
        debug_assert!(other.key_id == self.key_id && other.period == self.period);
        self.credits += other.credits;
        // The account already holds and counts `other`'s credits: they move, not return.
        other.credits = 0;
        other.settled = true;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.settled && self.credits > 0 {
            self.account.held.fetch_sub(self.credits, Ordering::AcqRel);
            self.account.mine.fetch_sub(self.credits, Ordering::AcqRel);
            tracing::debug!(key_id = %self.key_id, credits = self.credits, endpoint = self.endpoint, "credits released (no definitive answer)");
        }
    }
}

/// Entries of the per-key accounts map before past months' are dropped.
const PRUNE_ACCOUNTS_AT: usize = 10_000;

impl Credits {
    /// Accounting over `store` for the front instance `front` (unique per process), sending
    /// committed charges to `ledger`. `refresh`: how often other fronts' settled charges are
    /// re-read (`None` in standalone mode, where this process is the only one).
    pub fn new(store: Arc<dyn Store>, ledger: LedgerSink, front: &str, refresh: Option<Duration>) -> Self {
        Self {
            store,
            accounts: Arc::default(),
            ledger,
            front: Arc::from(front),
            refresh,
            refresher: std::sync::Once::new(),
        }
    }

    /// The ledger queue charges are committed through (its recent durability wait is a load
    /// signal of the front: `policy/pressure.rs`).
    pub fn ledger(&self) -> &LedgerSink {
        &self.ledger
    }

    /// This front instance's id (recorded with each charge).
    pub fn front(&self) -> &str {
        &self.front
    }

    /// Makes sure `account` has a view of the other fronts' settled charges. The first read is
    /// waited for (without it the request fails). After that the refresher re-reads the views of
    /// the accounts used in each `refresh` interval, and every request goes on with the current
    /// one: no request waits for the store, and none fails with it, so a front keeps serving the
    /// keys it knows on its last view while Postgres is unreachable (their charges wait in the
    /// ledger stream).
    async fn refresh(&self, account: &Arc<Account>, key_id: &str, period: &str) -> Result<(), ApiError> {
        account.used.store(true, Ordering::Relaxed);
        if !account.ready.load(Ordering::Acquire) {
            let mut refreshed = account.refreshed.lock().await;
            if refreshed.is_none() {
                // With no view yet, an upper bound will do (the front refuses early, never late).
                account.epoch.fetch_add(1, Ordering::AcqRel);
                let others = read_others(self.store.as_ref(), key_id, period, &self.front).await?;
                account.others.store(others, Ordering::Release);
                *refreshed = Some(Instant::now());
                account.ready.store(true, Ordering::Release);
            }
            return Ok(());
        }
        if let Some(every) = self.refresh {
            self.refresher.call_once(|| {
                let (accounts, store, front) = (Arc::downgrade(&self.accounts), self.store.clone(), self.front.clone());
                tokio::spawn(refresh_views(accounts, store, front, every));
            });
        }
        Ok(())
    }

    /// Re-reads the other fronts' settled charges and the bulk jobs' holds of a key's month now,
    /// waiting for it (a bulk job opened or ended: `crate::front::bulk_jobs`). A key this front
    /// has not seen yet is left alone: its first request reads the store anyway.
    ///
    /// # Errors
    /// When the store cannot be read (the last view stays).
    pub async fn reread(&self, key_id: &str, period: &str) -> anyhow::Result<()> {
        let account = {
            let accounts = self.accounts.lock().unwrap_or_else(|p| p.into_inner());
            accounts.get(&(key_id.to_owned(), period.to_owned())).cloned()
        };
        let Some(account) = account else { return Ok(()) };
        let mut refreshed = account.refreshed.lock().await;
        account.epoch.fetch_add(1, Ordering::AcqRel);
        let others = read_others(self.store.as_ref(), key_id, period, &self.front).await?;
        account.others.store(others, Ordering::Release);
        *refreshed = Some(Instant::now());
        account.ready.store(true, Ordering::Release);
        Ok(())
    }

    /// Holds `credits` of `key`'s allowance for the month of `now` (UTC).
    ///
    /// # Errors
    /// [`ApiError::CreditsExhausted`] when fewer remain; [`ApiError::Internal`] when the settled
    /// usage cannot be read.
    pub async fn reserve(
        &self,
        key: &KeyRecord,
        endpoint: &'static str,
        credits: i64,
        now: OffsetDateTime,
    ) -> Result<Reservation, ApiError> {
        let period = billing_period(now);
        let account = {
            let mut accounts = self.accounts.lock().unwrap_or_else(|p| p.into_inner());
            // One entry per key and month: drop past months' (a request in flight keeps its own
            // `Arc`), so the map holds this month's active keys, not every month's.
            if accounts.len() >= PRUNE_ACCOUNTS_AT && !accounts.contains_key(&(key.id.clone(), period.clone())) {
                accounts.retain(|(_, p), _| *p == period);
            }
            accounts
                .entry((key.id.clone(), period.clone()))
                .or_insert_with(|| {
                    Arc::new(Account {
                        others: AtomicI64::new(0),
                        mine: AtomicI64::new(0),
                        held: AtomicI64::new(0),
                        ready: std::sync::atomic::AtomicBool::new(false),
                        used: std::sync::atomic::AtomicBool::new(false),
                        epoch: std::sync::atomic::AtomicU64::new(0),
                        refreshed: tokio::sync::Mutex::new(None),
                    })
                })
                .clone()
        };
        self.refresh(&account, &key.id, &period).await?;
        let allowance = key.monthly_allowance;
        let others = account.others.load(Ordering::Acquire);
        account
            .mine
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |mine| {
                (others + mine + credits <= allowance).then_some(mine + credits)
            })
            .map_err(|mine| {
                // Spent, or only held by requests in flight that may yet give their credits back?
                let held = account.held.load(Ordering::Acquire);
                if others + (mine - held) + credits <= allowance {
                    ApiError::TooManyRequests {
                        message: "Credits are held by this key's requests in flight; retry in a moment.".into(),
                        retry_after_secs: Some(1),
                    }
                } else {
                    ApiError::CreditsExhausted { retry_after_secs: crate::front::policy::secs_to_next_month(now) }
                }
            })?;
        account.held.fetch_add(credits, Ordering::AcqRel);
        Ok(Reservation {
            account,
            credits,
            allowance,
            key_id: key.id.clone(),
            period,
            endpoint,
            charged_at: now,
            front: self.front.clone(),
            ledger: self.ledger.clone(),
            settled: false,
        })
    }
}

/// Credits of a key's month settled by the other fronts, read in one statement: the settled
/// total minus this front's settled charges at one snapshot, so a batch of this front's charges
/// settling meanwhile can never make the others' part come out short (which would let a front
/// overspend) however busy the ledger is.
///
/// Credits held by the key's open bulk jobs count as the others' too (`crate::front::bulk_jobs`):
/// every front sees a job's hold, whichever front took it.
async fn read_others(store: &dyn Store, key_id: &str, period: &str, front: &str) -> anyhow::Result<i64> {
    let key_ids = [key_id.to_owned()];
    let views = store.credit_views(&key_ids, period, front).await?;
    // A key the store does not know has nothing settled or held.
    Ok(views.into_iter().find(|(id, _)| id == key_id).map_or(0, |(_, others)| others))
}

/// The refresher of one front's credit views: every `every`, the views of the accounts of the
/// current month used since its last round, read [`crate::store::CREDIT_VIEWS_PER_STATEMENT`]
/// keys per statement. Ends when the [`Credits`] it serves is dropped. A failed read leaves the
/// last views (and logs); the next round tries again.
async fn refresh_views(accounts: std::sync::Weak<Accounts>, store: Arc<dyn Store>, front: Arc<str>, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        let period = billing_period(OffsetDateTime::now_utc());
        // (key id, account, its epoch when the round began)
        let due: Vec<(String, Arc<Account>, u64)> = {
            let Some(accounts) = accounts.upgrade() else { return };
            let accounts = accounts.lock().unwrap_or_else(|p| p.into_inner());
            accounts
                .iter()
                .filter(|((_, p), a)| {
                    *p == period && a.ready.load(Ordering::Acquire) && a.used.swap(false, Ordering::Relaxed)
                })
                .map(|((id, _), a)| (id.clone(), a.clone(), a.epoch.load(Ordering::Acquire)))
                .collect()
        };
        for round in due.chunks(crate::store::CREDIT_VIEWS_PER_STATEMENT) {
            let key_ids: Vec<String> = round.iter().map(|(id, _, _)| id.clone()).collect();
            let views = match store.credit_views(&key_ids, &period, &front).await {
                Ok(views) => views.into_iter().collect::<HashMap<_, _>>(),
                Err(e) => {
                    tracing::warn!(error = ?e, keys = key_ids.len(), "credit views not re-read; going on with the last ones");
                    // Due again next round, used or not since.
                    for (_, account, _) in round {
                        account.used.store(true, Ordering::Relaxed);
                    }
                    continue;
                }
            };
            metrics::counter!("dsa_credit_views_refreshed_total").increment(round.len() as u64);
            for (key_id, account, epoch) in round {
                // Skipped while the account is being read on its own (a reread), or if it was
                // since: that read is newer than this one.
                let Ok(mut refreshed) = account.refreshed.try_lock() else { continue };
                if account.epoch.load(Ordering::Acquire) != *epoch {
                    continue;
                }
                account.others.store(views.get(key_id).copied().unwrap_or(0), Ordering::Release);
                *refreshed = Some(Instant::now());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::front::keys::{KeyKind, Plan};
    use crate::store::{NewKey, SqliteStore};

    async fn setup() -> (Credits, KeyRecord, crate::front::ledger::LedgerQueue, std::path::PathBuf) {
        let path = std::env::temp_dir().join(format!("dsa-credits-{}.db", Uuid::now_v7()));
        let store = SqliteStore::connect(&format!("sqlite://{}?mode=rwc", path.display()), 1).await.expect("store");
        store.migrate().await.expect("migrate");
        let (_, key_hash) = crate::front::keys::generate(KeyKind::Server);
        let mut key = store
            .create_key(NewKey {
                key_hash,
                kind: KeyKind::Server,
                plan: Plan::Free,
                pricing_enabled: false,
                show_purchase_button: false,
                default_commission_percent: None,
                purchase_url: None,
                allowed_origins: Vec::new(),
                label: "credits test".into(),
            })
            .await
            .expect("key");
        key.monthly_allowance = 10;
        let (tx, rx) = crate::front::ledger::queue(16);
        (Credits::new(Arc::new(store), tx, "test-front", None), key, rx, path)
    }

    #[tokio::test]
    async fn a_split_hold_charges_its_parts_and_gives_back_the_rest() {
        let (credits, key, mut ledger, path) = setup().await;
        let now = OffsetDateTime::now_utc();
        let mut hold = credits.reserve(&key, "bulk", 4, now).await.expect("4 of 10");
        assert!(hold.split_off(0).is_none() && hold.split_off(5).is_none(), "only 1..=held");
        let part = hold.split_off(1).expect("a part");
        assert_eq!((part.credits(), hold.credits()), (1, 3));
        // Committed: 1; still held: 3 → 6 left while the rest is held. The commit returns only
        // once the writer has taken (and confirmed) the charge.
        let writer = async {
            loop {
                if let Some(event) = ledger.try_take() {
                    return event;
                }
                tokio::task::yield_now().await;
            }
        };
        let (remaining, event) = tokio::join!(part.commit(), writer);
        assert_eq!(remaining.expect("durable"), 6);
        // Another request cannot take what the hold still has (7 > 10 − 1 − 3).
        assert!(credits.reserve(&key, "check", 7, now).await.is_err());
        assert_eq!(hold.release(), 9, "the rest given back: only the committed credit is spent");
        assert_eq!((event.credits, event.endpoint.as_str()), (1, "bulk"));
        assert!(ledger.try_take().is_none(), "releasing records no charge");
        let all = credits.reserve(&key, "bulk", 9, now).await.expect("the 9 left");
        assert_eq!(all.release(), 9);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }

    /// Issue 29: the refresher re-reads the views of the keys a front used (one statement for
    /// all of them), so another front's settled charges and a bulk job's hold come into this
    /// front's view within a few intervals, with no request waiting for the store.
    #[tokio::test]
    async fn the_refresher_brings_other_fronts_charges_into_the_view() {
        let (_, key, _, path) = setup().await;
        let store =
            Arc::new(SqliteStore::connect(&format!("sqlite://{}?mode=rwc", path.display()), 1).await.expect("store"));
        let (sink, _queue) = crate::front::ledger::queue(16);
        let credits = Credits::new(store.clone(), sink, "front-a", Some(Duration::from_millis(50)));
        let now = OffsetDateTime::now_utc();
        let period = billing_period(now);
        assert_eq!(credits.reserve(&key, "check", 0, now).await.expect("first view").release(), 10);
        // Front b charges 6, settled.
        let theirs = LedgerEvent {
            event_id: Uuid::now_v7(),
            key_id: key.id.clone(),
            period: period.clone(),
            endpoint: "check".into(),
            credits: 6,
            charged_at: now,
            front: "front-b".into(),
            request_id: None,
        };
        assert_eq!(store.apply_ledger(vec![theirs]).await.expect("settle"), 1);
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let probe = credits.reserve(&key, "check", 0, now).await.expect("probe");
            if probe.release() == 4 {
                break;
            }
            assert!(Instant::now() < deadline, "front b's charges never came into front a's view");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(credits.reserve(&key, "check", 5, now).await.is_err(), "6 + 5 > 10");
        let four = credits.reserve(&key, "check", 4, now).await.expect("the 4 left");
        assert_eq!(four.release(), 4);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }

    #[tokio::test]
    async fn a_charge_the_ledger_cannot_take_is_a_503_and_gives_the_credits_back() {
        let (_, key, _, path) = setup().await;
        let now = OffsetDateTime::now_utc();
        let store = SqliteStore::connect(&format!("sqlite://{}?mode=rwc", path.display()), 1).await.expect("store");
        // A queue of one that nobody drains: the first charge waits, the second finds it full.
        let (sink, queue) = crate::front::ledger::queue(1);
        let credits = Credits::new(Arc::new(store), sink, "full-front", None);
        let waiting = credits.reserve(&key, "check", 1, now).await.expect("1 of 10");
        let stuck = tokio::spawn(waiting.commit());
        tokio::time::sleep(Duration::from_millis(50)).await;
        let refused = credits.reserve(&key, "check", 1, now).await.expect("1 of 9");
        assert!(matches!(refused.commit().await, Err(ApiError::Overloaded)), "full queue: fast 503");
        // The writer is gone: the waiting charge is unconfirmed (kept spent), new ones refused.
        drop(queue);
        assert!(matches!(stuck.await.expect("task"), Err(ApiError::Unavailable)));
        let gone = credits.reserve(&key, "check", 1, now).await.expect("credits left");
        assert!(matches!(gone.commit().await, Err(ApiError::Unavailable)));
        // 10 − the unconfirmed one; the refused charges were given back.
        let probe = credits.reserve(&key, "check", 0, now).await.expect("probe");
        assert_eq!(probe.release(), 9);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
}
