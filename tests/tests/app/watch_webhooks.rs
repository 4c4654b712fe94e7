//! Watches and webhooks together (issue 25), end to end: a key registers a webhook pointing at
//! the Python receiver that verifies every delivery with PyPI's `standardwebhooks`
//! (`tests/webhooks/receiver.py`), and watches names whose simulator `[[timeline]]` goes
//! registered → expiring → redemption → pending delete → available. The front's clock and the
//! simulator's move together, a day at a time (a month passes in seconds of real time).
//!
//! * the receiver gets every event of both lives, once each by `webhook-id` (the event id),
//!   signature valid, in order per watch, with the `data` of the OpenAPI document's
//!   `WatchEventData` (the same object `GET /v1/watches/{id}/events` shows);
//! * the receiver down for a simulated hour around the drop: every event still arrives, once,
//!   in order per watch, after it comes back.
//!
//! Run: `cargo test -p dsa-tests --test app -- watch_webhooks`.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use dsa_tests::harness::app::{KeyOpts, TestApp, TestClock};
use dsa_tests::harness::webhooks::Receiver;
use dsa_tests::sim::Scenario;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::macros::datetime;

const T0: OffsetDateTime = datetime!(2026-01-01 00:00 UTC);
const END: OffsetDateTime = datetime!(2026-05-28 00:00 UTC);

/// `.org` on RDAP and DNS; two names with overlapping lives (their events interleave).
fn scenario() -> Scenario {
    Scenario::from_toml(
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

[[timeline]]
name = "fading.org"
expires_at = "2026-03-05T00:00:00Z"
redemption_at = "2026-04-15T00:00:00Z"
pending_delete_at = "2026-05-16T00:00:00Z"
free_at = "2026-05-21T00:00:00Z"
"#,
    )
    .expect("scenario")
}

/// The events of a whole life, in order: (type, from, to).
const LIFE: [(&str, &str, &str); 6] = [
    ("domain.state_changed", "registered", "expiring"),
    ("domain.expiring", "registered", "expiring"),
    ("domain.state_changed", "expiring", "redemption"),
    ("domain.state_changed", "redemption", "pending_delete"),
    ("domain.state_changed", "pending_delete", "available"),
    ("domain.available", "pending_delete", "available"),
];

const NAMES: [&str; 2] = ["dropping.org", "fading.org"];

struct World {
    receiver: Receiver,
    clock: TestClock,
    app: TestApp,
    key: String,
    key_id: String,
    hook: String,
    /// Watch ids, in the order of [`NAMES`].
    watches: Vec<String>,
}

