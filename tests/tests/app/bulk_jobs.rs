//! Bulk jobs (`/v1/jobs`, issue 26) end to end in standalone mode: a real front over HTTP, the
//! in-process bus and SQLite, in front of the registry simulator; and `dsa serve` as a real
//! process SIGKILLed mid-job and restarted on the same SQLite file.

use std::time::{Duration, Instant};

use dsa_tests::harness::app::{KeyOpts, TestApp};
use dsa_tests::sim::{Knobs, Latency};
use serde_json::Value;

async fn submit(
    app: &TestApp,
    key: &str,
    content_type: &str,
    body: impl Into<reqwest::Body>,
) -> (u16, reqwest::header::HeaderMap, Value) {
    submit_to(&app.http, &app.url(&format!("/v1/jobs/bulk-check?client_key={key}")), content_type, body).await
}

async fn submit_to(
    http: &reqwest::Client,
    url: &str,
    content_type: &str,
    body: impl Into<reqwest::Body>,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let response = http.post(url).header("content-type", content_type).body(body).send().await.expect("post");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.json().await.unwrap_or(Value::Null))
}

/// Polls the job until it reaches a state in `states` (or fails the test after `limit`).
async fn wait_for(http: &reqwest::Client, base: &str, key: &str, id: &str, states: &[&str], limit: Duration) -> Value {
    let started = Instant::now();
    loop {
        let response = http.get(format!("{base}/v1/jobs/{id}?client_key={key}")).send().await;
        if let Ok(response) = response
            && response.status().as_u16() == 200
        {
            let body: Value = response.json().await.expect("json");
            if states.iter().any(|s| body["state"] == *s) {
                return body;
            }
            assert!(started.elapsed() < limit, "job {id} not in {states:?} after {limit:?}: {body}");
        } else {
            assert!(started.elapsed() < limit, "job {id} not readable after {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every result of a job, read page by page (`limit` per page) through the cursor.
async fn all_results(http: &reqwest::Client, base: &str, key: &str, id: &str, limit: usize) -> Vec<Value> {
    let mut cursor = 0_i64;
    let mut rows = Vec::new();
    loop {
        let response = http
            .get(format!("{base}/v1/jobs/{id}/results?client_key={key}&cursor={cursor}&limit={limit}"))
            .send()
            .await
            .expect("results");
        assert_eq!(response.status().as_u16(), 200);
        assert_eq!(response.headers()["content-type"], "application/x-ndjson");
        let next: i64 = response.headers()["x-next-cursor"].to_str().expect("cursor").parse().expect("number");
        let text = response.text().await.expect("body");
        let page: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
        assert!(page.len() <= limit);
        if page.is_empty() {
            assert_eq!(next, cursor, "an empty page keeps the cursor");
            return rows;
        }
        assert!(next > cursor);
        cursor = next;
        rows.extend(page);
    }
}

fn period() -> String {
    common::messages::billing_period(time::OffsetDateTime::now_utc())
}

async fn settled(app: &TestApp, key_id: &str, expected: i64) -> i64 {
    let mut usage = 0;
    for _ in 0..100 {
        usage = app.store.settled_usage(key_id, &period()).await.expect("usage");
        if usage >= expected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    usage
}

/// JSON, NDJSON and CSV uploads: invalid entries reported (not fatal), duplicates after
/// normalisation checked once, every name a result (paged through the cursor), the job's
/// counts and credits, and the ledger equal to the charged results.
#[tokio::test]
async fn uploads_in_every_format_run_to_done_and_the_ledger_matches_the_results() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let key_id = app.key_id(&key).await;
    let base = app.url("");
    let uploads: [(&str, String); 3] = [
        ("application/json", r#"["example.com", "EXAMPLE.com", "dsa-bulk-json-1.com", "exa_mple.com", "dsa-bulk-json-2.net"]"#.into()),
        ("application/x-ndjson", "\"example.com\"\n{\"domain\": \"dsa-bulk-nd-1.org\"}\n42\n\"dsa-bulk-nd-2.com\"\n".into()),
        ("text/csv", "domain,note\r\nexample.com,x\r\n\"dsa-bulk-csv-1.com\",y\r\nnot a name\r\nwww.dsa-bulk-csv-1.com\r\ndsa-bulk-csv-2.dev\r\n".into()),
    ];
    let mut charged_total = 0;
    for (content_type, body) in uploads {
        let (status, headers, accepted) = submit(&app, &key, content_type, body).await;
        assert_eq!(status, 202, "{content_type}: {accepted}");
        let id = accepted["id"].as_str().expect("id").to_owned();
        assert_eq!(headers["location"], format!("/v1/jobs/{id}").as_str());
        assert_eq!(accepted["state"], "queued");
        assert_eq!(accepted["total"], 3, "{content_type}: {accepted}");
        assert_eq!(accepted["invalid"], 1, "{content_type}: {accepted}");
        assert_eq!(accepted["credits_held"], 3);
        assert_eq!(accepted["invalid_entries"].as_array().map(Vec::len), Some(1), "{accepted}");

        let done = wait_for(&app.http, &base, &key, &id, &["done"], Duration::from_secs(30)).await;
        assert_eq!(done["checked"], 3, "{done}");
        assert_eq!(done["progress"], 1.0, "{done}");
        assert_eq!(done["counts"]["taken"], 1, "{done}");
        assert_eq!(done["counts"]["available"], 2, "{done}");
        assert_eq!((done["credits_charged"].as_i64(), done["credits_held"].as_i64()), (Some(3), Some(0)), "{done}");
        assert!(done["results_expire_at"].as_str().is_some(), "{done}");

        let rows = all_results(&app.http, &base, &key, &id, 2).await;
        assert_eq!(rows.len(), 3, "{rows:?}");
        let mut domains: Vec<&str> = rows.iter().map(|r| r["domain"].as_str().expect("domain")).collect();
        domains.sort_unstable();
        domains.dedup();
        assert_eq!(domains.len(), 3, "each name once: {rows:?}");
        for row in &rows {
            assert_eq!(row["success"], true, "{row}");
            assert_eq!(row["charged"], true, "{row}");
            assert!(row["verdict"]["status"].is_string(), "{row}");
        }
        let example = rows.iter().find(|r| r["domain"] == "example.com");
        if let Some(example) = example {
            assert_eq!(example["available"], false);
            assert_eq!(example["message"], "Taken");
        }
        charged_total += 3;

        // CSV form of the same results: a header and one line per name.
        let csv = app
            .http
            .get(app.url(&format!("/v1/jobs/{id}/results?client_key={key}&format=csv")))
            .send()
            .await
            .expect("csv");
        assert!(csv.headers()["content-type"].to_str().expect("type").starts_with("text/csv"));
        let text = csv.text().await.expect("text");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "domain,success,available,status,method,charged,checked_at,error");
        assert_eq!(lines.len(), 4, "{text}");
    }
    // Ledger = results: one entry per charged name, each through the job's own ledger front.
    assert_eq!(settled(&app, &key_id, charged_total).await, charged_total);
    let (_, _, listed) = app.get(&format!("/v1/jobs?client_key={key}")).await;
    assert_eq!(listed["jobs"].as_array().map(Vec::len), Some(3), "{listed}");
    assert_eq!(app.finish(Some(&key)).await, charged_total);
}

/// The hold: the whole cost is held at submission and counts against the allowance of every
/// later request; a job the allowance cannot cover is a 429 with the spec's text; cancelling
/// releases what was not charged; each name is charged once.
#[tokio::test]
async fn the_hold_is_charged_per_name_and_released_on_cancel() {
    let app = TestApp::spawn().await;
    // Slow registries: the job is still running when it is cancelled.
    app.sim.set_knobs(Knobs { latency_ms: Latency { rdap: 300, ..Latency::default() }, ..Knobs::default() });
    let key = app.key(KeyOpts::default()).await; // Free: 500 credits
    let key_id = app.key_id(&key).await;
    let base = app.url("");
    let names: String = (0..400).map(|i| format!("dsa-hold-{i}.com\n")).collect();
    let (status, _, accepted) = submit(&app, &key, "text/plain", names).await;
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["id"].as_str().expect("id").to_owned();
    // 100 left while 400 are held: a job of 101 is refused, nothing held for it.
    let more: String = (0..101).map(|i| format!("dsa-hold-more-{i}.com\n")).collect();
    let (status, _, refused) = submit(&app, &key, "text/plain", more).await;
    assert_eq!(status, 429, "{refused}");
    assert_eq!(refused["error"], "Monthly credit limit reached");
    // An interactive check still gets its credit (and is not starved by the job).
    let (status, _, check) = app.get(&format!("/v1/domains/check?client_key={key}&domain=example.com")).await;
    assert_eq!(status, 200, "{check}");
    assert!(check["credits_remaining"].as_i64().is_some_and(|r| r <= 99), "the hold counts: {check}");

    let running = wait_for(&app.http, &base, &key, &id, &["running"], Duration::from_secs(10)).await;
    assert!(running["eta_secs"].as_f64().is_some(), "{running}");
    let cancelled = app
        .http
        .delete(app.url(&format!("/v1/jobs/{id}?client_key={key}")))
        .send()
        .await
        .expect("delete")
        .json::<Value>()
        .await
        .expect("json");
    assert_eq!(cancelled["state"], "cancelled", "{cancelled}");
    assert!(cancelled["checked"].as_i64().is_some_and(|c| c < 400), "cancelled mid-job: {cancelled}");
    // The names in flight at the cancel finish; then the job's numbers stay put.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (_, _, after) = app.get(&format!("/v1/jobs/{id}?client_key={key}")).await;
    let charged = after["credits_charged"].as_i64().expect("charged");
    assert_eq!(after["credits_held"], 0, "{after}");
    assert_eq!(after["credits_released"].as_i64(), Some(400 - charged), "{after}");
    let rows = all_results(&app.http, &base, &key, &id, 1000).await;
    assert_eq!(rows.iter().filter(|r| r["charged"] == true).count() as i64, charged, "results = charges");
    // Released: a job of 101 now fits (1 + charged + 101 ≤ 500 while charged < 398).
    let more: String = (0..101).map(|i| format!("dsa-hold-again-{i}.com\n")).collect();
    let (status, _, again) = submit(&app, &key, "text/plain", more).await;
    assert_eq!(status, 202, "{again}");
    let id2 = again["id"].as_str().expect("id").to_owned();
    app.sim.set_knobs(Knobs::default());
    wait_for(&app.http, &base, &key, &id2, &["done"], Duration::from_secs(60)).await;
    let expected = 1 + charged + 101;
    assert_eq!(settled(&app, &key_id, expected).await, expected);
    assert_eq!(
        app.finish(Some(&key)).await,
        expected,
        "ledger entries: the check, the cancelled job's names, the second job"
    );
}

/// Refusals: an embed key (403 on every operation), another key's job (404), an unsupported
/// media type (415), a malformed body, no valid name, more names than the server takes (400),
/// bad paging parameters (400); nothing is charged or left held.
#[tokio::test]
async fn bad_submissions_are_refused_in_the_error_shape() {
    let app = TestApp::spawn_with(|s| {
        s.policy.bulk_jobs.max_names = 5;
        s.policy.bulk_jobs.max_body_bytes = 1024;
    })
    .await;
    let key = app.key(KeyOpts::default()).await;
    let other = app.key(KeyOpts::default()).await;
    let embed = app.key(KeyOpts { kind: api::keys::KeyKind::Embed, ..KeyOpts::default() }).await;
    let error = |status: u16, body: &Value, expected: u16| {
        assert_eq!(status, expected, "{body}");
        assert_eq!(body["success"], false, "{body}");
        assert_eq!(body.as_object().map(|o| o.len()), Some(2), "{body}");
    };
    let (status, _, body) = submit(&app, &embed, "text/plain", "example.com").await;
    error(status, &body, 403);
    let (status, _, body) = app.get(&format!("/v1/jobs?client_key={embed}")).await;
    error(status, &body, 403);
    let (status, _, body) = submit(&app, &key, "application/xml", "<a/>").await;
    error(status, &body, 415);
    let (status, _, body) = submit(&app, &key, "application/json", r#"{"domains": ["a.com"]}"#).await;
    error(status, &body, 400);
    let (status, _, body) = submit(&app, &key, "application/json", r#"["a.com", 1]"#).await;
    error(status, &body, 400);
    let (status, _, body) = submit(&app, &key, "text/plain", "not a name\n\n").await;
    error(status, &body, 400);
    assert!(body["error"].as_str().is_some_and(|e| e.contains("No valid name")), "{body}");
    let (status, _, body) = submit(&app, &key, "text/plain", "a.com\nb.com\nc.com\nd.com\ne.com\nf.com\n").await;
    error(status, &body, 413);
    assert!(body["error"].as_str().is_some_and(|e| e.starts_with("Too many names")), "{body}");
    let (status, _, body) = submit(&app, &key, "text/plain", format!("{}.com\n", "a".repeat(1100))).await;
    error(status, &body, 413);
    assert!(body["error"].as_str().is_some_and(|e| e.contains("over 1024 bytes")), "{body}");
    // Without a declared length (chunked), counted as it streams in.
    // (Four names, then one endless line: the byte limit, not the name count, ends it.)
    let chunks: Vec<Result<String, std::io::Error>> = ["a.com\nb.com\nc.com\nd.com\n".to_owned()]
        .into_iter()
        .chain((0..40).map(|_| "x".repeat(50)))
        .map(Ok)
        .collect();
    let (status, _, body) =
        submit(&app, &key, "text/plain", reqwest::Body::wrap_stream(futures::stream::iter(chunks))).await;
    error(status, &body, 413);
    assert!(body["error"].as_str().is_some_and(|e| e.contains("over 1024 bytes")), "{body}");
    let (status, _, jobs) = app.get(&format!("/v1/jobs?client_key={key}")).await;
    assert_eq!((status, jobs["jobs"].as_array().map(Vec::len)), (200, Some(0)), "refused uploads leave no job: {jobs}");

    let (status, _, accepted) = submit(&app, &key, "text/plain", "example.com\n").await;
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["id"].as_str().expect("id");
    let (status, _, body) = app.get(&format!("/v1/jobs/{id}?client_key={other}")).await;
    error(status, &body, 404);
    let (status, _, body) = app.get(&format!("/v1/jobs/no-such-job?client_key={key}")).await;
    error(status, &body, 404);
    let (status, _, body) = app.get(&format!("/v1/jobs/{id}/results?client_key={key}&limit=0")).await;
    error(status, &body, 400);
    let (status, _, body) = app.get(&format!("/v1/jobs/{id}/results?client_key={key}&format=xml")).await;
    error(status, &body, 400);
    wait_for(&app.http, &app.url(""), &key, id, &["done"], Duration::from_secs(30)).await;
    // Only the one accepted name was charged; the refused uploads left nothing held.
    let (_, _, check) = app.get(&format!("/v1/domains/check?client_key={key}&domain=example.com")).await;
    assert_eq!(check["credits_remaining"], 498, "{check}");
    assert_eq!(app.finish(Some(&key)).await, 2);
}

/// Fairness: a long job of one key does not hold back a short job of another key submitted
/// after it (round-robin across jobs), nor an interactive check (the job's checks are capped
/// per front).
#[tokio::test]
async fn a_long_job_shares_the_runner_with_a_later_short_job_and_interactive_checks() {
    let app = TestApp::spawn_with(|s| s.policy.bulk_jobs.concurrency = 4).await;
    app.sim.set_knobs(Knobs { latency_ms: Latency { rdap: 50, ..Latency::default() }, ..Knobs::default() });
    let big = app.key(KeyOpts { plan: api::keys::Plan::Starter, ..KeyOpts::default() }).await;
    let small = app.key(KeyOpts::default()).await;
    let base = app.url("");
    let names: String = (0..600).map(|i| format!("dsa-fair-big-{i}.com\n")).collect();
    let (status, _, long) = submit(&app, &big, "text/plain", names).await;
    assert_eq!(status, 202, "{long}");
    let long_id = long["id"].as_str().expect("id").to_owned();
    wait_for(&app.http, &base, &big, &long_id, &["running"], Duration::from_secs(10)).await;
    let names: String = (0..20).map(|i| format!("dsa-fair-small-{i}.org\n")).collect();
    let (status, _, short) = submit(&app, &small, "text/plain", names).await;
    assert_eq!(status, 202, "{short}");
    let short_id = short["id"].as_str().expect("id").to_owned();
    // An interactive check answers while the long job runs.
    let (status, _, check) =
        app.get(&format!("/v1/domains/check?client_key={small}&domain=dsa-fair-interactive.com")).await;
    assert_eq!(status, 200, "{check}");
    wait_for(&app.http, &base, &small, &short_id, &["done"], Duration::from_secs(60)).await;
    let (_, _, long_now) = app.get(&format!("/v1/jobs/{long_id}?client_key={big}")).await;
    assert_eq!(long_now["state"], "running", "the short job finished first: {long_now}");
    assert!(long_now["checked"].as_i64().is_some_and(|c| c < 600), "{long_now}");
    let cancel =
        app.http.delete(app.url(&format!("/v1/jobs/{long_id}?client_key={big}"))).send().await.expect("delete");
    assert_eq!(cancel.status().as_u16(), 200);
    tokio::time::sleep(Duration::from_secs(2)).await;
    app.finish(None).await;
}

/// A crash mid-job: `dsa serve` SIGKILLed while its job runs, restarted on the same SQLite file,
/// finishes the job; every name has one result and one ledger entry, none charged twice.
#[tokio::test]
async fn a_job_survives_sigkill_of_the_standalone_process() {
    use dsa_tests::harness::fleet::{WorkerProcess, free_port};
    let _ = rustls::crypto::ring::default_provider().install_default();
    let sim = dsa_tests::sim::Simulator::start(dsa_tests::sim::Scenario::demo()).await.expect("simulator");
    sim.set_knobs(Knobs { latency_ms: Latency { rdap: 40, ..Latency::default() }, ..Knobs::default() });
    let db_path = std::env::temp_dir().join(format!("dsa-bulk-crash-{}.db", uuid::Uuid::now_v7()));
    let mut settings = api::config::Settings::default();
    settings.database.url = format!("sqlite://{}?mode=rwc", db_path.display()).into();
    settings.engine = dsa_tests::harness::app::engine_config(&sim);
    settings.server.listen = format!("127.0.0.1:{}", free_port()).parse().expect("addr");
    settings.bootstrap.create_dev_key = false;
    settings.policy.per_ip_per_minute = 0;
    settings.policy.bulk_jobs.lease_secs = 2.0;
    settings.policy.bulk_jobs.concurrency = 8;
    // The key, before the process starts (same file).
    let store = api::store::SqliteStore::connect(settings.database.url.expose(), 1).await.expect("store");
    api::store::Store::migrate(&store).await.expect("migrate");
    let (key, key_hash) = api::keys::generate(api::keys::KeyKind::Server);
    let record = api::store::Store::create_key(
        &store,
        api::store::NewKey {
            key_hash,
            kind: api::keys::KeyKind::Server,
            plan: api::keys::Plan::Starter,
            pricing_enabled: false,
            show_purchase_button: false,
            default_commission_percent: None,
            purchase_url: None,
            allowed_origins: Vec::new(),
            label: "crash".into(),
        },
    )
    .await
    .expect("key");
    let base = format!("http://{}", settings.server.listen);
    let http = reqwest::Client::new();
    let ready = |http: reqwest::Client, base: String| async move {
        for _ in 0..400 {
            if http.get(format!("{base}/healthz")).send().await.is_ok_and(|r| r.status().is_success()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("dsa serve did not start");
    };
    let mut process = WorkerProcess::spawn_role(&settings, "serve");
    ready(http.clone(), base.clone()).await;
    let total = 300;
    let names: String = (0..total).map(|i| format!("dsa-crash-{i}.com\n")).collect();
    let (status, _, accepted) =
        submit_to(&http, &format!("{base}/v1/jobs/bulk-check?client_key={key}"), "text/plain", names).await;
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["id"].as_str().expect("id").to_owned();
    // Kill it once part of the job is done.
    let started = Instant::now();
    loop {
        let (_, _, job) = match http.get(format!("{base}/v1/jobs/{id}?client_key={key}")).send().await {
            Ok(r) => ((), (), r.json::<Value>().await.unwrap_or(Value::Null)),
            Err(_) => ((), (), Value::Null),
        };
        if job["checked"].as_i64().is_some_and(|c| c >= 30) {
            assert_eq!(job["state"], "running", "{job}");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "no progress: {job}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    process.sigkill();
    let mut process = WorkerProcess::spawn_role(&settings, "serve");
    ready(http.clone(), base.clone()).await;
    let done = wait_for(&http, &base, &key, &id, &["done"], Duration::from_secs(90)).await;
    assert_eq!(done["checked"], total, "{done}");
    assert_eq!(done["credits_charged"], total, "{done}");
    let rows = all_results(&http, &base, &key, &id, 1000).await;
    assert_eq!(rows.len(), total as usize);
    let mut domains: Vec<String> = rows.iter().map(|r| r["domain"].as_str().expect("domain").to_owned()).collect();
    domains.sort();
    domains.dedup();
    assert_eq!(domains.len(), total as usize, "one result per name");
    process.terminate(Duration::from_secs(10)).await;
    let period = period();
    assert_eq!(
        api::store::Store::ledger_count(&store, &record.id, &period).await.expect("count"),
        total,
        "one ledger entry per name"
    );
    assert_eq!(api::store::Store::settled_usage(&store, &record.id, &period).await.expect("usage"), total);
    drop(store);
    dsa_tests::harness::remove_sqlite_database(&db_path);
}

/// `dsa check --file F --server URL --key K`: the names go to the server as a job; every result
/// is printed (JSON lines with `--json`), the exit status says whether any name had no verdict.
#[tokio::test]
async fn the_cli_submits_a_job_and_prints_every_result() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let file = std::env::temp_dir().join(format!("dsa-bulk-cli-{}.txt", uuid::Uuid::now_v7()));
    let names: String = (0..40).map(|i| format!("dsa-cli-{i}.com\n")).collect::<String>() + "example.com\n";
    std::fs::write(&file, names).expect("names file");
    let output = tokio::process::Command::new(dsa_tests::harness::binary::dsa_binary())
        .args(["check", "--json", "--file"])
        .arg(&file)
        .args(["--server", &app.url("/"), "--key", &key])
        .env("DSA_LOG", "warn")
        .output()
        .await
        .expect("dsa check runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    let rows: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
    assert_eq!(rows.len(), 41, "{stdout}");
    assert!(rows.iter().any(|r| r["domain"] == "example.com" && r["available"] == false), "{stdout}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("41 names to check"), "{output:?}");
    let _ = std::fs::remove_file(&file);
    assert_eq!(app.finish(Some(&key)).await, 41);
}

/// A bulk job's checks are background work ([`common::priority`]): with
/// `engine.limits.background_share` 0.25 of an RDAP budget of 8 queries a second, the job's
/// queries keep to its share (2 a second) while users' checks of fresh names, asked meanwhile,
/// are answered at once from the rest.
#[tokio::test]
async fn a_bulk_jobs_checks_keep_to_the_background_share_and_users_keep_the_rest() {
    let app = TestApp::spawn_with(|s| {
        s.engine.limits.rdap = workers::config::HostLimit { per_second: 8.0, burst: 4, concurrency: 8 };
        s.engine.limits.background_share = 0.25;
    })
    .await;
    let key = app.key(KeyOpts::default()).await;
    let base = app.url("");
    let names: String = (0..120).map(|i| format!("dsa-share-{i}.com\n")).collect();
    let (status, _, accepted) = submit(&app, &key, "text/plain", names).await;
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["id"].as_str().expect("id").to_owned();
    wait_for(&app.http, &base, &key, &id, &["running"], Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    let window = Duration::from_secs(4);
    let before = app.sim.stats().rdap.queries;
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    let mut users = 0;
    while started.elapsed() < window {
        let asked = Instant::now();
        let (status, _, body) =
            app.get(&format!("/v1/domains/check?client_key={key}&domain=dsa-share-user-{users}.net")).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["available"], true, "{body}");
        slowest = slowest.max(asked.elapsed());
        users += 1;
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    let queries = app.sim.stats().rdap.queries - before;
    let elapsed = started.elapsed().as_secs_f64();
    // The job's share: 2 a second and a burst of 1; the users' own checks; a little slack for the
    // window's edges. Without the share the job alone would take the whole 8 a second.
    let allowed = (2.0 * elapsed).ceil() as u64 + 1 + users + 2;
    assert!(
        queries <= allowed,
        "{queries} RDAP queries in {elapsed:.1} s ({users} users' checks): over the share ({allowed})"
    );
    assert!(queries >= users, "the users' checks reached the registry: {queries}");
    assert!(slowest < Duration::from_secs(2), "a user's check waited {slowest:?} behind the job");
    let (status, _, cancelled) = {
        let response =
            app.http.delete(app.url(&format!("/v1/jobs/{id}?client_key={key}"))).send().await.expect("delete");
        let status = response.status().as_u16();
        (status, (), response.json::<Value>().await.expect("json"))
    };
    assert_eq!((status, cancelled["state"].clone()), (200, Value::from("cancelled")), "{cancelled}");
    assert!(cancelled["checked"].as_i64().is_some_and(|c| c < 60), "the job kept to its share: {cancelled}");
    app.finish(None).await;
}

/// A job's registries (its interleaving and ETA key) are the RDAP hosts the engine asks, with
/// `engine.rdap.base_overrides`, not the catalogue's: `.online` and `.site` share one RDAP server
/// in the catalogue (`rdap.radix.host`), and here each is served by a simulated host of its own,
/// each with its own politeness budget.
#[tokio::test]
async fn a_jobs_registries_are_the_rdap_hosts_the_engine_asks() {
    let scenario = dsa_tests::sim::Scenario::from_toml(
        "[[tld]]\nsuffix = \"online\"\nprotocols = [\"dns\", \"rdap\"]\nrdap_family = \"centralnic\"\n\
         [[tld]]\nsuffix = \"site\"\nprotocols = [\"dns\", \"rdap\"]\nrdap_family = \"centralnic\"\n",
    )
    .expect("scenario");
    let app = TestApp::spawn_spread(
        scenario,
        2,
        |s| {
            // The job stays queued: its ETA is that of every name.
            s.policy.bulk_jobs.run = false;
            s.engine.limits.rdap.per_second = 10.0;
        },
        api::state::system_clock(),
    )
    .await;
    let key = app.key(KeyOpts::default()).await;
    let names: String =
        (0..20).flat_map(|i| [format!("dsa-eta-{i}.online\n"), format!("dsa-eta-{i}.site\n")]).collect();
    let (status, _, accepted) = submit(&app, &key, "text/plain", names).await;
    assert_eq!(status, 202, "{accepted}");
    let id = accepted["id"].as_str().expect("id");
    let (status, _, job) = app.get(&format!("/v1/jobs/{id}?client_key={key}")).await;
    assert_eq!(status, 200, "{job}");
    assert_eq!(job["state"], "queued", "{job}");
    // 20 names at each of two hosts at 10 a second: 2 s (one shared budget would be 4 s).
    assert_eq!(job["eta_secs"].as_f64(), Some(2.0), "{job}");
    app.finish(Some(&key)).await;
}
