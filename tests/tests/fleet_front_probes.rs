//! A fleet front builds no probe: its process holds a verdict book (catalogue, cache, health,
//! routes) and no worker engine, so no RDAP, WHOIS or DNS client and no politeness limiter exist
//! in it. Its own test binary, so that the process-wide count of probes built
//! (`workers::engine::probes_built`) is not shared with tests that run workers in process: the
//! worker here is a `dsa worker` process.

use std::time::Duration;

use api::keys::Plan;
use dsa_tests::harness::fleet::Fleet;

async fn get(http: &reqwest::Client, url: String) -> (u16, serde_json::Value) {
    let r = http.get(url).send().await.expect("request");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(serde_json::Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_front_serves_checks_without_building_a_probe() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // The front and the ledger consumer in this process; the worker a `dsa worker` process.
    let mut fleet = Fleet::builder("probes").fronts(1).workers(0).ledger(true).start().await;
    let settings = fleet.settings().clone();
    fleet.spawn_process("worker", &settings);
    let (key, _) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();

    // Fresh checks (answered by the worker process), then the same again (the front's own cache).
    for domain in ["dsa-demo-available.com", "example.com", "dsa-demo-available.com", "example.com"] {
        let url = fleet.url(&format!("/v1/domains/check?client_key={key}&domain={domain}"));
        let mut answered = None;
        // The worker process may still be starting: its first check can time out (502).
        for _ in 0..30 {
            let (status, body) = get(&http, url.clone()).await;
            if status == 200 {
                answered = Some(body);
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let body = answered.unwrap_or_else(|| panic!("no verdict for {domain}"));
        assert_eq!(body["domain"], domain, "{body}");
    }
    let (status, body) = get(&http, fleet.url("/v1/tlds/com")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["health"]["probes_in_process"], false, "{body}");
    assert!(body["health"]["methods"].as_array().is_some_and(|m| m.iter().all(|m| m.get("budget").is_none())));

    assert_eq!(workers::engine::probes_built(), 0, "the fleet front's process built a probe");
    // The count is live: one engine (DNS, RDAP, WHOIS clients and a politeness limiter) is four.
    let _engine = workers::engine::Engine::new(settings.engine.clone()).expect("engine");
    assert_eq!(workers::engine::probes_built(), 4);
    fleet.stop().await;
}
