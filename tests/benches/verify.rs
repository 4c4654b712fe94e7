//! Benchmark of registry-verified suggestions (`GET /v1/domains/suggest?verify=N`, issue 27) on
//! the registry simulator with upstream latency and the shipped politeness limits, over real HTTP
//! to a standalone front. Not a timed test: `cargo bench -p dsa-tests --bench verify`.
//!
//! The simulator plays the demo registries (.com/.net/.org/.dev by RDAP, .io/.af/.com.af by
//! WHOIS only) with every keyword's best candidates made not available, in turn: registered
//! (delegated), on hold (not delegated, yet taken: the trap for a DNS-only checker) and pending
//! delete. Measured:
//! * **time to N confirmed names** for `BENCH_TIMED` two-word keywords (p50/p95/max) and the
//!   registry queries each spent (the response's `verification.registry_queries`, p50/p95/max);
//! * **taken names among "available"** over all `BENCH_KEYWORDS` keywords: every name returned
//!   with `available: true` is looked up in the simulator's truth (target 0).
//!
//! Knobs (environment): `BENCH_RTT_MS` (default 50, added to every DNS, RDAP and WHOIS answer),
//! `BENCH_VERIFY` (10), `BENCH_TIMED` (20), `BENCH_KEYWORDS` (200), `BENCH_TAKEN` (candidates
//! per keyword made not available, default 6).

use std::time::{Duration, Instant};

use api::keys::Plan;
use api::routes::suggest::VERIFY_POOL;
use api::suggest::{Keyword, Words, suggest};
use common::catalogue::Catalogue;
use dsa_tests::harness::app::{KeyOpts, TestApp};
use dsa_tests::harness::bench::{env_or, ms, percentile};
use dsa_tests::sim::{DomainSpec, Knobs, Latency, Scenario, Truth};
use workers::config::EngineConfig;

const FIRST: [&str; 10] = ["kabul", "fresh", "green", "happy", "silver", "golden", "bright", "quiet", "swift", "herat"];
const SECOND: [&str; 20] = [
    "bakery", "garden", "market", "studio", "travel", "coffee", "books", "fitness", "dental", "repair", "tailor",
    "carpets", "spices", "florist", "pharmacy", "clinic", "school", "motors", "kitchen", "lawyers",
];
const TLDS: &[&str] = &["com", "net", "org", "io", "dev", "af", "com.af"];

fn keywords(n: usize) -> Vec<String> {
    SECOND.iter().flat_map(|b| FIRST.iter().map(move |a| format!("{a} {b}"))).take(n).collect()
}

/// The demo registries with the first `taken` candidates of each keyword's pool not available.
fn scenario(keywords: &[String], taken: usize) -> Scenario {
    let words = Words::shipped();
    let catalogue = Catalogue::embedded().expect("catalogue");
    let tlds: Vec<String> = TLDS.iter().map(|t| (*t).to_owned()).collect();
    let truths = [Truth::Registered, Truth::Held, Truth::PendingDelete];
    let mut domains: Vec<DomainSpec> = Vec::new();
    for k in keywords {
        let keyword = Keyword::parse(k, words).expect("keyword");
        let pool = suggest(words, &catalogue, &keyword, &tlds, VERIFY_POOL);
        for (i, s) in pool.items.iter().take(taken).enumerate() {
            if !domains.iter().any(|d| d.name == s.domain.as_str()) {
                domains.push(DomainSpec { name: s.domain.as_str().to_owned(), truth: truths[i % truths.len()] });
            }
        }
    }
    Scenario::new(Scenario::demo().tlds().to_vec(), domains, Knobs::default()).expect("scenario")
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rtt: u64 = env_or("BENCH_RTT_MS", 50);
    let verify: usize = env_or("BENCH_VERIFY", 10);
    let timed: usize = env_or("BENCH_TIMED", 20);
    let total: usize = env_or("BENCH_KEYWORDS", 200).max(timed);
    let taken: usize = env_or("BENCH_TAKEN", 6);
    let list = keywords(total);
    let scenario = scenario(&list, taken);
    let app = TestApp::spawn_scenario(
        scenario,
        |s| {
            // The shipped engine settings (deadlines, politeness limits), only pointed at the
            // simulator, whose addresses the harness wrote.
            let shipped = EngineConfig::default();
            s.engine.limits = shipped.limits;
            s.engine.check_deadline_secs = shipped.check_deadline_secs;
            s.engine.rdap.timeout_secs = shipped.rdap.timeout_secs;
            s.engine.whois.idle_timeout_secs = shipped.whois.idle_timeout_secs;
            s.engine.whois.total_timeout_secs = shipped.whois.total_timeout_secs;
            s.engine.dns.timeout_secs = shipped.dns.timeout_secs;
        },
        api::state::system_clock(),
    )
    .await;
    app.sim.set_knobs(Knobs { latency_ms: Latency { dns: rtt, rdap: rtt, whois: rtt }, ..Knobs::default() });
    let key = app.key(KeyOpts { plan: Plan::Reseller, ..KeyOpts::default() }).await;
    let tlds: Vec<String> = TLDS.iter().map(|t| format!(".{t}")).collect();
    let mut times: Vec<Duration> = Vec::new();
    let mut queries: Vec<u64> = Vec::new();
    let (mut short, mut timed_out, mut available_names, mut wrong) = (0usize, 0usize, 0usize, Vec::new());
    for (i, k) in list.iter().enumerate() {
        let path = format!(
            "/v1/domains/suggest?client_key={key}&keyword={}&tlds={}&limit={}&verify={verify}",
            k.replace(' ', "%20"),
            tlds.join(","),
            verify.max(5)
        );
        let started = Instant::now();
        let (status, _, body) = app.get(&path).await;
        let took = started.elapsed();
        assert_eq!(status, 200, "{k}: {body}");
        let v = &body["verification"];
        let confirmed = v["confirmed"].as_u64().unwrap_or(0) as usize;
        if confirmed < verify {
            short += 1;
        }
        if v["timed_out"] == true {
            timed_out += 1;
        }
        for s in body["suggestions"].as_array().into_iter().flatten() {
            if s["available"] == true {
                available_names += 1;
                let domain = s["domain"].as_str().unwrap_or("");
                let truth = app.sim.scenario().truth(domain);
                if truth != Truth::Available {
                    wrong.push(format!("{domain} ({truth})"));
                }
            }
        }
        if i < timed {
            times.push(took);
            queries.push(v["registry_queries"].as_u64().unwrap_or(0));
        }
    }
    times.sort();
    queries.sort();
    let q = |p: f64| queries.get(((queries.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(0);
    println!(
        "verified suggestions: {verify} names asked, upstream RTT {rtt} ms, shipped politeness limits, {} candidates per keyword not available",
        taken
    );
    println!(
        "time to {verify} confirmed names over {timed} keywords: p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms (target p95 ≤ 3000 ms: {:.2} of it)",
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.95)),
        ms(percentile(&times, 1.0)),
        ms(percentile(&times, 0.95)) / 3000.0
    );
    println!(
        "registry queries per request: p50 {}, p95 {}, max {} (target ≤ 15: p95 is {:.2} of it)",
        q(0.5),
        q(0.95),
        q(1.0),
        q(0.95) as f64 / 15.0
    );
    println!(
        "over {} keywords: {available_names} names returned available, {} of them taken in the registry (target 0); {short} requests with fewer than {verify} confirmed, {timed_out} stopped at the deadline",
        list.len(),
        wrong.len()
    );
    if !wrong.is_empty() {
        println!("taken names called available: {wrong:?}");
    }
    let _ = app.finish(Some(&key)).await;
}
