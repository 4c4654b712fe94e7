//! Watches through the fleet (issue 25): two fronts each running the scheduler over one Postgres
//! (leases keep them apart), the watch jobs on their own JetStream subject and consumer, a
//! worker answering them, the fee through the ledger stream and Postgres. A name's whole life
//! from the simulator's timeline gives each event once, in order, even when one front is killed
//! midway.

use std::time::Duration;

use api::keys::Plan;
use common::lookup::LookupKind;
use dsa_tests::harness::app::TestClock;
use dsa_tests::harness::fleet::{Fleet, consumer_info};
use dsa_tests::sim::Scenario;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::macros::datetime;

use super::get;

const T0: OffsetDateTime = datetime!(2026-01-01 00:00 UTC);

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
"#,
    )
    .expect("scenario")
}

/// Waits until the schedulers have caught up with the clock (the watch is not due).
async fn settle(fleet: &Fleet, key_id: &str, id: &str, now: OffsetDateTime) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let watch = fleet.store().find_watch(key_id, id).await.expect("store").expect("watch");
        if watch.next_check_at > now.unix_timestamp() {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "the schedulers did not catch up at {now}: {watch:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn advance(fleet: &Fleet, clock: &TestClock, key_id: &str, id: &str, from: OffsetDateTime, to: OffsetDateTime) {
    let mut now = from;
    while now < to {
        now = (now + time::Duration::days(1)).min(to);
        clock.set(now);
        fleet.sim().set_now(Some(now));
        settle(fleet, key_id, id, now).await;
    }
}

#[tokio::test]
async fn watches_live_through_the_fleet_and_survive_a_killed_front() {
    let clock = TestClock::at(T0);
    let mut fleet = Fleet::builder("watches")
        .scenario(scenario())
        .fronts(2)
        .clock(clock.clock())
        .configure(|s| {
            s.watches.tick_ms = 20;
            s.watches.job_wait_secs = 5.0;
        })
        .start()
        .await;
    fleet.sim().set_now(Some(T0));
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();

    let response = http
        .post(fleet.front(0).url(&format!("/v1/watches?client_key={key}")))
        .json(&json!({"domain": "dropping.org"}))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status().as_u16(), 201);
    let body: Value = response.json().await.expect("json");
    let id = body["watch"]["id"].as_str().expect("id").to_owned();
    settle(&fleet, &key_id, &id, T0).await;
    let (status, shown) = get(&http, fleet.front(1).url(&format!("/v1/watches/{id}?client_key={key}"))).await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["watch"]["state"], "registered", "{shown}");
    let js = fleet.jetstream().await;
    let names = fleet.names().clone();
    let info = consumer_info(&js, &names.jobs_stream, names.jobs_consumer(LookupKind::Watch)).await;
    assert_eq!(info.config.filter_subject, names.jobs_subject(LookupKind::Watch));
    assert!(info.delivered.consumer_sequence >= 1, "the re-check went through its own consumer: {info:?}");

    let mid = datetime!(2026-04-16 00:00 UTC);
    advance(&fleet, &clock, &key_id, &id, T0, mid).await;
    // Front 0 dies; front 1's scheduler carries on (front 0's leases run out).
    fleet.crash_front(0);
    advance(&fleet, &clock, &key_id, &id, mid, datetime!(2026-05-22 00:00 UTC)).await;

    let (status, page) =
        get(&http, fleet.front(1).url(&format!("/v1/watches/{id}/events?client_key={key}&limit=100"))).await;
    assert_eq!(status, 200, "{page}");
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
    assert_eq!(seen, want, "{page}");

    // The fee: January through the ledger stream (creation), February to May at each reset.
    for month in 1..=5 {
        let period = format!("2026-{month:02}");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let usage = fleet.store().usage_by_endpoint(&key_id, &period).await.expect("usage");
            if usage == vec![("watch".to_owned(), 20)] {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "{period}: {usage:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    fleet.stop().await;
}
