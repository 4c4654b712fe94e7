//! `GET`/`POST /v1/domains/bulk` end to end (spec §2.5, §4.4, §7, §8): a real front in standalone
//! mode over HTTP, in front of the registry simulator.

use std::time::{Duration, Instant};

use dsa_tests::harness::app::{KeyOpts, TestApp};
use dsa_tests::sim::{Fault, Faults, Knobs, Latency};
use serde_json::{Value, json};

fn assert_error(status: u16, body: &Value, expected_status: u16) {
    assert_eq!(status, expected_status, "{body}");
    assert_eq!(body["success"], false, "{body}");
    assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()), "{body}");
    assert_eq!(body.as_object().map(|o| o.len()), Some(2), "error shape is exactly success+error: {body}");
}

async fn post(app: &TestApp, path: &str, content_type: Option<&str>, body: impl Into<reqwest::Body>) -> (u16, Value) {
    let mut request = app.http.post(app.url(path)).body(body);
    if let Some(ct) = content_type {
        request = request.header("content-type", ct);
    }
    let response = request.send().await.expect("post");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Credits settled for `key` this month once they reach `expected` (the ledger writes in
/// batches), or what is settled after 5 s.
async fn settled(app: &TestApp, key_id: &str, expected: i64) -> i64 {
    let period = common::messages::billing_period(time::OffsetDateTime::now_utc());
    let mut usage = 0;
    for _ in 0..100 {
        usage = app.store.settled_usage(key_id, &period).await.expect("usage");
        if usage >= expected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    usage
}

fn assert_shape(body: &Value, total: usize, checked: usize, invalid: usize, cost: i64) {
    assert_eq!(body["success"], true, "{body}");
    assert_eq!(body["total"], total, "{body}");
    assert_eq!(body["domains"].as_array().map(Vec::len), Some(checked), "{body}");
    assert_eq!(body["invalid"].as_array().map(Vec::len), Some(invalid), "{body}");
    assert_eq!(body["credits_cost"], cost, "{body}");
    assert!(body["checked_at"].as_str().is_some_and(|t| t.ends_with('Z')), "{body}");
}

#[tokio::test]
async fn get_and_post_check_each_distinct_domain_once_in_request_order() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let key_id = app.key_id(&key).await;
    // The single check's 400 text for the same bad input: `invalid` carries the same reason.
    let (_, _, single) = app.get(&format!("/v1/domains/check?client_key={key}&domain=exa_mple.com")).await;
    let reason = single["error"].as_str().expect("reason").to_owned();

    let list = ["dsa-demo-available.com", "example.com", "exa_mple.com", "EXAMPLE.com", "www.example.com", "  "];
    let (status, _, body) =
        app.get(&format!("/v1/domains/bulk?client_key={key}&commission_percent=10&domains={}", list.join(","))).await;
    assert_eq!(status, 200, "{body}");
    assert_shape(&body, 6, 2, 2, 2);
    let first = &body["domains"][0];
    assert_eq!(first["success"], true);
    assert_eq!(first["domain"], "dsa-demo-available.com");
    assert_eq!(first["available"], true);
    assert_eq!(first["message"], "Available");
    assert_eq!(first["pricing"]["pricing_mode"], "with_commission", "same options as a single check: {first}");
    assert_eq!(first["pricing"]["display_register"], 12.17);
    assert_eq!(first["purchase"]["source"], "url");
    assert_eq!(first["verdict"]["status"], "available");
    let second = &body["domains"][1];
    assert_eq!((second["domain"].as_str(), second["available"].as_bool()), (Some("example.com"), Some(false)));
    assert_eq!(second["message"], "Taken");
    assert!(second.get("pricing").is_none() && second.get("purchase").is_none(), "{second}");
    assert_eq!(body["invalid"][0], json!({"input": "exa_mple.com", "error": reason}));
    assert!(body["invalid"][1]["error"].as_str().is_some_and(|e| e.starts_with("Empty entry")), "{body}");
    assert_eq!(body["credits_remaining"], 500 - 2, "the single check's 400 cost nothing");

    // POST: the same list in a JSON body, same answer; the names are cached now.
    let path = format!("/v1/domains/bulk?client_key={key}");
    let (status, body) =
        post(&app, &path, Some("application/json; charset=utf-8"), json!({ "domains": list }).to_string()).await;
    assert_eq!(status, 200, "{body}");
    assert_shape(&body, 6, 2, 2, 2);
    assert_eq!(body["domains"][0]["domain"], "dsa-demo-available.com");
    assert_eq!(body["domains"][0]["pricing"]["pricing_mode"], "base", "no commission_percent this time");
    assert_eq!(body["domains"][1]["verdict"]["cached"], true);
    assert_eq!(body["credits_remaining"], 500 - 2 - 2);

    // Only invalid entries: 200, nothing to check, nothing charged.
    let (status, body) = post(&app, &path, Some("application/json"), r#"{"domains":["exa_mple.com"]}"#).await;
    assert_eq!(status, 200, "{body}");
    assert_shape(&body, 1, 0, 1, 0);
    assert_eq!(body["credits_remaining"], 496);

    assert_eq!(settled(&app, &key_id, 4).await, 4, "2 + 2 credits");
    assert_eq!(app.finish(Some(&key)).await, 2, "one ledger entry per charged request");
}

#[tokio::test]
async fn bad_requests_are_400_or_415_in_the_spec_shape_and_cost_nothing() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let path = format!("/v1/domains/bulk?client_key={key}");
    let eleven: Vec<String> = (0..11).map(|i| format!("name-{i}.com")).collect();

    let (status, _, body) = app.get(&format!("{path}&domains={}", eleven.join(","))).await;
    assert_error(status, &body, 400);
    assert!(body["error"].as_str().expect("text").contains("at most 10"), "{body}");
    let (status, body) = post(&app, &path, Some("application/json"), json!({ "domains": eleven }).to_string()).await;
    assert_error(status, &body, 400);
    assert!(body["error"].as_str().expect("text").contains("at most 10"), "{body}");

    for get in [path.clone(), format!("{path}&domains="), format!("{path}&domains=example.com&commission_percent=x")] {
        let (status, _, body) = app.get(&get).await;
        assert_error(status, &body, 400);
    }
    let oversize = format!(r#"{{"domains":["{}.com"]}}"#, "a".repeat(api::routes::bulk::MAX_BODY_BYTES));
    for bad in [
        r#"{"domains":[]}"#.to_owned(),
        r#"{"domains":["example.com"]"#.to_owned(),
        r#"{"domains":"example.com"}"#.to_owned(),
        r#"{"domains":[1,2]}"#.to_owned(),
        r#"{"names":["example.com"]}"#.to_owned(),
        "not json".to_owned(),
        String::new(),
        oversize,
    ] {
        let (status, body) = post(&app, &path, Some("application/json"), bad.clone()).await;
        assert_error(status, &body, 400);
        assert!(bad.len() < 100 || body["error"].as_str().expect("text").contains("16384 bytes"), "{body}");
    }
    for content_type in [None, Some("text/plain"), Some("application/x-www-form-urlencoded")] {
        let (status, body) = post(&app, &path, content_type, r#"{"domains":["example.com"]}"#).await;
        assert_error(status, &body, 415);
    }
    // The keyed prelude: no demo mode for bulk.
    let (status, _, body) = app.get("/v1/domains/bulk?domains=example.com").await;
    assert_error(status, &body, 400);
    let (status, _, body) = app.get("/v1/domains/bulk?client_key=dsa_server_nosuchkey&domains=example.com").await;
    assert_error(status, &body, 403);
    let response = app.http.put(app.url(&path)).send().await.expect("put");
    assert_eq!(response.status().as_u16(), 405);
    assert_eq!(app.finish(Some(&key)).await, 0, "errors cost nothing");
}

#[tokio::test]
async fn an_entry_without_a_definitive_verdict_is_reported_and_not_charged() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let key_id = app.key_id(&key).await;
    // WHOIS down: .af (WHOIS-only in the scenario) gets no verdict; .org (RDAP) still does.
    app.sim.set_knobs(Knobs { faults: Faults { whois: Fault::Reset, ..Faults::default() }, ..Knobs::default() });
    let (status, _, body) = app
        .get(&format!("/v1/domains/bulk?client_key={key}&domains=dsa-demo-available.af,dsa-demo-available.org"))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_shape(&body, 2, 2, 0, 1);
    let unknown = &body["domains"][0];
    assert_eq!(unknown["success"], false, "{unknown}");
    assert_eq!(unknown["domain"], "dsa-demo-available.af");
    assert!(unknown["error"].as_str().is_some_and(|e| e.contains("retry")), "{unknown}");
    assert!(unknown.get("available").is_none() && unknown.get("message").is_none(), "{unknown}");
    assert_eq!(body["domains"][1]["success"], true);
    assert_eq!(body["credits_remaining"], 499, "only the definitive verdict is charged");
    // Not one definitive verdict: 502 as for a single check, nothing charged.
    let (status, _, body) = app
        .get(&format!("/v1/domains/bulk?client_key={key}&domains=dsa-demo-available.af,dsa-demo-available.com.af"))
        .await;
    assert_error(status, &body, 502);
    assert_eq!(settled(&app, &key_id, 1).await, 1);
    assert_eq!(app.finish(Some(&key)).await, 1);
}

#[tokio::test]
async fn credits_for_the_whole_bulk_are_held_up_front_or_nothing_is_charged() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let key_id = app.key_id(&key).await;
    // Spend 498 of 500 credits through the ledger (as if earlier this month).
    app.spend(&key, 498).await;
    let before = app.sim.stats();
    let (status, _, body) =
        app.get(&format!("/v1/domains/bulk?client_key={key}&domains=example.com,google.com,wikipedia.com")).await;
    assert_error(status, &body, 429);
    assert_eq!(body["error"], "Monthly credit limit reached");
    assert_eq!(app.sim.stats(), before, "refused before any check");
    // Two distinct valid domains (a duplicate and an invalid entry cost nothing) fit exactly.
    let (status, _, body) = app
        .get(&format!("/v1/domains/bulk?client_key={key}&domains=example.com,Example.com,exa_mple.com,google.com"))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_shape(&body, 4, 2, 1, 2);
    assert_eq!(body["credits_remaining"], 0);
    assert_eq!(settled(&app, &key_id, 500).await, 500);
    app.finish(Some(&key)).await;
}

#[tokio::test]
async fn ndjson_streams_each_verdict_as_it_arrives_then_a_summary() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let key_id = app.key_id(&key).await;
    // example.com is cached; the .org name needs RDAP, made slow.
    let (status, _, _) = app.get(&format!("/v1/domains/check?client_key={key}&domain=example.com")).await;
    assert_eq!(status, 200);
    app.sim.set_knobs(Knobs { latency_ms: Latency { rdap: 800, ..Latency::default() }, ..Knobs::default() });
    let started = Instant::now();
    let mut response =
        app.http
            .get(app.url(&format!(
                "/v1/domains/bulk?client_key={key}&domains=dsa-demo-available.org,example.com,bad_name.com"
            )))
            .header("accept", "application/x-ndjson")
            .send()
            .await
            .expect("request");
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.headers()["content-type"], "application/x-ndjson");
    let mut buffer = Vec::new();
    let mut lines: Vec<(Duration, Value)> = Vec::new();
    while let Some(chunk) = response.chunk().await.expect("chunk") {
        buffer.extend_from_slice(&chunk);
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            lines.push((started.elapsed(), serde_json::from_slice(&line).expect("JSON line")));
        }
    }
    assert!(buffer.is_empty(), "every line ends with a newline");
    assert_eq!(lines.len(), 3, "{lines:?}");
    let (first_at, first) = &lines[0];
    let (last_at, last) = &lines[1];
    assert_eq!(first["domain"], "example.com", "the cached name first (completion order): {first}");
    assert_eq!(first["success"], true);
    assert_eq!(last["domain"], "dsa-demo-available.org", "{last}");
    assert_eq!(last["available"], true);
    assert!(*last_at >= Duration::from_millis(800), "{last_at:?}");
    assert!(*first_at + Duration::from_millis(500) < *last_at, "first line {first_at:?}, slow line {last_at:?}");
    let summary = &lines[2].1;
    assert_eq!(summary["summary"], true, "{summary}");
    assert_eq!(summary["total"], 3);
    assert_eq!(summary["checked"], 2);
    assert_eq!(summary["invalid"][0]["input"], "bad_name.com");
    assert_eq!(summary["credits_cost"], 2);
    assert_eq!(summary["credits_remaining"], 500 - 1 - 2);
    assert_eq!(settled(&app, &key_id, 3).await, 3);
    assert_eq!(app.finish(Some(&key)).await, 3, "the check, then one ledger entry per streamed verdict");
}

