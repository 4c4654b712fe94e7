//! The fleet's faults on real NATS JetStream and Postgres: a worker SIGKILLed mid-job, the ledger
//! consumer killed after and before its commit, its store failing mid-batch and a poison event,
//! duplicate publishes, Postgres unreachable, the fleet-wide upstream limit, credits overspent
//! across fronts, `dsa front` processes SIGKILLed under load (with NATS up and down), and a bulk
//! job whose `dsa worker` and `dsa ledger` processes are SIGKILLed mid-job.
//!
//! Each test has its own [`Fleet`]: nats-server, database, simulator and name prefix. Its
//! teardown (`fleet.drain()` / `fleet.stop()`) asserts that no job is left un-acked and no
//! ledger event unapplied, and every test holds
//! the ledger's invariant: successful responses charged = ledger entries, each once. The counts
//! (kills, redeliveries, duplicates absorbed, violations, overspend) are printed: run with
//! `--nocapture` to read them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use api::keys::{KeyRecord, KeyState, Plan};
use api::store::{KeyUpdate, NewKey, Store};
use common::lookup::LookupOutcome;
use common::messages::{Job, JobAnswer, JobReply, JobWork, LedgerEvent};
use dsa_tests::harness::fleet::{
    Fleet, LedgerStats, PoolStats, consumer_info, free_port, redeliveries, settled, wait_until,
};
use dsa_tests::harness::ledger_event;
use dsa_tests::sim::{Knobs, Latency, RateLimit};
use futures::StreamExt;
use futures::future::BoxFuture;
use sqlx::Connection;
use workers::config::HostLimit;

/// Available in the demo scenario, answered by RDAP (404) after a DNS pre-check.
const AVAILABLE: &str = "dsa-demo-available.com";

fn init() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

async fn get(http: &reqwest::Client, url: String) -> (u16, serde_json::Value) {
    let r = http.get(url).send().await.expect("request");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(serde_json::Value::Null))
}

fn check_url(front: &dsa_tests::harness::fleet::Front, key: &str, domain: &str) -> String {
    front.url(&format!("/v1/domains/check?client_key={key}&domain={domain}"))
}

fn period() -> String {
    common::messages::billing_period(time::OffsetDateTime::now_utc())
}

/// The spec's error shape (§7): `{"success":false,"error":"…"}` and nothing else.
fn assert_error_shape(status: u16, body: &serde_json::Value) {
    assert_eq!(body["success"], false, "{status}: {body}");
    assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()), "{status}: {body}");
    assert_eq!(body.as_object().map(|o| o.len()), Some(2), "{status}: {body}");
}

async fn ledger_count(store: &Arc<dyn Store>, key_id: &str) -> i64 {
    store.ledger_count(key_id, &period()).await.expect("ledger count")
}

// ---------------------------------------------------------------------------------------------
// 1. A worker process SIGKILLed while it probes.

struct KillCase {
    status: u16,
    body: serde_json::Value,
    elapsed: Duration,
    redeliveries: u64,
    entries: i64,
    answered: u64,
    terminated: u64,
}

/// A `dsa worker` process takes the only job and is SIGKILLed 300 ms into its 1.5 s RDAP probe;
/// an in-process worker started after the kill gets the job once the ack wait (1 s) expires.
async fn worker_killed_mid_job(prefix: &str, deadline_secs: f64) -> KillCase {
    init();
    let mut fleet = Fleet::builder(prefix)
        .workers(0)
        .knobs(Knobs { latency_ms: Latency { rdap: 1500, ..Latency::default() }, ..Knobs::default() })
        .configure(move |s| s.engine.check_deadline_secs = deadline_secs)
        .start()
        .await;
    let names = fleet.names().clone();
    let js = fleet.jetstream().await;
    let store = fleet.store().clone();
    let (key, key_id) = fleet.key(Plan::Free).await;

    let settings = fleet.settings().clone();
    let process = fleet.spawn_process("worker", &settings);
    let (js_ref, names_ref) = (&js, &names);
    let jobs_info = move || async move {
        consumer_info(js_ref, &names_ref.jobs_stream, names_ref.jobs_consumer(common::lookup::LookupKind::Check)).await
    };
    // The process is ready once its pull request waits on the jobs consumer.
    let ready = wait_until(Duration::from_secs(30), || async move { jobs_info().await.num_waiting > 0 }).await;
    assert!(
        ready,
        "dsa worker never pulled; its log: {}",
        std::fs::read_to_string(&fleet.process(process).log).unwrap_or_default()
    );

    let http = reqwest::Client::new();
    let url = check_url(fleet.front(0), &key, AVAILABLE);
    let request = tokio::spawn(async move {
        let started = Instant::now();
        let (status, body) = get(&http, url).await;
        (status, body, started.elapsed())
    });
    // Delivered to the process, the only worker, which is now probing (RDAP answers in 1.5 s).
    let delivered = wait_until(Duration::from_secs(5), || async move { jobs_info().await.num_ack_pending == 1 }).await;
    assert!(delivered, "the job reached the worker process");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(fleet.process(process).running(), "the worker process is alive until the kill");
    fleet.process(process).sigkill();
    let pool = Arc::new(PoolStats::default());
    fleet.add_worker(pool.clone());

    let (status, body, elapsed) = request.await.expect("request task");
    // A job whose front gave up is left to its ack wait, redelivered, and terminated as expired
    // by a worker: keep the worker until then.
    let settled_jobs = wait_until(Duration::from_secs(10), || async move {
        let info = jobs_info().await;
        info.num_pending == 0 && info.num_ack_pending == 0
    })
    .await;
    assert!(settled_jobs, "the job was answered or terminated");
    fleet.drain().await;
    let case = KillCase {
        status,
        body,
        elapsed,
        redeliveries: redeliveries(&js, &names.jobs_stream, names.jobs_consumer(common::lookup::LookupKind::Check))
            .await,
        entries: ledger_count(&store, &key_id).await,
        answered: pool.answered.load(Ordering::Relaxed),
        terminated: pool.terminated.load(Ordering::Relaxed),
    };
    fleet.stop().await;
    case
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_sigkilled_mid_job_is_redelivered_and_answered_once() {
    let deadline = 8.0;
    let case = worker_killed_mid_job("kill-ok", deadline).await;
    println!(
        "[sigkill, deadline {deadline} s] kills 1, status {}, answered in {:.2} s, job redeliveries {}, answered by the survivor {}, ledger entries {}",
        case.status,
        case.elapsed.as_secs_f64(),
        case.redeliveries,
        case.answered,
        case.entries
    );
    assert_eq!(case.status, 200, "{}", case.body);
    assert_eq!(case.body["available"], true, "{}", case.body);
    assert!(case.elapsed < Duration::from_secs_f64(deadline), "within the deadline: {:?}", case.elapsed);
    assert!(case.redeliveries >= 1, "the killed worker's job was redelivered");
    assert_eq!(case.answered, 1, "the surviving worker answered the job once");
    assert_eq!(case.entries, 1, "one answer, one ledger entry");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_sigkilled_with_too_short_a_deadline_is_a_clean_502_without_charge() {
    // Redelivery after ~1 s plus a 1.5 s probe cannot fit in 2 s.
    let deadline = 2.0;
    let case = worker_killed_mid_job("kill-late", deadline).await;
    println!(
        "[sigkill, deadline {deadline} s] kills 1, status {}, answered in {:.2} s, job redeliveries {}, expired jobs terminated {}, ledger entries {}",
        case.status,
        case.elapsed.as_secs_f64(),
        case.redeliveries,
        case.terminated,
        case.entries
    );
    assert_eq!(case.status, 502, "{}", case.body);
    assert_error_shape(case.status, &case.body);
    assert!(
        case.elapsed < Duration::from_secs_f64(deadline + 1.0),
        "the front stops at its deadline: {:?}",
        case.elapsed
    );
    assert!(case.redeliveries >= 1, "the killed worker's job was redelivered");
    assert_eq!(case.answered, 0, "nobody answered after the front gave up");
    assert_eq!(case.entries, 0, "a 502 costs nothing");
}

// ---------------------------------------------------------------------------------------------
// 2 and 3. The ledger consumer killed after and before its commit.

/// Where the wrapped store's `apply_ledger` stops answering, as if the process died there.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Hang {
    /// After the transaction committed: the consumer never acks.
    AfterCommit,
    /// Before anything was written.
    BeforeCommit,
}

/// A Postgres store whose `apply_ledger` misbehaves: it hangs (as if the process died there) or
/// fails the calls a script says (as if Postgres dropped the connection); every other method is
/// the inner store's.
struct FaultyStore {
    inner: Arc<dyn Store>,
    hang: Option<Hang>,
    /// `fail[n]`: whether the n-th call to `apply_ledger` fails (later calls succeed).
    fail: Vec<bool>,
    calls: AtomicU64,
    /// Events handed to `apply_ledger`.
    fetched: AtomicU64,
    /// Events the inner store committed as new.
    committed: AtomicU64,
}

impl FaultyStore {
    fn new(inner: Arc<dyn Store>, hang: Option<Hang>, fail: Vec<bool>) -> Self {
        Self { inner, hang, fail, calls: AtomicU64::new(0), fetched: AtomicU64::new(0), committed: AtomicU64::new(0) }
    }
}

impl Store for FaultyStore {
    fn migrate(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        self.inner.migrate()
    }
    fn find_key(&self, key_hash: &str) -> BoxFuture<'_, anyhow::Result<Option<KeyRecord>>> {
        self.inner.find_key(key_hash)
    }
    fn create_key(&self, key: NewKey) -> BoxFuture<'_, anyhow::Result<KeyRecord>> {
        self.inner.create_key(key)
    }
    fn list_keys(&self) -> BoxFuture<'_, anyhow::Result<Vec<KeyRecord>>> {
        self.inner.list_keys()
    }
    fn set_key_state(&self, id_or_fingerprint: &str, state: KeyState) -> BoxFuture<'_, anyhow::Result<bool>> {
        self.inner.set_key_state(id_or_fingerprint, state)
    }
    fn settled_usage(&self, key_id: &str, period: &str) -> BoxFuture<'_, anyhow::Result<i64>> {
        self.inner.settled_usage(key_id, period)
    }
    fn apply_ledger(&self, events: Vec<LedgerEvent>) -> BoxFuture<'_, anyhow::Result<u64>> {
        Box::pin(async move {
            let call = self.calls.fetch_add(1, Ordering::SeqCst) as usize;
            self.fetched.fetch_add(events.len() as u64, Ordering::SeqCst);
            let Some(hang) = self.hang else {
                if self.fail.get(call).copied().unwrap_or(false) {
                    anyhow::bail!("connection reset by peer (Postgres dropped the connection)");
                }
                let applied = self.inner.apply_ledger(events).await?;
                self.committed.fetch_add(applied, Ordering::SeqCst);
                return Ok(applied);
            };
            if hang == Hang::AfterCommit {
                let applied = self.inner.apply_ledger(events).await?;
                self.committed.fetch_add(applied, Ordering::SeqCst);
            }
            // The process dies here: the consumer never learns the outcome and never acks.
            std::future::pending().await
        })
    }
    fn settled_by_others(&self, key_id: &str, period: &str, front: &str) -> BoxFuture<'_, anyhow::Result<i64>> {
        self.inner.settled_by_others(key_id, period, front)
    }

    fn settled_by_front(&self, key_id: &str, period: &str, front: &str) -> BoxFuture<'_, anyhow::Result<i64>> {
        self.inner.settled_by_front(key_id, period, front)
    }
    fn shared_secret(&self, name: &str) -> BoxFuture<'_, anyhow::Result<String>> {
        self.inner.shared_secret(name)
    }
    fn ledger_count(&self, key_id: &str, period: &str) -> BoxFuture<'_, anyhow::Result<i64>> {
        self.inner.ledger_count(key_id, period)
    }
    fn find_key_by_ref(&self, reference: &str) -> BoxFuture<'_, anyhow::Result<Option<KeyRecord>>> {
        self.inner.find_key_by_ref(reference)
    }
    fn update_key(&self, id: &str, update: KeyUpdate) -> BoxFuture<'_, anyhow::Result<Option<KeyRecord>>> {
        self.inner.update_key(id, update)
    }
    fn usage_by_endpoint(&self, key_id: &str, period: &str) -> BoxFuture<'_, anyhow::Result<Vec<(String, i64)>>> {
        self.inner.usage_by_endpoint(key_id, period)
    }
}

