//! Two findings of a chaos run, closed: a WHOIS or DNS request started while Postgres is down
//! still ends within its deadline (the clock runs from admission, the database steps included),
//! and a front started while NATS is down (over HTTP or HTTPS) answers 503 at once instead of
//! refusing connections, then serves once the bus is back.

use std::time::{Duration, Instant};

use api::keys::Plan;
use dsa_tests::harness::fleet::{Fleet, free_port, settled, wait_until};
use dsa_tests::sim::{Knobs, Latency};

use super::get;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whois_started_while_postgres_is_down_ends_within_its_deadline() {
    const DEADLINE_SECS: f64 = 3.0;
    lookup_started_while_postgres_is_down_ends_within(
        "whois-deadline",
        |s| s.engine.records.whois_deadline_secs = DEADLINE_SECS,
        "/v1/whois?domain=google.com",
        Duration::from_secs_f64(DEADLINE_SECS),
    )
    .await;
}

/// As for WHOIS, a DNS request's deadline (`records.dns_deadline_secs`, plus a second for the
/// bus) runs from its admission, not from after the database steps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dns_started_while_postgres_is_down_ends_within_its_deadline() {
    const DEADLINE_SECS: f64 = 2.0;
    lookup_started_while_postgres_is_down_ends_within(
        "dns-deadline",
        |s| s.engine.records.dns_deadline_secs = DEADLINE_SECS,
        "/v1/dns?domain=www.google.com&types=A",
        Duration::from_secs_f64(DEADLINE_SECS + 1.0),
    )
    .await;
}