#[tokio::test]
async fn a_bulk_counts_as_one_request_against_the_per_minute_limit() {
    let app = TestApp::spawn_with(|s| {
        s.policy.per_minute = api::policy::PlanRates { free: 2, starter: 2, pro: 2, reseller: 2 };
    })
    .await;
    let key = app.key(KeyOpts::default()).await;
    let path = format!("/v1/domains/bulk?client_key={key}&domains=example.com,google.com,wikipedia.com,google.net");
    for _ in 0..2 {
        let (status, _, body) = app.get(&path).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["credits_cost"], 4);
    }
    let (status, headers, body) = app.get(&path).await;
    assert_error(status, &body, 429);
    assert!(headers.get("retry-after").is_some());
    assert_eq!(app.finish(Some(&key)).await, 2);
}

/// Benchmark, not a timed test: the latency of a bulk of 10 uncached names against a single
/// uncached check, with every simulated upstream answering after 50 ms. Target: the bulk within
/// 1.3 × the single check (its checks run in parallel). Run it with
/// `cargo test -p dsa-tests --test app -- --ignored --nocapture bulk_latency_bench`
/// (`BENCH_ROUNDS`, default 20; `BENCH_DEFAULT_LIMITS=1` keeps the shipped per-host limits).
///
/// The simulator serves every registry from one address, so its per-host politeness limits
/// (`engine.limits.rdap`: 8 at once, 10 a second by default) would make ten names queue where
/// ten real names spread over several registries would not; the bench raises them for the
/// simulator's host, as a deployment would for a registry that allows it.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: run by hand (see the doc comment)"]
async fn bulk_latency_bench() {
    let rounds: usize = std::env::var("BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let default_limits = std::env::var("BENCH_DEFAULT_LIMITS").is_ok_and(|v| v == "1");
    let app = TestApp::spawn_with(|s| {
        // The shipped default (the harness runs 8 check workers: fewer than a bulk's 10 jobs).
        s.jobs.workers = api::config::JobsConfig::default().workers;
        if !default_limits {
            s.engine.limits.rdap.per_second = 1000.0;
            s.engine.limits.rdap.burst = 1000;
            s.engine.limits.rdap.concurrency = 32;
        }
    })
    .await;
    let key = app.key(KeyOpts { plan: api::keys::Plan::Reseller, ..KeyOpts::default() }).await;
    app.sim.set_knobs(Knobs { latency_ms: Latency { dns: 50, rdap: 50, whois: 50 }, ..Knobs::default() });
    let tlds = ["com", "net", "org", "dev"];
    let run = uuid::Uuid::now_v7().simple().to_string();
    let run = &run[run.len() - 8..];
    let (mut single, mut bulk) = (Vec::new(), Vec::new());
    for round in 0..=rounds {
        let name = format!("bench-{run}-{round}-single.{}", tlds[round % tlds.len()]);
        let started = Instant::now();
        let (status, _, body) = app.get(&format!("/v1/domains/check?client_key={key}&domain={name}")).await;
        let single_took = started.elapsed();
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["verdict"]["cached"], false);
        let names: Vec<String> = (0..10).map(|i| format!("bench-{run}-{round}-{i}.{}", tlds[i % tlds.len()])).collect();
        let started = Instant::now();
        let (status, _, body) =
            app.get(&format!("/v1/domains/bulk?client_key={key}&domains={}", names.join(","))).await;
        let bulk_took = started.elapsed();
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["credits_cost"], 10, "{body}");
        if round > 0 {
            // Round 0 warms connections and caches of the resolver path.
            single.push(single_took);
            bulk.push(bulk_took);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    single.sort();
    bulk.sort();
    let median = |v: &[Duration]| v[v.len() / 2];
    let p90 = |v: &[Duration]| v[(v.len() * 9 / 10).min(v.len() - 1)];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "bulk bench ({rounds} rounds, 50 ms per upstream answer): single check median {:.1} ms (p90 {:.1}); \
bulk of 10 median {:.1} ms (p90 {:.1}); ratio of medians {:.2}",
        ms(median(&single)),
        ms(p90(&single)),
        ms(median(&bulk)),
        ms(p90(&bulk)),
        median(&bulk).as_secs_f64() / median(&single).as_secs_f64()
    );
    app.finish(None).await;
}

#[tokio::test]
async fn a_client_that_hangs_up_mid_stream_is_not_charged_for_the_lines_it_was_not_sent() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let key_id = app.key_id(&key).await;
    let (status, _, _) = app.get(&format!("/v1/domains/check?client_key={key}&domain=example.com")).await;
    assert_eq!(status, 200);
    app.sim.set_knobs(Knobs { latency_ms: Latency { rdap: 1000, ..Latency::default() }, ..Knobs::default() });
    let mut response = app
        .http
        .get(app.url(&format!("/v1/domains/bulk?client_key={key}&domains=example.com,dsa-demo-available.org")))
        .header("accept", "application/x-ndjson")
        .send()
        .await
        .expect("request");
    let first = response.chunk().await.expect("chunk").expect("a first line");
    let first: Value = serde_json::from_slice(&first).expect("JSON line");
    assert_eq!(first["domain"], "example.com");
    drop(response);
    // The slow check ends meanwhile; its credit was held but never charged.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(settled(&app, &key_id, 2).await, 2, "the single check and the one line sent");
    assert_eq!(app.finish(Some(&key)).await, 2);
}
