//! Webhooks (issue 25) end to end: a standalone dsa delivers a key's events to a receiver in
//! Python that verifies every delivery with the `standardwebhooks` package from PyPI (the
//! Standard Webhooks reference library, pinned in `tests/webhooks/requirements.txt`, installed by
//! `scripts/test-setup.sh` and `.ci/run`; `DSA_TEST_WEBHOOK_PYTHON` may name another Python that
//! has it). Events are emitted into the store directly, as the watches do; time in the delivery
//! loop is the app's injected clock.
//!
//! Run: `cargo test -p dsa-tests --test app -- webhooks::`.

use std::process::Stdio;
use std::time::Duration;

use api::events::{NewEvent, event_id};
use api::keys::KeyKind;
use dsa_tests::harness::app::{KeyOpts, TestApp, TestClock};
use dsa_tests::harness::webhooks::Receiver;
use serde_json::{Value, json};
use time::macros::datetime;

/// A standalone app whose delivery loop may reach loopback, polling often, on `clock`.
async fn app(clock: &TestClock, adjust: impl FnOnce(&mut api::config::Settings)) -> TestApp {
    TestApp::spawn_full(
        |s| {
            s.webhooks.test_only_allow_loopback = true;
            s.webhooks.poll_ms = 20;
            adjust(s);
        },
        clock.clock(),
    )
    .await
}

