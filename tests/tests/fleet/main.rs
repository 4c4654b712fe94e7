//! The fleet on real NATS JetStream and Postgres: the check flow, faults, and fleet-wide limits.
//!
//! One test binary: `/v1/dns` and `/v1/whois` through the fleet are in [`lookups`]. The fault
//! tests that kill processes are a binary of their own (`fleet_faults.rs`), so that they never
//! run beside these; both use the harness in [`dsa_tests::harness::fleet`]: every test starts a
//! [`Fleet`] and ends with `fleet.stop().await`, which asserts the job and ledger queues drained.

mod bulk_jobs;
mod cluster;
mod consensus;
mod lookups;
mod outages;
mod teardown;
mod trace;
mod verify;
mod watches;
mod webhooks;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use api::keys::Plan;
use dsa_tests::harness::binary::dsa_binary;
use dsa_tests::harness::fleet::{Fleet, PoolStats, Queue, free_port, settled, wait_until};

async fn get(http: &reqwest::Client, url: String) -> (u16, serde_json::Value) {
    let r = http.get(url).send().await.expect("request");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(serde_json::Value::Null))
}

#[tokio::test]
async fn check_flow_through_jetstream_and_the_ledger() {
    let mut fleet = Fleet::start("flow", 1, 2).await;
    let front = fleet.front(0);
    let (pool_stats, ledger_stats) = (fleet.pool_stats().clone(), fleet.ledger_stats().clone());
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();

    let mut successes = 0;
    for (name, available) in [
        ("dsa-demo-available.com", true),
        ("example.com", false),
        ("suspended-shop.com", false),
        ("dsa-demo-available.af", true),
        ("google.com.af", false),
        ("dsa-demo-available.com", true), // cache hit in the front: no job
    ] {
        let (status, body) = get(&http, front.url(&format!("/v1/domains/check?client_key={key}&domain={name}"))).await;
        assert_eq!(status, 200, "{name}: {body}");
        assert_eq!(body["available"], available, "{name}: {body}");
        successes += 1;
    }
    let (status, body) = get(&http, front.url(&format!("/v1/domains/check?client_key={key}&domain=example.es"))).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(pool_stats.answered.load(Ordering::Relaxed), 5, "the cache hit never reached a worker");
    assert_eq!(settled(fleet.store(), &key_id, successes).await, successes, "ledger entries = successful responses");

    fleet.drain().await;
    assert_eq!(ledger_stats.applied.load(Ordering::Relaxed), successes as u64);
    fleet.stop().await;
}

/// A front's charges that queue while its ledger messages await their acks travel as one
/// message (the stream syncs once per message, not once per charge): 500 charges handed to the
/// forwarder at once take a handful of messages, each acked charge is confirmed to its handler,
/// and the ledger consumer settles each exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_charges_share_ledger_messages_and_settle_once() {
    use api::front::ledger::{EVENTS_PER_MESSAGE, MESSAGES_IN_FLIGHT, forward, queue};
    let mut fleet = Fleet::builder("grouped").fronts(0).workers(0).ledger(false).start().await;
    let (_key, key_id) = fleet.key(Plan::Free).await;
    let names = fleet.names().clone();
    let js = fleet.jetstream().await;
    let (sink, ledger_queue) = queue(api::front::ledger::QUEUE_CAPACITY);
    let forwarder = tokio::spawn(forward(js.clone(), names.ledger_charge.clone(), None, ledger_queue));
    let charges: usize = 500;
    let recorded = futures::future::join_all((0..charges).map(|_| {
        let event = dsa_tests::harness::ledger_event(&key_id, 1, "front-grouping-test");
        let sink = sink.clone();
        async move { sink.record(event).await }
    }))
    .await;
    assert!(recorded.iter().all(Result::is_ok), "every charge confirmed: {recorded:?}");
    let mut stream = js.get_stream(&names.ledger_stream).await.expect("stream");
    let messages = stream.info().await.expect("info").state.messages;
    println!("[grouping] {charges} charges in {messages} ledger messages");
    // At most a message per free slot before the queue filled, then full ones.
    let bound = (MESSAGES_IN_FLIGHT + charges.div_ceil(EVENTS_PER_MESSAGE)) as u64 * 4;
    assert!(messages <= bound, "{charges} charges took {messages} messages (at most {bound} expected)");
    drop(sink);
    forwarder.await.expect("the forwarder ends once every sink is dropped");
    fleet.start_ledger(std::sync::Arc::new(dsa_tests::harness::fleet::LedgerStats::default()));
    assert_eq!(settled(fleet.store(), &key_id, charges as i64).await, charges as i64, "each charge settled once");
    fleet.drain().await;
    fleet.stop().await;
}

