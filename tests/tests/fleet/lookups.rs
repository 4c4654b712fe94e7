//! `/v1/dns` and `/v1/whois` through the fleet: each kind of lookup on its own subject and
//! consumer, workers started for chosen kinds only (`dsa worker --kinds`).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use api::keys::Plan;
use common::lookup::LookupKind;

use super::get;
use dsa_tests::harness::fleet::{Fleet, PoolStats, consumer_info, settled, wait_until};

#[tokio::test]
async fn each_kind_has_its_own_consumer_and_a_check_worker_never_takes_a_dns_job() {
    let mut fleet = Fleet::builder("kinds")
        .worker_kinds("check")
        .configure(|s| s.engine.records.dns_deadline_secs = 1.0)
        .start()
        .await;
    let check_stats = fleet.pool_stats().clone();
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();
    let front = fleet.front(0);

    // Checks flow; a DNS job waits on its own consumer, untouched by the check-only worker.
    let (status, body) = get(&http, front.url(&format!("/v1/domains/check?client_key={key}&domain=example.com"))).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = get(&http, front.url(&format!("/v1/dns?client_key={key}&domain=example.com&types=A"))).await;
    assert_eq!(status, 502, "no dns worker: no answer in time, not charged: {body}");
    let js = fleet.jetstream().await;
    let names = fleet.names().clone();
    let dns_info = consumer_info(&js, &names.jobs_stream, names.jobs_consumer(LookupKind::Dns)).await;
    assert_eq!(dns_info.num_pending, 1, "the dns job waits for a dns worker");
    assert_eq!(dns_info.config.filter_subject, names.jobs_subject(LookupKind::Dns));
    let check_info = consumer_info(&js, &names.jobs_stream, names.jobs_consumer(LookupKind::Check)).await;
    assert_eq!(check_info.config.filter_subject, names.jobs_subject(LookupKind::Check));
    assert_eq!(check_stats.answered.load(Ordering::Relaxed), 1, "the check worker answered the check only");

    // A worker for whois and dns takes the waiting (now expired) job and answers new ones.
    let lookup_stats = Arc::new(PoolStats::default());
    let mut lookup_kinds = fleet.settings().clone();
    lookup_kinds.fleet.worker_kinds = "whois,dns".into();
    fleet.add_worker_with(&lookup_kinds, lookup_stats.clone());
    let front = fleet.front(0);
    let (status, body) =
        get(&http, front.url(&format!("/v1/dns?client_key={key}&domain=example.com&types=A,MX"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["records"]["A"][0]["value"], "192.0.2.10");
    let (status, body) = get(&http, front.url(&format!("/v1/whois?client_key={key}&domain=google.com"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["whois"]["registrar"], "MarkMonitor Inc.");
    assert_eq!(body["whois"]["source"], "dsa_domain_whois");
    assert_eq!(body["credits_remaining"], 500 - 1 - 1 - 2);
    assert!(
        wait_until(Duration::from_secs(5), || async { lookup_stats.terminated.load(Ordering::Relaxed) == 1 }).await,
        "the expired dns job is terminated, not answered"
    );
    assert_eq!(check_stats.answered.load(Ordering::Relaxed), 1, "no whois or dns job reached the check worker");
    assert_eq!(settled(fleet.store(), &key_id, 3).await, 3, "three charges: check, dns, whois");

    fleet.stop().await;
}

#[tokio::test]
async fn a_bulk_sends_its_jobs_together_and_the_ledger_settles_exactly_what_was_charged() {
    let fleet = Fleet::builder("bulk")
        // A name without a verdict waits this long (the worker retries it until then).
        .configure(|s| s.engine.check_deadline_secs = 2.0)
        .start()
        .await;
    let (front, sim, store) = (fleet.front(0), fleet.sim(), fleet.store());
    let worker_stats = fleet.pool_stats().clone();
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();

    // Every uncached name waits 300 ms for its RDAP answer: one after the other, four would
    // take 1.2 s; the bulk's jobs go out together.
    sim.set_knobs(dsa_tests::sim::Knobs {
        latency_ms: dsa_tests::sim::Latency { rdap: 300, ..Default::default() },
        ..Default::default()
    });
    let names = [
        "fleet-bulk-1.com",
        "fleet-bulk-2.org",
        "FLEET-BULK-1.com",
        "fleet-bulk-3.dev",
        "bad_name.com",
        "fleet-bulk-4.com",
    ];
    let started = std::time::Instant::now();
    let r = http
        .post(front.url(&format!("/v1/domains/bulk?client_key={key}")))
        .json(&serde_json::json!({ "domains": names }))
        .send()
        .await
        .expect("post");
    let elapsed = started.elapsed();
    let status = r.status().as_u16();
    let body: serde_json::Value = r.json().await.expect("json");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["total"], 6);
    let domains = body["domains"].as_array().expect("domains");
    let checked: Vec<&str> = domains.iter().filter_map(|d| d["domain"].as_str()).collect();
    assert_eq!(checked, ["fleet-bulk-1.com", "fleet-bulk-2.org", "fleet-bulk-3.dev", "fleet-bulk-4.com"]);
    assert!(domains.iter().all(|d| d["success"] == true && d["available"] == true), "{body}");
    assert_eq!(body["invalid"][0]["input"], "bad_name.com");
    assert_eq!(body["credits_cost"], 4);
    assert_eq!(body["credits_remaining"], 496);
    assert_eq!(worker_stats.answered.load(Ordering::Relaxed), 4, "one job per distinct valid name");
    assert!(elapsed < Duration::from_millis(1200), "four 300 ms checks in parallel took {elapsed:?}");

    // Streamed: one ledger entry per charged line; the cached names answer at once.
    let r = http
        .get(front.url(&format!("/v1/domains/bulk?client_key={key}&domains=fleet-bulk-1.com,fleet-bulk-2.org")))
        .header("accept", "application/x-ndjson")
        .send()
        .await
        .expect("get");
    assert_eq!(r.status().as_u16(), 200);
    let text = r.text().await.expect("body");
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[..2].iter().all(|l| l["verdict"]["cached"] == true), "{text}");
    assert_eq!(lines[2]["credits_cost"], 2);
    assert_eq!(lines[2]["credits_remaining"], 494);

    // WHOIS down: the .af name (WHOIS only) gets no verdict and is not charged; the .com one is.
    sim.set_knobs(dsa_tests::sim::Knobs {
        faults: dsa_tests::sim::Faults { whois: dsa_tests::sim::Fault::Reset, ..Default::default() },
        ..Default::default()
    });
    let (status, body) =
        get(&http, front.url(&format!("/v1/domains/bulk?client_key={key}&domains=fleet-bulk-5.af,fleet-bulk-5.com")))
            .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["domains"][0]["success"], false, "{body}");
    assert_eq!(body["domains"][1]["success"], true, "{body}");
    assert_eq!(body["credits_cost"], 1);
    assert_eq!(body["credits_remaining"], 493);

    assert_eq!(settled(store, &key_id, 4).await, 4, "one entry per JSON bulk, one per streamed line");
    let period = common::messages::billing_period(time::OffsetDateTime::now_utc());
    assert_eq!(store.settled_usage(&key_id, &period).await.expect("usage"), 7, "4 + 2 + 1 credits, no more");
    let by_endpoint = store.usage_by_endpoint(&key_id, &period).await.expect("usage");
    assert_eq!(by_endpoint, vec![("bulk".to_owned(), 7)]);

    fleet.stop().await;
}

/// Suggestions in the fleet: generated by the front, the `check=1` pre-check on the `dns` subject
/// answered by a worker, both charges settled by the ledger.
#[tokio::test]
async fn suggestions_with_a_precheck_through_the_fleet() {
    let fleet = Fleet::start("suggest", 1, 1).await;
    let (front, store) = (fleet.front(0), fleet.store());
    let worker_stats = fleet.pool_stats().clone();
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();
    let (status, body) = get(
        &http,
        front.url(&format!("/v1/domains/suggest?client_key={key}&keyword=example&tlds=.com,.net&limit=5&check=1")),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["total"], 5, "{body}");
    assert_eq!(body["credits_cost"], 10, "{body}");
    assert_eq!(body["credits_remaining"], 490);
    let items = body["suggestions"].as_array().expect("suggestions");
    let example = items.iter().find(|s| s["domain"] == "example.com").expect("example.com");
    assert_eq!(example["available"], false, "delegated: {example}");
    assert_eq!(example["checked_by"], "dns");
    assert!(items.iter().all(|s| s["available"] != true), "never available on DNS alone: {body}");
    assert!(worker_stats.answered.load(Ordering::Relaxed) >= 5, "the pre-checks ran on the worker");
    // One charge of 10: suggestions and their pre-check are committed together (issue 32).
    assert_eq!(settled(store, &key_id, 1).await, 1, "suggestions + pre-check, one event");
    let period = common::messages::billing_period(time::OffsetDateTime::now_utc());
    assert_eq!(store.settled_usage(&key_id, &period).await.expect("usage"), 10);
    fleet.stop().await;
}

#[tokio::test]
async fn a_fleet_front_answers_the_catalogue_and_serves_stale_from_what_its_workers_returned() {
    let fleet = Fleet::builder("tlds")
        .configure(|s| {
            // Taken names go to the registry (no DNS pre-check) and nothing stays fresh in any cache.
            s.engine.dns.enabled = false;
            s.engine.cache.taken_ttl_secs = 0;
            s.engine.cache.available_ttl_secs = 0;
            s.engine.check_deadline_secs = 2.0;
        })
        .start()
        .await;
    let (front, sim) = (fleet.front(0), fleet.sim());
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();

    let (status, body) = get(&http, front.url("/v1/tlds")).await;
    assert_eq!(status, 200);
    assert!(body["count"].as_u64().is_some_and(|n| n > 1000), "the listing answers in fleet mode too");
    let check = front.url(&format!("/v1/domains/check?client_key={key}&domain=example.com"));
    let (status, body) = get(&http, check.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["verdict"]["stale"], false);

    // The front runs no probes: its method windows stay empty, but it saw the worker's verdict.
    let (status, body) = get(&http, front.url("/v1/tlds/com")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["health"]["probes_in_process"], false);
    assert!(body["health"]["last_definitive_at"].is_string(), "{body}");
    let methods = body["health"]["methods"].as_array().expect("methods");
    assert!(methods.iter().all(|m| m["attempts"] == 0), "{body}");

    // The registry fails: the worker has no verdict in time, the front serves the one it kept.
    sim.set_knobs(dsa_tests::sim::Knobs {
        faults: dsa_tests::sim::Faults { rdap: dsa_tests::sim::Fault::Reset, whois: dsa_tests::sim::Fault::Reset },
        ..Default::default()
    });
    let (status, body) = get(&http, check).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!((body["verdict"]["stale"].as_bool(), body["verdict"]["cached"].as_bool()), (Some(true), Some(true)));
    assert!(body["verdict"]["age_secs"].is_u64(), "{body}");
    assert_eq!(body["credits_cost"], 1, "a stale answer is charged like a cache hit");
    assert_eq!(settled(fleet.store(), &key_id, 2).await, 2);

    fleet.stop().await;
}
