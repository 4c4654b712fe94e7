//! Webhooks in the fleet (issue 25): two fronts run the delivery loop over one Postgres; every
//! event emitted arrives at the receiver exactly once (the fan-out and the claims are shared
//! through `FOR UPDATE SKIP LOCKED` and leases), verified by the `standardwebhooks` package.

use std::time::Duration;

use api::keys::Plan;
use dsa_tests::harness::fleet::Fleet;
use dsa_tests::harness::webhooks::Receiver;
use serde_json::json;

#[tokio::test]
async fn two_fronts_deliver_every_event_exactly_once() {
    let receiver = Receiver::start().await;
    let fleet = Fleet::builder("hooks")
        .fronts(2)
        .workers(1)
        .configure(|s| {
            s.webhooks.test_only_allow_loopback = true;
            s.webhooks.poll_ms = 20;
            s.webhooks.batch = 8;
        })
        .start()
        .await;
    let (key, key_id) = fleet.key(Plan::Pro).await;
    let http = reqwest::Client::new();
    let created: serde_json::Value = http
        .post(fleet.front(1).url(&format!("/v1/webhooks?client_key={key}")))
        .json(&json!({"url": receiver.url("/hook")}))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("json");
    let secret = created["secret"].as_str().unwrap_or_else(|| panic!("created: {created}")).to_owned();
    receiver.config(json!({"secrets": [secret], "mode": "ok"})).await;
    let events = 120;
    let mut ids = Vec::new();
    for n in 0..events {
        let id = api::events::event_id(&["fleet-hooks", &key_id, &n.to_string()]);
        fleet
            .store()
            .emit_event(api::events::NewEvent {
                id: id.clone(),
                key_id: key_id.clone(),
                event_type: "domain.available".into(),
                subject: None,
                occurred_at: time::OffsetDateTime::now_utc(),
                data: json!({"n": n}),
            })
            .await
            .expect("emit");
        ids.push(id);
    }
    let got = receiver.wait_for(events).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let all = receiver.received().await;
    for id in &ids {
        assert_eq!(all.iter().filter(|r| r["id"] == id.as_str()).count(), 1, "{id} exactly once");
    }
    assert!(got.iter().all(|r| r["verified"] == json!([0])), "signatures verify");
    fleet.stop().await;
}
