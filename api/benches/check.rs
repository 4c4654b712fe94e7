//! Benchmark of `GET /v1/domains/check` with cached verdicts, standalone mode, over real HTTP on
//! loopback, against the registry simulator (not a timed test; run with
//! `cargo bench -p dsa-api --bench check`).
//!
//! Two measurements in one run:
//! * **closed loop**: C connections sending back to back for D seconds → maximum throughput;
//! * **open loop**: requests scheduled at a fixed rate R for D seconds; each latency is measured
//!   from the *scheduled* send time, so a stalled server cannot hide queueing (no coordinated
//!   omission) → p50/p99/max at that rate.
//!
//! Knobs (environment): `BENCH_SECS` (default 5), `BENCH_CONNECTIONS` (64), `BENCH_RATE` (2000).
//! The load generator shares the machine's cores with the server, so figures are a lower bound.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use api::config::Settings;
use api::keys::{KeyKind, Plan};
use api::store::NewKey;
use dsa_tests::sim::{Knobs, Scenario, Simulator};

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

#[derive(serde::Deserialize)]
struct EngineFile {
    engine: workers::config::EngineConfig,
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let secs: u64 = env_or("BENCH_SECS", 5);
    let connections: usize = env_or("BENCH_CONNECTIONS", 64);
    let rate: u64 = env_or("BENCH_RATE", 2000);

    let sim = Simulator::start(Scenario::demo()).await?;
    sim.set_knobs(Knobs::default());
    let db = std::env::temp_dir().join(format!("dsa-bench-{}.db", uuid::Uuid::now_v7()));
    let mut settings = Settings::default();
    settings.database.url = format!("sqlite://{}?mode=rwc", db.display());
    settings.engine = toml::from_str::<EngineFile>(&sim.engine_config_toml())?.engine;
    settings.engine.overrides_only = true;
    // Measure the check path, not the per-minute limiter's 429s.
    settings.policy.per_minute = api::policy::PlanRates { free: u32::MAX, starter: u32::MAX, pro: u32::MAX, reseller: u32::MAX };
    let app = api::standalone(&settings).await?;
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
            label: "bench".into(),
        })
        .await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let router = api::router(app.state.clone(), None);
    tokio::spawn(async move {
        let _ = api::serve(listener, router, std::future::pending()).await;
    });

    // One Reseller key allows 50,000 credits a month: spread the load over several keys.
    let mut keys = vec![key];
    for _ in 0..8 {
        let (k, h) = api::keys::generate(KeyKind::Server);
        app.store
            .create_key(NewKey {
                key_hash: h,
                kind: KeyKind::Server,
                plan: Plan::Reseller,
                pricing_enabled: true,
                show_purchase_button: true,
                default_commission_percent: Some(10.0),
                purchase_url: Some("https://shop.example/checkout".into()),
                allowed_origins: Vec::new(),
                label: "bench".into(),
            })
            .await?;
        keys.push(k);
    }
    let names = ["example.com", "google.com", "dsa-demo-available.com", "dsa-demo-available.af", "google.com.af", "wikipedia.org"];
    let urls: Arc<Vec<String>> = Arc::new(
        keys.iter()
            .flat_map(|k| names.iter().map(move |n| format!("http://{addr}/v1/domains/check?client_key={k}&domain={n}")))
            .collect(),
    );
    let client = reqwest::Client::builder().pool_max_idle_per_host(connections * 2).build()?;
    // Warm the verdict cache.
    for url in urls.iter().take(names.len()) {
        let r = client.get(url).send().await?;
        anyhow::ensure!(r.status().is_success(), "warm-up failed: {}", r.status());
    }

    // Closed loop.
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..connections {
        let (client, urls, stop, done, errors) = (client.clone(), urls.clone(), stop.clone(), done.clone(), errors.clone());
        tasks.push(tokio::spawn(async move {
            let mut i = c;
            while !stop.load(Ordering::Relaxed) {
                let url = &urls[i % urls.len()];
                i += connections;
                match client.get(url).send().await {
                    Ok(r) if r.status().is_success() => {
                        let _ = r.bytes().await;
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    _ => {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let closed = done.load(Ordering::Relaxed) as f64 / elapsed;
    println!(
        "closed loop: {connections} connections, {secs} s: {closed:.0} cached checks/s ({} errors)",
        errors.load(Ordering::Relaxed)
    );

    // Open loop at a fixed rate.
    let total = rate * secs;
    let interval = Duration::from_secs_f64(1.0 / rate as f64);
    let start = tokio::time::Instant::now() + Duration::from_millis(50);
    let mut handles = Vec::with_capacity(total as usize);
    for n in 0..total {
        let scheduled = start + interval * n as u32;
        tokio::time::sleep_until(scheduled).await;
        let (client, url) = (client.clone(), urls[n as usize % urls.len()].clone());
        handles.push(tokio::spawn(async move {
            let ok = matches!(client.get(&url).send().await, Ok(r) if r.status().is_success());
            (scheduled.elapsed(), ok)
        }));
    }
    let mut latencies = Vec::with_capacity(handles.len());
    let mut failed = 0;
    for h in handles {
        let (latency, ok) = h.await?;
        if !ok {
            failed += 1;
        }
        latencies.push(latency);
    }
    latencies.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "open loop: {rate}/s for {secs} s ({total} requests, {failed} failed): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        ms(percentile(&latencies, 0.50)),
        ms(percentile(&latencies, 0.99)),
        ms(*latencies.last().unwrap_or(&Duration::ZERO)),
    );
    let _ = std::fs::remove_file(&db);
    Ok(())
}
