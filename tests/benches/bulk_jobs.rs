//! Benchmark of a large bulk job (`POST /v1/jobs/bulk-check`, issue 26) on the registry simulator,
//! over real HTTP to a standalone front run as its own process (`dsa serve`, in-process bus,
//! SQLite). Not a timed test: `cargo bench -p dsa-tests --bench bulk_jobs`.
//!
//! For each job size of `BENCH_SIZES` (default `10000,40000`: the bench key's plan, Reseller,
//! allows 50,000 credits a month, so a 100,000-name job is refused with a 429) one job of that many names across
//! the RDAP registries of the demo scenario (.com, .net, .org, .dev), one name in
//! `BENCH_TAKEN_EVERY` (5) registered and delegated (DNS answers it: no registry query), the rest
//! available. Printed per size:
//! * **wall time** from the submission to `done`, and the **minimum** the politeness budget allows:
//!   the registry queries needed (names not delegated) over the RDAP host's queries per second
//!   (`BENCH_RDAP_PER_SECOND`, default 500; the simulator serves every registry from one host,
//!   so one budget bounds them all), or every name's DNS pre-check over the name servers' budget
//!   (`BENCH_DNS_PER_SECOND`, default 500), whichever is longer — and the ratio of the two;
//! * **registry queries per name** (RDAP + WHOIS queries the simulator saw, over the names);
//! * **politeness**: the simulator enforces the RDAP budget itself (`rdap_per_second`, burst of
//!   the same size) and counts every request over it; the busiest second of RDAP and of DNS
//!   queries the simulator saw (sampled each second) is printed against its budget;
//! * the `dsa serve` process's **RSS** (`VmRSS` after the job, `VmHWM` its peak, from
//!   `/proc/<pid>/status`), and the ratio of the peaks of the largest and smallest size: the
//!   front's memory must not grow with the job (the upload is streamed into the store, results
//!   are paged);
//! * **interactive checks**: p99 of single checks (`GET /v1/domains/check`, fresh names, one
//!   every 50 ms) while the job runs, against the p99 of the same before the job, same process.
//!
//! Other knobs: `BENCH_RTT_MS` (20, added to every DNS and RDAP answer), `BENCH_CONCURRENCY`
//! (the runner's checks in flight, default 64), `BENCH_BURST` (the budgets' burst, default 10),
//! `BENCH_BACKGROUND_SHARE` (the share of each budget the job's checks may use; default the
//! shipped `engine.limits.background_share`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use api::config::Settings;
use dsa_tests::harness::bench::env_or;
use dsa_tests::harness::fleet::{WorkerProcess, free_port};
use dsa_tests::sim::{DomainSpec, Knobs, Latency, RateLimit, Scenario, Simulator, Truth};

const TLDS: [&str; 4] = ["com", "net", "org", "dev"];

/// `VmRSS` and `VmHWM` of process `pid`, KiB.
fn rss_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn name(size: usize, i: usize) -> String {
    format!("dsa-bench-{size}-{i}.{}", TLDS[i % TLDS.len()])
}

fn p99(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 * 0.99).ceil() as usize).clamp(1, v.len()) - 1]
}