async fn call(app: &TestApp, method: reqwest::Method, path: &str, key: &str, body: Option<Value>) -> (u16, Value) {
    let sep = if path.contains('?') { '&' } else { '?' };
    let mut request = app.http.request(method, app.url(&format!("{path}{sep}client_key={key}")));
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn create(app: &TestApp, key: &str, url: &str, types: &[&str]) -> (String, String) {
    let (status, body) =
        call(app, reqwest::Method::POST, "/v1/webhooks", key, Some(json!({"url": url, "event_types": types}))).await;
    assert_eq!(status, 201, "{body}");
    let secret = body["secret"].as_str().expect("secret").to_owned();
    assert!(secret.starts_with("whsec_"), "{secret}");
    (body["webhook"]["id"].as_str().expect("id").to_owned(), secret)
}

async fn emit(app: &TestApp, key_id: &str, kind: &str, n: usize, clock: &TestClock) -> String {
    // One subject per event: these tests are not about the order of one subject's events.
    emit_about(app, key_id, kind, n, clock, &format!("watch-{n}")).await
}

/// [`emit`] about `subject` (a key's deliveries keep the order of each subject's events).
async fn emit_about(app: &TestApp, key_id: &str, kind: &str, n: usize, clock: &TestClock, subject: &str) -> String {
    let id = event_id(&["test", key_id, kind, &n.to_string(), &uuid::Uuid::now_v7().to_string()]);
    let now = clock.clock()();
    let new = app
        .store
        .emit_event(NewEvent {
            id: id.clone(),
            key_id: key_id.to_owned(),
            event_type: kind.to_owned(),
            subject: Some(subject.into()),
            occurred_at: now,
            data: json!({"domain": format!("name{n}.com"), "n": n}),
        })
        .await
        .expect("emit");
    assert!(new);
    id
}

async fn deliveries(app: &TestApp, key: &str, webhook: &str) -> Vec<Value> {
    let (status, body) =
        call(app, reqwest::Method::GET, &format!("/v1/webhooks/{webhook}/deliveries?limit=100"), key, None).await;
    assert_eq!(status, 200, "{body}");
    body["deliveries"].as_array().expect("deliveries").clone()
}

fn clock_now() -> TestClock {
    TestClock::at(time::OffsetDateTime::now_utc())
}

#[tokio::test]
async fn webhooks_are_managed_by_server_keys_and_hostile_urls_are_refused() {
    let clock = clock_now();
    let app = app(&clock, |_| {}).await;
    let key = app.key(KeyOpts::default()).await;
    let other = app.key(KeyOpts::default()).await;
    let embed = app.key(KeyOpts { kind: KeyKind::Embed, ..KeyOpts::default() }).await;

    let (status, body) =
        call(&app, reqwest::Method::POST, "/v1/webhooks", &embed, Some(json!({"url": "https://93.184.215.14/"}))).await;
    assert_eq!(status, 403, "{body}");
    let (status, _) = call(&app, reqwest::Method::GET, "/v1/webhooks", &embed, None).await;
    assert_eq!(status, 403);

    for (url, why) in [
        ("http://93.184.215.14/hook", "https"),
        ("https://10.1.2.3/hook", "not a public address"),
        ("https://169.254.169.254/latest/meta-data", "not a public address"),
        ("https://[fe80::1]/hook", "not a public address"),
        ("https://192.168.0.10/hook", "not a public address"),
        ("https://user:pw@93.184.215.14/", "user name"),
    ] {
        let (status, body) = call(&app, reqwest::Method::POST, "/v1/webhooks", &key, Some(json!({"url": url}))).await;
        assert_eq!(status, 400, "{url}: {body}");
        assert!(body["error"].as_str().unwrap_or("").contains(why), "{url}: {body}");
    }
    let (status, body) = call(
        &app,
        reqwest::Method::POST,
        "/v1/webhooks",
        &key,
        Some(json!({"url": "https://93.184.215.14/", "event_types": ["domain.nope"]})),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) =
        call(&app, reqwest::Method::POST, "/v1/webhooks", &key, Some(json!({"url": "https://93.184.215.14/", "x": 1})))
            .await;
    assert_eq!(status, 400, "{body}");

    let (id, _) = create(&app, &key, "https://93.184.215.14/hook", &["domain.available"]).await;
    let (status, body) = call(&app, reqwest::Method::GET, "/v1/webhooks", &key, None).await;
    assert_eq!(status, 200);
    assert_eq!(body["webhooks"].as_array().map(Vec::len), Some(1), "{body}");
    assert!(body["webhooks"][0].get("secret").is_none(), "the secret is shown once only: {body}");
    let (status, body) = call(&app, reqwest::Method::GET, &format!("/v1/webhooks/{id}"), &key, None).await;
    assert_eq!((status, body["webhook"]["event_types"].clone()), (200, json!(["domain.available"])), "{body}");
    // Another key sees nothing of it.
    let (status, body) = call(&app, reqwest::Method::GET, &format!("/v1/webhooks/{id}"), &other, None).await;
    assert_eq!(status, 404, "{body}");
    let (status, _) = call(&app, reqwest::Method::DELETE, &format!("/v1/webhooks/{id}"), &other, None).await;
    assert_eq!(status, 404);
    let (status, _) = call(&app, reqwest::Method::DELETE, &format!("/v1/webhooks/{id}"), &key, None).await;
    assert_eq!(status, 200);
    let (status, _) = call(&app, reqwest::Method::GET, &format!("/v1/webhooks/{id}"), &key, None).await;
    assert_eq!(status, 404);
    app.finish(None).await;

    // Without the test setting, loopback is refused like any private address.
    let strict = TestApp::spawn_full(|_| {}, clock.clock()).await;
    let key = strict.key(KeyOpts::default()).await;
    for url in ["http://127.0.0.1:9/hook", "https://127.0.0.1/hook", "https://localhost/hook", "https://[::1]/"] {
        let (status, body) =
            call(&strict, reqwest::Method::POST, "/v1/webhooks", &key, Some(json!({"url": url}))).await;
        assert_eq!(status, 400, "{url}: {body}");
    }
    strict.finish(None).await;
}

#[tokio::test]
async fn events_arrive_once_each_verified_by_standardwebhooks_also_across_a_rotation() {
    let receiver = Receiver::start().await;
    let clock = clock_now();
    let app = app(&clock, |_| {}).await;
    let key = app.key(KeyOpts::default()).await;
    let key_id = app.key_id(&key).await;
    let (hook, secret) = create(&app, &key, &receiver.url("/hook"), &["domain.available", "domain.registered"]).await;
    receiver.config(json!({"secrets": [secret], "mode": "ok"})).await;

    let mut expected = Vec::new();
    for n in 0..5 {
        expected.push(emit(&app, &key_id, "domain.available", n, &clock).await);
    }
    expected.push(emit(&app, &key_id, "domain.registered", 5, &clock).await);
    // Not in the webhook's filter: never delivered.
    let skipped = emit(&app, &key_id, "domain.expiring", 6, &clock).await;
    let (status, body) = call(&app, reqwest::Method::POST, &format!("/v1/webhooks/{hook}/test"), &key, None).await;
    assert_eq!(status, 202, "{body}");
    expected.push(body["event_id"].as_str().expect("event id").to_owned());

    let got = receiver.wait_for(expected.len()).await;
    let ids: Vec<&str> = got.iter().map(|r| r["id"].as_str().unwrap_or("")).collect();
    for id in &expected {
        assert_eq!(ids.iter().filter(|i| *i == id).count(), 1, "{id} exactly once: {got:#?}");
    }
    assert!(!ids.contains(&skipped.as_str()), "filtered out: {got:#?}");
    for r in &got {
        assert_eq!(r["verified"], json!([0]), "signature verified by standardwebhooks: {r}");
        assert_eq!(r["signatures"], 1);
    }
    let test = got.iter().find(|r| r["type"] == "webhook.test").expect("the test event");
    assert_eq!(test["data"]["webhook_id"], hook.as_str());
    let one = got.iter().find(|r| r["type"] == "domain.registered").expect("registered");
    assert_eq!(one["data"]["domain"], "name5.com");

    // Rotation: during the overlap every delivery carries both signatures, each valid with its
    // own secret; a receiver holding either secret accepts it.
    let (status, body) =
        call(&app, reqwest::Method::POST, &format!("/v1/webhooks/{hook}/rotate-secret"), &key, None).await;
    assert_eq!(status, 200, "{body}");
    let new_secret = body["secret"].as_str().expect("new secret").to_owned();
    assert_ne!(new_secret, secret);
    receiver.config(json!({"secrets": [secret, new_secret]})).await;
    let rotated = emit(&app, &key_id, "domain.available", 10, &clock).await;
    let got = receiver.wait_for(expected.len() + 1).await;
    let r = got.iter().find(|r| r["id"] == rotated.as_str()).expect("delivered after the rotation");
    assert_eq!(r["signatures"], 2, "{r}");
    assert_eq!(r["verified"], json!([0, 1]), "both secrets verify: {r}");
    // After the overlap, only the new secret signs.
    clock.set(clock.clock()() + time::Duration::hours(25));
    let after = emit(&app, &key_id, "domain.available", 11, &clock).await;
    let got = receiver.wait_for(expected.len() + 2).await;
    let r = got.iter().find(|r| r["id"] == after.as_str()).expect("delivered after the overlap");
    assert_eq!((r["signatures"].clone(), r["verified"].clone()), (json!(1), json!([1])), "{r}");

    let list = deliveries(&app, &key, &hook).await;
    assert_eq!(list.len(), expected.len() + 2, "{list:#?}");
    assert!(list.iter().all(|d| d["state"] == "delivered" && d["attempts"] == 1), "{list:#?}");
    assert!(list[0]["attempt_log"][0]["status"] == 204, "{list:#?}");
    app.finish(None).await;
}

#[tokio::test]
async fn a_receiver_down_for_an_hour_gets_every_event_when_it_is_back() {
    let receiver = Receiver::start().await;
    let clock = TestClock::at(datetime!(2026-11-27 10:00:00 UTC));
    let app = app(&clock, |_| {}).await;
    let key = app.key(KeyOpts::default()).await;
    let key_id = app.key_id(&key).await;
    let (hook, secret) = create(&app, &key, &receiver.url("/hook"), &[]).await;
    receiver.config(json!({"secrets": [secret], "mode": "fail"})).await;
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(emit(&app, &key_id, "domain.available", n, &clock).await);
    }
    let start = clock.clock()();
    // Down for an hour: the clock moves in steps, each retry due is attempted and fails.
    for minutes in [0, 1, 10, 45, 60] {
        clock.set(start + time::Duration::minutes(minutes));
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    let list = deliveries(&app, &key, &hook).await;
    assert_eq!(list.len(), 3);
    for d in &list {
        assert_eq!(d["state"], "pending", "{d}");
        // 0 s, 5 s, 5 min, 30 min: four attempts in the hour; the next one 2 h after the 4th.
        assert_eq!(d["attempts"], 4, "{d}");
        let log = d["attempt_log"].as_array().expect("log");
        assert!(log.iter().all(|a| a["status"] == 503), "{d}");
        let next = time::OffsetDateTime::parse(
            d["next_attempt_at"].as_str().expect("next attempt"),
            &time::format_description::well_known::Rfc3339,
        )
        .expect("rfc3339");
        let wait = next - (start + time::Duration::minutes(45));
        assert!(wait > time::Duration::minutes(100) && wait < time::Duration::minutes(140), "back-off {wait}: {d}");
    }
    receiver.config(json!({"mode": "ok"})).await;
    clock.set(start + time::Duration::hours(3));
    let got = receiver.wait_for(3).await;
    for id in &ids {
        assert_eq!(got.iter().filter(|r| r["id"] == id.as_str()).count(), 1, "{id}: {got:#?}");
    }
    // Every attempt carried the same webhook-id.
    let all = receiver.received().await;
    for id in &ids {
        assert_eq!(all.iter().filter(|r| r["id"] == id.as_str()).count(), 5, "{id}: 4 failed + 1 delivered");
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let list = deliveries(&app, &key, &hook).await;
    assert!(list.iter().all(|d| d["state"] == "delivered" && d["attempts"] == 5), "{list:#?}");
    app.finish(None).await;
}

#[tokio::test]
async fn hostile_endpoints_are_cut_off_and_a_failing_one_is_disabled() {
    let receiver = Receiver::start().await;
    let clock = TestClock::at(datetime!(2026-11-27 10:00:00 UTC));
    let app = app(&clock, |s| {
        s.webhooks.timeout_secs = 1.0;
        s.webhooks.max_response_bytes = 4096;
        s.webhooks.disable_after_hours = 20.0;
    })
    .await;
    let key = app.key(KeyOpts::default()).await;
    let key_id = app.key_id(&key).await;
    let (hook, secret) = create(&app, &key, &receiver.url("/hook"), &[]).await;
    let (watcher, _) = create(&app, &key, &receiver.url("/watcher"), &["webhook.disabled"]).await;
    receiver.config(json!({"secrets": [secret], "mode": "redirect"})).await;

    async fn last_attempt(app: &TestApp, key: &str, hook: &str, id: &str) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let list = deliveries(app, key, hook).await;
            if let Some(d) = list.iter().find(|d| d["event_id"] == id)
                && let Some(last) = d["attempt_log"].as_array().and_then(|l| l.last())
            {
                return last.clone();
            }
            assert!(tokio::time::Instant::now() < deadline, "no attempt for {id}: {list:#?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    // A redirect is recorded as the endpoint's answer, not followed.
    let e = emit(&app, &key_id, "domain.available", 0, &clock).await;
    let a = last_attempt(&app, &key, &hook, &e).await;
    assert_eq!(a["status"], 302, "{a}");
    assert!(a["error"].as_str().unwrap_or("").contains("redirects are not followed"), "{a}");
    // A slow endpoint is cut off at the timeout.
    receiver.config(json!({"mode": "slow", "delay": 3})).await;
    let e = emit(&app, &key_id, "domain.available", 1, &clock).await;
    let a = last_attempt(&app, &key, &hook, &e).await;
    assert!(a.get("status").is_none() && a["error"].as_str().unwrap_or("").contains("no answer within"), "{a}");
    assert!(a["latency_ms"].as_i64().unwrap_or(0) < 2500, "{a}");
    // A huge answer is read up to the cap only; its 200 counts.
    receiver.config(json!({"mode": "huge"})).await;
    let e = emit(&app, &key_id, "domain.available", 2, &clock).await;
    let a = last_attempt(&app, &key, &hook, &e).await;
    assert_eq!(a["status"], 200, "{a}");

    // Failing for longer than `disable_after_hours`: disabled, and a webhook.disabled event
    // goes to the key's other webhooks that take it.
    receiver.config(json!({"mode": "fail"})).await;
    let e = emit(&app, &key_id, "domain.available", 3, &clock).await;
    let start = clock.clock()();
    let _ = last_attempt(&app, &key, &hook, &e).await;
    for hours in [1, 3, 6, 12, 24] {
        clock.set(start + time::Duration::hours(hours));
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let (_, body) = call(&app, reqwest::Method::GET, &format!("/v1/webhooks/{hook}"), &key, None).await;
    assert_eq!(body["webhook"]["state"], "disabled", "{body}");
    assert!(body["webhook"]["disabled_reason"].as_str().is_some(), "{body}");
    let events = app.store.list_events(&key_id, Some(&hook), 0, 100).await.expect("events");
    assert!(events.iter().any(|e| e.event_type == "webhook.disabled"), "{events:?}");
    let to_watcher = deliveries(&app, &key, &watcher).await;
    assert!(to_watcher.iter().any(|d| d["event_type"] == "webhook.disabled"), "{to_watcher:#?}");
    // A test event to a disabled webhook is refused; enabling it resumes the deliveries.
    let (status, _) = call(&app, reqwest::Method::POST, &format!("/v1/webhooks/{hook}/test"), &key, None).await;
    assert_eq!(status, 400);
    receiver.config(json!({"mode": "ok"})).await;
    let (status, body) = call(&app, reqwest::Method::POST, &format!("/v1/webhooks/{hook}/enable"), &key, None).await;
    assert_eq!((status, body["webhook"]["state"].clone()), (200, json!("active")), "{body}");
    // The failed ones get one more attempt through retry.
    let list = deliveries(&app, &key, &hook).await;
    let failed = list.iter().find(|d| d["event_id"] == e).expect("the failing delivery");
    let (status, body) = call(
        &app,
        reqwest::Method::POST,
        &format!("/v1/webhooks/{hook}/deliveries/{}/retry", failed["id"].as_str().expect("id")),
        &key,
        None,
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !receiver.received().await.iter().any(|r| r["id"] == e.as_str() && r["status"] == 204) {
        assert!(tokio::time::Instant::now() < deadline, "the retried delivery arrives");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    app.finish(None).await;
}

/// `dsa serve` (the real binary) killed with SIGKILL while its deliveries are in flight, then
/// started again on the same SQLite file: every delivery arrives, with the `webhook-id` of the
/// attempt that was cut off, once the killed process's claims expire (`webhooks.lease_secs`).
#[tokio::test(flavor = "multi_thread")]
async fn a_process_killed_mid_delivery_loses_nothing_and_keeps_the_webhook_id() {
    use api::store::{NewKey, SqliteStore, Store};
    use dsa_tests::harness::binary::dsa_binary;

    let receiver = Receiver::start().await;
    let dir = std::env::temp_dir().join(format!("dsa-hooks-kill-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let db = format!("sqlite://{}?mode=rwc", dir.join("dsa.db").display());
    let store = SqliteStore::connect(&db, 2).await.expect("open the database");
    store.migrate().await.expect("migrate");
    let (key, key_hash) = api::keys::generate(KeyKind::Server);
    let record = store
        .create_key(NewKey {
            key_hash,
            kind: KeyKind::Server,
            plan: api::keys::Plan::Pro,
            pricing_enabled: false,
            show_purchase_button: false,
            default_commission_percent: None,
            purchase_url: None,
            allowed_origins: Vec::new(),
            label: "kill test".into(),
        })
        .await
        .expect("key");
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
    let start = || {
        std::process::Command::new(dsa_binary())
            .env("DSA_SERVER__LISTEN", format!("127.0.0.1:{port}"))
            .env("DSA_DATABASE__URL", &db)
            .env("DSA_BOOTSTRAP__CREATE_DEV_KEY", "false")
            .env("DSA_ENGINE__OVERRIDES_ONLY", "true")
            .env("DSA_WEBHOOKS__TEST_ONLY_ALLOW_LOOPBACK", "true")
            .env("DSA_WEBHOOKS__POLL_MS", "50")
            .env("DSA_WEBHOOKS__TIMEOUT_SECS", "3")
            .env("DSA_WEBHOOKS__LEASE_SECS", "4")
            .env_remove("DSA_CONFIG")
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start dsa")
    };
    let http = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    let up = |http: reqwest::Client, base: String| async move {
        for _ in 0..400 {
            if http.get(format!("{base}/healthz")).send().await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("dsa did not start");
    };
    let mut first = start();
    up(http.clone(), base.clone()).await;
    let created: Value = http
        .post(format!("{base}/v1/webhooks?client_key={key}"))
        .json(&json!({"url": receiver.url("/hook")}))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("json");
    let secret = created["secret"].as_str().unwrap_or_else(|| panic!("created: {created}")).to_owned();
    let hook = created["webhook"]["id"].as_str().expect("id").to_owned();
    // The receiver holds every delivery longer than the process lives.
    receiver.config(json!({"secrets": [secret], "mode": "slow", "delay": 8})).await;
    let mut ids = Vec::new();
    for n in 0..5 {
        let id = event_id(&["kill", &n.to_string(), &uuid::Uuid::now_v7().to_string()]);
        store
            .emit_event(NewEvent {
                id: id.clone(),
                key_id: record.id.clone(),
                event_type: "domain.available".into(),
                subject: None,
                occurred_at: time::OffsetDateTime::now_utc(),
                data: json!({"domain": format!("kill{n}.com")}),
            })
            .await
            .expect("emit");
        ids.push(id);
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while receiver.received().await.len() < ids.len() {
        assert!(tokio::time::Instant::now() < deadline, "the deliveries reach the receiver");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Every delivery is in flight: SIGKILL.
    first.kill().expect("SIGKILL");
    let _ = first.wait();
    let cut: Vec<Value> = receiver.received().await;
    receiver.config(json!({"mode": "ok"})).await;
    let mut second = start();
    up(http.clone(), base.clone()).await;
    let got = receiver.wait_for(ids.len()).await;
    // The restarted process records the deliveries once the answers came.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let page = store.list_deliveries(&hook, i64::MAX, 100).await.expect("deliveries");
        if page.len() == ids.len() && page.iter().all(|d| d.state == "delivered") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "every delivery recorded as delivered: {page:#?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = second.kill();
    let _ = second.wait();
    for id in &ids {
        assert_eq!(cut.iter().filter(|r| r["id"] == id.as_str()).count(), 1, "{id} was in flight: {cut:#?}");
        assert_eq!(got.iter().filter(|r| r["id"] == id.as_str()).count(), 1, "{id} delivered once after: {got:#?}");
        assert!(got.iter().all(|r| r["verified"] == json!([0])), "{got:#?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// One webhook whose endpoint stalls every attempt for the whole timeout (10 s) does not hold
/// up another: while five attempts to the stalled one are in flight, each event for the healthy
/// webhook reaches its receiver within a small bound (the old loop waited for its slowest
/// attempt before claiming again: up to 10 s).
#[tokio::test]
async fn a_stalled_endpoint_does_not_hold_up_deliveries_to_other_webhooks() {
    let stalled = Receiver::start().await;
    let healthy = Receiver::start().await;
    let clock = clock_now();
    let app = app(&clock, |s| s.webhooks.timeout_secs = 10.0).await;
    let key = app.key(KeyOpts::default()).await;
    let key_id = app.key_id(&key).await;
    let (_, slow_secret) = create(&app, &key, &stalled.url("/hook"), &["domain.expiring"]).await;
    let (_, secret) = create(&app, &key, &healthy.url("/hook"), &["domain.available"]).await;
    stalled.config(json!({"secrets": [slow_secret], "mode": "slow", "delay": 10})).await;
    healthy.config(json!({"secrets": [secret], "mode": "ok"})).await;
    for n in 0..5 {
        emit_about(&app, &key_id, "domain.expiring", n, &clock, &format!("slow-{n}")).await;
    }
    // All five in flight at the stalled endpoint.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while stalled.received().await.len() < 5 {
        assert!(tokio::time::Instant::now() < deadline, "the stalled endpoint gets its attempts");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stalled_from = tokio::time::Instant::now();
    let mut slowest = Duration::ZERO;
    for n in 0..10 {
        let sent = tokio::time::Instant::now();
        emit(&app, &key_id, "domain.available", 100 + n, &clock).await;
        let got = healthy.wait_for(n + 1).await;
        slowest = slowest.max(sent.elapsed());
        assert_eq!(got.len(), n + 1, "{got:#?}");
        assert!(got.iter().all(|r| r["verified"] == json!([0])), "{got:#?}");
    }
    // The ten went through while the stalled attempts were still waiting for their answers.
    assert!(stalled_from.elapsed() < Duration::from_secs(8), "took {:?}", stalled_from.elapsed());
    assert!(slowest < Duration::from_secs(2), "an event to the healthy webhook took {slowest:?}");
    eprintln!("webhooks: slowest delivery to a healthy webhook beside a stalled one: {slowest:?}");
    app.finish(None).await;
}

/// A bulk job that ends tells the key's webhooks once (`job.finished`, issue 26): a job run to
/// done and a job cancelled mid-way each give one event, verified by `standardwebhooks`, whose
/// `data` has the job's final numbers; cancelling again records nothing more.
#[tokio::test]
async fn a_bulk_job_that_ends_is_told_once_by_job_finished() {
    use dsa_tests::sim::{Knobs, Latency};

    let receiver = Receiver::start().await;
    let app = TestApp::spawn_with(|s| {
        s.webhooks.test_only_allow_loopback = true;
        s.webhooks.poll_ms = 20;
    })
    .await;
    let key = app.key(KeyOpts::default()).await;
    let (hook, secret) = create(&app, &key, &receiver.url("/hook"), &["job.finished"]).await;
    receiver.config(json!({"secrets": [secret], "mode": "ok"})).await;
    let submit = |names: String| {
        let (http, url) = (app.http.clone(), app.url(&format!("/v1/jobs/bulk-check?client_key={key}")));
        async move {
            let response =
                http.post(url).header("content-type", "text/plain").body(names).send().await.expect("submit");
            assert_eq!(response.status().as_u16(), 202);
            let accepted: Value = response.json().await.expect("json");
            accepted["id"].as_str().expect("id").to_owned()
        }
    };

    // Run to done: example.com is taken, the others available.
    let done_id = submit("example.com\ndsa-jobhook-1.com\ndsa-jobhook-2.net\nnot a name\n".into()).await;
    let got = receiver.wait_for(1).await;
    let event = &got[0];
    assert_eq!((event["type"].clone(), event["verified"].clone()), (json!("job.finished"), json!([0])), "{event}");
    let data = &event["data"];
    assert_eq!(data["job_id"], done_id.as_str(), "{data}");
    assert_eq!(data["state"], "done", "{data}");
    assert_eq!(
        (data["total"].clone(), data["invalid"].clone(), data["checked"].clone()),
        (json!(3), json!(1), json!(3))
    );
    assert_eq!((data["counts"]["taken"].clone(), data["counts"]["available"].clone()), (json!(1), json!(2)), "{data}");
    assert_eq!((data["credits_charged"].clone(), data["credits_released"].clone()), (json!(3), json!(0)), "{data}");
    assert_eq!(data["results_url"], format!("/v1/jobs/{done_id}/results").as_str());
    let (status, job) = call(&app, reqwest::Method::GET, &format!("/v1/jobs/{done_id}"), &key, None).await;
    assert_eq!(
        (status, job["state"].clone(), job["finished_at"].clone()),
        (200, json!("done"), data["finished_at"].clone())
    );

    // Cancelled mid-way (slow registries), twice: one event.
    app.sim.set_knobs(Knobs { latency_ms: Latency { rdap: 300, ..Latency::default() }, ..Knobs::default() });
    let names: String = (0..200).map(|i| format!("dsa-jobhook-cancel-{i}.com\n")).collect();
    let cancelled_id = submit(names).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    for _ in 0..2 {
        let (status, job) = call(&app, reqwest::Method::DELETE, &format!("/v1/jobs/{cancelled_id}"), &key, None).await;
        assert_eq!((status, job["state"].clone()), (200, json!("cancelled")), "{job}");
    }
    let got = receiver.wait_for(2).await;
    let event = got.iter().find(|e| e["data"]["job_id"] == cancelled_id.as_str()).expect("the cancel's event");
    assert_eq!(
        (event["data"]["state"].clone(), event["verified"].clone()),
        (json!("cancelled"), json!([0])),
        "{event}"
    );
    let checked = event["data"]["checked"].as_i64().expect("checked");
    assert!(checked < 200, "cancelled mid-job: {event}");
    assert_eq!(
        event["data"]["credits_released"].as_i64(),
        Some(200 - event["data"]["credits_charged"].as_i64().unwrap_or(0))
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.received().await.len(), 2, "one event per job");
    assert_eq!(deliveries(&app, &key, &hook).await.len(), 2);
    app.sim.set_knobs(Knobs::default());
    app.finish(None).await;
}

/// Ended deliveries are kept `keep_deliveries_days` (with their attempts), then deleted by the
/// delivery loop; a pending one stays whatever its age.
#[tokio::test]
async fn ended_deliveries_are_pruned_after_their_keeping_time() {
    let receiver = Receiver::start().await;
    let clock = TestClock::at(datetime!(2026-11-27 10:00:00 UTC));
    let app = app(&clock, |s| s.webhooks.keep_deliveries_days = 30.0).await;
    let key = app.key(KeyOpts::default()).await;
    let key_id = app.key_id(&key).await;
    let (hook, secret) = create(&app, &key, &receiver.url("/hook"), &[]).await;
    receiver.config(json!({"secrets": [secret], "mode": "ok"})).await;
    let old = emit(&app, &key_id, "domain.available", 1, &clock).await;
    receiver.wait_for(1).await;
    // A second endpoint that is down: its delivery stays pending.
    let (down, down_secret) = create(&app, &key, &receiver.url("/down"), &["domain.registered"]).await;
    receiver.config(json!({"secrets": [secret, down_secret], "mode": "fail"})).await;
    emit(&app, &key_id, "domain.registered", 2, &clock).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while deliveries(&app, &key, &down).await.first().is_none_or(|d| d["attempts"] == 0) {
        assert!(tokio::time::Instant::now() < deadline, "no attempt to the endpoint that is down");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(deliveries(&app, &key, &hook).await.len(), 2, "both events went to the catch-all webhook");

    // 31 days on: the next look of the loop prunes what ended before then.
    receiver.config(json!({"mode": "ok"})).await;
    clock.set(clock.clock()() + time::Duration::days(31));
    let fresh = emit(&app, &key_id, "domain.available", 3, &clock).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let list = deliveries(&app, &key, &hook).await;
        if list.iter().all(|d| d["event_id"] != old.as_str()) && list.iter().any(|d| d["event_id"] == fresh.as_str()) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "old delivery not pruned: {list:#?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pending = deliveries(&app, &key, &down).await;
    assert_eq!(pending.len(), 1, "the pending delivery stays: {pending:#?}");
    app.finish(None).await;
}
