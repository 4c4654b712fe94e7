//! The direct path: the second way an interactive job reaches a worker, for the seconds in which
//! the jobs stream cannot take or deliver it.
//!
//! On a three-server cluster, losing the server that led the jobs stream or a kind's consumer
//! stops every job until the survivors elect a new leader (4–9 s in nats-server's Raft, not
//! configurable). Users' lookups need not wait: a front (`api::front::dispatch`) publishes each
//! interactive job on the stream as always, and when the stream gives no publish ack, or no worker
//! says it started the job, within half a second (`api::front::dispatch::HEDGE_AFTER`), it also sends
//! the same job with core NATS on the kind's direct subject (`dsa.direct.<kind>`, outside the
//! stream's `dsa.jobs.>`). Core NATS needs no leader: any surviving server routes it.
//!
//! ```text
//! front ──JetStream publish──► DSA_JOBS ──(consumer leader)──► worker A ──started, reply──┐
//!   │  no ack / no "started" within 0.5 s                                                │
//!   └──core publish dsa.direct.<kind>──► queue group of the kind's workers ──► worker B ──┤
//!                                        (one of them; taken only with a free slot)       │
//! front ◄──────────────────── first reply on the job's reply subject wins ◄───────────────┘
//! ```
//!
//! Here, each kind served gets a queue subscription ([`serve`]); one worker of the group
//! receives each direct job. It takes the job only if one of the kind's slots (shared with the
//! pull loop) is free at once, and, for a job the stream may hold (the front's reason
//! `not_started` or `publish_slow`, `common::subjects::DIRECT_REASON_HEADER`), only while the
//! kind's pull loop has received nothing for [`STREAM_QUIET`] (a stream that delivers is busy,
//! not stuck: its copy will come, and taking this one would jump the queue and run the job
//! twice). Otherwise it drops the copy; the front sends another (or the stream copy answers). A taken job says "started" on its reply subject, runs through the same
//! [`Jobs::run`] as a stream job, retries an unknown verdict while the deadline allows (as a `Nak`
//! would), and replies on the same reply subject. Background jobs never come this way.
//!
//! Each job exists twice then. This pool remembers the jobs it runs and answered ([`Recent`]): a
//! stream copy of a job answered here is acked without running, a direct copy of a job running
//! here is dropped. A copy that reaches another worker runs again (cheap: the verdict is in the
//! fleet's cache by then) and the front drops the reply it no longer waits for. Charges are the
//! front's business, made once per answered request.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::HeaderMap;
use bytes::Bytes;
use common::lookup::LookupKind;
use common::messages::{Job, JobReply};
use common::priority::Priority;
use common::request_id::{NATS_HEADER, RequestId};
use common::subjects::{DIRECT_REASON_HEADER, REPLY_HEADER, STARTED_HEADER, WANT_STARTED_HEADER};
use futures::StreamExt;
use time::OffsetDateTime;
use tokio::sync::Semaphore;

use super::pool::{PoolStats, RETRY_MIN_LEFT};
use crate::job_panic;
use crate::jobs::Jobs;

/// How long a job id is remembered after its answer (the jobs stream's duplicate window: no copy
/// of a job is delivered later than that after it was published).
pub(super) const REMEMBER_FOR: Duration = Duration::from_secs(120);
/// Most job ids remembered (bounded memory; the oldest go first).
pub(super) const REMEMBER_AT_MOST: usize = 50_000;
/// A copy of a job the stream may hold (the front's reason `not_started` or `publish_slow`) is
/// taken only when the kind's pull loop has received nothing for this long: a stream that
/// delivers is busy, not stuck, and its copy of the job will come. (A pull loop with a free slot
/// fetches without pause, 500 ms per fetch at most.)
pub(super) const STREAM_QUIET: Duration = Duration::from_millis(500);

/// When a kind's pull loop last received a message.
#[derive(Debug)]
pub(super) struct Pulse {
    start: Instant,
    /// Milliseconds after `start` of the last delivery (0: none yet).
    last_ms: std::sync::atomic::AtomicU64,
}

