//! A fixed amount of work on a standalone front, for an instruction-count profiler: N cached
//! `GET /v1/domains/check` (or N `GET /healthz`, or none) over keep-alive loopback connections,
//! to a front in this process (standalone, SQLite ledger, verdicts from the simulator).
//!
//! Wall-clock throughput on a shared machine is noisy; instructions are not. Run it three times
//! under callgrind and subtract (`scripts/profile-check.sh` does, and prints instructions per
//! request of each and their ratio):
//!
//! ```text
//! PROFILE_TARGET=none    valgrind --tool=callgrind <bench binary>   # start-up and warm-up only
//! PROFILE_TARGET=healthz valgrind --tool=callgrind <bench binary>
//! PROFILE_TARGET=check   valgrind --tool=callgrind <bench binary>
//! ```
//!
//! Knobs (environment): `PROFILE_TARGET` (`check`, `healthz` or `none`), `PROFILE_REQUESTS`
//! (default 5,000), `PROFILE_CONNECTIONS` (16: concurrent connections, so the ledger's group
//! commit batches as it does under load), `DSA_LOG` (the `dsa` binary's log filter, default
//! `info`). The client is a bare HTTP/1.1 writer of pre-built
//! requests, so its own cost is the same small amount for every target.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use api::config::Settings;
use api::keys::{KeyKind, Plan};
use api::store::NewKey;
use dsa_tests::harness::bench::env_or;
use dsa_tests::sim::{Knobs, Scenario, Simulator};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const NAMES: [&str; 6] =
    ["example.com", "google.com", "dsa-demo-available.com", "dsa-demo-available.af", "google.com.af", "wikipedia.org"];

/// The `dsa` binary's allocator (`api/src/main.rs`): the front in this process allocates as the
/// shipped one does, so a check's cost is not measured on the system allocator's.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // Logs as the `dsa` binary sets them up (`DSA_LOG`, default `info`): spans enabled at that
    // level are part of a request's cost.
    api::telemetry::init_logs();
    let target: String = env_or("PROFILE_TARGET", "check".to_owned());
    let requests: usize = env_or("PROFILE_REQUESTS", 5_000);
    let connections: usize = env_or("PROFILE_CONNECTIONS", 16);
    anyhow::ensure!(matches!(target.as_str(), "check" | "healthz" | "none"), "PROFILE_TARGET: check, healthz or none");

    let sim = Simulator::start(Scenario::demo()).await?;
    sim.set_knobs(Knobs::default());
    let db = std::env::temp_dir().join(format!("dsa-profile-{}.db", uuid::Uuid::now_v7()));
    let mut settings = Settings::default();
    settings.database.url = format!("sqlite://{}?mode=rwc", db.display()).into();
    settings.engine = dsa_tests::harness::sim_engine(&sim);
    settings.policy.per_minute =
        api::policy::PlanRates { free: u32::MAX, starter: u32::MAX, pro: u32::MAX, reseller: u32::MAX };
    settings.policy.per_ip_per_minute = 0;
    settings.policy.max_in_flight = 0;
    settings.policy.shed_scheduling_lag_ms = 0;
    let app = api::standalone(&settings).await?;
    let mut keys = Vec::new();
    for _ in 0..4 {
        let (key, key_hash) = api::keys::generate(KeyKind::Server);
        app.store
            .create_key(NewKey {
                key_hash,
                kind: KeyKind::Server,
                plan: Plan::Reseller,
                pricing_enabled: true,
                show_purchase_button: true,
                default_commission_percent: Some(10.0),
                purchase_url: Some("https://shop.example/checkout".into()),
                allowed_origins: Vec::new(),
                label: "profile".into(),
            })
            .await?;
        keys.push(key);
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let router = api::router(app.state.clone(), None);
    let server = tokio::spawn(async move {
        let _ = api::serve(listener, router, std::future::pending()).await;
    });

    let request = |path: &str| format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\n\r\n").into_bytes();
    let checks: Vec<Vec<u8>> = keys
        .iter()
        .flat_map(|k| NAMES.iter().map(move |n| format!("/v1/domains/check?client_key={k}&domain={n}")))
        .map(|p| request(&p))
        .collect();
    // Warm-up, the same in every target: each name looked up once (then cached), each key seen.
    let mut warm = TcpStream::connect(addr).await?;
    let mut buffer = Vec::new();
    for r in &checks {
        let status = exchange(&mut warm, &mut buffer, r).await?;
        anyhow::ensure!(status == 200, "warm-up check answered {status}");
    }
    let status = exchange(&mut warm, &mut buffer, &request("/healthz")).await?;
    anyhow::ensure!(status == 200, "warm-up /healthz answered {status}");

    let work: Arc<Vec<Vec<u8>>> = Arc::new(match target.as_str() {
        "check" => checks,
        "healthz" => vec![request("/healthz")],
        _ => Vec::new(),
    });
    let next = Arc::new(AtomicUsize::new(0));
    let total = if work.is_empty() { 0 } else { requests };
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..connections.max(1) {
        let (work, next) = (work.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut stream = TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            let mut buffer = Vec::with_capacity(4096);
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= total {
                    return anyhow::Ok(());
                }
                let status = exchange(&mut stream, &mut buffer, &work[n % work.len()]).await?;
                anyhow::ensure!(status == 200, "request {n} answered {status}");
            }
        }));
    }
    for t in tasks {
        t.await??;
    }
    let elapsed = started.elapsed();
    println!(
        "profile {target}: {total} requests over {connections} connections in {:.3} s ({:.0}/s; under a profiler this rate means nothing)",
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64().max(1e-9)
    );
    server.abort();
    dsa_tests::harness::remove_sqlite_database(&db);
    Ok(())
}

/// Writes `request` and reads one answer (headers and a `Content-Length` body): its status.
async fn exchange(stream: &mut TcpStream, buffer: &mut Vec<u8>, request: &[u8]) -> anyhow::Result<u16> {
    stream.write_all(request).await?;
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut answer = httparse::Response::new(&mut headers);
        if let httparse::Status::Complete(head) = answer.parse(buffer)? {
            let length = answer
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse::<usize>().ok())
                .unwrap_or(0);
            let code = answer.code.unwrap_or(0);
            if buffer.len() >= head + length {
                buffer.drain(..head + length);
                return Ok(code);
            }
        }
        anyhow::ensure!(stream.read_buf(buffer).await? > 0, "connection closed mid-answer");
    }
}