/// A request to `path` (a record lookup) made while the registry or resolver hangs, Postgres is
/// cut off and the front's cached key record has expired (so its key lookup waits for the
/// database before the handler runs) is answered with a 502/503 within `deadline` (+750 ms).
async fn lookup_started_while_postgres_is_down_ends_within(
    prefix: &str,
    configure: impl FnOnce(&mut api::config::Settings) + Send + 'static,
    path: &str,
    deadline: Duration,
) {
    let fleet = Fleet::builder(prefix).pg_proxy().configure(configure).start().await;
    let (key, key_id) = fleet.key(Plan::Pro).await;
    let http = reqwest::Client::new();
    // The front knows the key and its credits (a key it has seen is served from its last record
    // while the store is down).
    let (status, body) = get(&http, fleet.url(&format!("/v1/domains/check?client_key={key}&domain=example.com"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(settled(fleet.store(), &key_id, 1).await, 1);

    // The upstreams hang, Postgres goes away, and the front's cached key record expires.
    fleet
        .sim()
        .set_knobs(Knobs { latency_ms: Latency { rdap: 30_000, whois: 30_000, dns: 30_000 }, ..Knobs::default() });
    fleet.pg_proxy().cut().await;
    tokio::time::sleep(Duration::from_secs(api::state::KEY_CACHE_TTL_SECS) + Duration::from_millis(500)).await;

    let started = Instant::now();
    let (status, body) = get(&http, fleet.url(&format!("{path}&client_key={key}"))).await;
    let took = started.elapsed();
    assert!(status == 502 || status == 503, "no upstream answer and no database: 502 or 503, got {status}: {body}");
    assert_eq!(body["success"], false, "{body}");
    let limit = deadline + Duration::from_millis(750);
    assert!(took <= limit, "{path} took {took:?}, past its {deadline:?} deadline (+750 ms)");

    fleet.pg_proxy().restore().await;
    fleet.sim().set_knobs(Knobs::default());
    fleet.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn front_started_while_nats_is_down_answers_503_then_serves() {
    front_started_while_nats_is_down(false).await;
}

/// The same over HTTPS: the port is bound (and the certificate loaded) first too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_front_started_while_nats_is_down_answers_503_then_serves() {
    front_started_while_nats_is_down(true).await;
}

/// A self-signed certificate for 127.0.0.1 and its key, written into `dir` by Debian's `openssl`
/// command: (certificate path, key path).
fn self_signed_certificate(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let status = std::process::Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
        .args(["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("the openssl command makes the test certificate (apt-get install openssl)");
    assert!(status.success(), "openssl req failed: {status}");
    (cert, key)
}

async fn front_started_while_nats_is_down(tls: bool) {
    let mut fleet = Fleet::builder(if tls { "https-front-nats-down" } else { "front-nats-down" }).start().await;
    let (key, key_id) = fleet.key(Plan::Free).await;
    // The fleet's own fronts speak HTTP; the front started below speaks HTTPS when `tls`, with a
    // certificate this client need not trust (what is tested is that it answers at once).
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .danger_accept_invalid_certs(true)
        .build()
        .expect("client");
    // The fleet's worker and ledger consumer are connected (they reconnect after the outage).
    let (status, body) = get(&http, fleet.url(&format!("/v1/domains/check?client_key={key}&domain=example.com"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(settled(fleet.store(), &key_id, 1).await, 1);
    fleet.nats_mut().kill();

    let mut settings = fleet.settings().clone();
    settings.server.listen = format!("127.0.0.1:{}", free_port()).parse().expect("address");
    settings.bootstrap.create_dev_key = false;
    let certificates = tempfile_dir();
    if tls {
        let (cert, key) = self_signed_certificate(&certificates);
        (settings.server.tls_cert, settings.server.tls_key) = (Some(cert), Some(key));
    }
    let process = fleet.spawn_process("front", &settings);
    let base = format!("{}://{}", if tls { "https" } else { "http" }, settings.server.listen);
    // The process binds its port first thing.
    let listening = wait_until(Duration::from_secs(10), || {
        let url = format!("{base}/healthz");
        let http = http.clone();
        async move { http.get(url).send().await.is_ok() }
    })
    .await;
    let log = |fleet: &mut Fleet| std::fs::read_to_string(&fleet.process(process).log).unwrap_or_default();
    assert!(listening, "the front never accepted a connection; its log: {}", log(&mut fleet));

    let check = format!("{base}/v1/domains/check?client_key={key}&domain=example.com");
    // For a while (NATS stays down), every request is answered: 503 in the API's shape.
    let until = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < until {
        let response = http.get(&check).send().await.expect("a front waiting for NATS answers, never refuses");
        assert_eq!(response.status(), 503);
        assert!(response.headers().contains_key("retry-after"), "503 with Retry-After");
        let body: serde_json::Value = response.json().await.expect("JSON body");
        assert_eq!(body["success"], false, "{body}");
        assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()), "{body}");
        let (status, _) = get(&http, format!("{base}/healthz")).await;
        assert_eq!(status, 200, "alive while joining");
        let (status, _) = get(&http, format!("{base}/readyz")).await;
        assert_eq!(status, 503, "not ready while joining");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    fleet.nats_mut().resume().await;
    let resumed = Instant::now();
    let mut refused = 0;
    let mut served = None;
    while resumed.elapsed() < Duration::from_secs(15) {
        match http.get(&check).send().await {
            Ok(r) if r.status() == 200 => {
                served = Some(resumed.elapsed());
                break;
            }
            // 503 while joining; a 502 once joined while the worker is still reconnecting.
            Ok(r) => assert!([502, 503].contains(&r.status().as_u16()), "{} before serving", r.status()),
            Err(_) => refused += 1,
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let served =
        served.unwrap_or_else(|| panic!("the front never served once NATS was back; its log: {}", log(&mut fleet)));
    println!("[front started with NATS down] serving {served:?} after NATS came back; connections refused: {refused}");
    assert_eq!(refused, 0, "no connection refused or dropped while the front switched over");
    assert!(served <= Duration::from_secs(8), "serving {served:?} after NATS came back");
    let (status, _) = get(&http, format!("{base}/readyz")).await;
    assert_eq!(status, 200, "ready once joined");
    fleet.stop().await;
    let _ = std::fs::remove_dir_all(certificates);
}

/// A fresh directory under the system's temporary directory.
fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("dsa-outages-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    dir
}
