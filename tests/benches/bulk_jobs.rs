//! Benchmark of a large bulk job (`POST /v1/jobs/bulk-check`, issue 26) on the registry simulator,
//! over real HTTP to a standalone front run as its own process (`dsa serve`, in-process bus,
//! SQLite). Not a timed test: `cargo bench -p dsa-tests --bench bulk_jobs`.
//!
//! The shape: for each job size of `BENCH_SIZES` (default `10000,100000`) one job whose
//! names are dealt round-robin over `BENCH_TLDS` (default 8) real open gTLDs, each TLD a registry
//! of its own on its own simulated host (`Simulator::start_spread`: its own RDAP server and its
//! own name server, so dsa keeps a politeness budget per registry, as with real registries);
//! `BENCH_DELEGATED_PERCENT` (70) of each TLD's names registered and delegated (DNS answers them:
//! no registry query), the rest available. The politeness limits are the shipped ones
//! (`engine.limits`: RDAP 10 queries a second per host, burst 10; DNS 50 a second per name
//! server), unless `BENCH_RDAP_PER_SECOND`, `BENCH_DNS_PER_SECOND` or `BENCH_BURST` say otherwise;
//! the bench key's monthly allowance is raised to cover the job. Printed per size:
//! * **wall time** from the submission to `done`, and the **minimum** the politeness budgets
//!   allow: for each registry, its names not delegated over its RDAP budget, or all its names'
//!   DNS pre-checks over its name server's budget, whichever is longer; the longest registry
//!   (each budget times `engine.limits.background_share`: a job's checks are background work) —
//!   and the ratio of the two;
//! * **registry queries per name** (RDAP + WHOIS queries the simulator saw, over the names) and
//!   DNS queries per name;
//! * **politeness**: every simulated host enforces the RDAP budget on each client itself (burst
//!   of the same size) and counts every request over it; the busiest second of RDAP and of DNS
//!   queries over all hosts (sampled each second) is printed against the sum of the budgets;
//! * the `dsa serve` process's **RSS** (`VmRSS` after the job, `VmHWM` its peak, from
//!   `/proc/<pid>/status`), and the ratio of the peaks of the largest and smallest size: the
//!   front's memory must not grow with the job (the upload is streamed into the store, results
//!   are paged);
//! * **interactive checks**: p99 of single checks (`GET /v1/domains/check`, fresh `.com` names,
//!   `.com` on a host of its own, one every 250 ms, within `.com`'s RDAP budget) while the job runs, against the p99 of the
//!   same before the job, same process.
//!
//! Other knobs: `BENCH_RTT_MS` (20, added to every DNS and RDAP answer), `BENCH_CONCURRENCY`
//! (the runner's checks in flight, `policy.bulk_jobs.concurrency`; default the shipped value),
//! `BENCH_BACKGROUND_SHARE` (the share of each budget the job's checks may use; default the
//! shipped `engine.limits.background_share`), `BENCH_TRACE=1` (print every second's RDAP and
//! DNS queries). `TMPDIR` places the SQLite file.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use api::config::Settings;
use dsa_tests::harness::bench::{OPEN_GTLDS, env_or};
use dsa_tests::harness::fleet::{WorkerProcess, free_port};
use dsa_tests::sim::{DomainSpec, Knobs, Latency, RateLimit, Scenario, Simulator, Truth};

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

/// The `i`-th name of a job of `size` names, its TLD dealt round-robin over the first `tlds`
/// of [`OPEN_GTLDS`].
fn name(size: usize, i: usize, tlds: usize) -> String {
    format!("dsa-bench-{size}-{i}.{}", OPEN_GTLDS[i % tlds])
}

/// Whether the `i`-th name is registered and delegated: `percent` of each TLD's names, mixed as
/// in a real list (a fixed pseudo-random draw per name, SplitMix64 of its index, not blocks of
/// taken names followed by blocks of free ones).
fn delegated(i: usize, percent: usize) -> bool {
    let mut z = (i as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z % 100) < percent as u64
}

