//! A request can be followed across roles (issue 24): the front, a worker and the ledger consumer
//! run as separate `dsa` processes logging JSON lines (`DSA_LOG_FORMAT=json`, debug level for dsa's
//! own crates); the request id the client sent is found in all three logs — the front's request
//! span, the worker's job span, the ledger's settled-charge line.

use std::time::Duration;

use api::keys::Plan;
use dsa_tests::harness::fleet::{Fleet, free_port, settled, wait_until};

/// The JSON log lines of `path` that mention `id` anywhere (a field or a span's field).
fn lines_with(path: &std::path::Path, id: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter(|l| l.contains(id))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("a log line is not JSON ({e}): {l}")))
        .collect()
}

#[tokio::test]
async fn a_request_id_is_found_in_the_fronts_the_workers_and_the_ledgers_log() {
    let mut fleet = Fleet::builder("trace").fronts(0).workers(0).ledger(false).start().await;
    let (key, key_id) = fleet.key(Plan::Free).await;
    let env = [("DSA_LOG_FORMAT", "json"), ("DSA_LOG", "warn,api=debug,workers=debug,tower_http=debug")];
    let mut front_settings = fleet.settings().clone();
    let port = free_port();
    front_settings.server.listen = format!("127.0.0.1:{port}").parse().expect("addr");
    let front = fleet.spawn_process_with_env("front", &front_settings, &env);
    let settings = fleet.settings().clone();
    let worker = fleet.spawn_process_with_env("worker", &settings, &env);
    let ledger = fleet.spawn_process_with_env("ledger", &settings, &env);
    let http = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    assert!(
        wait_until(Duration::from_secs(20), || async {
            http.get(format!("{base}/readyz")).send().await.is_ok_and(|r| r.status().is_success())
        })
        .await,
        "the front process became ready"
    );

    // An uncached name, so the front publishes a job a worker answers, and a charge the ledger
    // settles.
    let id = format!("trace-{}", uuid::Uuid::now_v7().simple());
    let response = http
        .get(format!("{base}/v1/domains/check?client_key={key}&domain=dsa-demo-available.com"))
        .header("x-request-id", &id)
        .send()
        .await
        .expect("check");
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.headers().get("x-request-id").and_then(|v| v.to_str().ok()), Some(id.as_str()));
    assert_eq!(settled(fleet.store(), &key_id, 1).await, 1, "the charge is settled");

    let mut missing = Vec::new();
    for (role, i) in [("front", front), ("worker", worker), ("ledger", ledger)] {
        let log = fleet.process(i).log.clone();
        let found = wait_until(Duration::from_secs(5), || {
            let log = log.clone();
            let id = id.clone();
            async move { !lines_with(&log, &id).is_empty() }
        })
        .await;
        if !found {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            missing.push(format!("{role}: no line with {id}; last lines: {tail:#?}"));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
    // The worker's line names the job's span with the id as a field, not just a message.
    let worker_lines = lines_with(&fleet.process(worker).log.clone(), &id);
    assert!(
        worker_lines.iter().any(|l| l.to_string().contains("\"request_id\":\"") && l.to_string().contains("job")),
        "the worker logs the id as the job span's request_id: {worker_lines:#?}"
    );
    fleet.stop().await;
}