/// `dsa_ledger_settle_lag_seconds` is the age of the last settled batch's oldest charge while
/// charges flow, and 0 once nothing waits (the consumer checks every 5 s), not the last batch's
/// age for ever. The gauge is process-wide, so the test looks for an exact 0, which only the
/// idle check writes (a settled batch's age is never exactly 0).
#[tokio::test]
async fn the_settle_lag_reads_zero_once_the_ledger_idles() {
    let gauge = || {
        api::telemetry::prometheus()
            .render()
            .lines()
            .find_map(|l| l.strip_prefix("dsa_ledger_settle_lag_seconds ").map(str::to_owned))
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    let fleet = Fleet::start("settlelag", 1, 1).await;
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();
    let (status, body) = get(&http, fleet.url(&format!("/v1/domains/check?client_key={key}&domain=google.net"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(settled(fleet.store(), &key_id, 1).await, 1);
    assert!(gauge().is_some(), "the settled batch set the gauge");
    let idle = wait_until(Duration::from_secs(15), || async { gauge() == Some(0.0) }).await;
    assert!(idle, "the gauge reads 0 once nothing waits: {:?}", gauge());
    fleet.stop().await;
}

#[tokio::test]
async fn no_worker_means_a_clean_502_without_charge() {
    let mut fleet = Fleet::builder("noworker")
        .workers(0)
        .ledger(false)
        .configure(|s| s.engine.check_deadline_secs = 1.0)
        .expect_undrained(Queue::Jobs, "no worker: the job the front gave up on stays in the jobs stream")
        .start()
        .await;
    let (key, key_id) = fleet.key(Plan::Free).await;
    let started = Instant::now();
    let (status, body) = get(
        &reqwest::Client::new(),
        fleet.url(&format!("/v1/domains/check?client_key={key}&domain=dsa-demo-available.net")),
    )
    .await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["success"], false);
    assert!(started.elapsed() < Duration::from_secs(3));
    fleet.stop_front(0).await;
    fleet.start_ledger(fleet.ledger_stats().clone());
    tokio::time::sleep(Duration::from_millis(500)).await;
    let period = common::messages::billing_period(time::OffsetDateTime::now_utc());
    assert_eq!(fleet.store().ledger_count(&key_id, &period).await.expect("count"), 0);
    fleet.stop().await;
}

#[tokio::test]
async fn nats_down_is_a_fast_502_and_the_fleet_recovers() {
    let mut fleet = Fleet::start("natsdown", 1, 1).await;
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();
    assert_eq!(get(&http, fleet.url(&format!("/v1/domains/check?client_key={key}&domain=google.net"))).await.0, 200);

    fleet.nats_mut().kill();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let (status, body) =
        get(&http, fleet.url(&format!("/v1/domains/check?client_key={key}&domain=dsa-demo-available.net"))).await;
    assert_eq!(status, 502, "{body}");
    assert!(started.elapsed() < Duration::from_secs(1), "fast: {:?}", started.elapsed());
    let (status, body) = get(&http, fleet.url("/readyz")).await;
    assert_eq!(status, 503, "a front that cannot publish jobs is not ready: {body}");

    fleet.nats_mut().resume().await;
    let mut recovered = false;
    for _ in 0..100 {
        let (status, _) =
            get(&http, fleet.url(&format!("/v1/domains/check?client_key={key}&domain=dsa-demo-available.net"))).await;
        if status == 200 {
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(recovered, "the fleet answers again once NATS is back");
    assert_eq!(get(&http, fleet.url("/readyz")).await.0, 200, "ready again");
    assert_eq!(settled(fleet.store(), &key_id, 2).await, 2, "both successful checks settled, the 502 not");
    fleet.stop().await;
}

#[tokio::test]
async fn per_minute_limit_holds_across_two_fronts() {
    let fleet = Fleet::builder("minute")
        .fronts(2)
        .configure(|s| s.policy.per_minute.free = 40) // leased in blocks of 2
        .start()
        .await;
    let (a, b) = (fleet.front(0), fleet.front(1));
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();
    // Stay inside one minute window: start right after a minute boundary if close to the end.
    let second = time::OffsetDateTime::now_utc().second();
    if second > 45 {
        tokio::time::sleep(Duration::from_secs(u64::from(61 - second))).await;
    }
    let (mut ok, mut limited) = (0, 0);
    for i in 0..100 {
        let front = if i % 2 == 0 { &a } else { &b };
        let r = http
            .get(front.url(&format!("/v1/domains/check?client_key={key}&domain=example.com")))
            .send()
            .await
            .expect("get");
        match r.status().as_u16() {
            200 => ok += 1,
            429 => {
                assert!(r.headers().get("retry-after").is_some());
                limited += 1;
            }
            other => panic!("unexpected {other}"),
        }
    }
    println!("two fronts, 40/min: {ok} allowed, {limited} limited");
    assert!(ok <= 40, "the fleet-wide limit holds: {ok}");
    assert!(ok >= 38, "at most one unused block per front is lost: {ok}");
    assert_eq!(settled(fleet.store(), &key_id, ok).await, ok);
    fleet.stop().await;
}

#[tokio::test]
async fn demo_counters_are_shared_by_the_fronts() {
    let fleet = Fleet::builder("demo")
        .fronts(2)
        .ledger(false)
        .configure(|s| s.policy.demo.checks_per_ip_per_day = 3)
        .start()
        .await;
    let (a, b) = (fleet.front(0), fleet.front(1));
    let http = reqwest::Client::new();
    let first = http.get(a.url("/v1/domains/check?domain=example.com")).send().await.expect("get");
    assert_eq!(first.status().as_u16(), 200);
    let cookie = first.headers()["set-cookie"].to_str().expect("ascii").split(';').next().expect("pair").to_owned();
    // The same session on the other front: its second and last demo check.
    let second =
        http.get(b.url("/v1/domains/check?domain=google.net")).header("Cookie", &cookie).send().await.expect("get");
    assert_eq!(second.status().as_u16(), 200);
    let third =
        http.get(a.url("/v1/domains/check?domain=example.com")).header("Cookie", &cookie).send().await.expect("get");
    assert_eq!(third.status().as_u16(), 429, "2 checks per session across fronts");
    // Cookies cleared: the per-IP cap (3 a day here) is shared too.
    let fresh = http.get(b.url("/v1/domains/check?domain=example.com")).send().await.expect("get");
    assert_eq!(fresh.status().as_u16(), 200, "third check from this IP");
    let capped = http.get(a.url("/v1/domains/check?domain=example.com")).send().await.expect("get");
    assert_eq!(capped.status().as_u16(), 429, "per-IP cap across fronts");
    fleet.stop().await;
}

/// Per-role NATS users (nats/README.md "Credentials"): the fleet works with each role on its own
/// user, a worker's credential cannot publish a charge, and an anonymous client gets nowhere.
#[tokio::test]
async fn per_role_nats_users_hold_the_fleet_and_stop_forged_charges() {
    let mut fleet = Fleet::builder("auth").role_users().start().await;
    let (front, names, nats) = (fleet.front(0), fleet.names(), fleet.nats());
    let ledger_stats = fleet.ledger_stats().clone();
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();
    for (name, available) in [("dsa-demo-available.com", true), ("example.com", false)] {
        let (status, body) = get(&http, front.url(&format!("/v1/domains/check?client_key={key}&domain={name}"))).await;
        assert_eq!(status, 200, "{name}: {body}");
        assert_eq!(body["available"], available);
    }
    assert_eq!(settled(fleet.store(), &key_id, 2).await, 2, "charges settle through the ledger user");

    // A worker's credential: publishing a charge is refused by the server.
    let worker_password = fleet.role_password(common::nats_auth::FleetRole::Worker);
    let worker_client = async_nats::ConnectOptions::with_user_and_password("dsa-worker".into(), worker_password.into())
        .connect(format!("127.0.0.1:{}", nats.port))
        .await
        .expect("worker connects");
    let js = async_nats::jetstream::new(worker_client.clone());
    let forged = dsa_tests::harness::ledger_event(&key_id, 400, "forged");
    let publish = tokio::time::timeout(Duration::from_secs(5), async {
        js.publish(names.ledger_charge.clone(), serde_json::to_vec(&forged).expect("json").into()).await?.await
    })
    .await;
    assert!(!matches!(publish, Ok(Ok(_))), "a worker must not be able to publish a charge: {publish:?}");
    // Nor read the ledger stream's events.
    let mut sub = worker_client.subscribe(names.ledger_charge.clone()).await.expect("subscribe call returns");
    let read = tokio::time::timeout(Duration::from_millis(300), futures::StreamExt::next(&mut sub)).await;
    assert!(!matches!(read, Ok(Some(_))), "a worker must not read charge events");
    // An anonymous client is refused.
    let anonymous = tokio::time::timeout(Duration::from_secs(3), async_nats::connect(nats.url())).await;
    assert!(!matches!(anonymous, Ok(Ok(_))), "anonymous connections are refused");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(settled(fleet.store(), &key_id, 2).await, 2, "the forged charge never reached the ledger");

    fleet.drain().await;
    assert_eq!(ledger_stats.applied.load(Ordering::Relaxed), 2);
    fleet.stop().await;
}

/// Runs `dsa ARGS` with `settings` written to a TOML file; returns (success, stdout, stderr).
fn dsa_cli(settings: &api::config::Settings, args: &[&str]) -> (bool, String, String) {
    let path = std::env::temp_dir().join(format!("dsa-cli-{}.toml", uuid::Uuid::now_v7().simple()));
    std::fs::write(&path, toml::to_string(settings).expect("toml")).expect("write config");
    let mut cmd = std::process::Command::new(dsa_binary());
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("DSA_") {
            cmd.env_remove(name);
        }
    }
    let out = cmd.args(args).env("DSA_CONFIG", &path).env("DSA_LOG", "warn").output().expect("run dsa");
    let _ = std::fs::remove_file(&path);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The operator CLI works against the fleet's Postgres (the database URL decides), and a fresh
/// fleet front creates and prints its first key the way standalone does.
#[tokio::test]
async fn operator_cli_and_first_key_on_the_fleets_postgres() {
    // A fresh fleet: `dsa front` (a process) creates the first key and prints it once.
    let mut fleet = Fleet::builder("cli").fronts(0).workers(0).ledger(false).start().await;
    let mut settings = fleet.settings().clone();
    settings.server.listen = format!("127.0.0.1:{}", free_port()).parse().expect("addr");
    settings.bootstrap.create_dev_key = true;
    let front = fleet.spawn_process("front", &settings);
    let log = fleet.process(front).log.clone();
    let mut first_key = None;
    for _ in 0..200 {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(k) = text.split_whitespace().find(|w| w.starts_with("dsa_server_")) {
            first_key = Some(k.to_owned());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let first_key = first_key.unwrap_or_else(|| {
        panic!("dsa front printed no first key: {}", std::fs::read_to_string(&log).unwrap_or_default())
    });
    fleet.process(front).sigkill();
    let (ok, out, err) = dsa_cli(&settings, &["keys", "show", &first_key]);
    assert!(ok, "the first key is in Postgres: {err}");
    assert!(out.contains("server"), "{out}");
    // Keys and usage through the CLI on Postgres.
    let (ok, out, err) = dsa_cli(&settings, &["keys", "create", "--plan", "starter"]);
    assert!(ok, "dsa keys create on Postgres: {err}");
    let key = out.split_whitespace().find(|w| w.starts_with("dsa_")).expect("a key is printed").to_owned();
    let (ok, out, err) = dsa_cli(&settings, &["keys", "list", "--json"]);
    assert!(ok, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(listed.as_array().map(Vec::len), Some(2), "{out}");
    let (ok, out, err) = dsa_cli(&settings, &["usage", &key, "--json"]);
    assert!(ok, "dsa usage on Postgres: {err}");
    assert!(out.contains("5000"), "starter allowance: {out}");
    let (ok, _, err) = dsa_cli(&settings, &["keys", "disable", &key]);
    assert!(ok, "{err}");
    let record = fleet.store().find_key(&api::keys::hash_key(&key)).await.expect("find").expect("exists");
    assert_eq!(record.state, api::keys::KeyState::Disabled);
    fleet.stop().await;
}

/// A worker reply about another domain than the job's is never returned to the user: 502, no
/// charge (a buggy or hostile worker cannot make the front answer for the wrong name).
#[tokio::test]
async fn a_reply_about_another_domain_is_a_502() {
    use futures::StreamExt;
    let mut fleet = Fleet::builder("wrongreply").workers(0).ledger(false).start().await;
    let names = fleet.names().clone();
    // A "worker" that answers every check job with a verdict about example.org, on the workers'
    // consumer (the fleet declared it).
    let client = async_nats::connect(fleet.nats().url()).await.expect("connect");
    let js = async_nats::jetstream::new(client.clone());
    let consumer: async_nats::jetstream::consumer::PullConsumer = js
        .get_stream(&names.jobs_stream)
        .await
        .expect("stream")
        .get_consumer(names.jobs_consumer(common::lookup::LookupKind::Check))
        .await
        .expect("consumer");
    let liar = tokio::spawn(async move {
        let mut messages = consumer.messages().await.expect("messages");
        while let Some(Ok(message)) = messages.next().await {
            let job: common::messages::Job = serde_json::from_slice(&message.payload).expect("job");
            let reply_to = message
                .headers
                .as_ref()
                .and_then(|h| h.get(common::subjects::REPLY_HEADER))
                .expect("reply")
                .to_string();
            let verdict = common::verdict::Verdict {
                domain: "example.org".into(),
                status: common::verdict::Status::Available,
                method: common::verdict::Method::Rdap,
                authoritative: true,
                checked_at: time::OffsetDateTime::now_utc(),
                evidence: "lie".into(),
                confirmed_by: None,
            };
            let reply = common::messages::JobReply {
                job_id: job.job_id,
                outcome: common::lookup::LookupOutcome::Answer {
                    answer: common::messages::JobAnswer::Check { verdict },
                },
            };
            client.publish(reply_to, serde_json::to_vec(&reply).expect("json").into()).await.expect("publish");
            let _ = message.ack().await;
        }
    });
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();
    let (status, body) =
        get(&http, fleet.url(&format!("/v1/domains/check?client_key={key}&domain=asked-name-dsa.com"))).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["success"], false);
    liar.abort();
    fleet.stop_front(0).await;
    assert_eq!(settled(fleet.store(), &key_id, 0).await, 0, "not charged");
    fleet.stop().await;
}

/// Issue 17: the worker pool asks the registry once per name, whichever fronts sent the jobs:
/// concurrent jobs for one name join the lookup in flight, a later job is answered from the
/// worker's verdict cache (a front with a cold cache still costs the registry nothing), and
/// another worker answers from the fleet-wide verdict bucket.
#[tokio::test]
async fn workers_coalesce_jobs_and_answer_from_their_cache() {
    let mut fleet = Fleet::builder("coalesce")
        .fronts(2)
        // A slow registry, so the two fronts' jobs overlap in the worker.
        .knobs(dsa_tests::sim::Knobs {
            latency_ms: dsa_tests::sim::Latency { rdap: 600, ..Default::default() },
            ..Default::default()
        })
        .start()
        .await;
    let stats = fleet.pool_stats().clone();
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();
    let before = fleet.sim().stats().rdap.queries;
    let name = "dsa-demo-available.net";
    let mut calls = Vec::new();
    for front in [fleet.front(0), fleet.front(1)] {
        for _ in 0..10 {
            let url = front.url(&format!("/v1/domains/check?client_key={key}&domain={name}"));
            let http = http.clone();
            calls.push(tokio::spawn(async move { get(&http, url).await }));
        }
    }
    for call in calls {
        let (status, body) = call.await.expect("task");
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["available"], true, "{body}");
    }
    assert_eq!(fleet.sim().stats().rdap.queries - before, 1, "twenty checks from two fronts, one registry query");
    // The second front's job joined the first's lookup (or, on a very slow machine, came after it
    // and found its verdict in the worker's cache): either way no second query.
    let joined = stats.coalesced.load(Ordering::Relaxed);
    let hits = stats.cache_hits.load(Ordering::Relaxed);
    assert_eq!(joined + hits, 1, "coalesced {joined}, cache hits {hits}");
    // A third front (cold cache) asks again: the worker answers from its cache.
    let front_c = fleet.add_front().await;
    let (status, body) =
        get(&http, fleet.front(front_c).url(&format!("/v1/domains/check?client_key={key}&domain={name}"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["available"], true);
    assert_eq!(stats.cache_hits.load(Ordering::Relaxed), hits + 1, "{body}");
    assert_eq!(fleet.sim().stats().rdap.queries - before, 1, "still one registry query");
    // Another worker (cold cache) takes over: it answers from the fleet-wide verdict bucket.
    fleet.stop_worker(0).await;
    let stats_2 = Arc::new(PoolStats::default());
    fleet.add_worker(stats_2.clone());
    let front_d = fleet.add_front().await;
    let (status, body) =
        get(&http, fleet.front(front_d).url(&format!("/v1/domains/check?client_key={key}&domain={name}"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["available"], true);
    assert_eq!(stats_2.fleet_cache_hits.load(Ordering::Relaxed), 1, "{body}");
    assert_eq!(fleet.sim().stats().rdap.queries - before, 1, "still one registry query, fleet-wide");
    assert_eq!(settled(fleet.store(), &key_id, 22).await, 22, "every answer charged once");
    fleet.stop().await;
}

/// Issue 17: one registry query per name in flight, fleet-wide. Two workers that each hold one
/// job at a time both get checks of the same uncached name: the first claims the name's lookup in
/// the claims bucket, the second waits for its verdict instead of asking the registry too.
#[tokio::test]
async fn workers_share_one_lookup_under_a_claim() {
    let mut fleet = Fleet::builder("claims")
        .fronts(2)
        .workers(0)
        .knobs(dsa_tests::sim::Knobs {
            latency_ms: dsa_tests::sim::Latency { rdap: 800, ..Default::default() },
            ..Default::default()
        })
        // One job at a time per worker: while the first worker asks the registry, the second fetches.
        .configure(|s| s.fleet.worker_concurrency = 1)
        .start()
        .await;
    let (stats_a, stats_b) = (Arc::new(PoolStats::default()), Arc::new(PoolStats::default()));
    fleet.add_worker(stats_a.clone());
    fleet.add_worker(stats_b.clone());
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();
    let before = fleet.sim().stats().rdap.queries;
    let name = "dsa-demo-available.org";
    let mut calls = Vec::new();
    let (front_a, front_b) = (fleet.front(0), fleet.front(1));
    for front in [front_a, front_b, front_a, front_b] {
        let url = front.url(&format!("/v1/domains/check?client_key={key}&domain={name}"));
        let http = http.clone();
        calls.push(tokio::spawn(async move { get(&http, url).await }));
    }
    for call in calls {
        let (status, body) = call.await.expect("task");
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["available"], true, "{body}");
    }
    let (a, b) = (stats_a.answered.load(Ordering::Relaxed), stats_b.answered.load(Ordering::Relaxed));
    assert!(a > 0 && b > 0, "both workers took jobs (a {a}, b {b})");
    assert_eq!(fleet.sim().stats().rdap.queries - before, 1, "two workers, one registry query");
    let peers = stats_a.peer_lookups.load(Ordering::Relaxed) + stats_b.peer_lookups.load(Ordering::Relaxed);
    let fleet_hits =
        stats_a.fleet_cache_hits.load(Ordering::Relaxed) + stats_b.fleet_cache_hits.load(Ordering::Relaxed);
    assert!(peers >= 1, "the second worker waited for the first's lookup (peer {peers}, fleet cache {fleet_hits})");
    // Released: no claim is left behind.
    let js = fleet.jetstream().await;
    // The worker declares the claims bucket as it starts (a front does not use it).
    let bucket = fleet.names().claim_bucket.clone();
    assert!(wait_until(Duration::from_secs(10), || async { js.get_key_value(&bucket).await.is_ok() }).await);
    let claims = js.get_key_value(&bucket).await.expect("claims bucket");
    assert_eq!(claims.get(name).await.expect("get"), None, "the claim was released");
    assert_eq!(settled(fleet.store(), &key_id, 4).await, 4);
    fleet.stop().await;
}

/// Issue 17: a claim left by a crashed worker costs a waiting check time, never its answer. A
/// claim still within its deadline is waited on for at most half the check deadline, then the
/// worker asks the registry itself; a void claim (past its deadline) is taken over at once.
#[tokio::test]
async fn a_crashed_workers_claim_delays_but_never_fails_a_check() {
    let fleet = Fleet::start("deadclaim", 1, 1).await;
    let (front, sim, settings) = (fleet.front(0), fleet.sim(), fleet.settings());
    let (key, _) = fleet.key(Plan::Free).await;
    let js = fleet.jetstream().await;
    // The worker declares the claims bucket as it starts (a front does not use it).
    let bucket = fleet.names().claim_bucket.clone();
    assert!(wait_until(Duration::from_secs(10), || async { js.get_key_value(&bucket).await.is_ok() }).await);
    let claims = js.get_key_value(&bucket).await.expect("claims bucket");
    let now_ms = (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64;
    let claim =
        |void_after_ms: i64| serde_json::json!({"owner": "worker-crashed", "void_after_ms": void_after_ms}).to_string();
    let http = reqwest::Client::new();
    let check = |name: &str| get(&http, front.url(&format!("/v1/domains/check?client_key={key}&domain={name}")));

    // A live-looking claim nobody will release: waited on for half the 5 s deadline, then asked.
    let held = "dsa-demo-available.com";
    claims.put(held, claim(now_ms + 60_000).into()).await.expect("put claim");
    let before = sim.stats().rdap.queries;
    let started = Instant::now();
    let (status, body) = check(held).await;
    let took = started.elapsed();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["available"], true, "{body}");
    assert_eq!(sim.stats().rdap.queries - before, 1, "asked the registry after the wait");
    let half = Duration::from_secs_f64(settings.engine.check_deadline_secs / 2.0);
    assert!(took >= half, "waited on the claim first ({took:?})");

    // A void claim (its deadline passed): taken over without waiting, then released.
    let void = "dsa-demo-available.net";
    claims.put(void, claim(now_ms - 1_000).into()).await.expect("put claim");
    let before = sim.stats().rdap.queries;
    let started = Instant::now();
    let (status, body) = check(void).await;
    assert_eq!(status, 200, "{body}");
    assert!(started.elapsed() < half, "no wait on a void claim ({:?})", started.elapsed());
    assert_eq!(sim.stats().rdap.queries - before, 1);
    assert_eq!(claims.get(void).await.expect("get"), None, "the taken-over claim was released");
    fleet.stop().await;
}

/// Issue 17 burst benchmark (not a timed test: `cargo test -p dsa-tests --test fleet -- --ignored
/// --nocapture burst_bench`): 1,000 concurrent checks of 50 uncached names (10 of them on
/// WHOIS-only suffixes) through two fronts and two workers against the simulator with the shipped
/// politeness limits. Prints registry queries per distinct name (1.0 = perfect coalescing),
/// politeness violations seen by the simulator and the status counts.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark; run with --ignored --nocapture"]
async fn burst_bench() {
    let fleet = Fleet::builder("burst")
        .fronts(2)
        .workers(2)
        .configure(|s| {
            // The shipped politeness limits (the test harness raises WHOIS to 100/s), a 10 s deadline.
            s.engine.limits = workers::config::LimitsConfig::default();
            s.engine.check_deadline_secs = 10.0;
        })
        .start()
        .await;
    let (front_a, front_b, sim, stats) = (fleet.front(0), fleet.front(1), fleet.sim(), fleet.pool_stats().clone());
    let (key, _) = fleet.key(Plan::Reseller).await;
    let run = uuid::Uuid::now_v7().simple().to_string();
    let mut names: Vec<String> = (0..20).map(|i| format!("burst-{}-{i}.com", &run[..8])).collect();
    names.extend((0..20).map(|i| format!("burst-{}-{i}.net", &run[..8])));
    names.extend((0..5).map(|i| format!("burst-{}-{i}.af", &run[..8])));
    names.extend((0..5).map(|i| format!("burst-{}-{i}.io", &run[..8])));
    let before = sim.stats();
    let http = reqwest::Client::builder().pool_max_idle_per_host(512).build().expect("client");
    let started = Instant::now();
    let mut calls = Vec::new();
    for i in 0..1000 {
        // Every name goes to both fronts (rounds of 50 alternate between them).
        let front = if (i / 50) % 2 == 0 { front_a } else { front_b };
        let url = front.url(&format!("/v1/domains/check?client_key={key}&domain={}", names[i % names.len()]));
        let http = http.clone();
        calls.push(tokio::spawn(async move { get(&http, url).await.0 }));
    }
    let mut statuses: std::collections::BTreeMap<u16, u32> = std::collections::BTreeMap::new();
    for call in calls {
        *statuses.entry(call.await.expect("task")).or_default() += 1;
    }
    let took = started.elapsed();
    let after = sim.stats();
    let rdap = after.rdap.queries - before.rdap.queries;
    let whois = after.whois.queries - before.whois.queries;
    let violations = (after.rdap.rate_limit_violations - before.rdap.rate_limit_violations)
        + (after.whois.rate_limit_violations - before.whois.rate_limit_violations);
    println!(
        "burst: 1000 checks of 50 names in {:.1} s; registry queries {} (rdap {rdap}, whois {whois}) = {:.2} per name; \
         politeness violations {violations}; statuses {statuses:?}; worker cache hits {}, fleet cache hits {}, coalesced {}, \
         peer lookups {}",
        took.as_secs_f64(),
        rdap + whois,
        (rdap + whois) as f64 / 50.0,
        stats.cache_hits.load(Ordering::Relaxed),
        stats.fleet_cache_hits.load(Ordering::Relaxed),
        stats.coalesced.load(Ordering::Relaxed),
        stats.peer_lookups.load(Ordering::Relaxed),
    );
    fleet.stop().await;
}

/// Issue 14: self-correcting routing is shared by the fleet. Worker A sees RDAP fail while WHOIS
/// answers and demotes RDAP in the routing bucket; worker B then asks WHOIS first without ever
/// failing itself, and any front shows the shared state. When RDAP answers again (asked after a
/// failing WHOIS), the worker that saw it promotes RDAP back for the whole fleet.
#[tokio::test]
async fn rdap_demoted_by_one_worker_is_whois_first_for_every_worker() {
    use dsa_tests::sim::{Fault, Faults, Knobs};
    let mut fleet = Fleet::builder("routing")
        .workers(0)
        .configure(|s| {
            s.engine.dns.enabled = false;
            s.engine.routing.rdap_failures = 3;
            s.engine.routing.prefer_whois_secs = 300;
        })
        .start()
        .await;
    let (key, _) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();
    let front_url = fleet.url("");
    let check = |name: &str| format!("{front_url}/v1/domains/check?client_key={key}&domain={name}");
    let tld = |suffix: &str| format!("{front_url}/v1/tlds/{suffix}");
    let whois_first_until = |detail: &serde_json::Value| detail["health"].get("whois_first_until").cloned();

    // Worker A alone: RDAP resets every connection, WHOIS answers.
    fleet.sim().set_knobs(Knobs { faults: Faults { rdap: Fault::Reset, ..Faults::default() }, ..Knobs::default() });
    let worker_a = fleet.add_worker(Arc::new(PoolStats::default()));
    for i in 1..=3 {
        let (status, body) = get(&http, check(&format!("routing-{i}.com"))).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["verdict"]["method"], "whois", "{body}");
    }
    let (_, detail) = get(&http, tld("com")).await;
    assert!(whois_first_until(&detail).is_some_and(|v| v.is_string()), "the front shows the fleet's state: {detail}");
    let (_, net) = get(&http, tld("net")).await;
    assert_eq!(whois_first_until(&net), None, "per suffix: {net}");
    fleet.stop_worker(worker_a).await;

    // Worker B (fresh process, no failures of its own) asks WHOIS first: RDAP is not asked.
    let worker_b = fleet.add_worker(Arc::new(PoolStats::default()));
    let rdap_before = fleet.sim().stats().rdap.queries;
    for i in 4..=5 {
        let (status, body) = get(&http, check(&format!("routing-{i}.com"))).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["verdict"]["method"], "whois", "{body}");
    }
    assert_eq!(fleet.sim().stats().rdap.queries, rdap_before, "worker B went WHOIS-first without failing itself");

    // RDAP recovers while WHOIS breaks: B's WHOIS-first check falls through to RDAP, which
    // answers; B promotes RDAP back for the fleet.
    fleet.sim().set_knobs(Knobs { faults: Faults { whois: Fault::Reset, ..Faults::default() }, ..Knobs::default() });
    let (status, body) = get(&http, check("routing-6.com")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["verdict"]["method"], "rdap", "{body}");
    let (_, detail) = get(&http, tld("com")).await;
    assert_eq!(whois_first_until(&detail), None, "promoted back fleet-wide: {detail}");
    fleet.stop_worker(worker_b).await;

    // Another fresh worker follows the catalogue's order again: RDAP first, WHOIS not asked.
    fleet.sim().set_knobs(Knobs::default());
    fleet.add_worker(Arc::new(PoolStats::default()));
    let whois_before = fleet.sim().stats().whois.queries;
    let (status, body) = get(&http, check("routing-7.com")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["verdict"]["method"], "rdap", "{body}");
    assert_eq!(fleet.sim().stats().whois.queries, whois_before, "RDAP leads again");
    fleet.stop().await;
}
