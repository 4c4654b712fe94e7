//! See the suite's crate doc (`main.rs`).
//!
//! Hostile registry bytes: a WHOIS server on loopback (anyone on a port-43 server's cleartext
//! path, or a registrar named by a referral, can answer this) sends the three-line answer of
//! issue 32, whose status line `Domain Status: İ until<U+2126> 2026-01-01` panicked the WHOIS
//! reader (`İ` grows by a byte when lower-cased and the OHM SIGN shrinks by one, so an offset
//! found in the lower-cased copy fell inside a character of the line). Before the fix, 64 such
//! answers left a standalone front with no check worker at all (every later check 502 in under a
//! millisecond, `.com` included) while `/readyz` said ready; in the fleet each such job was never
//! answered nor acked (the front waited out its deadline, the job came back to panic again).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use api::keys::Plan;
use dsa_tests::harness::app::{KeyOpts, TestApp};
use dsa_tests::harness::fleet::{Fleet, free_port, settled, wait_until};
use futures::StreamExt;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The answer of the finding (issue 32): it names a domain of its own, so for every other name
/// it is no verdict once read correctly (an `unknown`, 502, not charged).
///
/// `\u{130}` is `İ`, `\u{2126}` the OHM SIGN (escaped: editors and copy-paste normalise it to the
/// Greek capital omega U+03A9, whose lower case keeps its length and which never panicked).
const HOSTILE_ANSWER: &str =
    "Domain Name: F.IO\r\nRegistrar: Hostile Registrar\r\nDomain Status: \u{130} until\u{2126} 2026-01-01\r\n";

/// The WHOIS host of `.io` in the catalogue, pointed at the hostile server.
const IO_WHOIS_HOST: &str = "whois.nic.io";

/// Hostile checks sent through each mode.
const HOSTILE_CHECKS: usize = 100;

/// Ordinary checks sent at once afterwards: the finding's worker count.
const ORDINARY_AT_ONCE: usize = 64;