/// The scenario: `.com` first (the simulator's host 0, the interactive checks' registry), then
/// the job's TLDs, DNS and RDAP each.
fn scenario(size: usize, k: &Knobset) -> Scenario {
    let mut toml =
        String::from("[[tld]]\nsuffix = \"com\"\nprotocols = [\"dns\", \"rdap\"]\nrdap_family = \"verisign\"\n");
    for tld in &OPEN_GTLDS[..k.tlds] {
        toml.push_str(&format!(
            "[[tld]]\nsuffix = \"{tld}\"\nprotocols = [\"dns\", \"rdap\"]\nrdap_family = \"centralnic\"\n"
        ));
    }
    let tlds = Scenario::from_toml(&toml).expect("scenario").tlds().to_vec();
    let domains: Vec<DomainSpec> = (0..size)
        .filter(|&i| delegated(i, k.delegated_percent))
        .map(|i| DomainSpec { name: name(size, i, k.tlds), truth: Truth::Registered })
        .collect();
    Scenario::new(tlds, domains, Knobs::default()).expect("scenario")
}

/// The shortest wall time the politeness budgets allow for a job of `size` names, seconds: for
/// each registry, its names not delegated over its RDAP budget or all its names' DNS pre-checks
/// over its name server's budget, whichever is longer; the longest registry.
fn minimum(size: usize, k: &Knobset) -> f64 {
    let (rdap, dns) = (k.rdap_per_second * k.background_share, k.dns_per_second * k.background_share);
    (0..k.tlds)
        .map(|t| {
            let names: Vec<usize> = (t..size).step_by(k.tlds).collect();
            let needed = names.iter().filter(|&&i| !delegated(i, k.delegated_percent)).count();
            (needed as f64 / rdap).max(names.len() as f64 / dns)
        })
        .fold(0.0, f64::max)
}

fn p99(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 * 0.99).ceil() as usize).clamp(1, v.len()) - 1]
}

/// Interactive checks of fresh `.com` names, one every 250 ms (`.com`'s RDAP budget is 10 a
/// second), until `stop`; their latencies, ms.
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
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    latencies
}

struct Knobset {
    tlds: usize,
    delegated_percent: usize,
    rdap_per_second: f64,
    dns_per_second: f64,
    burst: u32,
    rtt: u64,
    concurrency: usize,
    /// `engine.limits.background_share` (the job's checks are background work).
    background_share: f64,
}

