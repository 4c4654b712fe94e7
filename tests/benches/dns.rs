//! Benchmark of **uncached** `GET /v1/dns` against a resolver with a known round-trip time: the
//! simulator's DNS server answers every query after `BENCH_DNS_RTT_MS` (default 20 ms), and the
//! resolver's own cache is off (`engine.records.cache_size = 0`), so every request goes to the
//! resolver. Not a timed test: `cargo bench -p dsa-tests --bench dns`.
//!
//! For standalone mode and the fleet (front + NATS JetStream + worker), it sends
//! `BENCH_REQUESTS` (default 100) sequential requests of each shape and prints the p50/p90:
//! * one type (`types=A`): the floor, one round trip plus dsa's own work;
//! * four types (`types=A,MX,NS,TXT`, the default set): asked in parallel, so ≈ one round trip;
//! * a CNAME chain (`www` → `alias` → `web`, type A): the resolver's answer carries the chain;
//! * MX, NS and TXT alone, so that a type slower than the others shows by itself.
//!
//! Standalone, the ledger first writes 3,000 charges (`WARM_LEDGER_CHARGES`), so the SQLite WAL
//! has been checkpointed and restarted as in a server that has run a while.
//!
//! The round trip the figures subtract is **measured**, not the configured delay: the bench first
//! sends `BENCH_REQUESTS` plain queries (type A, one at a time) straight to the simulated
//! resolver over UDP and takes their p50 (the delay rounds up to the timer's millisecond, and the
//! socket hops cost something). "RTT + x" is then dsa's own share of a request.
//!
//! Targets (issue "Performance and scale"): p50 ≤ RTT + 1 ms standalone and ≤ RTT + 3 ms in the
//! fleet, and four types ≈ one round trip.
//! The fleet needs nats-server ≥ 2.10 (`DSA_TEST_NATS_SERVER`) and Postgres (`DSA_TEST_PG_URL`);
//! `BENCH_MODES` (`standalone,fleet`) picks the modes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use api::config::Settings;
use api::keys::{KeyKind, Plan};
use api::store::{NewKey, Store};
use dsa_tests::harness::bench::{env_or, ms, percentile};
use dsa_tests::sim::{Knobs, Latency, Scenario, Simulator};

/// The request shapes measured: label, domain, types.
const SHAPES: [(&str, &str, &str); 6] = [
    ("1 type (A)", "example.com", "A"),
    ("4 types (A,MX,NS,TXT)", "example.com", "A,MX,NS,TXT"),
    ("CNAME chain (www, A)", "www.example.com", "A"),
    // Each of the other three alone: a slow type would show here, not hide in the four.
    ("1 type (MX)", "example.com", "MX"),
    ("1 type (NS)", "example.com", "NS"),
    ("1 type (TXT)", "example.com", "TXT"),
];

/// Settings shared by both modes: no limits in the way, the resolver's cache off.
fn tune(settings: &mut Settings) {
    settings.policy.per_minute =
        api::policy::PlanRates { free: u32::MAX, starter: u32::MAX, pro: u32::MAX, reseller: u32::MAX };
    settings.policy.per_ip_per_minute = 0;
    settings.policy.max_in_flight = 0;
    settings.engine.records.cache_size = 0;
}

async fn key(store: &Arc<dyn Store>) -> anyhow::Result<String> {
    let (key, key_hash) = api::keys::generate(KeyKind::Server);
    store
        .create_key(NewKey {
            key_hash,
            kind: KeyKind::Server,
            plan: Plan::Reseller,
            pricing_enabled: false,
            show_purchase_button: false,
            default_commission_percent: None,
            purchase_url: None,
            allowed_origins: Vec::new(),
            label: "dns bench".into(),
        })
        .await?;
    Ok(key)
}

/// Sequential requests of each shape; returns (label, p50, p90) per shape.
async fn measure(base: &str, key: &str, requests: usize) -> anyhow::Result<Vec<(&'static str, Duration, Duration)>> {
    let client = reqwest::Client::new();
    let mut out = Vec::new();
    for (label, domain, types) in SHAPES {
        let url = format!("{base}/v1/dns?client_key={key}&domain={domain}&types={types}");
        // Warm the connection and the worker's code paths (not a cache: the resolver's is off).
        let r = client.get(&url).send().await?;
        anyhow::ensure!(r.status().is_success(), "{label}: warm-up answered {}", r.status());
        let mut latencies = Vec::with_capacity(requests);
        for _ in 0..requests {
            let started = Instant::now();
            let r = client.get(&url).send().await?;
            anyhow::ensure!(r.status().is_success(), "{label}: answered {}", r.status());
            let _ = r.bytes().await?;
            latencies.push(started.elapsed());
        }
        latencies.sort();
        out.push((label, percentile(&latencies, 0.5), percentile(&latencies, 0.9)));
    }
    Ok(out)
}

/// Charges the standalone ledger writes before the measurement: enough to take its WAL through
/// a few checkpoints and restarts (one every 1,000 charges), so that the figures are those of a
/// server in its steady state, whose WAL is overwritten in place, rather than of a fresh database
/// whose WAL grows with every commit (and each sync of it also writes the file's new size).
const WARM_LEDGER_CHARGES: usize = 3_000;