/// Charges `successes` checks, lets a consumer over a hanging [`FaultyStore`] take them, aborts it
/// where it hangs, and lets a normal consumer finish. Returns the second consumer's counters.
async fn ledger_consumer_killed(prefix: &str, hang: Hang) -> Arc<LedgerStats> {
    init();
    const SUCCESSES: i64 = 12;
    let mut fleet = Fleet::builder(prefix).ledger(false).start().await;
    let names = fleet.names().clone();
    let js = fleet.jetstream().await;
    let store = fleet.store().clone();
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();
    let mut successes = 0;
    for _ in 0..SUCCESSES {
        let (status, body) = get(&http, check_url(fleet.front(0), &key, AVAILABLE)).await;
        assert_eq!(status, 200, "{body}");
        successes += 1;
    }
    // Every charge waits in the ledger stream: no consumer yet.
    let (js_ref, names_ref) = (&js, &names);
    let ledger_info =
        move || async move { consumer_info(js_ref, &names_ref.ledger_stream, &names_ref.ledger_consumer).await };
    assert!(
        wait_until(Duration::from_secs(5), || async move { ledger_info().await.num_pending == SUCCESSES as u64 }).await,
        "all charges published"
    );

    let crashing = Arc::new(FaultyStore::new(fleet.connect_store().await, Some(hang), Vec::new()));
    fleet.start_ledger_with_store(crashing.clone(), Arc::new(LedgerStats::default()));
    let target = SUCCESSES as u64;
    let probe = &crashing;
    let reached = match hang {
        Hang::AfterCommit => {
            wait_until(Duration::from_secs(10), || async move { probe.committed.load(Ordering::SeqCst) == target })
                .await
        }
        Hang::BeforeCommit => {
            wait_until(Duration::from_secs(10), || async move { probe.fetched.load(Ordering::SeqCst) == target }).await
        }
    };
    assert!(reached, "the doomed consumer took the whole batch ({hang:?})");
    let written = ledger_count(&store, &key_id).await;
    match hang {
        Hang::AfterCommit => assert_eq!(written, SUCCESSES, "committed before the crash"),
        Hang::BeforeCommit => assert_eq!(written, 0, "nothing written before the crash"),
    }
    assert_eq!(ledger_info().await.num_ack_pending, SUCCESSES as usize, "held, not acked");
    fleet.crash_ledger();
    let crashed_at = Instant::now();

    let stats = Arc::new(LedgerStats::default());
    fleet.start_ledger(stats.clone());
    let counters = &stats;
    let settled = wait_until(Duration::from_secs(10), || async move {
        counters.applied.load(Ordering::Relaxed) + counters.duplicates.load(Ordering::Relaxed) >= target
    })
    .await;
    assert!(settled, "the batch was redelivered to the new consumer");
    let recovered_in = crashed_at.elapsed();
    fleet.drain().await;
    let entries = ledger_count(&store, &key_id).await;
    let used = store.settled_usage(&key_id, &period()).await.expect("usage");
    let redelivered = redeliveries(&js, &names.ledger_stream, &names.ledger_consumer).await;
    println!(
        "[ledger killed {hang:?}] kills 1, successes {successes}, ledger redeliveries {redelivered}, applied by the new consumer {}, duplicates absorbed {}, entries {entries}, settled usage {used}, recovered {:.2} s after the kill",
        stats.applied.load(Ordering::Relaxed),
        stats.duplicates.load(Ordering::Relaxed),
        recovered_in.as_secs_f64()
    );
    assert_eq!(entries, successes, "ledger entries = successful responses");
    assert_eq!(used, successes, "each charge counted once in the usage");
    assert!(redelivered >= target, "the whole batch was redelivered");
    assert!(recovered_in >= Duration::from_millis(500), "redelivered after the ack wait, not before");
    fleet.stop().await;
    stats
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledger_killed_between_commit_and_ack_is_absorbed() {
    let stats = ledger_consumer_killed("ledger-after", Hang::AfterCommit).await;
    assert_eq!(stats.applied.load(Ordering::Relaxed), 0, "nothing new: the batch was committed before the kill");
    assert_eq!(stats.duplicates.load(Ordering::Relaxed), 12, "the redelivered batch was absorbed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledger_killed_between_fetch_and_commit_loses_nothing() {
    let stats = ledger_consumer_killed("ledger-before", Hang::BeforeCommit).await;
    assert_eq!(stats.applied.load(Ordering::Relaxed), 12, "every event applied once");
    assert_eq!(stats.duplicates.load(Ordering::Relaxed), 0);
}

/// Postgres drops its connections while the consumer is applying: the batch fails, the store comes
/// back for one call, then fails again for a while. A failure of the store is not a fault of the
/// events: every charge must be applied in the end, none terminated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledger_store_flapping_mid_batch_loses_no_charge() {
    init();
    const SUCCESSES: i64 = 6;
    let mut fleet = Fleet::builder("ledger-flap").ledger(false).start().await;
    let names = fleet.names().clone();
    let js = fleet.jetstream().await;
    let store = fleet.store().clone();
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();
    for _ in 0..SUCCESSES {
        let (status, body) = get(&http, check_url(fleet.front(0), &key, AVAILABLE)).await;
        assert_eq!(status, 200, "{body}");
    }
    let (js_ref, names_ref) = (&js, &names);
    assert!(
        wait_until(Duration::from_secs(5), || async move {
            consumer_info(js_ref, &names_ref.ledger_stream, &names_ref.ledger_consumer).await.num_pending
                == SUCCESSES as u64
        })
        .await,
        "all charges published"
    );
    // Call 1 (the batch) fails, call 2 succeeds, calls 3 to 7 fail, then the store is back.
    let script = vec![true, false, true, true, true, true, true];
    let flaky = Arc::new(FaultyStore::new(fleet.connect_store().await, None, script));
    let stats = Arc::new(LedgerStats::default());
    fleet.start_ledger_with_store(flaky.clone(), stats.clone());
    let entries = settled(&store, &key_id, SUCCESSES).await;
    fleet.drain().await;
    let entries_final = ledger_count(&store, &key_id).await;
    println!(
        "[ledger store flapping] successes {SUCCESSES}, store calls {} (failed {}), applied {}, duplicates {}, ledger redeliveries {}, entries {entries_final}",
        flaky.calls.load(Ordering::SeqCst),
        flaky.fail.iter().filter(|f| **f).count(),
        stats.applied.load(Ordering::Relaxed),
        stats.duplicates.load(Ordering::Relaxed),
        redeliveries(&js, &names.ledger_stream, &names.ledger_consumer).await
    );
    assert_eq!(entries, SUCCESSES, "every charge applied, none terminated for the store's failure");
    assert_eq!(entries_final, SUCCESSES, "ledger entries = successful responses");
    fleet.stop().await;
}

/// The other side of the flapping test: an event the database refuses as data (its key does not
/// exist) is terminated, and the events batched with it are applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledger_poison_event_is_terminated_and_its_batch_applied() {
    init();
    let mut fleet = Fleet::builder("ledger-poison").fronts(0).workers(0).ledger(false).start().await;
    let names = fleet.names().clone();
    let js = fleet.jetstream().await;
    let store = fleet.store().clone();
    let (_key, key_id) = fleet.key(Plan::Free).await;
    let event = |key_id: &str| ledger_event(key_id, 1, "front-poison-test");
    let events = [event(&key_id), event("no-such-key"), event(&key_id), event(&key_id)];
    for e in &events {
        let payload = serde_json::to_vec(e).expect("event");
        publish(&js, &names.ledger_charge, &payload, &e.event_id.to_string(), None).await;
    }
    let stats = Arc::new(LedgerStats::default());
    fleet.start_ledger(stats.clone());
    assert_eq!(settled(&store, &key_id, 3).await, 3, "the good events applied");
    fleet.drain().await;
    println!(
        "[ledger poison] events 4 (1 for an unknown key): applied {}, entries {}, entries for the unknown key {} (terminated)",
        stats.applied.load(Ordering::Relaxed),
        ledger_count(&store, &key_id).await,
        ledger_count(&store, "no-such-key").await
    );
    assert_eq!(stats.applied.load(Ordering::Relaxed), 3);
    assert_eq!(ledger_count(&store, "no-such-key").await, 0);
    fleet.stop().await;
}

