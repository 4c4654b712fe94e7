//! `/v1/watches` end to end (issue 25): a real standalone front over HTTP with its watch
//! scheduler, the registry simulator's `[[timeline]]` moving a name through its lifecycle on a
//! clock the test holds (the front's injected clock and the simulator's, moved together), and
//! the SQLite store read back.
//!
//! * the endpoints and their errors (embed key 403, bad input 400/415, unknown or another key's
//!   watch 404, the fee and 429 when it cannot be paid);
//! * a name's whole life, registered → expiring → redemption → pending delete → available, each
//!   event once, in order, with its data; no `domain.available` while DNS alone says the name is
//!   gone; the fee charged once a month;
//! * DNS delegation as an early signal: a name registered far from expiry (weekly registry
//!   checks) deleted early is seen within one DNS look (6 h), without extra registry queries
//!   while it stays delegated;
//! * a front killed mid-life and restarted on the same SQLite file: no event twice, none lost, a
//!   dead process's lease respected until it runs out.

use std::time::Duration;

use dsa_tests::harness::app::{KeyOpts, TestApp, TestClock};
use dsa_tests::sim::{Fault, Faults, Knobs, Scenario};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::macros::datetime;

const T0: OffsetDateTime = datetime!(2026-01-01 00:00 UTC);
const FREE_AT: OffsetDateTime = datetime!(2026-05-20 00:00 UTC);

/// `.org` on RDAP (and DNS), one name with a timeline and one registered for good.
fn scenario() -> Scenario {
    Scenario::from_toml(
        r#"
[[tld]]
suffix = "org"
protocols = ["dns", "rdap"]
rdap_family = "centralnic"

[[domain]]
name = "taken-for-good.org"
truth = "registered"

[[timeline]]
name = "dropping.org"
expires_at = "2026-03-01T00:00:00Z"
redemption_at = "2026-04-15T00:00:00Z"
pending_delete_at = "2026-05-15T00:00:00Z"
free_at = "2026-05-20T00:00:00Z"

[[timeline]]
name = "deleted-early.org"
expires_at = "2027-06-01T00:00:00Z"
redemption_at = "2026-01-20T00:00:00Z"
pending_delete_at = "2026-02-19T00:00:00Z"
free_at = "2026-02-24T00:00:00Z"

[[timeline]]
name = "claimed.org"
expires_at = "2025-09-01T00:00:00Z"
redemption_at = "2025-10-01T00:00:00Z"
pending_delete_at = "2025-10-31T00:00:00Z"
free_at = "2025-11-05T00:00:00Z"
reregistered_at = "2026-01-10T00:00:00Z"
"#,
    )
    .expect("scenario")
}

fn fast(settings: &mut api::config::Settings) {
    settings.watches.tick_ms = 20;
    settings.watches.job_wait_secs = 5.0;
}

async fn spawn(clock: &TestClock) -> TestApp {
    let app = TestApp::spawn_scenario(scenario(), fast, clock.clock()).await;
    app.sim.set_now(Some(T0));
    app
}