/// Runs one job of `size` names; returns the `dsa serve` process's peak RSS, KiB.
async fn run(size: usize, k: &Knobset) -> u64 {
    let delegated = (0..size).filter(|&i| delegated(i, k.delegated_percent)).count();
    let sim = Arc::new(Simulator::start_spread(scenario(size, k), k.tlds + 1).await.expect("simulator"));
    sim.set_knobs(Knobs {
        latency_ms: Latency { dns: k.rtt, rdap: k.rtt, whois: k.rtt },
        // Each host limits each client on its own: the registries' own budgets.
        rate_limit: RateLimit { rdap_per_second: Some(k.rdap_per_second as u32), ..RateLimit::default() },
        ..Knobs::default()
    });
    let file = std::env::temp_dir().join(format!("dsa-bench-bulk-{}.db", uuid::Uuid::now_v7()));
    let mut settings = Settings::default();
    settings.database.url = format!("sqlite://{}?mode=rwc", file.display()).into();
    settings.engine = dsa_tests::harness::sim_engine(&sim);
    settings.engine.limits.rdap.per_second = k.rdap_per_second;
    settings.engine.limits.rdap.burst = k.burst;
    settings.engine.limits.dns.per_second = k.dns_per_second;
    settings.engine.check_deadline_secs = 10.0;
    settings.engine.limits.max_queue_wait_secs = 10.0;
    settings.engine.limits.background_share = k.background_share;
    settings.policy.bulk_jobs.concurrency = k.concurrency;
    settings.policy.bulk_jobs.max_names = settings.policy.bulk_jobs.max_names.max(size);
    settings.jobs.workers = settings.jobs.workers.max(k.concurrency);
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
        // The largest plan allows 50,000 credits a month: the operator gives the bench key an
        // allowance that covers the job and the interactive checks.
        let db = sqlx::SqlitePool::connect(&format!("sqlite://{}", file.display())).await.expect("database");
        sqlx::query("UPDATE client_keys SET monthly_allowance = ?")
            .bind(i64::try_from(size).unwrap_or(i64::MAX / 2) + 10_000)
            .execute(&db)
            .await
            .expect("allowance");
        db.close().await;
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

    // Interactive checks without a job: 10 s.
    let stop = Arc::new(AtomicBool::new(false));
    let idle = tokio::spawn(interactive(http.clone(), base.clone(), key.clone(), "idle", stop.clone()));
    tokio::time::sleep(Duration::from_secs(10)).await;
    stop.store(true, Ordering::Relaxed);
    let idle = idle.await.expect("interactive");

    let body: String = (0..size).map(|i| name(size, i, k.tlds) + "\n").collect();
    let before = sim.stats();
    let (rss_before, _) = rss_kib(pid);
    // The busiest second the simulator saw, RDAP and DNS.
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (sampling, sim) = (sampling.clone(), sim.clone());
        let trace = env_or("BENCH_TRACE", 0) == 1;
        tokio::spawn(async move {
            let (mut rdap, mut dns) = (0_u64, 0_u64);
            let mut last = sim.stats();
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.tick().await;
            while sampling.load(Ordering::Relaxed) {
                tick.tick().await;
                let now = sim.stats();
                if trace {
                    println!(
                        "  second: RDAP {}, DNS {}",
                        now.rdap.queries - last.rdap.queries,
                        now.dns.queries - last.dns.queries
                    );
                }
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
    let minimum = minimum(size, k);
    let budgets = (k.rdap_per_second * k.tlds as f64, k.dns_per_second * k.tlds as f64);
    let (p99_idle, p99_busy) = (p99(idle.clone()), p99(busy.clone()));
    let wall_s = wall.as_secs_f64();
    println!(
        "bulk job of {size} names over {} registries ({delegated} delegated): upload {:.2} s, wall {wall_s:.1} s, \
         budget minimum {minimum:.1} s ({needed} registry queries at {} a second per registry, {size} DNS pre-checks at {} a second per name server, \
         shares {:.2}), wall/minimum {:.2}",
        k.tlds,
        uploaded.as_secs_f64(),
        k.rdap_per_second,
        k.dns_per_second,
        k.background_share,
        wall_s / minimum.max(1e-9),
    );
    println!(
        "  registry queries per name {:.3} ({registry} for {size}); DNS queries per name {:.3} (the interactive checks' included); \
         politeness violations counted by the simulator {violations}; RDAP {:.0}/s on average, busiest second {busiest_rdap} (all budgets {}); \
         DNS {:.0}/s on average, busiest second {busiest_dns} (all budgets {}); unknown {}",
        registry as f64 / size as f64,
        (after.dns.queries - before.dns.queries) as f64 / size as f64,
        (after.rdap.queries - before.rdap.queries) as f64 / wall_s,
        budgets.0,
        (after.dns.queries - before.dns.queries) as f64 / wall_s,
        budgets.1,
        done["counts"]["unknown"],
    );
    println!(
        "  dsa serve RSS before {} MiB, after {} MiB, peak {} MiB; interactive p99 {p99_idle:.0} ms idle ({} checks), {p99_busy:.0} ms during the job ({} checks), ratio {:.2}",
        rss_before / 1024,
        rss_after / 1024,
        rss_peak / 1024,
        idle.len(),
        busy.len(),
        p99_busy / p99_idle.max(1e-9),
    );
    front.terminate(Duration::from_secs(10)).await;
    dsa_tests::harness::remove_sqlite_database(&file);
    rss_peak
}

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let sizes: String = env_or("BENCH_SIZES", "10000,100000".to_owned());
    let shipped = workers::config::LimitsConfig::default();
    let knobs = Knobset {
        tlds: env_or::<usize>("BENCH_TLDS", 8).clamp(1, OPEN_GTLDS.len()),
        delegated_percent: env_or::<usize>("BENCH_DELEGATED_PERCENT", 70).min(100),
        rdap_per_second: env_or("BENCH_RDAP_PER_SECOND", shipped.rdap.per_second),
        dns_per_second: env_or("BENCH_DNS_PER_SECOND", shipped.dns.per_second),
        burst: env_or("BENCH_BURST", shipped.rdap.burst),
        rtt: env_or("BENCH_RTT_MS", 20),
        concurrency: env_or("BENCH_CONCURRENCY", api::front::bulk_jobs::BulkJobsConfig::default().concurrency),
        background_share: env_or("BENCH_BACKGROUND_SHARE", shipped.background_share),
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