/// The same within one message: a front's group of charges with one the database refuses (its
/// key does not exist) settles its other charges, and the message is acked, not redelivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grouped_message_settles_its_charges_around_a_refused_one() {
    init();
    let mut fleet = Fleet::builder("ledger-group-poison").fronts(0).workers(0).ledger(false).start().await;
    let names = fleet.names().clone();
    let js = fleet.jetstream().await;
    let store = fleet.store().clone();
    let (_key, key_id) = fleet.key(Plan::Free).await;
    let event = |key_id: &str| ledger_event(key_id, 1, "front-group-test");
    let group = [event(&key_id), event("no-such-key"), event(&key_id)];
    let payload = common::messages::encode_ledger_message(&group);
    publish(&js, &names.ledger_charge, &payload, &uuid::Uuid::now_v7().to_string(), None).await;
    let stats = Arc::new(LedgerStats::default());
    fleet.start_ledger(stats.clone());
    assert_eq!(settled(&store, &key_id, 2).await, 2, "the group's good charges applied");
    fleet.drain().await;
    assert_eq!(stats.applied.load(Ordering::Relaxed), 2);
    assert_eq!(ledger_count(&store, "no-such-key").await, 0);
    let info = consumer_info(&js, &names.ledger_stream, &names.ledger_consumer).await;
    assert_eq!((info.num_pending, info.num_ack_pending), (0, 0), "the message is settled, not left for redelivery");
    fleet.stop().await;
}

// ---------------------------------------------------------------------------------------------
// 4. Duplicate publishes.