async fn post(app: &TestApp, key: &str, body: Value) -> (u16, Value) {
    let response =
        app.http.post(app.url(&format!("/v1/watches?client_key={key}"))).json(&body).send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn delete(app: &TestApp, key: &str, id: &str) -> (u16, Value) {
    let response =
        app.http.delete(app.url(&format!("/v1/watches/{id}?client_key={key}"))).send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn assert_error(status: u16, body: &Value, expected: u16) {
    assert_eq!(status, expected, "{body}");
    assert_eq!(body["success"], false, "{body}");
    assert_eq!(body.as_object().map(|o| o.len()), Some(2), "error shape: {body}");
}

/// Waits (real time) until the scheduler has caught up with the clock: the watch is not due and
/// not leased by a live check.
async fn settle(app: &TestApp, key_id: &str, id: &str, now: OffsetDateTime) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let watch = app.store.find_watch(key_id, id).await.expect("store").expect("watch");
        if watch.next_check_at > now.unix_timestamp() {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "the scheduler did not catch up at {now}: {watch:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Moves both clocks from `from` to `to` a day at a time, letting the scheduler catch up at each.
async fn advance(app: &TestApp, clock: &TestClock, key_id: &str, id: &str, from: OffsetDateTime, to: OffsetDateTime) {
    advance_by(app, clock, key_id, id, from, to, time::Duration::days(1)).await;
}

/// [`advance`] in steps of `step`.
async fn advance_by(
    app: &TestApp,
    clock: &TestClock,
    key_id: &str,
    id: &str,
    from: OffsetDateTime,
    to: OffsetDateTime,
    step: time::Duration,
) {
    let mut now = from;
    while now < to {
        now = (now + step).min(to);
        clock.set(now);
        app.sim.set_now(Some(now));
        settle(app, key_id, id, now).await;
    }
}

async fn events(app: &TestApp, key: &str, id: &str) -> Vec<Value> {
    let (status, _, body) = app.get(&format!("/v1/watches/{id}/events?client_key={key}&limit=100")).await;
    assert_eq!(status, 200, "{body}");
    body["events"].as_array().cloned().unwrap_or_default()
}

async fn watch(app: &TestApp, key: &str, id: &str) -> Value {
    let (status, _, body) = app.get(&format!("/v1/watches/{id}?client_key={key}")).await;
    assert_eq!(status, 200, "{body}");
    body["watch"].clone()
}

/// The events a whole life must give, in order: (type, from, to).
const LIFE: [(&str, &str, &str); 6] = [
    ("domain.state_changed", "registered", "expiring"),
    ("domain.expiring", "registered", "expiring"),
    ("domain.state_changed", "expiring", "redemption"),
    ("domain.state_changed", "redemption", "pending_delete"),
    ("domain.state_changed", "pending_delete", "available"),
    ("domain.available", "pending_delete", "available"),
];

fn assert_life(events: &[Value]) {
    let seen: Vec<(String, String, String)> = events
        .iter()
        .map(|e| {
            let s = |v: &Value| v.as_str().unwrap_or("?").to_owned();
            (s(&e["type"]), s(&e["data"]["from"]), s(&e["data"]["to"]))
        })
        .collect();
    let want: Vec<(String, String, String)> =
        LIFE.iter().map(|(t, f, to)| ((*t).to_owned(), (*f).to_owned(), (*to).to_owned())).collect();
    assert_eq!(seen, want, "{events:#?}");
    let ids: std::collections::BTreeSet<&str> = events.iter().filter_map(|e| e["id"].as_str()).collect();
    assert_eq!(ids.len(), events.len(), "every event has its own id: {events:#?}");
    assert!(ids.iter().all(|id| id.starts_with("evt_") && id.len() == 36), "{ids:?}");
    let available = &events[5];
    let checked_at = OffsetDateTime::parse(
        available["data"]["checked_at"].as_str().expect("checked_at"),
        &time::format_description::well_known::Rfc3339,
    )
    .expect("rfc3339");
    assert!(checked_at >= FREE_AT, "domain.available before the registry freed the name: {available}");
    assert_eq!(events[1]["data"]["expires_at"], "2026-03-01T00:00:00Z", "{}", events[1]);
    let redemption = events[2]["data"]["epp_status"].as_array().expect("epp_status");
    assert!(redemption.contains(&json!("redemptionPeriod")), "{redemption:?}");
}

#[tokio::test]
async fn watches_endpoints_answer_and_refuse_as_documented() {
    let clock = TestClock::at(T0);
    let app = spawn(&clock).await;
    let key = app.key(KeyOpts::default()).await;
    let other = app.key(KeyOpts::default()).await;
    let embed = app.key(KeyOpts { kind: api::keys::KeyKind::Embed, ..KeyOpts::default() }).await;

    let (status, body) = post(&app, &embed, json!({"domain": "dropping.org"})).await;
    assert_error(status, &body, 403);
    let (status, _, body) = app.get(&format!("/v1/watches?client_key={embed}")).await;
    assert_error(status, &body, 403);
    for bad in [json!({"domain": "not a domain!"}), json!({"domain": "example.invalid-tld-x"}), json!({"nope": 1})] {
        let (status, body) = post(&app, &key, bad.clone()).await;
        assert_error(status, &body, 400);
    }
    let (status, body) = post(&app, &key, json!({"domain": "dropping.org", "events": ["domain.gone"]})).await;
    assert_error(status, &body, 400);
    let (status, body) = post(&app, &key, json!({"domain": "dropping.org", "note": "x".repeat(501)})).await;
    assert_error(status, &body, 400);
    let response = app
        .http
        .post(app.url(&format!("/v1/watches?client_key={key}")))
        .body("domain=dropping.org")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status().as_u16(), 415);

    let (status, body) =
        post(&app, &key, json!({"domain": "Dropping.ORG", "events": ["domain.available"], "note": "shop"})).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!((body["credits_cost"].as_i64(), body["watch"]["monthly_fee"].as_i64()), (Some(20), Some(20)));
    assert_eq!(body["credits_remaining"], 480, "{body}");
    let id = body["watch"]["id"].as_str().expect("id").to_owned();
    assert_eq!(body["watch"]["domain"], "dropping.org");
    assert_eq!(body["watch"]["events"], json!(["domain.available"]));
    // The same domain again: that watch, nothing charged.
    let (status, again) = post(&app, &key, json!({"domain": "dropping.org"})).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!((again["watch"]["id"].as_str(), again["credits_cost"].as_i64()), (Some(id.as_str()), Some(0)));
    let (status, second) = post(&app, &key, json!({"domain": "taken-for-good.org"})).await;
    assert_eq!(status, 201, "{second}");
    let key_id = app.key_id(&key).await;
    let usage = app.store.usage_by_endpoint(&key_id, "2026-01").await.expect("usage");
    assert_eq!(usage, vec![("watch".to_owned(), 40)], "two fees in January's ledger");

    // The first check follows within a tick: the state and the expiry date appear.
    settle(&app, &key_id, &id, T0).await;
    let shown = watch(&app, &key, &id).await;
    assert_eq!(shown["state"], "registered", "{shown}");
    assert_eq!(shown["expires_at"], "2026-03-01T00:00:00Z", "{shown}");
    assert!(shown["last_checked_at"].is_string() && shown["next_check_at"].is_string(), "{shown}");

    // Pages.
    let (status, _, page) = app.get(&format!("/v1/watches?client_key={key}&limit=1")).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["watches"].as_array().map(Vec::len), Some(1));
    assert_eq!(page["watches"][0]["id"], id.as_str());
    let cursor = page["next_cursor"].as_str().expect("cursor").to_owned();
    let (_, _, rest) = app.get(&format!("/v1/watches?client_key={key}&limit=1&cursor={cursor}")).await;
    assert_eq!(rest["watches"][0]["domain"], "taken-for-good.org", "{rest}");
    assert_eq!(rest["next_cursor"], Value::Null);
    let (status, _, body) = app.get(&format!("/v1/watches?client_key={key}&limit=0")).await;
    assert_error(status, &body, 400);

    // Unknown ids and another key's watch are the same 404.
    for path in [format!("/v1/watches/wch_nope?client_key={key}"), format!("/v1/watches/{id}?client_key={other}")] {
        let (status, _, body) = app.get(&path).await;
        assert_error(status, &body, 404);
    }
    let (status, _, body) = app.get(&format!("/v1/watches/{id}/events?client_key={other}")).await;
    assert_error(status, &body, 404);
    let (status, body) = delete(&app, &other, &id).await;
    assert_error(status, &body, 404);
    let (status, _, body) = app.get(&format!("/v1/watches/{id}/events?client_key={key}&after=evt_nope")).await;
    assert_error(status, &body, 400);

    let (status, body) = delete(&app, &key, &id).await;
    assert_eq!((status, &body["deleted"]), (200, &json!(true)), "{body}");
    let (status, body) = delete(&app, &key, &id).await;
    assert_error(status, &body, 404);
    let usage = app.store.usage_by_endpoint(&key_id, "2026-01").await.expect("usage");
    assert_eq!(usage, vec![("watch".to_owned(), 40)], "deleting refunds nothing");

    // A key that cannot pay the fee gets a 429 and no watch.
    let poor = app.key(KeyOpts::default()).await;
    let poor_id = app.key_id(&poor).await;
    let spent = (0..490)
        .map(|_| common::messages::LedgerEvent {
            period: "2026-01".into(),
            charged_at: T0,
            ..dsa_tests::harness::ledger_event(&poor_id, 1, "test")
        })
        .collect();
    app.store.apply_ledger(spent).await.expect("spend");
    let (status, body) = post(&app, &poor, json!({"domain": "dropping.org"})).await;
    assert_error(status, &body, 429);
    assert_eq!(app.store.count_watches(&poor_id).await.expect("count"), 0);
    app.finish(None).await;
}

#[tokio::test]
async fn a_names_whole_life_gives_each_event_once_in_order() {
    let clock = TestClock::at(T0);
    let app = spawn(&clock).await;
    let key = app.key(KeyOpts::default()).await;
    let key_id = app.key_id(&key).await;
    let (status, body) = post(&app, &key, json!({"domain": "dropping.org"})).await;
    assert_eq!(status, 201, "{body}");
    let id = body["watch"]["id"].as_str().expect("id").to_owned();
    settle(&app, &key_id, &id, T0).await;
    assert_eq!(watch(&app, &key, &id).await["state"], "registered");

    advance(&app, &clock, &key_id, &id, T0, datetime!(2026-04-20 00:00 UTC)).await;
    assert_eq!(watch(&app, &key, &id).await["state"], "redemption");
    // The registry's RDAP goes down while DNS keeps saying NXDOMAIN (as it has all along): no
    // definitive answer, so the state stays and nothing is emitted.
    let before = events(&app, &key, &id).await.len();
    app.sim.set_knobs(Knobs { faults: Faults { rdap: Fault::Reset, ..Faults::default() }, ..Knobs::default() });
    advance(&app, &clock, &key_id, &id, datetime!(2026-04-20 00:00 UTC), datetime!(2026-04-23 00:00 UTC)).await;
    let shown = watch(&app, &key, &id).await;
    assert_eq!(shown["state"], "redemption", "{shown}");
    assert_eq!(events(&app, &key, &id).await.len(), before, "nothing emitted without a registry answer");
    let stored = app.store.find_watch(&key_id, &id).await.expect("store").expect("watch");
    assert!(stored.failures > 0, "the failed re-checks are counted: {stored:?}");
    app.sim.set_knobs(Knobs::default());

    // Redemption, far from the drop: the name's registry is asked about twice a day (the clock
    // moves 3 h at a time over 10 days, so every due check runs).
    let rdap_before = app.sim.stats().rdap.queries;
    let (pace_from, pace_to) = (datetime!(2026-04-23 00:00 UTC), datetime!(2026-05-03 00:00 UTC));
    advance_by(&app, &clock, &key_id, &id, pace_from, pace_to, time::Duration::hours(3)).await;
    let per_day = (app.sim.stats().rdap.queries - rdap_before) as f64 / 10.0;
    assert!((1.0..=2.0).contains(&per_day), "registry queries per day in redemption: {per_day}");
    eprintln!("watches: {per_day} registry queries per day in redemption (outside the drop window)");

    advance(&app, &clock, &key_id, &id, pace_to, datetime!(2026-05-19 23:59 UTC)).await;
    let shown = watch(&app, &key, &id).await;
    assert_eq!(shown["state"], "pending_delete", "{shown}");
    let predicted = shown["predicted_drop_at"].as_str().expect("a predicted drop in pending delete").to_owned();
    assert!(predicted.as_str() <= "2026-05-20T00:00:00Z", "the prediction is the earliest drop: {predicted}");
    // Around the drop the checks run every 30 s: the clock moves 10 s at a time.
    advance_by(
        &app,
        &clock,
        &key_id,
        &id,
        datetime!(2026-05-19 23:59 UTC),
        datetime!(2026-05-20 00:03 UTC),
        time::Duration::seconds(10),
    )
    .await;
    let shown = watch(&app, &key, &id).await;
    assert_eq!(shown["state"], "available", "{shown}");
    let life = events(&app, &key, &id).await;
    assert_life(&life);
    let found = OffsetDateTime::parse(
        life[5]["data"]["checked_at"].as_str().expect("checked_at"),
        &time::format_description::well_known::Rfc3339,
    )
    .expect("rfc3339");
    assert!(found - FREE_AT <= time::Duration::seconds(60), "domain.available {} after the drop", found - FREE_AT);
    eprintln!("watches: domain.available {} (simulated) after the registry freed the name", found - FREE_AT);
    advance(&app, &clock, &key_id, &id, datetime!(2026-05-20 00:03 UTC), datetime!(2026-05-22 00:00 UTC)).await;
    assert_life(&events(&app, &key, &id).await);

    // The fee: once a month, January (creation) to May (resets), nothing more.
    for month in 1..=5 {
        let period = format!("2026-{month:02}");
        let usage = app.store.usage_by_endpoint(&key_id, &period).await.expect("usage");
        assert_eq!(usage, vec![("watch".to_owned(), 20)], "{period}");
    }
    // The cursor pages through the same events.
    let all = events(&app, &key, &id).await;
    let first = all[0]["id"].as_str().expect("id");
    let (_, _, page) = app.get(&format!("/v1/watches/{id}/events?client_key={key}&after={first}&limit=2")).await;
    assert_eq!(page["events"][0]["id"], all[1]["id"], "{page}");
    assert_eq!(page["next_cursor"], all[2]["id"], "{page}");
    app.finish(None).await;
}

#[tokio::test]
async fn a_front_killed_mid_life_emits_no_event_twice_and_loses_none() {
    let clock = TestClock::at(T0);
    let app = spawn(&clock).await;
    let key = app.key(KeyOpts::default()).await;
    let key_id = app.key_id(&key).await;
    let (status, body) = post(&app, &key, json!({"domain": "dropping.org"})).await;
    assert_eq!(status, 201, "{body}");
    let id = body["watch"]["id"].as_str().expect("id").to_owned();
    settle(&app, &key_id, &id, T0).await;
    let mid = datetime!(2026-04-16 00:00 UTC);
    advance(&app, &clock, &key_id, &id, T0, mid).await;
    let before = events(&app, &key, &id).await;
    assert_eq!(before.len(), 3, "registered → expiring → redemption so far: {before:#?}");

    // The process dies; another holds the watch's lease when it dies (a check in flight).
    let (sim, db) = app.crash().await;
    let due = mid + time::Duration::days(1);
    let store = api::store::SqliteStore::connect(&format!("sqlite://{}", db.display()), 1).await.expect("open");
    use api::store::Store;
    let leased = store
        .lease_due_watches("killed-front", due.unix_timestamp(), due.unix_timestamp() + 120, 10)
        .await
        .expect("lease");
    assert_eq!(leased.len(), 1, "the watch is due and free");
    store.pool().close().await;

    clock.set(due);
    sim.set_now(Some(due));
    let app = TestApp::spawn_on(sim, db, fast, clock.clock()).await;
    // The dead process's lease holds for its 120 s: no check meanwhile.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let held = app.store.find_watch(&key_id, &id).await.expect("store").expect("watch");
    assert_eq!(held.last_checked_at, leased[0].last_checked_at, "a live lease is respected");
    // Once it has run out, this process re-checks, and every event the dead one wrote stays once.
    let after_lease = due + time::Duration::seconds(121);
    clock.set(after_lease);
    app.sim.set_now(Some(after_lease));
    settle(&app, &key_id, &id, after_lease).await;
    advance(&app, &clock, &key_id, &id, after_lease, datetime!(2026-05-22 00:00 UTC)).await;
    let all = events(&app, &key, &id).await;
    assert_life(&all);
    assert_eq!(&all[..3], &before[..], "the events before the crash are the same records");
    app.finish(None).await;
}

#[tokio::test]
async fn a_free_name_registered_by_someone_gives_domain_registered() {
    let clock = TestClock::at(T0);
    let app = spawn(&clock).await;
    let key = app.key(KeyOpts::default()).await;
    let key_id = app.key_id(&key).await;
    let (status, body) = post(&app, &key, json!({"domain": "claimed.org"})).await;
    assert_eq!(status, 201, "{body}");
    let id = body["watch"]["id"].as_str().expect("id").to_owned();
    settle(&app, &key_id, &id, T0).await;
    assert_eq!(watch(&app, &key, &id).await["state"], "available", "free when the watch starts");
    assert!(events(&app, &key, &id).await.is_empty(), "the first look is the baseline");
    advance(&app, &clock, &key_id, &id, T0, datetime!(2026-01-13 00:00 UTC)).await;
    let shown = watch(&app, &key, &id).await;
    assert_eq!(
        (shown["state"].as_str(), shown["expires_at"].as_str()),
        (Some("registered"), Some("2027-01-10T00:00:00Z"))
    );
    let seen: Vec<(Value, Value)> =
        events(&app, &key, &id).await.iter().map(|e| (e["type"].clone(), e["data"]["to"].clone())).collect();
    assert_eq!(
        seen,
        vec![(json!("domain.state_changed"), json!("registered")), (json!("domain.registered"), json!("registered"))]
    );
    app.finish(None).await;
}

/// A name registered far from expiry is checked at the registry weekly; in between the scheduler
/// only asks DNS whether it is still delegated. The registrar deletes it long before its expiry
/// date (the timeline's redemption starts 2026-01-20, its expiry date is 2027): the delegation
/// disappears, and the next DNS look (every 6 h) sends it to the registry at once, instead of at
/// its weekly check (2026-01-22).
#[tokio::test]
async fn a_delegation_that_disappears_gets_a_registered_name_rechecked_soon() {
    let clock = TestClock::at(T0);
    let app = spawn(&clock).await;
    let key = app.key(KeyOpts::default()).await;
    let key_id = app.key_id(&key).await;
    let (status, body) = post(&app, &key, json!({"domain": "deleted-early.org"})).await;
    assert_eq!(status, 201, "{body}");
    let id = body["watch"]["id"].as_str().expect("id").to_owned();
    settle(&app, &key_id, &id, T0).await;
    assert_eq!(watch(&app, &key, &id).await["state"], "registered");

    // Delegated for 19 days: DNS looks only between the weekly registry checks (T0 + 7, + 14 d).
    let (rdap, dns) = (app.sim.stats().rdap.queries, app.sim.stats().dns.queries);
    let quiet_to = datetime!(2026-01-19 23:00 UTC);
    advance_by(&app, &clock, &key_id, &id, T0, quiet_to, time::Duration::hours(1)).await;
    let registry = app.sim.stats().rdap.queries - rdap;
    let looks = app.sim.stats().dns.queries - dns;
    assert!(registry <= 3, "registry queries while delegated: {registry}");
    assert!(looks >= 19 * 3, "a DNS look about every 6 h: {looks} DNS queries in 19 days");
    assert_eq!(watch(&app, &key, &id).await["state"], "registered");
    eprintln!("watches: {registry} registry queries and {looks} DNS queries in 19 days for a delegated name");

    // Deleted: the next DNS look finds no delegation and the registry says redemption.
    advance_by(&app, &clock, &key_id, &id, quiet_to, datetime!(2026-01-20 07:00 UTC), time::Duration::minutes(30))
        .await;
    let shown = watch(&app, &key, &id).await;
    assert_eq!(shown["state"], "redemption", "seen within one DNS look of the deletion: {shown}");
    let seen = events(&app, &key, &id).await;
    let change = seen.iter().find(|e| e["data"]["to"] == "redemption").expect("the state change");
    let at = OffsetDateTime::parse(
        change["data"]["checked_at"].as_str().expect("checked_at"),
        &time::format_description::well_known::Rfc3339,
    )
    .expect("rfc3339");
    let after = at - datetime!(2026-01-20 00:00 UTC);
    assert!(after <= time::Duration::hours(6), "redemption seen {after} after the deletion");
    eprintln!("watches: a deletion far from expiry seen {after} (simulated) after it, through DNS");
    app.finish(None).await;
}

/// `dsa serve` (the real binary, its own clock) SIGKILLed while its scheduler is re-checking a
/// dozen watches that the simulator's timelines move into redemption, then started again on the
/// same SQLite file: every watch still gives each of its events exactly once, in order, and the
/// events written before the kill are the same records after it.
///
/// The binary's clock is the real one; the registries' is the simulator's, which the test moves
/// through the phases. The pace settings (`[watches]` in the config file) are seconds, so every
/// state is re-checked every 2 s of real time; RDAP answers take 300 ms, so re-checks are in
/// flight (and leased, `lease_secs = 3`) when the process dies.
#[tokio::test(flavor = "multi_thread")]
async fn dsa_serve_sigkilled_while_rechecking_loses_no_event_and_emits_none_twice() {
    use std::process::Stdio;

    use api::store::{NewKey, SqliteStore, Store};
    use dsa_tests::harness::binary::dsa_binary;
    use dsa_tests::sim::{Latency, Simulator};

    const NAMES: usize = 12;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut toml =
        String::from("[[tld]]\nsuffix = \"org\"\nprotocols = [\"dns\", \"rdap\"]\nrdap_family = \"centralnic\"\n");
    for n in 0..NAMES {
        // Far from expiry on the binary's (real) clock; the phases follow the simulator's.
        toml.push_str(&format!(
            "\n[[timeline]]\nname = \"kill{n}.org\"\nexpires_at = \"2031-01-01T00:00:00Z\"\n\
             redemption_at = \"2026-01-10T00:00:00Z\"\npending_delete_at = \"2026-01-20T00:00:00Z\"\n\
             free_at = \"2026-01-25T00:00:00Z\"\n"
        ));
    }
    let sim = Simulator::start(Scenario::from_toml(&toml).expect("scenario")).await.expect("simulator");
    sim.set_now(Some(T0));
    sim.set_knobs(Knobs { latency_ms: Latency { rdap: 300, ..Latency::default() }, ..Knobs::default() });

    let dir = std::env::temp_dir().join(format!("dsa-watch-kill-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("dsa.toml");
    let watches = "\n[engine.limits.rdap]\nper_second = 200.0\nburst = 200\nconcurrency = 16\n\
         \n[watches]\ntick_ms = 100\nbatch = 50\nconcurrency = 4\nlease_secs = 3\njob_wait_secs = 5.0\n\
         registered_interval_secs = 2\nnear_interval_secs = 2\ndrop_interval_secs = 1\nretry_secs = 1\n\
         reserved_interval_secs = 2\ndelegation_interval_secs = 0\n";
    std::fs::write(&config, format!("{}{watches}", sim.engine_config_toml())).expect("write config");
    let db = format!("sqlite://{}?mode=rwc", dir.join("dsa.db").display());
    let store = SqliteStore::connect(&db, 2).await.expect("open the database");
    store.migrate().await.expect("migrate");
    let (key, key_hash) = api::keys::generate(api::keys::KeyKind::Server);
    let record = store
        .create_key(NewKey {
            key_hash,
            kind: api::keys::KeyKind::Server,
            plan: api::keys::Plan::Pro,
            pricing_enabled: false,
            show_purchase_button: false,
            default_commission_percent: None,
            purchase_url: None,
            allowed_origins: Vec::new(),
            label: "watch kill test".into(),
        })
        .await
        .expect("key");
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
    let start = || {
        std::process::Command::new(dsa_binary())
            .arg("--config")
            .arg(&config)
            .arg("serve")
            .env("DSA_SERVER__LISTEN", format!("127.0.0.1:{port}"))
            .env("DSA_DATABASE__URL", &db)
            .env("DSA_BOOTSTRAP__CREATE_DEV_KEY", "false")
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
    // Waits until every watch is in `state` (read from the SQLite file).
    let all_in = |state: api::watches::Lifecycle| {
        let store = &store;
        let key_id = record.id.clone();
        async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
            loop {
                let watches = store.list_watches(&key_id, None, 100).await.expect("watches");
                if watches.len() == NAMES && watches.iter().all(|w| w.state == state) {
                    return;
                }
                assert!(tokio::time::Instant::now() < deadline, "not all {state:?}: {watches:#?}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };

    let mut first = start();
    up(http.clone(), base.clone()).await;
    for n in 0..NAMES {
        let response = http
            .post(format!("{base}/v1/watches?client_key={key}"))
            .json(&json!({"domain": format!("kill{n}.org")}))
            .send()
            .await
            .expect("create");
        assert_eq!(response.status().as_u16(), 201, "{:?}", response.text().await);
    }
    all_in(api::watches::Lifecycle::Registered).await;

    // Deleted: kill the process once some, not all, watches have seen the redemption (the
    // others are being re-checked, or queued).
    sim.set_now(Some(datetime!(2026-01-10 00:00 UTC)));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let seen_before_kill = loop {
        let watches = store.list_watches(&record.id, None, 100).await.expect("watches");
        let done = watches.iter().filter(|w| w.state == api::watches::Lifecycle::Redemption).count();
        if done > 0 {
            break done;
        }
        assert!(tokio::time::Instant::now() < deadline, "no watch reached redemption: {watches:#?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    first.kill().expect("SIGKILL");
    let _ = first.wait();
    let before = store.list_events(&record.id, None, 0, 1000).await.expect("events");
    let leased = store
        .list_watches(&record.id, None, 100)
        .await
        .expect("watches")
        .iter()
        .filter(|w| w.state == api::watches::Lifecycle::Registered)
        .count();
    eprintln!("watches: SIGKILL with {seen_before_kill} of {NAMES} watches in redemption, {leased} not yet");

    let mut second = start();
    up(http.clone(), base.clone()).await;
    all_in(api::watches::Lifecycle::Redemption).await;
    sim.set_now(Some(datetime!(2026-01-20 00:00 UTC)));
    all_in(api::watches::Lifecycle::PendingDelete).await;
    sim.set_now(Some(datetime!(2026-01-25 00:00 UTC)));
    all_in(api::watches::Lifecycle::Available).await;
    // A few more rounds: nothing more is emitted.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let _ = second.kill();
    let _ = second.wait();

    let after = store.list_events(&record.id, None, 0, 1000).await.expect("events");
    for old in &before {
        assert!(after.contains(old), "an event written before the kill changed or vanished: {old:?}");
    }
    let ids: std::collections::BTreeSet<&str> = after.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids.len(), after.len(), "no event id twice");
    let want = [
        ("domain.state_changed", "registered", "redemption"),
        ("domain.state_changed", "redemption", "pending_delete"),
        ("domain.state_changed", "pending_delete", "available"),
        ("domain.available", "pending_delete", "available"),
    ];
    for watch in store.list_watches(&record.id, None, 100).await.expect("watches") {
        let seen: Vec<(&str, &str, &str)> = after
            .iter()
            .filter(|e| e.subject.as_deref() == Some(watch.id.as_str()))
            .map(|e| {
                (e.event_type.as_str(), e.data["from"].as_str().unwrap_or("?"), e.data["to"].as_str().unwrap_or("?"))
            })
            .collect();
        assert_eq!(seen, want, "{}: each event once, in order", watch.domain);
    }
    assert_eq!(after.len(), NAMES * want.len());
    let _ = std::fs::remove_dir_all(&dir);
}
