//! Benchmark of a large bulk job (`POST /v1/jobs/bulk-check`, issue 26) on the registry simulator,
//! over real HTTP to a standalone front (in-process bus, SQLite). Not a timed test:
//! `cargo bench -p dsa-tests --bench bulk_jobs`.
//!
//! For each job size of `BENCH_SIZES` (default `2000,10000`) one job of that many names across
//! the RDAP registries of the demo scenario (.com, .net, .org, .dev), one name in
//! `BENCH_TAKEN_EVERY` (5) registered and delegated (DNS answers it: no registry query), the rest
//! available. Printed per size:
//! * **wall time** from the submission to `done`, and the **minimum** the politeness budget allows:
//!   the registry queries needed (names not delegated) over the RDAP host's queries per second
//!   (`BENCH_RDAP_PER_SECOND`, default 500; the simulator serves every registry from one host,
//!   so one budget bounds them all), or every name's DNS pre-check over the name servers' budget
//!   (`BENCH_DNS_PER_SECOND`, default 500; the shipped default is 50), whichever is longer — and
//!   the ratio of the two;
//! * **registry queries per name** (RDAP + WHOIS queries the simulator saw, over the names);
//! * the process's **RSS** after the job (and its peak), to compare sizes: the front's memory must
//!   not grow with the job (the upload is streamed into the store, results are paged).
//!
//! Other knobs: `BENCH_RTT_MS` (20, added to every DNS and RDAP answer), `BENCH_CONCURRENCY`
//! (the runner's checks in flight, default 64).

use std::time::{Duration, Instant};

use dsa_tests::harness::app::{KeyOpts, TestApp};
use dsa_tests::harness::bench::env_or;
use dsa_tests::sim::{DomainSpec, Knobs, Latency, Scenario, Truth};

const TLDS: [&str; 4] = ["com", "net", "org", "dev"];

/// `VmRSS` and `VmHWM` of this process, KiB.
fn rss_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
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

async fn run(size: usize, taken_every: usize, per_second: f64, dns_per_second: f64, rtt: u64, concurrency: usize) {
    let domains: Vec<DomainSpec> = (0..size)
        .filter(|i| i % taken_every == 0)
        .map(|i| DomainSpec { name: name(size, i), truth: Truth::Registered })
        .collect();
    let delegated = domains.len();
    let scenario = Scenario::new(Scenario::demo().tlds().to_vec(), domains, Knobs::default()).expect("scenario");
    let app = TestApp::spawn_scenario(
        scenario,
        |s| {
            s.engine.limits.rdap.per_second = per_second;
            s.engine.limits.rdap.burst = 1;
            s.engine.limits.rdap.concurrency = concurrency.max(1);
            s.engine.limits.dns.per_second = dns_per_second;
            s.engine.limits.dns.burst = 1;
            s.engine.limits.dns.concurrency = concurrency.max(1);
            s.engine.check_deadline_secs = 10.0;
            s.engine.limits.max_queue_wait_secs = 10.0;
            s.policy.bulk_jobs.concurrency = concurrency;
            s.jobs.workers = concurrency.max(8);
        },
        api::state::system_clock(),
    )
    .await;
    app.sim.set_knobs(Knobs { latency_ms: Latency { dns: rtt, rdap: rtt, whois: rtt }, ..Knobs::default() });
    let key = app.key(KeyOpts { plan: api::keys::Plan::Reseller, ..KeyOpts::default() }).await;
    let body: String = (0..size).map(|i| name(size, i) + "\n").collect();
    let before = app.sim.stats();
    let (rss_before, _) = rss_kib();
    let started = Instant::now();
    let response = app
        .http
        .post(app.url(&format!("/v1/jobs/bulk-check?client_key={key}")))
        .header("content-type", "text/plain")
        .body(body)
        .send()
        .await
        .expect("submit");
    assert_eq!(response.status().as_u16(), 202);
    let accepted: serde_json::Value = response.json().await.expect("json");
    let uploaded = started.elapsed();
    let id = accepted["id"].as_str().expect("id").to_owned();
    let done = loop {
        let (_, _, job) = app.get(&format!("/v1/jobs/{id}?client_key={key}")).await;
        if job["state"] == "done" {
            break job;
        }
        assert!(started.elapsed() < Duration::from_secs(3600), "{job}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let wall = started.elapsed();
    let after = app.sim.stats();
    let (rss_after, rss_peak) = rss_kib();
    let registry = (after.rdap.queries - before.rdap.queries) + (after.whois.queries - before.whois.queries);
    let needed = size - delegated;
    // Every name's DNS pre-check asks the TLD's name servers (one host in the simulator), and
    // each name not delegated one RDAP query: the slower of the two budgets bounds the job.
    let minimum = (needed as f64 / per_second).max(size as f64 / dns_per_second);
    println!(
        "bulk job of {size} names ({delegated} delegated): upload {:.2} s, wall {:.1} s, budget minimum {:.1} s ({needed} registry queries at {per_second}/s, {size} DNS pre-checks at {dns_per_second}/s), wall/minimum {:.2}; \
         registry queries per name {:.3} ({registry} for {size}); unknown {}; RSS before {} MiB, after {} MiB, peak {} MiB",
        uploaded.as_secs_f64(),
        wall.as_secs_f64(),
        minimum,
        wall.as_secs_f64() / minimum.max(1e-9),
        registry as f64 / size as f64,
        done["counts"]["unknown"],
        rss_before / 1024,
        rss_after / 1024,
        rss_peak / 1024,
    );
    app.finish(None).await;
}

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let sizes: String = env_or("BENCH_SIZES", "2000,10000".to_owned());
    let taken_every: usize = env_or("BENCH_TAKEN_EVERY", 5);
    let per_second: f64 = env_or("BENCH_RDAP_PER_SECOND", 500.0);
    let dns_per_second: f64 = env_or("BENCH_DNS_PER_SECOND", 500.0);
    let rtt: u64 = env_or("BENCH_RTT_MS", 20);
    let concurrency: usize = env_or("BENCH_CONCURRENCY", 64);
    for size in sizes.split(',').filter_map(|s| s.trim().parse::<usize>().ok()) {
        run(size, taken_every.max(1), per_second, dns_per_second, rtt, concurrency).await;
    }
}