/// A front with a webhook (every event type) to the receiver and a watch on each name, the
/// first checks done (the baselines: no events).
async fn world() -> World {
    let receiver = Receiver::start().await;
    let clock = TestClock::at(T0);
    let app = TestApp::spawn_scenario(
        scenario(),
        |s| {
            s.watches.tick_ms = 20;
            s.watches.job_wait_secs = 5.0;
            s.webhooks.test_only_allow_loopback = true;
            // The life spans months of the test's clock: keep every delivery listed.
            s.webhooks.keep_deliveries_days = 3650.0;
            s.webhooks.poll_ms = 20;
        },
        clock.clock(),
    )
    .await;
    app.sim.set_now(Some(T0));
    let key = app.key(KeyOpts::default()).await;
    let key_id = app.key_id(&key).await;
    let (status, body) =
        call(&app, reqwest::Method::POST, "/v1/webhooks", &key, Some(json!({"url": receiver.url("/hook")}))).await;
    assert_eq!(status, 201, "{body}");
    let hook = body["webhook"]["id"].as_str().expect("webhook id").to_owned();
    let secret = body["secret"].as_str().expect("secret").to_owned();
    receiver.config(json!({"secrets": [secret], "mode": "ok"})).await;
    let mut watches = Vec::new();
    for name in NAMES {
        let (status, body) =
            call(&app, reqwest::Method::POST, "/v1/watches", &key, Some(json!({"domain": name}))).await;
        assert_eq!(status, 201, "{body}");
        watches.push(body["watch"]["id"].as_str().expect("watch id").to_owned());
    }
    let world = World { receiver, clock, app, key, key_id, hook, watches };
    world.settle(T0).await;
    world
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

impl World {
    /// Waits (real time) until the scheduler has checked every watch due at `now`.
    async fn settle(&self, now: OffsetDateTime) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        for id in &self.watches {
            loop {
                let watch = self.app.store.find_watch(&self.key_id, id).await.expect("store").expect("watch");
                if watch.next_check_at > now.unix_timestamp() {
                    break;
                }
                assert!(tokio::time::Instant::now() < deadline, "the scheduler did not catch up at {now}: {watch:?}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }

    /// Moves both clocks from `from` to `to` in steps of `step`, letting the scheduler catch up
    /// at each, and the delivery loop for `pause` of real time.
    async fn advance(&self, from: OffsetDateTime, to: OffsetDateTime, step: time::Duration, pause: Duration) {
        let mut now = from;
        while now < to {
            now = (now + step).min(to);
            self.clock.set(now);
            self.app.sim.set_now(Some(now));
            self.settle(now).await;
            tokio::time::sleep(pause).await;
        }
    }

    /// The events of watch `i` as `GET /v1/watches/{id}/events` shows them.
    async fn events(&self, i: usize) -> Vec<Value> {
        let id = &self.watches[i];
        let (status, body) =
            call(&self.app, reqwest::Method::GET, &format!("/v1/watches/{id}/events?limit=100"), &self.key, None).await;
        assert_eq!(status, 200, "{body}");
        body["events"].as_array().cloned().unwrap_or_default()
    }

    /// Waits until the receiver answered 2xx to every event of every watch (12), then checks
    /// them: once each, verified, in order per watch, with the documented data.
    async fn assert_everything_arrived(&self, data_fields: &BTreeSet<String>) -> Vec<Value> {
        let mut expected = Vec::new();
        for (i, name) in NAMES.iter().enumerate() {
            let events = self.events(i).await;
            let seen: Vec<(String, String, String)> = events
                .iter()
                .map(|e| {
                    let s = |v: &Value| v.as_str().unwrap_or("?").to_owned();
                    (s(&e["type"]), s(&e["data"]["from"]), s(&e["data"]["to"]))
                })
                .collect();
            let want: Vec<(String, String, String)> =
                LIFE.iter().map(|(t, f, to)| ((*t).to_owned(), (*f).to_owned(), (*to).to_owned())).collect();
            assert_eq!(seen, want, "{name}: {events:#?}");
            expected.push(events);
        }
        let total: usize = expected.iter().map(Vec::len).sum();
        let got = self.receiver.wait_for(total).await;
        let all = self.receiver.received().await;
        // Once each (by webhook-id), signature valid.
        let mut by_id: HashMap<&str, &Value> = HashMap::new();
        for r in &got {
            let id = r["id"].as_str().expect("webhook-id");
            assert!(by_id.insert(id, r).is_none(), "{id} answered 2xx twice: {got:#?}");
            assert_eq!(r["verified"], json!([0]), "verified by standardwebhooks: {r}");
            assert_eq!(r["signatures"], 1, "{r}");
        }
        assert_eq!(got.len(), total, "nothing but the watches' events: {got:#?}");
        for (i, events) in expected.iter().enumerate() {
            let watch = &self.watches[i];
            // In order per watch: the receiver's 2xx answers for this watch, by arrival.
            let arrived: Vec<&str> = got
                .iter()
                .filter(|r| r["data"]["watch_id"] == watch.as_str())
                .filter_map(|r| r["id"].as_str())
                .collect();
            let recorded: Vec<&str> = events.iter().filter_map(|e| e["id"].as_str()).collect();
            assert_eq!(arrived, recorded, "{}: deliveries in the order of the events", NAMES[i]);
            // No later event of the watch was even attempted before an earlier one was answered 2xx.
            let first_ok: HashMap<&str, usize> = all
                .iter()
                .enumerate()
                .filter(|(_, r)| r["status"].as_u64().is_some_and(|s| s < 300))
                .filter_map(|(n, r)| r["id"].as_str().map(|id| (id, n)))
                .collect();
            for (n, r) in all.iter().enumerate() {
                let Some(pos) = recorded.iter().position(|id| r["id"] == *id) else { continue };
                for earlier in &recorded[..pos] {
                    assert!(first_ok[earlier] < n, "{} attempted before {earlier} arrived: {all:#?}", recorded[pos]);
                }
            }
            for event in events {
                let id = event["id"].as_str().expect("id");
                let r = by_id[id];
                assert_eq!(r["type"], event["type"], "{r}");
                assert_eq!(r["data"], event["data"], "the delivery's data is the event's: {r}");
                let keys: BTreeSet<String> =
                    r["data"].as_object().expect("data is an object").keys().cloned().collect();
                assert_eq!(&keys, data_fields, "the data of WatchEventData in the OpenAPI document: {r}");
                assert_eq!(
                    (r["data"]["watch_id"].as_str(), r["data"]["domain"].as_str()),
                    (Some(watch.as_str()), Some(NAMES[i]))
                );
            }
        }
        all
    }

    /// The webhook's deliveries, all delivered.
    async fn assert_all_delivered(&self, total: usize) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let (status, body) = call(
                &self.app,
                reqwest::Method::GET,
                &format!("/v1/webhooks/{}/deliveries?limit=100", self.hook),
                &self.key,
                None,
            )
            .await;
            assert_eq!(status, 200, "{body}");
            let list = body["deliveries"].as_array().cloned().unwrap_or_default();
            if list.len() == total && list.iter().all(|d| d["state"] == "delivered") {
                return list;
            }
            assert!(tokio::time::Instant::now() < deadline, "every delivery recorded as delivered: {list:#?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The properties the OpenAPI document gives `WatchEventData` (all required).
async fn documented_data_fields(app: &TestApp) -> BTreeSet<String> {
    let (status, _, doc) = app.get("/v1/openapi.json").await;
    assert_eq!(status, 200);
    let schema = &doc["components"]["schemas"]["WatchEventData"];
    let properties: BTreeSet<String> =
        schema["properties"].as_object().expect("WatchEventData's properties").keys().cloned().collect();
    let required: BTreeSet<String> =
        schema["required"].as_array().expect("required").iter().filter_map(|v| v.as_str().map(str::to_owned)).collect();
    assert_eq!(properties, required, "every member of WatchEventData is always sent");
    properties
}

#[tokio::test]
async fn a_watched_names_whole_life_arrives_at_the_webhook_once_each_signed_in_order() {
    let w = world().await;
    let fields = documented_data_fields(&w.app).await;
    w.advance(T0, END, time::Duration::days(1), Duration::from_millis(20)).await;
    let all = w.assert_everything_arrived(&fields).await;
    assert_eq!(all.len(), 12, "one attempt each: nothing failed, nothing repeated: {all:#?}");
    let list = w.assert_all_delivered(12).await;
    assert!(list.iter().all(|d| d["attempts"] == 1), "{list:#?}");
    w.app.finish(None).await;
}

#[tokio::test]
async fn a_receiver_down_for_an_hour_mid_life_gets_every_event_in_order_when_it_is_back() {
    let w = world().await;
    let fields = documented_data_fields(&w.app).await;
    // Up to just before dropping.org is freed.
    let down_at = datetime!(2026-05-19 23:40 UTC);
    w.advance(T0, down_at, time::Duration::days(1), Duration::from_millis(20)).await;
    let before = w.receiver.wait_for(8).await;
    // Down for an hour across the drop: dropping.org's last two events are emitted meanwhile,
    // each attempt due is made (the clock moves 10 min at a time) and fails.
    w.receiver.config(json!({"mode": "fail"})).await;
    let up_at = down_at + time::Duration::hours(1);
    w.advance(down_at, up_at, time::Duration::minutes(10), Duration::from_millis(300)).await;
    let failed: Vec<Value> = w.receiver.received().await.into_iter().filter(|r| r["status"] == 503).collect();
    let failed_ids: BTreeSet<&str> = failed.iter().filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(failed_ids.len(), 1, "only the first undelivered event of the watch is attempted: {failed:#?}");
    assert!(failed.len() >= 3, "retried while down: {failed:#?}");
    assert_eq!(before.len(), 8, "{before:#?}");
    // Back: the retry schedule's next attempt delivers it, then the rest follow in order.
    w.receiver.config(json!({"mode": "ok"})).await;
    w.advance(up_at, up_at + time::Duration::hours(4), time::Duration::minutes(30), Duration::from_millis(200)).await;
    w.advance(up_at + time::Duration::hours(4), END, time::Duration::days(1), Duration::from_millis(20)).await;
    w.assert_everything_arrived(&fields).await;
    w.assert_all_delivered(12).await;
    w.app.finish(None).await;
}
