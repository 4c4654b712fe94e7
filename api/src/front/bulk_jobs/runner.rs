//! The bulk job runner: one per front process (standalone and fleet), working through the open
//! jobs it holds a lease on.
//!
//! * Leases: every half second (at most `lease_secs / 3`) the runner renews its jobs' leases and takes jobs whose lease
//!   ran out (a runner that died: SIGKILL, a lost host), so any front resumes any job.
//! * Fairness: at most `max_jobs` jobs at once, one name of each in turn (round-robin), and at
//!   most `concurrency` checks in flight: a 100,000-name job never takes more than that share of
//!   the front's checks, so interactive checks and other keys' jobs keep theirs. Each check is
//!   background work ([`common::priority`]): its registry queries take only the background share
//!   of each upstream's budget (`engine.limits.background_share`).
//! * Interleaving: each job's next names are taken from every registry still pending in turn,
//!   so every registry's politeness budget is used at once instead of one after the other.
//! * Each check is [`evaluate`] — the single check's path (verdict cache, single-flight, the job
//!   bus to the workers, DNS first in the engine), no second copy of it.
//! * Exactly once: a definitive verdict is charged through the ledger with an event id derived
//!   from (job, name) ([`super::charge_event_id`]) *before* its result is written; a runner that
//!   dies in between leaves the name pending, the next one checks it again (a job's verdicts do
//!   not enter the verdict caches, so that is a registry query again) and
//!   its charge is the same event, applied once. Results are written once per name (the store
//!   skips a name already done). A name without a definitive verdict is tried `attempts` times,
//!   then reported unknown and not charged.
//! * Retries back off: a name the registries could not answer is not tried again before
//!   [`retry_backoff`] of its attempts has passed (held in this runner's memory; a runner that
//!   takes the job over after a crash retries such names at once).
//! * Bounded memory: a job's state here is a few cursors and a buffer of at most
//!   [`REFILL`] names; results go to the store in batches.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::messages::LedgerEvent;
use tokio::sync::{Semaphore, mpsc, oneshot};

use super::routes::{JobResult, StoredOptions};
use super::{BulkJobsConfig, charge_event_id, unix_ms};
use crate::front::error::ApiError;
use crate::front::keys::KeyRecord;
use crate::front::routes::check::{CheckOptions, evaluate};
use crate::front::state::{AppState, WeakAppState};
use crate::store::Store;
use crate::store::bulk_jobs::{BulkJob, ItemOutcome, PendingItem, ledger_front};

/// Names read from the store per refill of one job's buffer.
pub const REFILL: i64 = 64;
/// How often the runner looks for work when it has none, and how long it waits for a free check
/// slot before it renews leases again.
const TICK: Duration = Duration::from_millis(100);
/// Results written per store transaction at most.
const WRITE_BATCH: usize = 256;
/// How often the runner renews its leases and looks for new jobs and cancels at most.
const CLAIM_EVERY: Duration = Duration::from_millis(500);
/// How often a job's state is read again before a charge (a cancel through another front is
/// seen within this).
const OPEN_RECHECK: Duration = Duration::from_millis(200);
/// How often expired jobs are purged.
const PURGE_EVERY: Duration = Duration::from_secs(60);
/// An upload that has not finished after this long was abandoned (its front died).
const STALE_UPLOAD: Duration = Duration::from_secs(3600);
/// The wait before a name's first retry; each further retry waits twice as long.
const RETRY_BASE: Duration = Duration::from_millis(500);
/// The longest wait before a retry.
const RETRY_MAX: Duration = Duration::from_secs(30);

/// How long a name that was tried `attempts` times without a definitive verdict waits before its
/// next try: [`RETRY_BASE`] doubled per earlier failure, at most [`RETRY_MAX`] (exponential
/// back-off, so a registry that is down or limiting is not asked again at once).
pub fn retry_backoff(attempts: i64) -> Duration {
    let doublings = u32::try_from(attempts.saturating_sub(1).clamp(0, 16)).unwrap_or(16);
    RETRY_BASE.saturating_mul(1_u32 << doublings).min(RETRY_MAX)
}

