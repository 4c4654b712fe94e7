//! Bulk jobs (`/v1/jobs`, issue 26) in the fleet: Postgres holds the job, JetStream carries its
//! checks and charges. A `dsa front` process that runs the job and the only `dsa worker` process
//! are SIGKILLed mid-job and the ledger consumer crashes with them; another front takes the job
//! over when the dead one's lease runs out, new workers take the checks the dead one held (the
//! jobs stream redelivers them), and every name ends with one result and one ledger entry.

use std::sync::Arc;
use std::time::{Duration, Instant};

use api::keys::Plan;
use dsa_tests::harness::fleet::{Fleet, PoolStats, free_port, settled, wait_until};
use dsa_tests::sim::{Knobs, Latency};
use serde_json::Value;

async fn job(http: &reqwest::Client, base: &str, key: &str, id: &str) -> Value {
    match http.get(format!("{base}/v1/jobs/{id}?client_key={key}")).send().await {
        Ok(r) => r.json().await.unwrap_or(Value::Null),
        Err(_) => Value::Null,
    }
}

#[tokio::test]
async fn a_job_survives_the_sigkill_of_its_front_and_its_worker_and_a_ledger_crash() {
    // Front 0 (in process) only serves reads: the job runs on the front process, then on the
    // front added after the kill. Until the kill, one worker process runs every check.
    let mut fleet = Fleet::builder("bulkjobs")
        .fronts(1)
        .workers(0)
        .knobs(Knobs { latency_ms: Latency { rdap: 30, ..Latency::default() }, ..Knobs::default() })
        .configure(|s| {
            s.policy.bulk_jobs.run = false;
            s.policy.bulk_jobs.lease_secs = 2.0;
            s.policy.bulk_jobs.concurrency = 8;
        })
        .start()
        .await;
    let (key, key_id) = fleet.key(Plan::Starter).await;
    let http = reqwest::Client::new();
    let reader = fleet.front(0).url("");

    let mut runner = fleet.settings().clone();
    runner.policy.bulk_jobs.run = true;
    runner.server.listen = format!("127.0.0.1:{}", free_port()).parse().expect("address");
    runner.bootstrap.create_dev_key = false;
    let worker_settings = fleet.settings().clone();
    let worker = fleet.spawn_process("worker", &worker_settings);
    let process = fleet.spawn_process("front", &runner);
    let base = format!("http://{}", runner.server.listen);
    let up = wait_until(Duration::from_secs(60), || {
        let (http, url) = (http.clone(), format!("{base}/readyz"));
        async move { http.get(url).send().await.is_ok_and(|r| r.status().is_success()) }
    })
    .await;
    assert!(
        up,
        "dsa front never answered: {}",
        std::fs::read_to_string(&fleet.process(process).log).unwrap_or_default()
    );

    let total = 300;
    let names: String =
        (0..total).map(|i| format!("dsa-fleet-job-{i}.{}\n", ["com", "org", "net"][i % 3])).collect::<String>()
            + "example.com\n";
    let response = http
        .post(format!("{base}/v1/jobs/bulk-check?client_key={key}"))
        .header("content-type", "text/plain")
        .body(names)
        .send()
        .await
        .expect("submit");
    assert_eq!(response.status().as_u16(), 202);
    let accepted: Value = response.json().await.expect("json");
    let id = accepted["id"].as_str().expect("id").to_owned();
    let total = total as i64 + 1;
    assert_eq!(accepted["total"], total);

    // Part of the job done (read through the other front), then the runner's front and the
    // ledger consumer die at once.
    let started = Instant::now();
    loop {
        let state = job(&http, &reader, &key, &id).await;
        if state["checked"].as_i64().is_some_and(|c| c >= 30) {
            assert_eq!(state["state"], "running", "{state}");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "no progress: {state}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    fleet.process(process).sigkill();
    fleet.process(worker).sigkill();
    fleet.crash_ledger();
    let at_kill = job(&http, &reader, &key, &id).await;
    assert!(at_kill["checked"].as_i64().is_some_and(|c| c < total), "{at_kill}");
    // A new front with a runner takes the job over once the dead front's lease ran out; two
    // workers take the checks (those the dead worker held are redelivered); the ledger comes back
    // and settles what was charged meanwhile.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for _ in 0..2 {
        fleet.add_worker(Arc::new(PoolStats::default()));
    }
    fleet.start_ledger(fleet.ledger_stats().clone());
    let mut settings = fleet.settings().clone();
    settings.policy.bulk_jobs.run = true;
    let taker = fleet.add_front_with(&settings).await;
    let started = Instant::now();
    let done = loop {
        let state = job(&http, &reader, &key, &id).await;
        if state["state"] == "done" {
            break state;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "not done: {state}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(done["checked"], total, "{done}");
    assert_eq!(done["credits_charged"], total, "{done}");
    assert_eq!(done["counts"]["taken"], 1, "{done}");

    // Every name once in the results, read through the front that finished the job.
    let base = fleet.front(taker).url("");
    let (mut cursor, mut domains) = (0_i64, Vec::new());
    loop {
        let r = http
            .get(format!("{base}/v1/jobs/{id}/results?client_key={key}&cursor={cursor}&limit=100"))
            .send()
            .await
            .expect("results");
        let next: i64 = r.headers()["x-next-cursor"].to_str().expect("cursor").parse().expect("number");
        let text = r.text().await.expect("text");
        if text.is_empty() {
            break;
        }
        for line in text.lines() {
            let row: Value = serde_json::from_str(line).expect("json");
            assert_eq!(row["charged"], true, "{row}");
            domains.push(row["domain"].as_str().expect("domain").to_owned());
        }
        cursor = next;
    }
    domains.sort();
    let listed = domains.len();
    domains.dedup();
    assert_eq!((listed, domains.len()), (total as usize, total as usize), "one result per name");
    // Ledger = results: one entry per name, none twice, whatever died on the way.
    assert_eq!(settled(fleet.store(), &key_id, total).await, total);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let period = common::messages::billing_period(time::OffsetDateTime::now_utc());
    assert_eq!(fleet.store().ledger_count(&key_id, &period).await.expect("count"), total);
    fleet.stop().await;
}

/// A bulk job's checks are background work in the fleet too: the priority travels in the job
/// message, the worker runs them outside its pull slots and within `background_share` of each
/// budget. With 4 worker slots and a runner sending 16 checks at once, users' checks of fresh
/// names are answered at once while the job's RDAP queries keep to their share (2 of 8 a second).
#[tokio::test]
async fn a_jobs_checks_leave_the_workers_slots_and_most_of_the_budget_to_users() {
    let fleet = Fleet::builder("bulkprio")
        .fronts(1)
        .workers(1)
        .configure(|s| {
            s.fleet.worker_concurrency = 4;
            s.policy.bulk_jobs.run = true;
            s.policy.bulk_jobs.concurrency = 16;
            s.engine.limits.rdap = workers::config::HostLimit { per_second: 8.0, burst: 4, concurrency: 8 };
            s.engine.limits.background_share = 0.25;
        })
        .start()
        .await;
    let (key, _) = fleet.key(Plan::Starter).await;
    let http = reqwest::Client::new();
    let base = fleet.front(0).url("");
    let names: String = (0..200).map(|i| format!("dsa-prio-job-{i}.com\n")).collect();
    let response = http
        .post(format!("{base}/v1/jobs/bulk-check?client_key={key}"))
        .header("content-type", "text/plain")
        .body(names)
        .send()
        .await
        .expect("submit");
    assert_eq!(response.status().as_u16(), 202);
    let accepted: Value = response.json().await.expect("json");
    let id = accepted["id"].as_str().expect("id").to_owned();
    let started = Instant::now();
    while job(&http, &base, &key, &id).await["checked"].as_i64().unwrap_or(0) < 2 {
        assert!(started.elapsed() < Duration::from_secs(30), "the job never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let before = fleet.sim().stats().rdap.queries;
    let started = Instant::now();
    let (mut users, mut slowest) = (0_u64, Duration::ZERO);
    while started.elapsed() < Duration::from_secs(4) {
        let asked = Instant::now();
        let response = http
            .get(format!("{base}/v1/domains/check?client_key={key}&domain=dsa-prio-user-{users}.net"))
            .send()
            .await
            .expect("check");
        assert_eq!(response.status().as_u16(), 200);
        slowest = slowest.max(asked.elapsed());
        users += 1;
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    let queries = fleet.sim().stats().rdap.queries - before;
    let elapsed = started.elapsed().as_secs_f64();
    let allowed = (2.0 * elapsed).ceil() as u64 + 1 + users + 2;
    assert!(
        queries <= allowed,
        "{queries} RDAP queries in {elapsed:.1} s ({users} users' checks): over the share ({allowed})"
    );
    assert!(slowest < Duration::from_secs(2), "a user's check waited {slowest:?} behind the job");
    let response = http.delete(format!("{base}/v1/jobs/{id}?client_key={key}")).send().await.expect("cancel");
    assert_eq!(response.status().as_u16(), 200);
    fleet.stop().await;
}
