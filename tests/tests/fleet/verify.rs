//! `GET /v1/domains/suggest?verify=N` through the fleet (issue 27): the front asks the workers over
//! NATS like a check does (DNS pre-filter on the `dns` subject, confirmations on the `check`
//! subject), keeps their verdicts, and the charge (5 + 1 per confirmed name) is settled by the
//! ledger.

use api::keys::Plan;
use dsa_tests::harness::fleet::{Fleet, settled};
use dsa_tests::sim::Truth;

use super::get;

#[tokio::test]
async fn verified_suggestions_through_the_fleet() {
    let fleet = Fleet::start("verify", 1, 1).await;
    let (front, store, sim) = (fleet.front(0), fleet.store(), fleet.sim());
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();
    // The demo scenario has `suspended-shop.com` on hold: not delegated, yet registered.
    let url = front.url(&format!(
        "/v1/domains/suggest?client_key={key}&keyword=suspended%20shop&tlds=.com,.net,.org&limit=10&verify=4"
    ));
    let stats = sim.stats();
    let before = stats.rdap.queries + stats.whois.queries;
    let (status, body) = get(&http, url.clone()).await;
    assert_eq!(status, 200, "{body}");
    let v = &body["verification"];
    assert_eq!(v["confirmed"], 4, "{body}");
    assert_eq!(body["credits_cost"], 9, "{body}");
    assert_eq!(body["credits_remaining"], 491, "{body}");
    let items = body["suggestions"].as_array().expect("suggestions");
    for (i, s) in items.iter().enumerate() {
        let domain = s["domain"].as_str().expect("domain");
        if i < 4 {
            assert_eq!(s["available"], true, "{s}");
            assert_eq!(s["checked_by"], "registry", "{s}");
            assert_eq!(s["verdict"]["status"], "available", "{s}");
        }
        if s["available"] == true {
            assert_eq!(sim.scenario().truth(domain), Truth::Available, "{domain}: {s}");
        }
    }
    assert!(items.iter().all(|s| s["domain"] != "suspended-shop.com" || s["available"] != true), "{body}");
    let first = v["registry_queries"].as_u64().expect("registry_queries");
    let stats = sim.stats();
    let spent = stats.rdap.queries + stats.whois.queries - before;
    assert!(first >= 4 && spent >= first, "reported {first}, the simulator saw {spent}");

    // Again: the front's verdict book answers, fewer registry queries.
    let (status, again) = get(&http, url).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["verification"]["confirmed"], 4, "{again}");
    let second = again["verification"]["registry_queries"].as_u64().expect("registry_queries");
    assert!(second < first, "cache reuse: {second} < {first}: {again}");
    assert_eq!(again["credits_cost"], 9, "{again}");

    assert_eq!(settled(store, &key_id, 2).await, 2, "one ledger event per request");
    let period = common::messages::billing_period(time::OffsetDateTime::now_utc());
    assert_eq!(store.settled_usage(&key_id, &period).await.expect("usage"), 18);
    fleet.stop().await;
}