/// Names of one job waiting out their retry back-off: item seq → when it may be tried again.
#[derive(Default)]
struct Cooling(HashMap<i64, Instant>);

impl Cooling {
    /// Holds `seq` back until `backoff` from `now`.
    fn hold(&mut self, seq: i64, now: Instant, backoff: Duration) {
        self.0.insert(seq, now + backoff);
    }

    /// Whether `seq` is still waiting at `now`; forgets the names whose wait is over.
    fn waiting(&mut self, seq: i64, now: Instant) -> bool {
        match self.0.get(&seq) {
            Some(until) if *until > now => true,
            Some(_) => {
                self.0.remove(&seq);
                false
            }
            None => false,
        }
    }
}

/// Starts the runner of this front process, unless `policy.bulk_jobs.run` is off or the store
/// keeps no bulk jobs. It stops by itself once the application state is dropped.
pub fn spawn(state: &AppState, owner: &str) -> Option<tokio::task::JoinHandle<()>> {
    let config = state.policy().bulk_jobs.clone();
    if !config.run || state.store().bulk_jobs().is_none() {
        return None;
    }
    let runner = Runner {
        weak: state.downgrade(),
        store: state.store().clone(),
        owner: format!("{owner}-bulk"),
        slots: Arc::new(Semaphore::new(config.concurrency.max(1))),
        jobs: HashMap::new(),
        config,
    };
    Some(tokio::spawn(runner.run()))
}

/// One job as the runner works on it.
struct Work {
    job: BulkJob,
    key: Arc<KeyRecord>,
    options: Arc<CheckOptions>,
    /// Cleared when the job is no longer ours (cancelled, done, taken over): no new charge.
    open: Arc<AtomicBool>,
    /// When the job's stored state was last read by one of its checks.
    rechecked: Arc<tokio::sync::Mutex<Option<Instant>>>,
    /// Registries with names pending, and the last seq read of each.
    registries: Vec<(String, i64)>,
    /// Registries read to the end once this round (a retry may still be below their cursor).
    buffer: VecDeque<PendingItem>,
    in_flight: Arc<Mutex<HashSet<i64>>>,
    /// Names waiting out their retry back-off.
    cooling: Arc<Mutex<Cooling>>,
    /// Nothing pending was found at the last refill.
    drained: bool,
}

struct Runner {
    weak: WeakAppState,
    store: Arc<dyn Store>,
    owner: String,
    config: BulkJobsConfig,
    slots: Arc<Semaphore>,
    jobs: HashMap<String, Work>,
}

type Written = (String, ItemOutcome, oneshot::Sender<()>);

impl Runner {
    async fn run(mut self) {
        let writer = spawn_writer(self.store.clone());
        let lease = Duration::from_secs_f64(self.config.lease_secs.max(1.0));
        // Renewing often also picks new jobs up and notices cancels soon.
        let claim_every = (lease / 3).min(CLAIM_EVERY);
        let mut claimed_at: Option<Instant> = None;
        let mut purged_at: Option<Instant> = None;
        let mut turn = 0_usize;
        loop {
            let Some(state) = self.weak.upgrade() else { break };
            if claimed_at.is_none_or(|at| at.elapsed() >= claim_every) {
                if let Err(e) = self.claim(&state, lease).await {
                    tracing::warn!(error = ?e, "bulk jobs: claim failed; retrying");
                }
                claimed_at = Some(Instant::now());
            }
            if purged_at.is_none_or(|at| at.elapsed() >= PURGE_EVERY) {
                if let Some(jobs) = self.store.bulk_jobs() {
                    let now = unix_ms(state.now());
                    let stale = now - i64::try_from(STALE_UPLOAD.as_millis()).unwrap_or(0);
                    if let Err(e) = jobs.purge(now, stale).await {
                        tracing::warn!(error = ?e, "bulk jobs: purge failed");
                    }
                }
                purged_at = Some(Instant::now());
            }
            let started = self.dispatch(&state, &writer, &mut turn, claimed_at, claim_every).await;
            self.finish_drained(&state).await;
            drop(state);
            if started == 0 {
                tokio::time::sleep(TICK).await;
            }
        }
        tracing::debug!("bulk job runner stopped");
    }