/// Writes [`WARM_LEDGER_CHARGES`] charges of `key` through the store's ledger writer, in the
/// small batches a front commits under light load.
async fn warm_ledger(store: &Arc<dyn Store>, key: &str) -> anyhow::Result<()> {
    let found = store.find_key(&api::keys::hash_key(key)).await?;
    let key_id = found.ok_or_else(|| anyhow::anyhow!("the bench's key is not in the store"))?.id;
    for _ in 0..WARM_LEDGER_CHARGES / 4 {
        let batch: Vec<_> = (0..4).map(|_| dsa_tests::harness::ledger_event(&key_id, 1, "bench-warm-up")).collect();
        let (applied, sync) = store.commit_ledger(&batch).await?;
        anyhow::ensure!(applied == 4, "a warm-up batch applied {applied} of 4 charges");
        if let Some(sync) = sync {
            sync.run().await?;
        }
    }
    Ok(())
}

async fn standalone(sim: &Simulator, requests: usize) -> anyhow::Result<Vec<(&'static str, Duration, Duration)>> {
    let db = std::env::temp_dir().join(format!("dsa-bench-dns-{}.db", uuid::Uuid::now_v7()));
    let mut settings = Settings::default();
    settings.database.url = format!("sqlite://{}?mode=rwc", db.display()).into();
    settings.engine = dsa_tests::harness::sim_engine(sim);
    tune(&mut settings);
    let app = api::standalone(&settings).await?;
    let key = key(&app.store).await?;
    warm_ledger(&app.store, &key).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let router = api::router(app.state.clone(), None);
    let server = tokio::spawn(async move {
        let _ = api::serve(listener, router, std::future::pending()).await;
    });
    let figures = measure(&format!("http://{addr}"), &key, requests).await;
    server.abort();
    let _ = std::fs::remove_file(&db);
    figures
}

async fn fleet(sim: &Simulator, requests: usize) -> anyhow::Result<Vec<(&'static str, Duration, Duration)>> {
    use dsa_tests::harness::fleet::{self as harness, Front, NatsServer, PgDatabase, Role};
    let nats = NatsServer::start().await;
    let db = PgDatabase::create().await;
    let mut settings = harness::settings(&nats.url(), &db, sim, "dnsbench");
    tune(&mut settings);
    let front = Front::start(&settings).await;
    let worker = Role::worker(&settings, Arc::default());
    let ledger = Role::ledger(&settings, Arc::default());
    let key = key(&front.store).await?;
    let figures = measure(&format!("http://{}", front.addr), &key, requests).await;
    front.stop().await;
    worker.stop().await;
    ledger.stop().await;
    db.drop_now().await;
    figures
}

/// The p50 of `requests` sequential type-A queries for `example.com` sent straight to `resolver`
/// over UDP (one socket, a fresh id per query): the round trip dsa's requests cannot beat.
async fn resolver_rtt(resolver: std::net::SocketAddr, requests: usize) -> anyhow::Result<Duration> {
    use hickory_server::proto::op::{Message, Query};
    use hickory_server::proto::rr::{Name, RecordType};
    let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await?;
    socket.connect(resolver).await?;
    let mut latencies = Vec::with_capacity(requests);
    let mut buf = vec![0u8; 4096];
    for i in 0..=requests {
        let mut query = Message::query();
        query.metadata.recursion_desired = true;
        query.add_query(Query::query(Name::from_ascii("example.com.")?, RecordType::A));
        let id = query.metadata.id;
        let bytes = query.to_vec()?;
        let started = Instant::now();
        socket.send(&bytes).await?;
        loop {
            let n = tokio::time::timeout(Duration::from_secs(5), socket.recv(&mut buf)).await??;
            if Message::from_vec(&buf[..n]).is_ok_and(|m| m.metadata.id == id) {
                break;
            }
        }
        // The first is a warm-up, as for the requests through dsa.
        if i > 0 {
            latencies.push(started.elapsed());
        }
    }
    latencies.sort();
    Ok(percentile(&latencies, 0.5))
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rtt_ms: u64 = env_or("BENCH_DNS_RTT_MS", 20);
    let requests: usize = env_or("BENCH_REQUESTS", 100);
    let modes: String = env_or("BENCH_MODES", "standalone,fleet".to_owned());
    let sim = Simulator::start(Scenario::demo()).await?;
    sim.set_knobs(Knobs { latency_ms: Latency { dns: rtt_ms, ..Latency::default() }, ..Knobs::default() });
    let rtt = ms(resolver_rtt(sim.dns_addr(), requests).await?);
    println!(
        "simulated resolver delay: {rtt_ms} ms, measured round trip (p50 of {requests} direct queries): {rtt:.2} ms; \
resolver cache off; {requests} sequential requests per shape"
    );
    for mode in ["standalone", "fleet"] {
        if !modes.contains(mode) {
            continue;
        }
        let figures =
            if mode == "standalone" { standalone(&sim, requests).await? } else { fleet(&sim, requests).await? };
        let one = figures.first().map(|f| ms(f.1)).unwrap_or(0.0);
        for (label, p50, p90) in &figures {
            println!(
                "{mode:<10} {label:<22} p50 {:>6.2} ms (RTT + {:>5.2} ms), p90 {:>6.2} ms, p50 / one-type p50 {:.2}",
                ms(*p50),
                ms(*p50) - rtt,
                ms(*p90),
                ms(*p50) / one.max(f64::MIN_POSITIVE)
            );
        }
    }
    Ok(())
}