impl Default for Pulse {
    fn default() -> Self {
        Self { start: Instant::now(), last_ms: std::sync::atomic::AtomicU64::new(0) }
    }
}

impl Pulse {
    /// Notes a delivery now.
    pub(super) fn beat(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether nothing was delivered for `quiet` (or ever).
    fn quiet_for(&self, quiet: Duration) -> bool {
        let last = Duration::from_millis(self.last_ms.load(std::sync::atomic::Ordering::Relaxed));
        self.start.elapsed().saturating_sub(last) >= quiet
    }
}

/// What the direct path of one kind needs.
pub(super) struct Direct {
    /// The pool's NATS client.
    pub client: async_nats::Client,
    /// The kind's direct subject (`Names::direct_subject`).
    pub subject: String,
    /// The kind's queue group (`Names::direct_queue`).
    pub queue: String,
    /// The kind served.
    pub kind: LookupKind,
    /// The kind's slots, shared with its pull loop.
    pub slots: Arc<Semaphore>,
    /// The job handlers.
    pub jobs: Jobs,
    /// The pool's counters.
    pub stats: Arc<PoolStats>,
    /// The jobs this pool runs or answered lately.
    pub recent: Arc<Recent>,
    /// When the kind's pull loop last received a job.
    pub pulse: Arc<Pulse>,
}

/// Takes the kind's direct jobs until `stop` resolves. The queue subscription outlives a NATS
/// reconnect (the client subscribes again by itself); one that cannot be made, or that the
/// client ends, is made again after a pause.
pub(super) async fn serve(direct: Direct, stop: impl Future<Output = ()> + Send) {
    tokio::pin!(stop);
    let direct = Arc::new(direct);
    loop {
        let subscribed = direct.client.queue_subscribe(direct.subject.clone(), direct.queue.clone());
        let mut subscription = tokio::select! {
            () = &mut stop => return,
            subscribed = subscribed => match subscribed {
                Ok(subscription) => subscription,
                Err(e) => {
                    tracing::warn!(error = %e, subject = %direct.subject, "direct path not subscribed; retrying");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            },
        };
        loop {
            let message = tokio::select! {
                () = &mut stop => {
                    let _ = subscription.unsubscribe().await;
                    return;
                }
                message = subscription.next() => message,
            };
            match message {
                Some(message) => take(&direct, message),
                None => break,
            }
        }
        tracing::warn!(subject = %direct.subject, "direct path subscription ended; subscribing again");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Counts a direct copy received: `taken`, or why not.
fn outcome(outcome: &'static str) {
    // Each metric named by a literal, so the operator files' checker (ops/check.sh) sees it.
    metrics::counter!("dsa_worker_direct_jobs_total", "outcome" => outcome).increment(1);
}

/// Takes one direct job if it is well formed, interactive, not running here, not expired, its
/// stream copy is not on its way, and a slot is free at once; runs it in a task of its own.
fn take(direct: &Arc<Direct>, message: async_nats::Message) {
    let headers = message.headers.as_ref();
    let Some(reply_to) = headers.and_then(|h| h.get(REPLY_HEADER)).map(|v| v.as_str().to_owned()) else {
        return outcome("no_reply_subject");
    };
    let mut job: Job = match serde_json::from_slice(&message.payload) {
        Ok(job) => job,
        Err(_) => return outcome("bad_payload"),
    };
    if job.work.kind() != direct.kind {
        return outcome("wrong_kind");
    }
    // A front never sends background work this way; one that arrives is left to the stream.
    if job.priority == Priority::Background {
        return outcome("background");
    }
    if job.deadline <= OffsetDateTime::now_utc() {
        return outcome("expired");
    }
    // Running here already (its stream copy, or an earlier direct copy): that run answers. A job
    // answered here already runs again: the front sends a copy only while it has no reply, so
    // the reply was lost (a reconnect), and the second run is cheap (the verdict is cached).
    if direct.recent.running_here(job.job_id) {
        direct.stats.duplicate("direct");
        return;
    }
    // The stream may hold this job (the front says why it sent the copy), and it is delivering
    // here: it is busy, not stuck. Taking the copy would jump its queue and run the job twice.
    let why = headers.and_then(|h| h.get(DIRECT_REASON_HEADER)).map(|v| v.as_str().to_owned()).unwrap_or_default();
    let maybe_in_stream = !matches!(why.as_str(), "publish_failed" | "reconnected");
    if maybe_in_stream && !direct.pulse.quiet_for(STREAM_QUIET) {
        return outcome("stream_moving");
    }
    let Ok(slot) = direct.slots.clone().try_acquire_owned() else {
        // Every slot busy: the stream copy (or the front's next direct copy, which may reach
        // another worker) answers instead.
        return outcome("busy");
    };
    if job.request_id.is_none() {
        job.request_id = headers.and_then(|h| h.get(NATS_HEADER)).and_then(|v| RequestId::parse(v.as_str()));
    }
    outcome("taken");
    let guard = direct.recent.running(job.job_id);
    let direct = direct.clone();
    tokio::spawn(async move {
        let _slot = slot;
        let work = run(&direct, job, &reply_to, guard);
        if let Err(panicked) = job_panic::catch(work).await {
            panicked.report(direct.kind, "(outside the lookup, direct path)");
        }
    });
}

/// Runs a taken direct job: says "started", runs it (again after an unknown verdict while the
/// deadline leaves room, as a `Nak` would), replies.
async fn run(direct: &Direct, job: Job, reply_to: &str, guard: Running) {
    let (job_id, deadline) = (job.job_id, job.deadline);
    started(&direct.client, reply_to, job_id).await;
    let handled = loop {
        // `None`: the deadline passed; the front has given up.
        let Some(handled) = direct.jobs.run(job.clone(), None).await else { return };
        direct.stats.count(handled.source);
        if handled.retryable && deadline - OffsetDateTime::now_utc() > RETRY_MIN_LEFT {
            direct.stats.retried.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            metrics::counter!("dsa_jobs_retried_total").increment(1);
            tokio::time::sleep(Duration::from_millis(300)).await;
            continue;
        }
        break handled;
    };
    let reply = JobReply { job_id, outcome: handled.outcome };
    let payload = match serde_json::to_vec(&reply) {
        Ok(payload) => payload,
        Err(e) => return tracing::error!(error = %e, %job_id, "reply not serialisable"),
    };
    if let Err(e) = direct.client.publish(reply_to.to_owned(), Bytes::from(payload)).await {
        // Its stream copy may still answer.
        return tracing::warn!(error = %e, %job_id, "direct job's reply not published");
    }
    guard.answered();
    direct.stats.answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    direct.stats.direct_answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Whether a job message asks for a "started" notice ([`WANT_STARTED_HEADER`]).
pub(super) fn wants_started(headers: &HeaderMap) -> bool {
    headers.get(WANT_STARTED_HEADER).is_some()
}

/// Tells the front waiting on `reply_to` that this worker started job `job_id` (a notice marked
/// with [`STARTED_HEADER`], the `job_id` as payload); lost notices only make the front send a
/// direct copy it did not need.
pub(super) async fn started(client: &async_nats::Client, reply_to: &str, job_id: uuid::Uuid) {
    let mut headers = HeaderMap::new();
    headers.insert(STARTED_HEADER, "1");
    let payload = serde_json::json!({ "job_id": job_id }).to_string();
    if let Err(e) = client.publish_with_headers(reply_to.to_owned(), headers, payload.into()).await {
        tracing::debug!(error = %e, %job_id, "started notice not published");
    }
}

/// The jobs this pool runs or answered lately, by id: a stream copy of a job answered here is
/// acked without running, and a direct copy of a job running here is dropped. Bounded by
/// [`REMEMBER_FOR`] and [`REMEMBER_AT_MOST`].
#[derive(Debug, Default)]
pub(super) struct Recent {
    inner: Mutex<RecentInner>,
}

#[derive(Debug, Default)]
struct RecentInner {
    /// Per job: answered (true) or running (false).
    state: HashMap<uuid::Uuid, bool>,
    /// Answer times, oldest first, for forgetting.
    order: VecDeque<(Instant, uuid::Uuid)>,
}

/// A job marked running in [`Recent`]: unmarked when dropped unless [`Running::answered`] (a job
/// handed back for another try, expired or panicked may come again and must run then).
pub(super) struct Running {
    recent: Arc<Recent>,
    job_id: uuid::Uuid,
    answered: bool,
}

impl Running {
    /// The job was answered: remember it as such.
    pub(super) fn answered(mut self) {
        self.answered = true;
        self.recent.answer(self.job_id);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.answered
            && let Ok(mut inner) = self.recent.inner.lock()
            && inner.state.get(&self.job_id) == Some(&false)
        {
            inner.state.remove(&self.job_id);
        }
    }
}

impl Recent {
    /// Marks `job_id` running until the returned guard is dropped or says it was answered.
    pub(super) fn running(self: &Arc<Self>, job_id: uuid::Uuid) -> Running {
        if let Ok(mut inner) = self.inner.lock() {
            inner.state.entry(job_id).or_insert(false);
        }
        Running { recent: self.clone(), job_id, answered: false }
    }

    /// Remembers `job_id` as answered.
    pub(super) fn answer(&self, job_id: uuid::Uuid) {
        self.answer_at(job_id, Instant::now());
    }

    fn answer_at(&self, job_id: uuid::Uuid, now: Instant) {
        let Ok(mut inner) = self.inner.lock() else { return };
        // Forget what is old enough, and the oldest beyond the bound.
        while let Some(&(at, id)) = inner.order.front() {
            if now.saturating_duration_since(at) < REMEMBER_FOR && inner.order.len() < REMEMBER_AT_MOST {
                break;
            }
            inner.order.pop_front();
            if inner.state.get(&id) == Some(&true) {
                inner.state.remove(&id);
            }
        }
        if inner.state.insert(job_id, true) != Some(true) {
            inner.order.push_back((now, job_id));
        }
    }

    /// Whether this pool answered `job_id`.
    pub(super) fn answered(&self, job_id: uuid::Uuid) -> bool {
        self.inner.lock().is_ok_and(|inner| inner.state.get(&job_id) == Some(&true))
    }

    /// Whether this pool runs `job_id` now (and has not answered it).
    pub(super) fn running_here(&self, job_id: uuid::Uuid) -> bool {
        self.inner.lock().is_ok_and(|inner| inner.state.get(&job_id) == Some(&false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_job_is_seen_until_it_ends_and_an_answered_one_until_forgotten() {
        let recent = Arc::new(Recent::default());
        let (a, b) = (uuid::Uuid::now_v7(), uuid::Uuid::now_v7());
        let running = recent.running(a);
        assert!(recent.running_here(a) && !recent.answered(a));
        // Handed back (a Nak, an expiry, a panic): it may come again and must run then.
        drop(running);
        assert!(!recent.running_here(a) && !recent.answered(a));
        recent.running(b).answered();
        assert!(!recent.running_here(b) && recent.answered(b));
        // Past REMEMBER_FOR it is forgotten (on the next answer).
        let later = Instant::now() + REMEMBER_FOR + Duration::from_secs(1);
        recent.answer_at(a, later);
        assert!(!recent.answered(b) && recent.answered(a));
    }

    #[test]
    fn the_stream_is_quiet_once_nothing_was_delivered_for_a_while() {
        let pulse = Pulse::default();
        assert!(pulse.quiet_for(Duration::ZERO));
        pulse.beat();
        assert!(!pulse.quiet_for(Duration::from_secs(1)), "just delivered");
        assert!(pulse.quiet_for(Duration::ZERO));
    }

    #[test]
    fn memory_is_bounded() {
        let recent = Recent::default();
        let now = Instant::now();
        for _ in 0..(REMEMBER_AT_MOST + 10) {
            recent.answer_at(uuid::Uuid::now_v7(), now);
        }
        let inner = recent.inner.lock().expect("lock");
        assert!(inner.order.len() <= REMEMBER_AT_MOST && inner.state.len() <= REMEMBER_AT_MOST);
    }
}