/// A WHOIS server (RFC 3912: one query line in, text out, close) answering [`HOSTILE_ANSWER`] to
/// every query, counting the queries it answered.
struct HostileWhois {
    addr: SocketAddr,
    answered: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl HostileWhois {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the hostile WHOIS server");
        let addr = listener.local_addr().expect("addr");
        let answered = Arc::new(AtomicUsize::new(0));
        let count = answered.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let count = count.clone();
                tokio::spawn(async move {
                    let (read, mut write) = stream.into_split();
                    let mut query = String::new();
                    if BufReader::new(read).read_line(&mut query).await.is_ok() && !query.trim().is_empty() {
                        let _ = write.write_all(HOSTILE_ANSWER.as_bytes()).await;
                        let _ = write.shutdown().await;
                        count.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
        });
        Self { addr, answered, task }
    }

    fn answered(&self) -> usize {
        self.answered.load(Ordering::SeqCst)
    }
}

impl Drop for HostileWhois {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// GET `url`: status, body, and how long the answer took.
async fn get(http: &reqwest::Client, url: String) -> (u16, serde_json::Value, Duration) {
    let started = Instant::now();
    let response = http.get(url).send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(serde_json::Value::Null), started.elapsed())
}

/// Sends `urls` with `at_once` requests in flight; the answers in order of completion.
async fn get_all(http: &reqwest::Client, urls: Vec<String>, at_once: usize) -> Vec<(u16, serde_json::Value, Duration)> {
    futures::stream::iter(urls).map(|url| get(http, url)).buffer_unordered(at_once).collect().await
}

/// Politeness limits out of the way of [`ORDINARY_AT_ONCE`] checks at once on the simulator
/// (the default 10 RDAP queries a second would turn most of them into honest 502s): what is
/// measured is the workers, not the limits.
fn unthrottled(engine: &mut workers::config::EngineConfig) {
    for limit in [&mut engine.limits.rdap, &mut engine.limits.dns, &mut engine.limits.whois] {
        limit.per_second = 10_000.0;
        limit.burst = 10_000;
        limit.concurrency = 2 * ORDINARY_AT_ONCE;
    }
}

/// Asserts every hostile check answered 502 (unknown: nothing definitive, not charged), quickly,
/// and that the hostile bytes were served for them.
fn assert_hostile_answers(mode: &str, answers: &[(u16, serde_json::Value, Duration)], bound: Duration) {
    assert_eq!(answers.len(), HOSTILE_CHECKS);
    for (status, body, took) in answers {
        assert_eq!(*status, 502, "[{mode}] a hostile answer is no verdict: {body}");
        assert_eq!(body["success"], false, "[{mode}] {body}");
        assert!(*took < bound, "[{mode}] answered in {took:?}, not within {bound:?} (a job left unanswered?): {body}");
    }
}

/// Asserts `answers` are all 200 with a definitive verdict.
fn assert_ordinary_answers(mode: &str, answers: &[(u16, serde_json::Value, Duration)]) {
    for (status, body, _) in answers {
        assert_eq!(*status, 200, "[{mode}] an ordinary check after the hostile ones: {body}");
        assert_eq!(body["available"], true, "[{mode}] {body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_whois_bytes_cost_an_unknown_verdict_never_a_worker_standalone() {
    let hostile = HostileWhois::start().await;
    let app = TestApp::spawn_with(|s| {
        s.jobs.workers = ORDINARY_AT_ONCE;
        s.engine.whois.addr_overrides.insert(IO_WHOIS_HOST.to_owned(), hostile.addr.to_string());
        unthrottled(&mut s.engine);
    })
    .await;
    let key = app.key(KeyOpts::default()).await;

    let hostile_urls = (0..HOSTILE_CHECKS)
        .map(|i| app.url(&format!("/v1/domains/check?client_key={key}&domain=hostile-{i}.io")))
        .collect();
    let answers = get_all(&app.http, hostile_urls, 16).await;
    assert!(
        hostile.answered() >= HOSTILE_CHECKS,
        "the hostile bytes reached the reader: {} answers",
        hostile.answered()
    );
    assert_hostile_answers("standalone", &answers, Duration::from_secs(2));

    // Another suffix (`.com`, on the simulator) answers, and every worker is still there.
    let (status, _, body) =
        app.get(&format!("/v1/domains/check?client_key={key}&domain=after-the-hostile-ones.com")).await;
    assert_eq!(status, 200, "an ordinary check after the hostile ones: {body}");
    let ordinary_urls = (0..ORDINARY_AT_ONCE)
        .map(|i| app.url(&format!("/v1/domains/check?client_key={key}&domain=ordinary-{i}.com")))
        .collect();
    let ordinary = get_all(&app.http, ordinary_urls, ORDINARY_AT_ONCE).await;
    assert_ordinary_answers("standalone", &ordinary);
    let (status, _, ready) = app.get("/readyz").await;
    assert_eq!(status, 200, "ready: {ready}");
    assert_eq!(ready["workers"]["check"], ORDINARY_AT_ONCE, "every check worker is alive: {ready}");

    let charged = app.finish(Some(&key)).await;
    assert_eq!(charged, 1 + ORDINARY_AT_ONCE as i64, "only the definitive answers are charged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_whois_bytes_cost_an_unknown_verdict_never_a_worker_in_the_fleet() {
    let hostile = HostileWhois::start().await;
    let hostile_addr = hostile.addr.to_string();
    let fleet = Fleet::builder("hostilewhois")
        .configure(move |settings| {
            settings.fleet.worker_concurrency = ORDINARY_AT_ONCE;
            settings.engine.whois.addr_overrides.insert(IO_WHOIS_HOST.to_owned(), hostile_addr);
            unthrottled(&mut settings.engine);
        })
        .start()
        .await;
    let (front, settings, stats) = (fleet.front(0), fleet.settings(), fleet.pool_stats().clone());
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();
    // The pool fetches once its consumers answer.
    let (status, body, _) =
        get(&http, front.url(&format!("/v1/domains/check?client_key={key}&domain=before-the-hostile-ones.com"))).await;
    assert_eq!(status, 200, "{body}");

    // Each name twice, one round after the other: the second job of a name must not join a run
    // the first left poisoned in the pool's single-flight map.
    let hostile_urls: Vec<String> = (0..HOSTILE_CHECKS / 2)
        .map(|i| front.url(&format!("/v1/domains/check?client_key={key}&domain=hostile-{i}.io")))
        .collect();
    let mut answers = get_all(&http, hostile_urls.clone(), 16).await;
    answers.extend(get_all(&http, hostile_urls, 16).await);
    assert!(
        hostile.answered() >= HOSTILE_CHECKS / 2,
        "the hostile bytes reached the reader: {} answers",
        hostile.answered()
    );
    // Within half the check deadline: an answered job, not a front that waited out its deadline.
    assert_hostile_answers("fleet", &answers, Duration::from_secs_f64(settings.engine.check_deadline_secs / 2.0));

    let ordinary_urls = (0..ORDINARY_AT_ONCE)
        .map(|i| front.url(&format!("/v1/domains/check?client_key={key}&domain=ordinary-{i}.com")))
        .collect();
    let ordinary = get_all(&http, ordinary_urls, ORDINARY_AT_ONCE).await;
    assert_ordinary_answers("fleet", &ordinary);
    let kinds = settings.fleet.worker_kinds().expect("kinds").len();
    assert_eq!(stats.readiness(kinds), Ok(()), "every pull loop of the pool is alive and fetching");

    let expected = 1 + ORDINARY_AT_ONCE as i64;
    assert_eq!(settled(fleet.store(), &key_id, expected).await, expected, "only the definitive answers are charged");
    // Every job was answered and acked: none left to come back and panic again (the teardown
    // asserts it).
    fleet.stop().await;
}

#[tokio::test]
async fn readiness_fails_while_a_kind_of_lookup_has_no_live_worker() {
    let db_path = std::env::temp_dir().join(format!("dsa-abuse-ready-{}.db", uuid::Uuid::now_v7()));
    let mut settings = api::config::Settings::default();
    settings.database.url = format!("sqlite://{}?mode=rwc", db_path.display()).into();
    let app = api::standalone(&settings).await.expect("standalone starts");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(api::serve(listener, api::router(app.state.clone(), None), async {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();
    let (status, body, _) = get(&http, format!("http://{addr}/readyz")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["workers"]["check"], settings.jobs.workers, "{body}");

    // The worker tasks die (as a panic used to make them): the process runs, but answers nothing.
    app.state.bus().abort_workers();
    let mut last = (0, serde_json::Value::Null);
    for _ in 0..100 {
        let (status, body, _) = get(&http, format!("http://{addr}/readyz")).await;
        last = (status, body);
        if last.0 == 503 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, body) = last;
    assert_eq!(status, 503, "no live worker is not ready: {body}");
    assert_eq!(body["success"], false);
    assert!(body["error"].as_str().is_some_and(|e| e.contains("No live check workers")), "{body}");
    let (status, body, _) = get(&http, format!("http://{addr}/healthz")).await;
    assert_eq!(status, 200, "the process itself still runs: {body}");

    let _ = stop.send(());
    let _ = server.await;
    let api::Standalone { state, ledger, .. } = app;
    drop(state);
    let _ = tokio::time::timeout(Duration::from_secs(10), ledger).await;
    dsa_tests::harness::remove_sqlite_database(&db_path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_worker_is_ready_only_while_its_pool_can_take_work() {
    let admin: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().expect("address");
    let mut fleet = Fleet::builder("workerready")
        .fronts(0)
        .workers(0)
        .ledger(false)
        .configure(move |settings| settings.server.admin_listen = Some(admin))
        .start()
        .await;
    let settings = fleet.settings().clone();
    fleet.spawn_process("worker", &settings);
    let http = reqwest::Client::new();
    let readyz = format!("http://{admin}/readyz");
    let status = |wanted: u16| {
        let (http, readyz) = (http.clone(), readyz.clone());
        move || {
            let (http, readyz) = (http.clone(), readyz.clone());
            async move { http.get(readyz).send().await.is_ok_and(|r| r.status().as_u16() == wanted) }
        }
    };
    assert!(
        wait_until(Duration::from_secs(20), status(200)).await,
        "the worker's /readyz says ready once its pool fetches"
    );

    // NATS goes away: the process runs, but its pool takes no work.
    fleet.nats_mut().kill();
    assert!(wait_until(Duration::from_secs(10), status(503)).await, "not ready without NATS");
    let (code, body, _) = get(&http, readyz.clone()).await;
    assert_eq!(code, 503, "{body}");
    assert!(body["error"].as_str().is_some_and(|e| e.contains("cannot fetch")), "{body}");
    let (code, _, _) = get(&http, format!("http://{admin}/healthz")).await;
    assert_eq!(code, 200, "the process itself still runs");

    fleet.nats_mut().resume().await;
    assert!(wait_until(Duration::from_secs(20), status(200)).await, "ready again once NATS is back");
    fleet.stop().await;
}