    /// Renews our leases and takes free jobs; forgets the jobs no longer ours.
    async fn claim(&mut self, state: &AppState, lease: Duration) -> anyhow::Result<()> {
        let Some(store) = self.store.bulk_jobs() else { return Ok(()) };
        let now = unix_ms(state.now());
        let lease_ms = i64::try_from(lease.as_millis()).unwrap_or(30_000);
        let max = i64::try_from(self.config.max_jobs.max(1)).unwrap_or(8);
        let claimed = store.claim(&self.owner, now, lease_ms, max).await?;
        let ids: HashSet<&str> = claimed.iter().map(|j| j.id.as_str()).collect();
        let gone: Vec<String> = self.jobs.keys().filter(|id| !ids.contains(id.as_str())).cloned().collect();
        for id in gone {
            if let Some(work) = self.jobs.remove(&id) {
                // Cancelled or taken over: no new charge from here; what is in flight finishes.
                work.open.store(false, Ordering::Release);
                let _ = state.credits().reread(&work.job.key_id, &work.job.period).await;
            }
        }
        for job in claimed {
            if let Some(work) = self.jobs.get_mut(&job.id) {
                work.job = job;
                continue;
            }
            let key = match self.store.find_key_by_ref(&job.key_id).await {
                Ok(Some(key)) => Arc::new(key),
                Ok(None) => continue,
                Err(e) => {
                    tracing::warn!(error = ?e, job = %job.id, "bulk jobs: key not read");
                    continue;
                }
            };
            let options = serde_json::from_str::<StoredOptions>(&job.options)
                .ok()
                .and_then(|o| o.parse().ok())
                .unwrap_or_default();
            tracing::info!(job = %job.id, total = job.total, checked = job.checked, "bulk job taken");
            self.jobs.insert(
                job.id.clone(),
                Work {
                    job,
                    key,
                    options: Arc::new(options),
                    open: Arc::new(AtomicBool::new(true)),
                    rechecked: Arc::new(tokio::sync::Mutex::new(None)),
                    registries: Vec::new(),
                    buffer: VecDeque::new(),
                    in_flight: Arc::new(Mutex::new(HashSet::new())),
                    cooling: Arc::new(Mutex::new(Cooling::default())),
                    drained: false,
                },
            );
        }
        Ok(())
    }

    /// Starts checks, one name per job in turn, while slots are free; returns how many started.
    /// Stops when the leases need renewing.
    async fn dispatch(
        &mut self,
        state: &AppState,
        writer: &mpsc::Sender<Written>,
        turn: &mut usize,
        claimed_at: Option<Instant>,
        claim_every: Duration,
    ) -> usize {
        let mut started = 0;
        let mut ids: Vec<String> = self.jobs.keys().cloned().collect();
        ids.sort_by(|a, b| {
            let (ja, jb) = (&self.jobs[a].job, &self.jobs[b].job);
            (ja.created_at, &ja.id).cmp(&(jb.created_at, &jb.id))
        });
        if ids.is_empty() {
            return 0;
        }
        loop {
            if claimed_at.is_some_and(|at| at.elapsed() >= claim_every) {
                return started;
            }
            let mut progressed = false;
            for i in 0..ids.len() {
                let id = &ids[(*turn + i) % ids.len()];
                let Some(work) = self.jobs.get_mut(id) else { continue };
                if work.buffer.is_empty()
                    && !work.drained
                    && let Err(e) = refill(self.store.as_ref(), work).await
                {
                    tracing::warn!(error = ?e, job = %id, "bulk jobs: pending names not read");
                    continue;
                }
                let Some(item) = work.buffer.pop_front() else { continue };
                let permit = match tokio::time::timeout(TICK, self.slots.clone().acquire_owned()).await {
                    Ok(Ok(permit)) => permit,
                    _ => {
                        work.buffer.push_front(item);
                        *turn = (*turn + i) % ids.len();
                        return started;
                    }
                };
                work.in_flight.lock().unwrap_or_else(|p| p.into_inner()).insert(item.seq);
                let task = Check {
                    state: state.clone(),
                    job_id: work.job.id.clone(),
                    period: work.job.period.clone(),
                    key: work.key.clone(),
                    options: work.options.clone(),
                    open: work.open.clone(),
                    rechecked: work.rechecked.clone(),
                    in_flight: work.in_flight.clone(),
                    cooling: work.cooling.clone(),
                    attempts: self.config.attempts.max(1),
                    writer: writer.clone(),
                };
                tokio::spawn(async move {
                    task.run(item).await;
                    drop(permit);
                });
                started += 1;
                progressed = true;
            }
            *turn = turn.wrapping_add(1);
            if !progressed {
                return started;
            }
        }
    }