async fn publish(
    js: &async_nats::jetstream::Context,
    subject: &str,
    payload: &[u8],
    message_id: &str,
    reply_to: Option<&str>,
) -> async_nats::jetstream::publish::PublishAck {
    let mut message = async_nats::jetstream::message::PublishMessage::build()
        .payload(bytes::Bytes::copy_from_slice(payload))
        .message_id(message_id);
    if let Some(reply_to) = reply_to {
        message = message.header(common::subjects::REPLY_HEADER, reply_to);
    }
    js.send_publish(subject.to_owned(), message).await.expect("publish").await.expect("publish ack")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_publishes_make_one_entry_and_one_job() {
    init();
    let mut fleet = Fleet::builder("dup").fronts(0).workers(0).ledger(false).start().await;
    let names = fleet.names().clone();
    let client = async_nats::connect(fleet.nats().url()).await.expect("connect");
    let js = async_nats::jetstream::new(client.clone());
    let store = fleet.store().clone();
    let (_key, key_id) = fleet.key(Plan::Free).await;

    // The ledger: the same event twice with one Nats-Msg-Id → JetStream keeps one.
    let event = ledger_event(&key_id, 1, "front-dup-test");
    let payload = serde_json::to_vec(&event).expect("event");
    let first = publish(&js, &names.ledger_charge, &payload, &event.event_id.to_string(), None).await;
    let second = publish(&js, &names.ledger_charge, &payload, &event.event_id.to_string(), None).await;
    assert!(!first.duplicate);
    assert!(second.duplicate, "same Nats-Msg-Id within the duplicate window");
    assert_eq!(second.sequence, first.sequence);
    let stats = Arc::new(LedgerStats::default());
    fleet.start_ledger(stats.clone());
    assert_eq!(settled(&store, &key_id, 1).await, 1);
    // The same event again after it was applied, under another message id: JetStream cannot
    // tell, Postgres' ON CONFLICT (event_id) DO NOTHING must.
    let replay = publish(&js, &names.ledger_charge, &payload, &format!("replay-{}", event.event_id), None).await;
    assert!(!replay.duplicate, "a new message id is a new message to JetStream");
    let counters = &stats;
    assert!(
        wait_until(Duration::from_secs(10), || async move { counters.duplicates.load(Ordering::Relaxed) >= 1 }).await,
        "the replay was consumed"
    );
    assert_eq!(ledger_count(&store, &key_id).await, 1, "one entry");
    assert_eq!(store.settled_usage(&key_id, &period()).await.expect("usage"), 1, "charged once");
    assert_eq!(stats.applied.load(Ordering::Relaxed), 1);

    // The jobs: one job id published twice → one job, one reply.
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(format!("{inbox}.*")).await.expect("subscribe");
    let job = Job {
        job_id: uuid::Uuid::now_v7(),
        request_id: None,
        deadline: time::OffsetDateTime::now_utc() + Duration::from_secs(10),
        priority: common::priority::Priority::Interactive,
        work: JobWork::Check { domain: AVAILABLE.into() },
    };
    let job_payload = serde_json::to_vec(&job).expect("job");
    let reply_to = format!("{inbox}.{}", job.job_id);
    let a = publish(
        &js,
        names.jobs_subject(common::lookup::LookupKind::Check),
        &job_payload,
        &job.job_id.to_string(),
        Some(&reply_to),
    )
    .await;
    let b = publish(
        &js,
        names.jobs_subject(common::lookup::LookupKind::Check),
        &job_payload,
        &job.job_id.to_string(),
        Some(&reply_to),
    )
    .await;
    assert!(!a.duplicate);
    assert!(b.duplicate, "same job id within the duplicate window");
    let mut jobs_stream = js.get_stream(&names.jobs_stream).await.expect("jobs stream");
    assert_eq!(jobs_stream.info().await.expect("info").state.messages, 1, "one job queued");
    let pool = Arc::new(PoolStats::default());
    fleet.add_worker(pool.clone());
    let message = tokio::time::timeout(Duration::from_secs(5), replies.next())
        .await
        .expect("a reply")
        .expect("subscription open");
    let reply: JobReply = serde_json::from_slice(&message.payload).expect("reply");
    assert_eq!(reply.job_id, job.job_id);
    assert!(matches!(reply.outcome, LookupOutcome::Answer { answer: JobAnswer::Check { .. } }), "{reply:?}");
    assert!(tokio::time::timeout(Duration::from_millis(1500), replies.next()).await.is_err(), "one job, one reply");
    let answered = pool.answered.load(Ordering::Relaxed);
    println!(
        "[duplicates] ledger: duplicate publish absorbed by JetStream {}, replay absorbed by Postgres {}, entries {}; jobs: duplicate publish absorbed {}, jobs answered {answered}",
        u8::from(second.duplicate),
        stats.duplicates.load(Ordering::Relaxed),
        ledger_count(&store, &key_id).await,
        u8::from(b.duplicate)
    );
    assert_eq!(answered, 1);
    fleet.stop().await;
}

// ---------------------------------------------------------------------------------------------
// 5. Postgres unreachable.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_unreachable_fails_cleanly_and_loses_no_charge() {
    init();
    let mut fleet = Fleet::builder("pgdown").pg_proxy().start().await;
    let (front, proxy) = (fleet.front(0), fleet.pg_proxy());
    // Read the truth around the proxy.
    let direct = fleet.store().clone();
    let (cached_key, cached_key_id) = fleet.key(Plan::Free).await;
    let (cold_key, cold_key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::builder().timeout(Duration::from_secs(20)).build().expect("client");
    let mut successes = 0;

    // Warm: the key and the name are cached by the front (the key for 5 s).
    let (status, body) = get(&http, check_url(front, &cached_key, AVAILABLE)).await;
    assert_eq!(status, 200, "{body}");
    successes += 1;
    let warmed_at = Instant::now();
    assert_eq!(get(&http, front.url("/readyz")).await.0, 200);
    assert_eq!(settled(&direct, &cached_key_id, 1).await, 1);

    proxy.cut().await;
    let cut_at = Instant::now();
    // A cached key on a cached name needs no database: served, charged into the ledger stream.
    // Spread over a second, longer than the credits refresh interval (200 ms), so the front tries
    // to re-read the settled usage while Postgres is gone.
    let mut cached_latencies = Vec::new();
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let started = Instant::now();
        let (status, body) = get(&http, check_url(front, &cached_key, AVAILABLE)).await;
        cached_latencies.push(started.elapsed());
        assert_eq!(
            status,
            200,
            "a cached key still works with Postgres down ({:?} after the warm-up): {body}",
            warmed_at.elapsed()
        );
        successes += 1;
    }
    // Past the front's key cache lifetime (5 s), a key it has seen keeps working from its last
    // record: an outage longer than the cache is not a wall of 500s.
    tokio::time::sleep((warmed_at + Duration::from_secs(6)).saturating_duration_since(Instant::now())).await;
    let started = Instant::now();
    let (status, body) = get(&http, check_url(front, &cached_key, AVAILABLE)).await;
    let stale_elapsed = started.elapsed();
    assert_eq!(status, 200, "a known key outlives its cache entry while Postgres is down: {body}");
    successes += 1;
    let started = Instant::now();
    let (status, body) = get(&http, check_url(front, &cached_key, AVAILABLE)).await;
    assert_eq!(status, 200, "{body}");
    successes += 1;
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "later requests don't wait for the store: {:?}",
        started.elapsed()
    );
    // A key the front has never seen cannot be checked: 503 in the spec's shape with
    // Retry-After, within the key lookup timeout.
    let started = Instant::now();
    let response = http.get(check_url(front, &cold_key, AVAILABLE)).send().await.expect("cold");
    let cold_status = response.status().as_u16();
    let retry_after = response.headers().get("retry-after").map(|v| v.to_str().expect("ascii").to_owned());
    let body: serde_json::Value = response.json().await.expect("json");
    let cold_elapsed = started.elapsed();
    assert_eq!(cold_status, 503, "{body}");
    assert_eq!(retry_after.as_deref(), Some("5"));
    assert_error_shape(cold_status, &body);
    assert!(cold_elapsed < Duration::from_millis(500), "the error comes fast: {cold_elapsed:?}");
    println!("[postgres down] known key past its cache entry answered in {:.3} s", stale_elapsed.as_secs_f64());
    let started = Instant::now();
    let (ready_status, ready_body) = get(&http, front.url("/readyz")).await;
    let ready_elapsed = started.elapsed();
    assert_eq!(ready_status, 503, "{ready_body}");
    assert!(ready_elapsed < Duration::from_secs(3), "readiness answers within its own timeout: {ready_elapsed:?}");
    assert_error_shape(ready_status, &ready_body);
    // The charges wait in the ledger stream meanwhile.
    assert_eq!(ledger_count(&direct, &cached_key_id).await, 1, "nothing settled while Postgres is unreachable");
    let cut_for = cut_at.elapsed();

    proxy.restore().await;
    let restored_at = Instant::now();
    let (h, f) = (&http, front);
    let ready_again =
        wait_until(Duration::from_secs(15), || async move { get(h, f.url("/readyz")).await.0 == 200 }).await;
    assert!(ready_again, "ready again once Postgres is back");
    let ready_after = restored_at.elapsed();
    assert_eq!(settled(&direct, &cached_key_id, successes).await, successes, "every charge applied after the outage");
    let settled_after = restored_at.elapsed();
    let (status, body) = get(&http, check_url(front, &cold_key, AVAILABLE)).await;
    assert_eq!(status, 200, "the cold key works again: {body}");
    successes += 1;
    fleet.drain().await;
    let entries = ledger_count(&direct, &cached_key_id).await + ledger_count(&direct, &cold_key_id).await;
    println!(
        "[postgres down] cut for {:.2} s; cached-key checks 5 × 200 (slowest {:.3} s); uncached key {cold_status} in {:.2} s; /readyz 503 in {:.2} s; ready {:.2} s and all charges settled {:.2} s after restore; successes {successes}, entries {entries}",
        cut_for.as_secs_f64(),
        cached_latencies.iter().max().copied().unwrap_or_default().as_secs_f64(),
        cold_elapsed.as_secs_f64(),
        ready_elapsed.as_secs_f64(),
        ready_after.as_secs_f64(),
        settled_after.as_secs_f64(),
    );
    assert_eq!(entries, successes, "ledger entries = successful responses");
    fleet.stop().await;
}