/// Interactive checks of fresh names, one every 50 ms, until `stop`; their latencies, ms.
async fn interactive(
    http: reqwest::Client,
    base: String,
    key: String,
    tag: &'static str,
    stop: Arc<AtomicBool>,
) -> Vec<f64> {
    let mut latencies = Vec::new();
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) {
        let url = format!("{base}/v1/domains/check?client_key={key}&domain=dsa-one-{tag}-{i}.com");
        let started = Instant::now();
        if let Ok(r) = http.get(url).send().await
            && r.status().is_success()
        {
            latencies.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        i += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    latencies
}

struct Knobset {
    taken_every: usize,
    per_second: f64,
    dns_per_second: f64,
    burst: u32,
    rtt: u64,
    concurrency: usize,
    /// `engine.limits.background_share` (the job's checks are background work).
    background_share: f64,
}

/// Runs one job of `size` names; returns the `dsa serve` process's peak RSS, KiB.
async fn run(size: usize, k: &Knobset) -> u64 {
    let domains: Vec<DomainSpec> = (0..size)
        .filter(|i| i % k.taken_every == 0)
        .map(|i| DomainSpec { name: name(size, i), truth: Truth::Registered })
        .collect();
    let delegated = domains.len();
    let scenario = Scenario::new(Scenario::demo().tlds().to_vec(), domains, Knobs::default()).expect("scenario");
    let sim = Arc::new(Simulator::start(scenario).await.expect("simulator"));
    sim.set_knobs(Knobs {
        latency_ms: Latency { dns: k.rtt, rdap: k.rtt, whois: k.rtt },
        rate_limit: RateLimit { rdap_per_second: Some(k.per_second as u32), ..RateLimit::default() },
        ..Knobs::default()
    });
    let file = std::env::temp_dir().join(format!("dsa-bench-bulk-{}.db", uuid::Uuid::now_v7()));
    let mut settings = Settings::default();
    settings.database.url = format!("sqlite://{}?mode=rwc", file.display()).into();
    settings.engine = dsa_tests::harness::sim_engine(&sim);
    settings.engine.limits.rdap.per_second = k.per_second;
    settings.engine.limits.rdap.burst = k.burst;
    settings.engine.limits.rdap.concurrency = k.concurrency.max(1);
    settings.engine.limits.dns.per_second = k.dns_per_second;
    settings.engine.limits.dns.burst = k.burst;
    settings.engine.limits.dns.concurrency = k.concurrency.max(1);
    settings.engine.check_deadline_secs = 10.0;
    settings.engine.limits.max_queue_wait_secs = 10.0;
    settings.engine.limits.background_share = k.background_share;
    settings.policy.bulk_jobs.concurrency = k.concurrency;
    settings.policy.bulk_jobs.max_names = settings.policy.bulk_jobs.max_names.max(size);
    settings.jobs.workers = k.concurrency.max(8);
    settings.server.listen = format!("127.0.0.1:{}", free_port()).parse().expect("address");
    settings.bootstrap.create_dev_key = false;
    let key = {
        let api::Standalone { state, ledger, store } = api::standalone(&settings).await.expect("store");
        let (key, key_hash) = api::keys::generate(api::keys::KeyKind::Server);
        store
            .create_key(api::store::NewKey {
                key_hash,
                kind: api::keys::KeyKind::Server,
                plan: api::keys::Plan::Reseller,
                pricing_enabled: false,
                show_purchase_button: false,
                default_commission_percent: None,
                purchase_url: None,
                allowed_origins: Vec::new(),
                label: "bench".into(),
            })
            .await
            .expect("key");
        drop((state, store));
        let _ = tokio::time::timeout(Duration::from_secs(10), ledger).await;
        key
    };
    let mut front = WorkerProcess::spawn_role(&settings, "serve");
    let pid = front.pid().expect("dsa serve started");
    let base = format!("http://{}", settings.server.listen);
    let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().expect("client");
    let started = Instant::now();
    while !matches!(http.get(format!("{base}/healthz")).send().await, Ok(r) if r.status().is_success()) {
        assert!(started.elapsed() < Duration::from_secs(60) && front.running(), "dsa serve never answered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Interactive checks without a job: 5 s.
    let stop = Arc::new(AtomicBool::new(false));
    let idle = tokio::spawn(interactive(http.clone(), base.clone(), key.clone(), "idle", stop.clone()));
    tokio::time::sleep(Duration::from_secs(5)).await;
    stop.store(true, Ordering::Relaxed);
    let idle = idle.await.expect("interactive");

    let body: String = (0..size).map(|i| name(size, i) + "\n").collect();
    let before = sim.stats();
    let (rss_before, _) = rss_kib(pid);
    // The busiest second the simulator saw, RDAP and DNS.
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (sampling, sim) = (sampling.clone(), sim.clone());
        tokio::spawn(async move {
            let (mut rdap, mut dns) = (0_u64, 0_u64);
            let mut last = sim.stats();
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.tick().await;
            while sampling.load(Ordering::Relaxed) {
                tick.tick().await;
                let now = sim.stats();
                rdap = rdap.max(now.rdap.queries - last.rdap.queries);
                dns = dns.max(now.dns.queries - last.dns.queries);
                last = now;
            }
            (rdap, dns)
        })
    };
    let started = Instant::now();
    let response = http
        .post(format!("{base}/v1/jobs/bulk-check?client_key={key}"))
        .header("content-type", "text/plain")
        .body(body)
        .send()
        .await
        .expect("submit");
    let status = response.status().as_u16();
    let accepted: serde_json::Value = response.json().await.expect("json");
    assert_eq!(status, 202, "{accepted}");
    let uploaded = started.elapsed();
    let id = accepted["id"].as_str().expect("id").to_owned();
    let stop = Arc::new(AtomicBool::new(false));
    let busy = tokio::spawn(interactive(http.clone(), base.clone(), key.clone(), "busy", stop.clone()));
    let done = loop {
        let job: serde_json::Value = match http.get(format!("{base}/v1/jobs/{id}?client_key={key}")).send().await {
            Ok(r) => r.json().await.unwrap_or_default(),
            Err(_) => serde_json::Value::Null,
        };
        if job["state"] == "done" {
            break job;
        }
        assert!(started.elapsed() < Duration::from_secs(3600), "{job}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let wall = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let busy = busy.await.expect("interactive");
    sampling.store(false, Ordering::Relaxed);
    let (busiest_rdap, busiest_dns) = sampler.await.expect("sampler");
    let after = sim.stats();
    let (rss_after, rss_peak) = rss_kib(pid);
    let registry = (after.rdap.queries - before.rdap.queries) + (after.whois.queries - before.whois.queries);
    let violations = (after.rdap.rate_limit_violations - before.rdap.rate_limit_violations)
        + (after.whois.rate_limit_violations - before.whois.rate_limit_violations);
    let needed = size - delegated;
    let minimum = (needed as f64 / k.per_second).max(size as f64 / k.dns_per_second);
    let (p99_idle, p99_busy) = (p99(idle.clone()), p99(busy.clone()));
    println!(
        "bulk job of {size} names ({delegated} delegated): upload {:.2} s, wall {:.1} s, budget minimum {:.1} s ({needed} registry queries at {}/s, {size} DNS pre-checks at {}/s), wall/minimum {:.2}; \
         registry queries per name {:.3} ({registry} for {size}), DNS queries per name {:.3} (the interactive checks' included); politeness violations counted by the simulator {violations}; busiest second RDAP {busiest_rdap} (budget {}), DNS {busiest_dns} (budget {}); unknown {}; \
         dsa serve RSS before {} MiB, after {} MiB, peak {} MiB; interactive p99 {p99_idle:.0} ms idle ({} checks), {p99_busy:.0} ms during the job ({} checks), ratio {:.2}",
        uploaded.as_secs_f64(),
        wall.as_secs_f64(),
        minimum,
        k.per_second,
        k.dns_per_second,
        wall.as_secs_f64() / minimum.max(1e-9),
        registry as f64 / size as f64,
        (after.dns.queries - before.dns.queries) as f64 / size as f64,
        k.per_second,
        k.dns_per_second,
        done["counts"]["unknown"],
        rss_before / 1024,
        rss_after / 1024,
        rss_peak / 1024,
        idle.len(),
        busy.len(),
        p99_busy / p99_idle.max(1e-9),
    );
    front.terminate(Duration::from_secs(10)).await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
    rss_peak
}

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let sizes: String = env_or("BENCH_SIZES", "10000,40000".to_owned());
    let knobs = Knobset {
        taken_every: env_or::<usize>("BENCH_TAKEN_EVERY", 5).max(1),
        per_second: env_or("BENCH_RDAP_PER_SECOND", 500.0),
        dns_per_second: env_or("BENCH_DNS_PER_SECOND", 500.0),
        burst: env_or("BENCH_BURST", 10),
        rtt: env_or("BENCH_RTT_MS", 20),
        concurrency: env_or("BENCH_CONCURRENCY", 64),
        background_share: env_or("BENCH_BACKGROUND_SHARE", workers::config::LimitsConfig::default().background_share),
    };
    let mut peaks = Vec::new();
    for size in sizes.split(',').filter_map(|s| s.trim().parse::<usize>().ok()) {
        peaks.push((size, run(size, &knobs).await));
    }
    if let (Some((small, a)), Some((large, b))) = (peaks.first(), peaks.last())
        && small != large
    {
        println!(
            "dsa serve peak RSS: {large} names / {small} names = {:.2} ({} MiB / {} MiB)",
            *b as f64 / (*a).max(1) as f64,
            b / 1024,
            a / 1024
        );
    }
}