    /// Completes the jobs with nothing pending and nothing in flight.
    async fn finish_drained(&mut self, state: &AppState) {
        let Some(store) = self.store.bulk_jobs() else { return };
        let done: Vec<String> = self
            .jobs
            .iter()
            .filter(|(_, w)| {
                w.drained && w.buffer.is_empty() && w.in_flight.lock().unwrap_or_else(|p| p.into_inner()).is_empty()
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in done {
            let now = state.now();
            let ttl = i64::try_from(self.config.results_ttl_secs).unwrap_or(i64::MAX / 2_000).saturating_mul(1000);
            let Some(work) = self.jobs.get(&id) else { continue };
            // Every name has its result: the counts are final (a retry written meanwhile makes
            // `complete` refuse, and the event goes with it).
            let event = match super::routes::verdict_counts(store, &id).await {
                Ok(counts) => super::finished_event(&work.job, super::routes::JobState::Done, counts, now),
                Err(e) => {
                    tracing::warn!(error = ?e, job = %id, "bulk jobs: counts not read; completing later");
                    continue;
                }
            };
            match store.complete(&id, unix_ms(now), unix_ms(now).saturating_add(ttl), event).await {
                Ok(true) => {
                    if let Some(work) = self.jobs.remove(&id) {
                        work.open.store(false, Ordering::Release);
                        let _ = state.credits().reread(&work.job.key_id, &work.job.period).await;
                        tracing::info!(job = %id, "bulk job done");
                    }
                }
                // Names still pending (a retry written meanwhile): read again.
                Ok(false) => {
                    if let Some(work) = self.jobs.get_mut(&id) {
                        work.drained = false;
                        work.registries.clear();
                    }
                }
                Err(e) => tracing::warn!(error = ?e, job = %id, "bulk jobs: completion not written"),
            }
        }
    }
}

/// Reads a job's next pending names, interleaved across registries, skipping those in flight.
async fn refill(store: &dyn Store, work: &mut Work) -> anyhow::Result<()> {
    let Some(jobs) = store.bulk_jobs() else { return Ok(()) };
    if work.registries.is_empty() {
        work.registries = jobs.pending_registries(&work.job.id).await?.into_iter().map(|r| (r, -1)).collect();
    }
    let per = (REFILL / i64::try_from(work.registries.len().max(1)).unwrap_or(1)).max(4);
    let in_flight = work.in_flight.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut lists: Vec<VecDeque<PendingItem>> = Vec::new();
    let mut exhausted = Vec::new();
    for (index, (registry, cursor)) in work.registries.iter_mut().enumerate() {
        let items = jobs.pending(&work.job.id, registry, *cursor, per).await?;
        if let Some(last) = items.last() {
            *cursor = last.seq;
        } else {
            exhausted.push(index);
        }
        lists.push(items.into_iter().filter(|i| !in_flight.contains(&i.seq)).collect::<VecDeque<_>>());
    }
    // Names waiting out their retry back-off are left for a later refill.
    {
        let now = Instant::now();
        let mut cooling = work.cooling.lock().unwrap_or_else(|p| p.into_inner());
        for list in &mut lists {
            list.retain(|i| !cooling.waiting(i.seq, now));
        }
    }
    // Round-robin across registries.
    loop {
        let mut any = false;
        for list in &mut lists {
            if let Some(item) = list.pop_front() {
                work.buffer.push_back(item);
                any = true;
            }
        }
        if !any {
            break;
        }
    }
    // A registry read to its end: what is left there are retries (below the cursor) or names in
    // flight. When every registry is at its end, the registry list is read again next time; when
    // that finds nothing to start, the job is drained.
    if exhausted.len() == work.registries.len() {
        if work.buffer.is_empty() {
            let fresh = work.registries.iter().all(|(_, c)| *c == -1);
            work.registries.clear();
            work.drained = fresh;
        }
    } else {
        for index in exhausted.into_iter().rev() {
            // Back to the start of that registry for its retries.
            work.registries[index].1 = -1;
        }
    }
    Ok(())
}

/// One check of one name of a job.
struct Check {
    state: AppState,
    job_id: String,
    period: String,
    key: Arc<KeyRecord>,
    options: Arc<CheckOptions>,
    open: Arc<AtomicBool>,
    /// When the job's stored state was last read (shared by the job's checks).
    rechecked: Arc<tokio::sync::Mutex<Option<Instant>>>,
    in_flight: Arc<Mutex<HashSet<i64>>>,
    cooling: Arc<Mutex<Cooling>>,
    attempts: u32,
    writer: mpsc::Sender<Written>,
}

impl Check {
    async fn run(self, item: PendingItem) {
        let outcome = self.check(&item).await;
        if let Some(outcome) = outcome {
            let retried = !outcome.last;
            let (ack, acked) = oneshot::channel();
            if self.writer.send((self.job_id.clone(), outcome, ack)).await.is_ok() {
                let _ = acked.await;
            }
            if retried {
                let backoff = retry_backoff(item.attempts + 1);
                self.cooling.lock().unwrap_or_else(|p| p.into_inner()).hold(item.seq, Instant::now(), backoff);
            }
        }
        self.in_flight.lock().unwrap_or_else(|p| p.into_inner()).remove(&item.seq);
    }

    /// The outcome to write, or `None` when nothing may be written (the job is no longer ours).
    async fn check(&self, item: &PendingItem) -> Option<ItemOutcome> {
        let last_try = item.attempts + 1 >= i64::from(self.attempts);
        let domain = match self.state.book().parse(&item.domain) {
            Ok(domain) => domain,
            Err(e) => {
                let error = ApiError::from(e).to_string();
                return Some(final_failure(item, &error));
            }
        };
        // Background work ([`common::priority`]): the check's registry queries use only the
        // background share of each budget, so users' checks keep the rest.
        match common::priority::background(evaluate(&self.state, &self.key, domain, &self.options)).await {
            Ok(outcome) => {
                // No charge for a job cancelled meanwhile: the flag (the runner's last claim) and
                // the stored state (a cancel through any front, just now).
                if !self.open.load(Ordering::Acquire) || !self.still_open().await {
                    return None;
                }
                let event = LedgerEvent {
                    event_id: charge_event_id(&self.job_id, &item.domain),
                    key_id: self.key.id.clone(),
                    period: self.period.clone(),
                    endpoint: "bulk_job".into(),
                    credits: 1,
                    charged_at: self.state.now(),
                    front: ledger_front(&self.job_id),
                    request_id: None,
                };
                if let Err(reason) = self.state.credits().ledger().record(event).await {
                    // Not durable: the name stays pending; the next try records the same event.
                    tracing::warn!(job = %self.job_id, %reason, "bulk job charge not made durable; retrying the name");
                    return Some(retry(item));
                }
                let status = serde_json::to_value(outcome.verdict.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_else(|| "unknown".into());
                let row = JobResult::checked(outcome);
                Some(ItemOutcome {
                    seq: item.seq,
                    last: true,
                    status,
                    charged: true,
                    result: serde_json::to_string(&row).unwrap_or_default(),
                })
            }
            // The name cannot be checked at all (a suffix no longer served): final, not charged.
            Err(e @ (ApiError::BadRequest(_) | ApiError::UnknownSuffix(_))) => {
                Some(final_failure(item, &e.to_string()))
            }
            Err(e) if last_try => Some(final_failure(item, &e.to_string())),
            Err(_) => Some(retry(item)),
        }
    }
}

impl Check {
    /// Whether the job is still open in the store, read at most every [`OPEN_RECHECK`] per job
    /// (one read per name would queue every check behind the store); a store error counts as
    /// open (the runner's flag still guards, and the lease decides who works on it).
    async fn still_open(&self) -> bool {
        let Ok(mut checked) = self.rechecked.try_lock() else {
            return self.open.load(Ordering::Acquire);
        };
        if checked.is_some_and(|at| at.elapsed() < OPEN_RECHECK) {
            return self.open.load(Ordering::Acquire);
        }
        let Some(jobs) = self.state.store().bulk_jobs() else { return false };
        let open = match jobs.job(&self.job_id).await {
            Ok(Some(job)) => job.is_open(),
            Ok(None) => false,
            Err(_) => true,
        };
        if !open {
            self.open.store(false, Ordering::Release);
        }
        *checked = Some(Instant::now());
        open
    }
}

fn retry(item: &PendingItem) -> ItemOutcome {
    ItemOutcome { seq: item.seq, last: false, status: String::new(), charged: false, result: String::new() }
}

fn final_failure(item: &PendingItem, error: &str) -> ItemOutcome {
    let row = JobResult::failed(&item.domain, error);
    ItemOutcome {
        seq: item.seq,
        last: true,
        status: "unknown".into(),
        charged: false,
        result: serde_json::to_string(&row).unwrap_or_default(),
    }
}

/// The result writer: outcomes from every check task, written per job in batches (one
/// transaction each), each check told when its outcome is stored.
fn spawn_writer(store: Arc<dyn Store>) -> mpsc::Sender<Written> {
    let (tx, mut rx) = mpsc::channel::<Written>(1024);
    tokio::spawn(async move {
        while let Some(first) = rx.recv().await {
            let mut batch = vec![first];
            while batch.len() < WRITE_BATCH {
                match rx.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            let mut by_job: HashMap<String, (Vec<ItemOutcome>, Vec<oneshot::Sender<()>>)> = HashMap::new();
            for (job, outcome, ack) in batch {
                let entry = by_job.entry(job).or_default();
                entry.0.push(outcome);
                entry.1.push(ack);
            }
            let Some(jobs) = store.bulk_jobs() else { continue };
            for (job, (outcomes, acks)) in by_job {
                if let Err(e) = jobs.record(&job, outcomes).await {
                    // Not written: the names stay pending and are checked again (their charges
                    // are the same ledger events).
                    tracing::warn!(error = ?e, %job, "bulk job results not written; the names will be checked again");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                for ack in acks {
                    let _ = ack.send(());
                }
            }
        }
    });
    tx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_exponentially_up_to_the_cap() {
        assert_eq!(retry_backoff(0), RETRY_BASE);
        assert_eq!(retry_backoff(1), RETRY_BASE);
        assert_eq!(retry_backoff(2), RETRY_BASE * 2);
        assert_eq!(retry_backoff(3), RETRY_BASE * 4);
        assert_eq!(retry_backoff(20), RETRY_MAX);
        assert_eq!(retry_backoff(i64::MAX), RETRY_MAX);
        assert_eq!(retry_backoff(-5), RETRY_BASE);
    }

    #[test]
    fn a_name_waits_out_its_backoff_before_it_is_tried_again() {
        let mut cooling = Cooling::default();
        let now = Instant::now();
        cooling.hold(7, now, retry_backoff(1));
        assert!(cooling.waiting(7, now), "not retried at once");
        assert!(cooling.waiting(7, now + RETRY_BASE - Duration::from_millis(1)));
        assert!(!cooling.waiting(8, now), "other names are not held");
        assert!(!cooling.waiting(7, now + RETRY_BASE), "tried again once the back-off is over");
        assert!(cooling.0.is_empty(), "forgotten once over");
    }
}