// ---------------------------------------------------------------------------------------------
// 6. The fleet-wide upstream limit.

struct LimitRun {
    sent: usize,
    ok: usize,
    statuses: std::collections::BTreeMap<u16, usize>,
    /// Verdict methods of the answers (`rdap`, or `whois` after an RDAP 429).
    methods: std::collections::BTreeMap<String, usize>,
    violations: u64,
    rdap_queries: u64,
    entries: i64,
    took: Duration,
}

/// 30 distinct available names checked at once through one front, three workers, the simulator
/// allowing 5 RDAP requests a second and dsa's limit for that host at 5/s burst 1.
async fn three_workers_against_a_limited_registry(prefix: &str, fleet_rate_limits: bool) -> LimitRun {
    init();
    const CHECKS: usize = 30;
    let mut fleet = Fleet::builder(prefix)
        .workers(3)
        .knobs(Knobs { rate_limit: RateLimit { rdap_per_second: Some(5), ..RateLimit::default() }, ..Knobs::default() })
        .configure(move |settings| {
            let rdap_host = settings
                .engine
                .rdap
                .base_overrides
                .get("com")
                .and_then(|base| url::Url::parse(base).ok())
                .and_then(|u| u.host_str().map(str::to_owned))
                .expect("the simulator's RDAP base for .com");
            assert_eq!(rdap_host, "127.0.0.1");
            assert_eq!(
                settings
                    .engine
                    .rdap
                    .base_overrides
                    .get("net")
                    .and_then(|b| url::Url::parse(b).ok())
                    .and_then(|u| u.host_str().map(str::to_owned)),
                Some(rdap_host.clone())
            );
            settings.engine.limits.hosts.insert(rdap_host, HostLimit { per_second: 5.0, burst: 1, concurrency: 4 });
            settings.fleet.fleet_rate_limits = fleet_rate_limits;
            // 30 RDAP queries at 5/s take 6 s: the queued ones must be allowed to wait that long.
            settings.engine.check_deadline_secs = 15.0;
            settings.engine.limits.max_queue_wait_secs = 12.0;
        })
        .start()
        .await;
    let (front, sim) = (fleet.front(0), fleet.sim());
    let store = fleet.store().clone();
    let (key, key_id) = fleet.key(Plan::Pro).await;
    let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().expect("client");
    let started = Instant::now();
    let mut requests = tokio::task::JoinSet::new();
    for i in 0..CHECKS {
        let tld = if i % 2 == 0 { "com" } else { "net" };
        let (http, url) = (http.clone(), check_url(front, &key, &format!("fleet-limit-{i}.{tld}")));
        requests.spawn(async move { get(&http, url).await });
    }
    let mut methods = std::collections::BTreeMap::new();
    let mut statuses = std::collections::BTreeMap::new();
    while let Some(done) = requests.join_next().await {
        let (status, body) = done.expect("request task");
        if status == 200 {
            assert_eq!(body["available"], true, "{body}");
            let method = body["verdict"]["method"].as_str().unwrap_or("?").to_owned();
            *methods.entry(method).or_insert(0) += 1;
        }
        *statuses.entry(status).or_insert(0) += 1;
    }
    let took = started.elapsed();
    let ok = statuses.get(&200).copied().unwrap_or(0);
    let stats = sim.stats();
    fleet.drain().await;
    let entries = ledger_count(&store, &key_id).await;
    fleet.stop().await;
    LimitRun {
        sent: CHECKS,
        ok,
        statuses,
        methods,
        violations: stats.rdap.rate_limit_violations,
        rdap_queries: stats.rdap.queries,
        entries,
        took,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_wide_limit_keeps_three_workers_within_the_registry_limit() {
    let run = three_workers_against_a_limited_registry("limit-fleet", true).await;
    println!(
        "[fleet limit on] 3 workers, {} checks in {:.2} s: statuses {:?}, verdicts by {:?}, RDAP queries {}, rate-limit violations {}, ledger entries {}",
        run.sent,
        run.took.as_secs_f64(),
        run.statuses,
        run.methods,
        run.rdap_queries,
        run.violations,
        run.entries
    );
    assert_eq!(run.violations, 0, "the fleet kept to the registry's 5/s");
    assert_eq!(run.ok, run.sent, "every check answered: {:?}", run.statuses);
    assert_eq!(run.entries, run.ok as i64, "ledger entries = successful responses");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_fleet_limit_three_workers_overrun_the_registry() {
    // The control: each worker keeps 5/s on its own, so together they exceed it.
    let run = three_workers_against_a_limited_registry("limit-local", false).await;
    println!(
        "[fleet limit off: control] 3 workers, {} checks in {:.2} s: statuses {:?}, verdicts by {:?}, RDAP queries {}, rate-limit violations {}, ledger entries {}",
        run.sent,
        run.took.as_secs_f64(),
        run.statuses,
        run.methods,
        run.rdap_queries,
        run.violations,
        run.entries
    );
    assert!(run.violations > 0, "per-process limits alone overrun a shared upstream (the test can fail)");
    assert_eq!(run.entries, run.ok as i64, "ledger entries = successful responses");
}

// ---------------------------------------------------------------------------------------------
// 7. Overspend.

const FREE_CREDITS: i64 = 500;
const BURST: usize = 1000;

/// Sends `BURST` concurrent checks of a cached name, round-robin over `fronts`; every answer is a
/// 200 or the spec's 429 for an exhausted allowance. Returns the successes and the statuses.
async fn burst(
    http: &reqwest::Client,
    fronts: &[&dsa_tests::harness::fleet::Front],
    key: &str,
) -> (i64, std::collections::BTreeMap<u16, usize>) {
    let mut requests = tokio::task::JoinSet::new();
    for i in 0..BURST {
        let (http, url) = (http.clone(), check_url(fronts[i % fronts.len()], key, AVAILABLE));
        requests.spawn(async move { get(&http, url).await });
    }
    let mut statuses = std::collections::BTreeMap::new();
    while let Some(done) = requests.join_next().await {
        let (status, body) = done.expect("request task");
        match status {
            200 => {}
            // Spent, or (a request over the allowance while others of the burst still hold
            // credits they may give back) "held by requests in flight, retry in a moment".
            429 => assert!(
                body["error"] == api::error::CREDITS_EXHAUSTED
                    || body["error"]
                        .as_str()
                        .is_some_and(|e| e.starts_with("Credits are held by this key's requests in flight")),
                "{body}"
            ),
            // Overload shedding (a fast 503, nothing charged) is a legitimate answer on a
            // machine busy with other fleets; the bound below counts successes only.
            503 => assert_eq!(body["success"], false, "{body}"),
            _ => panic!("{status}: {body}"),
        }
        *statuses.entry(status).or_insert(0) += 1;
    }
    (statuses.get(&200).map_or(0, |n| *n as i64), statuses)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_front_never_overspends() {
    init();
    let mut fleet = Fleet::start("spend-one", 1, 1).await;
    let front = fleet.front(0);
    let store = fleet.store().clone();
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().expect("client");
    let (status, body) = get(&http, check_url(front, &key, AVAILABLE)).await;
    assert_eq!(status, 200, "warm-up: {body}");
    let started = Instant::now();
    let (burst_ok, statuses) = burst(&http, &[front], &key).await;
    let took = started.elapsed();
    let successes = 1 + burst_ok;
    let entries = settled(&store, &key_id, successes).await;
    fleet.drain().await;
    let entries_final = ledger_count(&store, &key_id).await;
    println!(
        "[overspend, one front] {BURST} concurrent checks in {:.2} s: statuses {statuses:?}; successes {successes} (warm-up included), ledger entries {entries_final}, overspend {}",
        took.as_secs_f64(),
        successes - FREE_CREDITS
    );
    assert_eq!(successes, FREE_CREDITS, "exactly the allowance through one front");
    assert_eq!(entries, FREE_CREDITS);
    assert_eq!(entries_final, FREE_CREDITS, "ledger entries = successful responses");
    fleet.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_fronts_overspend_within_the_documented_bound() {
    init();
    let mut fleet = Fleet::builder("spend-two").fronts(2).configure(|s| s.fleet.credits_refresh_ms = 200).start().await;
    let refresh = Duration::from_millis(fleet.settings().fleet.credits_refresh_ms);
    let (front_a, front_b) = (fleet.front(0), fleet.front(1));
    let store = fleet.store().clone();
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().expect("client");
    for front in [front_a, front_b] {
        let (status, body) = get(&http, check_url(front, &key, AVAILABLE)).await;
        assert_eq!(status, 200, "warm-up: {body}");
    }
    assert_eq!(settled(&store, &key_id, 2).await, 2);

    // Watch the ledger settle during the burst: settled entries per front over time, and how
    // long such a read takes (the fronts' refresh reads are alike).
    let db_url = fleet.db_url().to_owned();
    let sampling = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let (key_id, sampling) = (key_id.clone(), sampling.clone());
        tokio::spawn(async move {
            let mut conn = sqlx::PgConnection::connect(&db_url).await.expect("sampler connects");
            let mut samples: Vec<(time::OffsetDateTime, Vec<(String, i64)>)> = Vec::new();
            let mut slowest = Duration::ZERO;
            while sampling.load(Ordering::Relaxed) {
                let started = Instant::now();
                let counts: Vec<(String, i64)> =
                    sqlx::query_as("SELECT front, COUNT(*) FROM ledger_entries WHERE key_id = $1 GROUP BY front")
                        .bind(&key_id)
                        .fetch_all(&mut conn)
                        .await
                        .expect("sample");
                slowest = slowest.max(started.elapsed());
                samples.push((time::OffsetDateTime::now_utc(), counts));
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            (samples, slowest)
        })
    };
    let started = Instant::now();
    let (burst_ok, statuses) = burst(&http, &[front_a, front_b], &key).await;
    let took = started.elapsed();
    let successes = 2 + burst_ok;
    let entries = settled(&store, &key_id, successes).await;
    sampling.store(false, Ordering::Relaxed);
    let (samples, slowest_read) = sampler.await.expect("sampler");

    // When each charge was made (its reservation), per front, from the ledger itself.
    let mut conn = sqlx::PgConnection::connect(fleet.db_url()).await.expect("connect");
    let charges: Vec<(String, time::OffsetDateTime)> =
        sqlx::query_as("SELECT front, charged_at FROM ledger_entries WHERE key_id = $1 ORDER BY charged_at")
            .bind(&key_id)
            .fetch_all(&mut conn)
            .await
            .expect("charges");
    let fronts: Vec<String> = {
        let mut f: Vec<String> = charges.iter().map(|(f, _)| f.clone()).collect();
        f.sort();
        f.dedup();
        f
    };
    assert_eq!(fronts.len(), 2, "both fronts charged");
    let times = |front: &str| -> Vec<time::OffsetDateTime> {
        charges.iter().filter(|(f, _)| f == front).map(|(_, t)| *t).collect()
    };
    // Settle lag of a front: the longest time its (n+1)-th charge waited while only n of its
    // charges were settled (counts, not ids: a front's view of the others is a count).
    let mut settle_lag = Duration::ZERO;
    for front in &fronts {
        let made = times(front);
        for (at, counts) in &samples {
            let settled = counts.iter().find(|(f, _)| f == front).map_or(0, |(_, n)| *n) as usize;
            if let Some(waiting) = made.get(settled)
                && *at > *waiting
            {
                settle_lag = settle_lag.max(Duration::try_from(*at - *waiting).unwrap_or_default());
            }
        }
    }
    // The bound of api/src/front/credits.rs: a front's view of the others lags by at most the refresh
    // interval plus the settle lag, so the overspend is at most the other front's charges within
    // one such window (taken as the largest over the burst). The view in use was read up to one
    // statement before its refresh ended, and the next refresh (up to seven statements: three
    // attempts of a consistent read) must end before it is replaced: 8 reads, as slow as the
    // slowest seen here, plus 100 ms of slack for scheduling.
    let window = refresh + settle_lag + 8 * slowest_read + Duration::from_millis(100);
    let mut bound = 0usize;
    for (i, front) in fronts.iter().enumerate() {
        let other = times(&fronts[1 - i]);
        for at in times(front) {
            let from = at - window;
            bound = bound.max(other.iter().filter(|t| **t > from && **t <= at).count());
        }
    }
    let per_front: Vec<usize> = fronts.iter().map(|f| times(f).len()).collect();
    fleet.drain().await;
    let entries_final = ledger_count(&store, &key_id).await;
    println!(
        "[overspend, two fronts] {BURST} concurrent checks in {:.2} s: statuses {statuses:?}; successes {successes} (per front {per_front:?}, warm-ups included), ledger entries {entries_final}; overspend {} with bound {bound} (window {} ms = refresh {} ms + settle lag {} ms + 8 × read {} ms + 100 ms)",
        took.as_secs_f64(),
        successes - FREE_CREDITS,
        window.as_millis(),
        refresh.as_millis(),
        settle_lag.as_millis(),
        slowest_read.as_millis()
    );
    assert!(successes >= FREE_CREDITS, "the allowance is usable in full");
    assert!(
        successes <= FREE_CREDITS + bound as i64,
        "overspend {} within the bound {bound}",
        successes - FREE_CREDITS
    );
    assert_eq!(entries, successes);
    assert_eq!(entries_final, successes, "ledger entries = successful responses");
    fleet.stop().await;
}

// ---------------------------------------------------------------------------------------------
// 8. A front process SIGKILLed under load, with NATS up and with NATS down at the kill.

/// Front kills in the default test (each kill is a fresh `dsa front` process under load).
const FRONT_KILLS: usize = 6;
/// Front kills of the long run (`--ignored front_sigkilled_50_times`).
const FRONT_KILLS_LONG: usize = 50;
/// Clients sending checks back to back at each front.
const FRONT_LOAD_CLIENTS: usize = 12;

/// What the clients of the killed fronts saw, and what the ledger holds.
#[derive(Debug, Default)]
struct FrontKills {
    /// 200s with a charge (`credits_cost` > 0): each must have exactly one ledger entry.
    charged_ok: i64,
    /// 503s: the charge was refused (ledger queue full, NATS down) or not confirmed in time.
    unavailable: i64,
    /// Requests that got no HTTP answer (the front died under them).
    no_answer: i64,
    /// Any other status (none expected: a cached name, unlimited rate, ample credits).
    other: std::collections::BTreeMap<u16, i64>,
    entries: i64,
}

/// Starts a `dsa front` process of `fleet` on a free port and waits until it answers `/healthz`;
/// returns its process index and base URL.
async fn front_process(fleet: &mut Fleet) -> (usize, String) {
    let mut settings = fleet.settings().clone();
    settings.server.listen = format!("127.0.0.1:{}", free_port()).parse().expect("address");
    settings.bootstrap.create_dev_key = false;
    let process = fleet.spawn_process("front", &settings);
    let base = format!("http://{}", settings.server.listen);
    let http = reqwest::Client::new();
    let up = wait_until(Duration::from_secs(60), || {
        let (http, url) = (http.clone(), format!("{base}/readyz"));
        async move { http.get(url).send().await.is_ok_and(|r| r.status().is_success()) }
    })
    .await;
    let process_ref = fleet.process(process);
    assert!(
        up && process_ref.running(),
        "dsa front never answered; its log: {}",
        std::fs::read_to_string(&process_ref.log).unwrap_or_default()
    );
    (process, base)
}

/// Runs `kills` rounds: a `dsa front` process under load from [`FRONT_LOAD_CLIENTS`] clients is
/// SIGKILLed; every other round NATS is killed first (charges refused meanwhile) and restarted
/// after the front's kill. Then the ledger settles and the clients' charged 200s are counted
/// against the ledger's entries.
async fn fronts_sigkilled_under_load(prefix: &str, kills: usize) -> FrontKills {
    init();
    let mut fleet = Fleet::builder(prefix).fronts(0).start().await;
    let store = fleet.store().clone();
    let (key, key_id) = fleet.key(Plan::Reseller).await;
    let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().expect("client");
    let mut seen = FrontKills::default();
    for round in 0..kills {
        let (front, base) = front_process(&mut fleet).await;
        let url = format!("{base}/v1/domains/check?client_key={key}&domain={AVAILABLE}");
        // Warm the front's cache so the load is cached checks, charged without a worker.
        let _ = http.get(&url).send().await;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut clients = tokio::task::JoinSet::new();
        for _ in 0..FRONT_LOAD_CLIENTS {
            let (http, url, stop) = (http.clone(), url.clone(), stop.clone());
            clients.spawn(async move {
                let mut seen = FrontKills::default();
                while !stop.load(Ordering::Relaxed) {
                    match http.get(&url).send().await {
                        Ok(response) => {
                            let status = response.status().as_u16();
                            let body: serde_json::Value = response.json().await.unwrap_or_default();
                            match status {
                                200 if body["credits_cost"].as_i64().unwrap_or(0) > 0 => seen.charged_ok += 1,
                                503 => seen.unavailable += 1,
                                _ => *seen.other.entry(status).or_insert(0) += 1,
                            }
                        }
                        Err(_) => {
                            seen.no_answer += 1;
                            // The front is gone: stop rather than count refused connections.
                            break;
                        }
                    }
                }
                seen
            });
        }
        // Kill at a different point of the load each round.
        tokio::time::sleep(Duration::from_millis(200 + (round as u64 * 137) % 400)).await;
        let nats_down = round % 2 == 1;
        if nats_down {
            fleet.nats_mut().kill();
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        fleet.process(front).sigkill();
        stop.store(true, Ordering::Relaxed);
        while let Some(done) = clients.join_next().await {
            let client = done.expect("client task");
            seen.charged_ok += client.charged_ok;
            seen.unavailable += client.unavailable;
            seen.no_answer += client.no_answer;
            for (status, n) in client.other {
                *seen.other.entry(status).or_insert(0) += n;
            }
        }
        if nats_down {
            fleet.nats_mut().resume().await;
        }
    }
    // Settle: the consumer drains the stream (teardown check), then count.
    fleet.drain().await;
    seen.entries = ledger_count(&store, &key_id).await;
    fleet.stop().await;
    println!(
        "[front SIGKILL × {kills}] charged 200s {}, 503s {}, requests without an answer {}, other {:?}; ledger entries {} (extra entries {})",
        seen.charged_ok,
        seen.unavailable,
        seen.no_answer,
        seen.other,
        seen.entries,
        seen.entries - seen.charged_ok
    );
    seen
}

/// The ledger's rule across front kills: every charged 200 has exactly one ledger entry, and an
/// entry without a 200 belongs to a request whose client got no 200 for it: the front died after
/// the charge was durable and before the answer left (no answer), or the ledger confirmed too
/// late (a 503 "not confirmed").
fn assert_no_charge_lost(seen: &FrontKills) {
    assert!(seen.other.is_empty(), "only 200 and 503 expected: {:?}", seen.other);
    assert!(seen.charged_ok > 0, "the load was served between kills");
    assert!(seen.entries >= seen.charged_ok, "a charged 200 without a ledger entry: {seen:?}");
    assert!(
        seen.entries - seen.charged_ok <= seen.no_answer + seen.unavailable,
        "ledger entries beyond the charged 200s exceed the requests left unanswered or unconfirmed: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn front_sigkilled_under_load_loses_no_charge() {
    let seen = fronts_sigkilled_under_load("front-kill", FRONT_KILLS).await;
    assert_no_charge_lost(&seen);
}

/// The 50-kill run of issue 17 (about two minutes): `cargo test -p dsa-tests --test fleet_faults
/// -- --ignored --nocapture front_sigkilled_50_times`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: 50 front processes killed; run by hand"]
async fn front_sigkilled_50_times_loses_no_charge() {
    let seen = fronts_sigkilled_under_load("front-kill-long", FRONT_KILLS_LONG).await;
    assert_no_charge_lost(&seen);
}

// ---------------------------------------------------------------------------------------------
// 9. A bulk job (issue 26) whose `dsa worker` and `dsa ledger` processes are SIGKILLed mid-job.

async fn bulk_job_state(http: &reqwest::Client, base: &str, key: &str, id: &str) -> serde_json::Value {
    match http.get(format!("{base}/v1/jobs/{id}?client_key={key}")).send().await {
        Ok(r) => r.json().await.unwrap_or(serde_json::Value::Null),
        Err(_) => serde_json::Value::Null,
    }
}

/// Starts a `dsa worker` or `dsa ledger` process and waits until it pulls from its consumer.
async fn consumer_process(fleet: &mut Fleet, role: &str) -> usize {
    let settings = fleet.settings().clone();
    let process = fleet.spawn_process(role, &settings);
    let names = fleet.names().clone();
    let js = fleet.jetstream().await;
    let (js_ref, names_ref) = (&js, &names);
    let pulling = wait_until(Duration::from_secs(60), || async move {
        let (stream, consumer) = if role == "worker" {
            (names_ref.jobs_stream.clone(), names_ref.jobs_consumer(common::lookup::LookupKind::Check).to_owned())
        } else {
            (names_ref.ledger_stream.clone(), names_ref.ledger_consumer.clone())
        };
        consumer_info(js_ref, &stream, &consumer).await.num_waiting > 0
    })
    .await;
    assert!(
        pulling,
        "dsa {role} never pulled; its log: {}",
        std::fs::read_to_string(&fleet.process(process).log).unwrap_or_default()
    );
    process
}

/// The job runs on the in-process front; the only worker and the ledger consumer are `dsa worker`
/// and `dsa ledger` processes. Part-way through, both are SIGKILLed at once (checks in flight on
/// the worker, charges in flight to the ledger), the runner keeps going against a fleet with no
/// worker and no ledger for a while, then both roles come back as new processes. The job
/// completes: one result per name, each charged, ledger entries = results, none twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_job_survives_sigkilled_worker_and_ledger_processes() {
    init();
    let mut fleet = Fleet::builder("bulk-kill")
        .fronts(1)
        .workers(0)
        .ledger(false)
        .knobs(Knobs { latency_ms: Latency { rdap: 30, ..Latency::default() }, ..Knobs::default() })
        .configure(|s| {
            s.policy.bulk_jobs.run = true;
            s.policy.bulk_jobs.concurrency = 8;
            // Checks that hit the dead worker time out and are retried; enough attempts to
            // outlast the outage, so every name ends definitive (and charged).
            s.policy.bulk_jobs.attempts = 20;
            s.engine.check_deadline_secs = 3.0;
        })
        .start()
        .await;
    let store = fleet.store().clone();
    let (key, key_id) = fleet.key(Plan::Starter).await;
    let mut worker = consumer_process(&mut fleet, "worker").await;
    let mut ledger = consumer_process(&mut fleet, "ledger").await;
    let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().expect("client");
    let base = fleet.front(0).url("");

    let total = 300_usize;
    let body: String = (0..total).map(|i| format!("dsa-kill-job-{i}.{}\n", ["com", "org", "net"][i % 3])).collect();
    let response = http
        .post(format!("{base}/v1/jobs/bulk-check?client_key={key}"))
        .header("content-type", "text/plain")
        .body(body)
        .send()
        .await
        .expect("submit");
    assert_eq!(response.status().as_u16(), 202);
    let accepted: serde_json::Value = response.json().await.expect("json");
    let id = accepted["id"].as_str().expect("id").to_owned();
    let total = total as i64;
    assert_eq!(accepted["total"], total);

    let mut kills = 0;
    for threshold in [40, 150] {
        let started = Instant::now();
        let at_kill = loop {
            let state = bulk_job_state(&http, &base, &key, &id).await;
            if state["checked"].as_i64().is_some_and(|c| c >= threshold) {
                break state;
            }
            assert!(started.elapsed() < Duration::from_secs(120), "no progress: {state}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(at_kill["state"], "running", "killed mid-job: {at_kill}");
        assert!(fleet.process(worker).running() && fleet.process(ledger).running(), "alive until the kill");
        fleet.process(worker).sigkill();
        fleet.process(ledger).sigkill();
        kills += 1;
        // The job is left without a worker and a ledger for a while (checks time out, charges
        // wait in the stream), then both come back as new processes.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let stalled = bulk_job_state(&http, &base, &key, &id).await;
        assert_ne!(stalled["state"], "done", "the job cannot finish without a worker: {stalled}");
        worker = consumer_process(&mut fleet, "worker").await;
        ledger = consumer_process(&mut fleet, "ledger").await;
    }

    let started = Instant::now();
    let done = loop {
        let state = bulk_job_state(&http, &base, &key, &id).await;
        if state["state"] == "done" {
            break state;
        }
        assert!(started.elapsed() < Duration::from_secs(180), "not done: {state}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(done["checked"], total, "{done}");
    assert_eq!(done["counts"]["unknown"], 0, "every name answered: {done}");
    assert_eq!(done["credits_charged"], total, "{done}");

    // Every name once in the results, each charged.
    let (mut cursor, mut domains) = (0_i64, Vec::new());
    loop {
        let r = http
            .get(format!("{base}/v1/jobs/{id}/results?client_key={key}&cursor={cursor}&limit=100"))
            .send()
            .await
            .expect("results");
        let next: i64 = r.headers()["x-next-cursor"].to_str().expect("cursor").parse().expect("number");
        let text = r.text().await.expect("text");
        if text.is_empty() {
            break;
        }
        for line in text.lines() {
            let row: serde_json::Value = serde_json::from_str(line).expect("json");
            assert_eq!(row["charged"], true, "{row}");
            domains.push(row["domain"].as_str().expect("domain").to_owned());
        }
        cursor = next;
    }
    domains.sort();
    let listed = domains.len();
    domains.dedup();
    assert_eq!((listed, domains.len()), (total as usize, total as usize), "one result per name");

    // Ledger = results: the restarted ledger settles every charge, none twice.
    assert_eq!(settled(&store, &key_id, total).await, total);
    fleet.drain().await;
    let entries = ledger_count(&store, &key_id).await;
    println!(
        "[bulk job, worker + ledger SIGKILL × {kills}] {total} names: results {listed}, charged {}, ledger entries {entries}",
        done["credits_charged"]
    );
    assert_eq!(entries, total, "ledger entries = results, each name charged once");
    fleet.stop().await;
}

/// A watched name's whole life (issue 25) through a fleet whose only worker and ledger consumer
/// are `dsa worker` and `dsa ledger` processes, both SIGKILLed in redemption (a re-check in the
/// air, the fees in the stream) and restarted a moment later, and one of the two fronts (each
/// running the scheduler) crashed in pending delete. The events are recorded each exactly once
/// and in order (a repeated re-check gives the same event ids), and each month's fee is charged
/// once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_lives_through_sigkilled_worker_and_ledger_processes_and_a_crashed_front() {
    use dsa_tests::harness::app::TestClock;
    use time::macros::datetime;

    init();
    let t0 = datetime!(2026-01-01 00:00 UTC);
    let scenario = dsa_tests::sim::Scenario::from_toml(
        r#"
[[tld]]
suffix = "org"
protocols = ["dns", "rdap"]
rdap_family = "centralnic"

[[timeline]]
name = "dropping.org"
expires_at = "2026-03-01T00:00:00Z"
redemption_at = "2026-04-15T00:00:00Z"
pending_delete_at = "2026-05-15T00:00:00Z"
free_at = "2026-05-20T00:00:00Z"
"#,
    )
    .expect("scenario");
    let clock = TestClock::at(t0);
    let mut fleet = Fleet::builder("watch-kill")
        .scenario(scenario)
        .fronts(2)
        .workers(0)
        .ledger(false)
        .clock(clock.clock())
        .configure(|s| {
            s.watches.tick_ms = 20;
            s.watches.job_wait_secs = 3.0;
        })
        .start()
        .await;
    fleet.sim().set_now(Some(t0));
    let mut worker = consumer_process(&mut fleet, "worker").await;
    let mut ledger = consumer_process(&mut fleet, "ledger").await;
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().expect("client");
    let response = http
        .post(fleet.front(1).url(&format!("/v1/watches?client_key={key}")))
        .json(&serde_json::json!({"domain": "dropping.org"}))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status().as_u16(), 201);
    let body: serde_json::Value = response.json().await.expect("json");
    let id = body["watch"]["id"].as_str().expect("id").to_owned();

    let in_redemption = datetime!(2026-04-16 00:00 UTC);
    advance_watch(&fleet, &clock, &key_id, &id, t0, in_redemption).await;

    fleet.process(worker).sigkill();
    fleet.process(ledger).sigkill();
    // Re-checks fall due with no worker (no answer: retried later); the fees wait in the stream.
    let stalled = datetime!(2026-04-18 00:00 UTC);
    clock.set(stalled);
    fleet.sim().set_now(Some(stalled));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    worker = consumer_process(&mut fleet, "worker").await;
    ledger = consumer_process(&mut fleet, "ledger").await;
    let in_pending_delete = datetime!(2026-05-16 00:00 UTC);
    advance_watch(&fleet, &clock, &key_id, &id, stalled, in_pending_delete).await;
    fleet.crash_front(0);
    advance_watch(&fleet, &clock, &key_id, &id, in_pending_delete, datetime!(2026-05-22 00:00 UTC)).await;
    assert!(fleet.process(worker).running() && fleet.process(ledger).running());

    let page: serde_json::Value = http
        .get(fleet.front(1).url(&format!("/v1/watches/{id}/events?client_key={key}&limit=100")))
        .send()
        .await
        .expect("events")
        .json()
        .await
        .expect("json");
    let seen: Vec<(String, String)> = page["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| (e["type"].as_str().unwrap_or("?").to_owned(), e["data"]["to"].as_str().unwrap_or("?").to_owned()))
        .collect();
    let want = [
        ("domain.state_changed", "expiring"),
        ("domain.expiring", "expiring"),
        ("domain.state_changed", "redemption"),
        ("domain.state_changed", "pending_delete"),
        ("domain.state_changed", "available"),
        ("domain.available", "available"),
    ]
    .map(|(t, to)| (t.to_owned(), to.to_owned()));
    assert_eq!(seen, want, "each event once, in order: {page}");
    let ids: std::collections::BTreeSet<String> =
        page["events"].as_array().expect("events").iter().filter_map(|e| e["id"].as_str().map(str::to_owned)).collect();
    assert_eq!(ids.len(), want.len(), "distinct ids: {page}");

    // January's fee at creation, February to May at each month's reset: once each.
    for month in 1..=5 {
        let period = format!("2026-{month:02}");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let usage = fleet.store().usage_by_endpoint(&key_id, &period).await.expect("usage");
            if usage == vec![("watch".to_owned(), 20)] {
                break;
            }
            assert!(Instant::now() < deadline, "{period}: {usage:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    println!("[watch, worker + ledger SIGKILL, a front crashed] events {:?}", seen);
    fleet.stop().await;
}

/// Moves the front's and the simulator's clocks a day at a time from `from` to `to`, each time
/// until the schedulers have caught up (the watch is no longer due).
async fn advance_watch(
    fleet: &Fleet,
    clock: &dsa_tests::harness::app::TestClock,
    key_id: &str,
    id: &str,
    from: time::OffsetDateTime,
    to: time::OffsetDateTime,
) {
    let mut now = from;
    while now < to {
        now = (now + time::Duration::days(1)).min(to);
        clock.set(now);
        fleet.sim().set_now(Some(now));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let watch = fleet.store().find_watch(key_id, id).await.expect("store").expect("watch");
            if watch.next_check_at > now.unix_timestamp() {
                break;
            }
            assert!(Instant::now() < deadline, "the schedulers did not catch up at {now}: {watch:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
