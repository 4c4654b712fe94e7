//! Benchmark of `GET /v1/domains/check` with cached verdicts, over real HTTP on loopback, in
//! standalone mode and through the fleet (front + NATS JetStream + ledger + Postgres), side by
//! side in one run. Not a timed test: `cargo bench -p dsa-tests --bench check`.
//!
//! For each mode:
//! * **closed loop**: C connections sending back to back for D seconds → maximum throughput,
//!   alternated `BENCH_ROUNDS` (3) times with the same loop on `GET /healthz` of the same front
//!   (the HTTP stack's baseline): the medians are reported, and the ratio cached check / healthz
//!   of every round and their median are printed every run;
//! * **open loop**: requests scheduled at a fixed rate R for D seconds; each latency is measured
//!   from the *scheduled* send time, so a stalled server cannot hide queueing (no coordinated
//!   omission) → p50/p99/max at that rate, after the same open loop on `GET /healthz` (its
//!   p50/p99 printed beside: the stack's and the machine's own latency at that rate).
//!
//! For the fleet also the ledger: settle lag of the charges above (p50/p99 of applied − charged),
//! the charges per ledger stream message the front published (its grouping), and settling
//! throughput (50,000 charge events published at once in messages of 128, time until all are
//! applied).
//! The fleet runs twice: on one nats-server (`fleet`) and on a three-server JetStream cluster on
//! loopback with every stream and bucket R3 (`cluster`); the run prints the cluster's closed-loop
//! throughput as a ratio of the single server's.
//!
//! `BENCH_ENDPOINT=whois` or `=dns` measures `/v1/whois` or `/v1/dns` (four types) the same way:
//! cached answers (the worker's registration cache, the resolver's TTL cache) through the job bus.
//!
//! `BENCH_MODES=flood` (not in the default modes) floods a front *process*: a standalone
//! `dsa serve` (default) or, with `BENCH_FLOOD_MODE=fleet`, a `dsa front` of a fleet whose worker
//! and ledger run in this process. The load comes from `dsa-load` (this package's generator, a
//! process of its own: keep-alive HTTP/1.1 connections, pre-built requests), pinned with `taskset`
//! to every CPU but the last, which the front gets alone; and the front is capped at
//! `BENCH_FLOOD_FRONT_CPU` (0.25) of that core with a CPU-quota cgroup where one can be made (0 or
//! 1: no cap), because a generator on one core cannot offer 3× what a front on a whole core of
//! the same machine serves; it runs `BENCH_FLOOD_WORKERS` (1) runtime worker threads. Capacity is measured first (`dsa-load
//! --closed`), then an open-loop flood at `BENCH_FLOOD_FACTOR` (3) × that capacity runs for
//! `BENCH_FLOOD_SECS` (60). Reported: p99 of the admitted requests (200, from the due time),
//! answers by status (5xx by code: only the documented 503 shed and 502 are expected), the
//! front's RSS before, at peak, after (2 s after normal service) and 10 s later, with the ratios
//! after/before (target ≤ 1.2), the time from the generator's last send until the front
//! serves normally again (five 200s in a row, each within twice the pre-flood p99 or 20 ms, probed
//! from a thread and runtime of its own), and the generator's dispatch lag (actual − due send): a
//! large one means the generator, not the front, was the bottleneck. The front's protection is
//! the shipped one unless `BENCH_FLOOD_MAX_IN_FLIGHT` / `BENCH_FLOOD_SHED_LAG_MS` set
//! `policy.max_in_flight` / `policy.shed_scheduling_lag_ms`. Before the flood, the front's
//! `/healthz` capacity is measured the same way, and the run prints the front process's own
//! cached check / healthz ratio and its CPU time per request of each (user + system, every
//! thread, `/proc/<pid>/stat`): the front's cost alone, whatever else shares the machine; and
//! how busy the front kept its core in each loop (CPU time over wall time): a front waiting for
//! its ledger's durable commits (a sync of the SQLite WAL, or JetStream's ack of a synced write)
//! with every connection's request stays below 1.0, its capacity is then that wait × the
//! connections, and its CPU per request includes going idle and being woken.
//! `BENCH_FLOOD_SECS=0` stops after that; `BENCH_FLOOD_CAPACITY_SECS` (5) is the length of each
//! closed loop; `BENCH_FLOOD_METRICS=1` serves `/metrics` on the front's public listener.
//!
//! `BENCH_MODES=consensus` (in the default modes) measures what consensus before "available"
//! costs (issue 28): `BENCH_CONSENSUS_NAMES` (100) free `.com` names checked one after another,
//! uncached, by the engine against the simulator with per-protocol latency
//! (`BENCH_CONSENSUS_LATENCY_MS`, `dns,rdap,whois`, default `10,60,90`), once with consensus off
//! and once on for `.com` (WHOIS confirms RDAP's 404), and once for `.io` (catalogue: WHOIS first,
//! the pre-check's "not delegated" confirms, no extra query). Reported: upstream queries per
//! "available" answer by protocol, the extra ones consensus adds, and the mean/p50/p99 latency
//! with the on/off ratio.
//!
//! A standalone charge is durable in SQLite before its answer (the ledger writer syncs the WAL
//! after each commit), so each cached check waits for one disk sync (shared by the charges
//! committed while it runs):
//! the run prints that sync's latency and the closed-loop ceiling it sets (connections / sync
//! time); `BENCH_DB_DIR=/dev/shm` puts the SQLite file on tmpfs to measure the CPU cost alone.
//!
//! Knobs (environment): `BENCH_SECS` (default 5), `BENCH_ROUNDS` (3), `BENCH_CONNECTIONS` (64), `BENCH_RATE` (2000;
//! or `BENCH_OPEN_SHARE`, e.g. 0.5: the open loop at that share of the mode's closed-loop capacity),
//! `BENCH_MODES` (`standalone,fleet,consensus,cluster`; add `flood`), `BENCH_NATS_SYNC` (`always`, as shipped; `default`:
//! the server's 2-minute fsync interval, to measure the cost of syncing every write). The fleet needs nats-server ≥ 2.10 (`DSA_TEST_NATS_SERVER`)
//! and Postgres (`DSA_TEST_PG_URL`). The load generator shares the machine's two cores with
//! everything it measures, so figures are lower bounds.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use api::config::Settings;
use api::keys::{KeyKind, Plan};
use api::store::{NewKey, Store};
use dsa_tests::harness::bench::{env_or, ms, percentile};
use dsa_tests::sim::{Knobs, Scenario, Simulator};
use sqlx::Connection;

/// What one mode measured.
struct Figures {
    closed: f64,
    closed_errors: u64,
    /// `GET /healthz` closed-loop throughput of the same front (median of the rounds).
    healthz_closed: f64,
    /// Cached check / `/healthz` closed-loop throughput of each round (`BENCH_ROUNDS`), each
    /// round a `/healthz` loop then a check loop.
    ratios: Vec<f64>,
    p50: Duration,
    p99: Duration,
    max: Duration,
    /// The same open loop on `GET /healthz`, just before: the stack's own latency at that rate.
    healthz_p50: Duration,
    healthz_p99: Duration,
    open_failed: u64,
    /// When the open-loop phase started (UTC), to tell its charges from the closed loop's.
    open_started: time::OffsetDateTime,
    /// The open loop's rate (requests a second): `BENCH_RATE`, or `BENCH_OPEN_SHARE` × `closed`.
    rate: u64,
}

const NAMES: [&str; 6] =
    ["example.com", "google.com", "dsa-demo-available.com", "dsa-demo-available.af", "google.com.af", "wikipedia.org"];

async fn keys(store: &Arc<dyn Store>, n: usize) -> anyhow::Result<Vec<String>> {
    let mut keys = Vec::new();
    // One Reseller key allows 50,000 credits a month: spread the load over several keys.
    for _ in 0..n {
        let (key, key_hash) = api::keys::generate(KeyKind::Server);
        store
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
        keys.push(key);
    }
    Ok(keys)
}

/// The request of the endpoint under test (`BENCH_ENDPOINT`: `check`, the default; `whois`; `dns`
/// with four record types, asked in parallel by the worker).
fn endpoint_url(base: &str, key: &str, name: &str) -> String {
    match std::env::var("BENCH_ENDPOINT").as_deref() {
        Ok("whois") => format!("{base}/v1/whois?client_key={key}&domain={name}"),
        Ok("dns") => format!("{base}/v1/dns?client_key={key}&domain={name}&types=A,MX,NS,TXT"),
        _ => format!("{base}/v1/domains/check?client_key={key}&domain={name}"),
    }
}

/// The median of `values` (the upper one of an even count); 0 for none.
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// `connections` connections sending `urls` back to back for `secs` seconds: (successful
/// answers per second, failed requests).
async fn closed_loop(client: &reqwest::Client, urls: &Arc<Vec<String>>, secs: u64, connections: usize) -> (f64, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..connections {
        let (client, urls, stop, done, errors) =
            (client.clone(), urls.clone(), stop.clone(), done.clone(), errors.clone());
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
    (done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64(), errors.load(Ordering::Relaxed))
}

async fn drive(base: &str, keys: &[String], secs: u64, connections: usize, rate: u64) -> anyhow::Result<Figures> {
    let urls: Arc<Vec<String>> =
        Arc::new(keys.iter().flat_map(|k| NAMES.iter().map(move |n| endpoint_url(base, k, n))).collect());
    let client = reqwest::Client::builder().pool_max_idle_per_host(connections * 2).build()?;
    for url in urls.iter().take(NAMES.len()) {
        let r = client.get(url).send().await?;
        anyhow::ensure!(r.status().is_success(), "warm-up failed: {}", r.status());
    }
    // The baseline: the same closed loop on `/healthz` (no key, no cache, no charge), so the
    // cost of a cached check is printed as a ratio of what the HTTP stack does in the same run.
    // The two loops alternate `BENCH_ROUNDS` times and the medians are reported: on a shared
    // machine either loop alone moves by a third from one run to the next, and a drift (another
    // process, the ledger's checkpoints) then falls on both.
    let healthz = Arc::new(vec![format!("{base}/healthz")]);
    let rounds: usize = env_or("BENCH_ROUNDS", 3_usize).max(1);
    let (mut healthz_rounds, mut check_rounds, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let mut closed_errors = 0;
    for _ in 0..rounds {
        let (h, _) = closed_loop(&client, &healthz, secs, connections).await;
        let (c, errors) = closed_loop(&client, &urls, secs, connections).await;
        closed_errors += errors;
        healthz_rounds.push(h);
        check_rounds.push(c);
        ratios.push(c / h.max(1.0));
    }
    let (closed, healthz_closed) = (median(&mut check_rounds), median(&mut healthz_rounds));
    // Open loop at a fixed rate: `BENCH_RATE`, or a share of the capacity just measured.
    let share: f64 = env_or("BENCH_OPEN_SHARE", 0.0);
    let rate = if share > 0.0 { ((closed * share) as u64).max(1) } else { rate };
    // The same rate on `/healthz` first: the HTTP stack's (and this machine's) own latency at
    // that rate, so the check's p99 is read against it: on a shared machine the timer and
    // scheduling jitter of the sitting sets a floor under every p99.
    let (healthz_open, _) = open_loop(&client, &healthz, rate, secs).await?;
    let open_started = time::OffsetDateTime::now_utc();
    let (latencies, open_failed) = open_loop(&client, &urls, rate, secs).await?;
    Ok(Figures {
        closed,
        closed_errors,
        healthz_closed,
        ratios,
        p50: percentile(&latencies, 0.50),
        p99: percentile(&latencies, 0.99),
        max: *latencies.last().unwrap_or(&Duration::ZERO),
        healthz_p50: percentile(&healthz_open, 0.50),
        healthz_p99: percentile(&healthz_open, 0.99),
        open_failed,
        open_started,
        rate,
    })
}

/// An open loop: `rate` requests a second for `secs` seconds over `urls` in turn, each latency
/// measured from its scheduled send time (no coordinated omission). Returns the latencies,
/// sorted, and how many requests failed (no answer, or not a success).
async fn open_loop(
    client: &reqwest::Client,
    urls: &Arc<Vec<String>>,
    rate: u64,
    secs: u64,
) -> anyhow::Result<(Vec<Duration>, u64)> {
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
        failed += u64::from(!ok);
        latencies.push(latency);
    }
    latencies.sort();
    Ok((latencies, failed))
}

fn unlimited(settings: &mut Settings) {
    // Measure the check path, not the per-minute limiter's 429s.
    settings.policy.per_minute =
        api::policy::PlanRates { free: u32::MAX, starter: u32::MAX, pro: u32::MAX, reseller: u32::MAX };
    settings.policy.per_ip_per_minute = 0;
    settings.policy.max_in_flight = 0;
    settings.policy.shed_scheduling_lag_ms = 0;
}

async fn standalone(sim: &Simulator, secs: u64, connections: usize, rate: u64) -> anyhow::Result<Figures> {
    // `BENCH_DB_DIR=/dev/shm`: the SQLite file on tmpfs, where a commit's fsync costs nothing,
    // to tell the CPU cost of a check from the disk's commit latency (see `run`).
    let dir: std::path::PathBuf = env_or("BENCH_DB_DIR", std::env::temp_dir());
    let db = dir.join(format!("dsa-bench-{}.db", uuid::Uuid::now_v7()));
    let mut settings = Settings::default();
    settings.database.url = format!("sqlite://{}?mode=rwc", db.display()).into();
    settings.engine = dsa_tests::harness::sim_engine(sim);
    unlimited(&mut settings);
    let app = api::standalone(&settings).await?;
    let keys = keys(&app.store, 18).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let router = api::router(app.state.clone(), None);
    let server = tokio::spawn(async move {
        let _ = api::serve(listener, router, std::future::pending()).await;
    });
    let figures = drive(&format!("http://{addr}"), &keys, secs, connections, rate).await;
    server.abort();
    dsa_tests::harness::remove_sqlite_database(&db);
    figures
}

/// Mean time of `n` 4 KiB appends each followed by `fdatasync`, in the directory the standalone
/// ledger's SQLite file is in: a charge is durable (`synchronous = FULL`) only after one such
/// sync, so a closed loop of C connections cannot exceed C / (this + the commit's own work)
/// cached checks a second, whatever the CPU.
fn sync_latency(dir: &std::path::Path, n: u32) -> std::io::Result<Duration> {
    use std::io::Write;
    let path = dir.join(format!("dsa-bench-sync-{}", uuid::Uuid::now_v7()));
    let mut file = std::fs::File::create(&path)?;
    let started = Instant::now();
    for _ in 0..n {
        file.write_all(&[0u8; 4096])?;
        file.sync_data()?;
    }
    let mean = started.elapsed() / n;
    drop(file);
    let _ = std::fs::remove_file(&path);
    Ok(mean)
}

struct FleetFigures {
    http: Figures,
    charges: i64,
    lag_p50_ms: f64,
    lag_p99_ms: f64,
    open_lag_p50_ms: f64,
    open_lag_p99_ms: f64,
    settle_per_sec: f64,
    /// Charges per ledger stream message the front published during the run.
    charges_per_message: f64,
}

/// The fleet on one nats-server (`nodes` = 1) or on a JetStream cluster of `nodes` servers on
/// loopback, every stream and bucket with `min(nodes, 3)` replicas.
async fn fleet(
    sim: &Simulator,
    secs: u64,
    connections: usize,
    rate: u64,
    nodes: usize,
) -> anyhow::Result<FleetFigures> {
    use dsa_tests::harness::fleet::{self as harness, Front, NatsCluster, NatsServer, PgDatabase, Role};
    // `BENCH_NATS_SYNC=default`: the server's default fsync interval instead of the shipped
    // `sync_interval: always`, to measure what syncing every charge costs (one server only).
    let (_single, _cluster, url) = if nodes > 1 {
        let cluster = NatsCluster::start(nodes, "").await;
        let url = cluster.urls();
        (None, Some(cluster), url)
    } else {
        let nats = match std::env::var("BENCH_NATS_SYNC").as_deref() {
            Ok("default") => NatsServer::start_with_jetstream("", "").await,
            _ => NatsServer::start().await,
        };
        let url = nats.url();
        (Some(nats), None, url)
    };
    let db = PgDatabase::create().await;
    let mut settings = harness::settings(&url, &db, sim, "bench");
    settings.fleet.replicas = nodes.min(3);
    settings.fleet.ledger_replicas = nodes.min(3);
    unlimited(&mut settings);
    settings.fleet.ledger_ack_wait_secs = 10.0;
    let grouping_before = ledger_grouping();
    let front = Front::start(&settings).await;
    let w1 = Role::worker(&settings, Arc::default());
    let w2 = Role::worker(&settings, Arc::default());
    let ledger = Role::ledger(&settings, Arc::default());
    let keys = keys(&front.store, 18).await?;
    let http = drive(&format!("http://{}", front.addr), &keys, secs, connections, rate).await?;
    let grouping_after = ledger_grouping();
    let charges_per_message = (grouping_after.0 - grouping_before.0) / (grouping_after.1 - grouping_before.1).max(1.0);
    let store = front.store.clone();
    front.stop().await;

    // Settle lag of every charge made above.
    let mut conn = sqlx::PgConnection::connect(&db.url).await?;
    let mut waited = 0;
    let (charges, lag_p50_ms, lag_p99_ms) = loop {
        let (count, p50, p99): (i64, Option<f64>, Option<f64>) = sqlx::query_as(
            "SELECT COUNT(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM settled_at - charged_at)) * 1000, \
             percentile_cont(0.99) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM settled_at - charged_at)) * 1000 FROM ledger_entries",
        )
        .fetch_one(&mut conn)
        .await?;
        let stream_empty = {
            let client = async_nats::connect(url.split(',').collect::<Vec<_>>()).await?;
            let js = async_nats::jetstream::new(client);
            let names = common::subjects::Names::with_prefix("bench");
            let mut c: async_nats::jetstream::consumer::PullConsumer = js
                .get_stream(&names.ledger_stream)
                .await?
                .get_consumer(&names.ledger_consumer)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let info = c.info().await?;
            info.num_pending == 0 && info.num_ack_pending == 0
        };
        if stream_empty || waited > 300 {
            break (count, p50.unwrap_or(0.0), p99.unwrap_or(0.0));
        }
        waited += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    let (open_lag_p50_ms, open_lag_p99_ms): (Option<f64>, Option<f64>) = sqlx::query_as(
        "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM settled_at - charged_at)) * 1000, \
         percentile_cont(0.99) WITHIN GROUP (ORDER BY EXTRACT(EPOCH FROM settled_at - charged_at)) * 1000 \
         FROM ledger_entries WHERE charged_at >= $1",
    )
    .bind(http.open_started)
    .fetch_one(&mut conn)
    .await?;
    let (open_lag_p50_ms, open_lag_p99_ms) = (open_lag_p50_ms.unwrap_or(0.0), open_lag_p99_ms.unwrap_or(0.0));

    // Settling throughput: 50,000 events published at once, grouped as a busy front groups
    // them (full messages of `LEDGER_EVENTS_PER_MESSAGE`).
    let key_id = store.find_key(&api::keys::hash_key(&keys[0])).await?.map(|k| k.id).unwrap_or_default();
    let client = async_nats::connect(url.split(',').collect::<Vec<_>>()).await?;
    let js = async_nats::jetstream::new(client);
    let names = common::subjects::Names::with_prefix("bench");
    let total = 50_000;
    let period = common::messages::billing_period(time::OffsetDateTime::now_utc());
    let before = store.ledger_count(&key_id, &period).await?;
    let started = Instant::now();
    let mut acks = Vec::new();
    let mut published = 0;
    while published < total {
        let group: Vec<_> = (0..common::messages::LEDGER_EVENTS_PER_MESSAGE.min(total - published))
            // A real charge: the ledger terminates one of zero credits as poison and applies
            // nothing (with 0 here the bench waited its 120 s out and printed 50,000 / 120 s).
            .map(|_| dsa_tests::harness::ledger_event(&key_id, 1, "bench"))
            .collect();
        published += group.len();
        let message = async_nats::jetstream::message::PublishMessage::build()
            .payload(common::messages::encode_ledger_message(&group).into())
            .message_id(uuid::Uuid::now_v7().to_string());
        acks.push(js.send_publish(names.ledger_charge.clone(), message).await?);
        // The client caps acks in flight: collect them in chunks.
        if acks.len() == 100 {
            for ack in acks.drain(..) {
                ack.await?;
            }
        }
    }
    for ack in acks {
        ack.await?;
    }
    let settled = loop {
        let settled = store.ledger_count(&key_id, &period).await? - before;
        if settled >= total as i64 {
            break settled;
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(120),
            "settling throughput: only {settled} of {total} charges settled in 120 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let settle_per_sec = settled as f64 / started.elapsed().as_secs_f64();

    w1.stop().await;
    w2.stop().await;
    ledger.stop().await;
    db.drop_now().await;
    Ok(FleetFigures {
        http,
        charges,
        lag_p50_ms,
        lag_p99_ms,
        open_lag_p50_ms,
        open_lag_p99_ms,
        settle_per_sec,
        charges_per_message,
    })
}

/// (charges, ledger messages) the fronts of this process have published so far, from the
/// metrics (`dsa_ledger_events_published_total`, `dsa_ledger_messages_published_total`).
fn ledger_grouping() -> (f64, f64) {
    let rendered = api::telemetry::prometheus().render();
    let read = |name: &str| {
        rendered.lines().find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse::<f64>().ok())).unwrap_or(0.0)
    };
    (read("dsa_ledger_events_published_total "), read("dsa_ledger_messages_published_total "))
}

/// Resident set size of process `pid` in MiB (`VmRSS` of `/proc/PID/status`).
/// Pins the front process to the machine's last CPU and this process (the load generator, the
/// worker and the ledger) to the others, with `taskset`, so the front's capacity is one core of
/// its own; `false` when there is one CPU or no `taskset`.
fn pin_front(front: u32) -> bool {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    if cpus < 2 {
        return false;
    }
    let taskset = |cpu_list: String, pid: u32| {
        std::process::Command::new("taskset")
            .args(["-a", "-p", "-c", &cpu_list, &pid.to_string()])
            .stdout(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    taskset(format!("{}", cpus - 1), front) && taskset(format!("0-{}", cpus - 2), std::process::id())
}

fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// CPU time process `pid` has used so far, (user, system) in seconds: every thread's, from
/// `/proc/<pid>/stat` at the kernel's tick of 1/100 s; zeros when it cannot be read.
fn cpu_secs(pid: u32) -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return (0.0, 0.0) };
    // The fields after the command name (which may hold spaces: split after its closing paren);
    // utime and stime are the 12th and 13th of them.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    (ticks(11), ticks(12))
}

/// What the front process used during one [`front_closed_loop`].
struct FrontLoad {
    /// The generator's figures (`dsa-load`'s JSON line).
    figures: serde_json::Value,
    /// The front's CPU time per answered request, user and system, µs.
    cpu_us: (f64, f64),
    /// The front's CPU time over the loop's wall time: 1.0 is one core kept busy. A front pinned
    /// to one core and well below 1.0 was waiting (for its ledger's commit or acks), so its
    /// capacity there is bounded by that wait × connections, not by its CPU, and its CPU per
    /// request includes the cost of going idle and being woken.
    busy: f64,
}

/// A `dsa-load` closed loop of `connections` for `secs` on the `targets` file against the front
/// at `addr` (process `pid`): see [`FrontLoad`].
fn front_closed_loop(
    addr: &str,
    pid: u32,
    targets: &std::path::Path,
    connections: usize,
    secs: f64,
) -> anyhow::Result<FrontLoad> {
    let before = cpu_secs(pid);
    let started = Instant::now();
    let out = generator_command()
        .arg("--addr")
        .arg(addr)
        .arg("--targets")
        .arg(targets)
        .args(["--closed", &connections.to_string(), "--secs", &secs.to_string()])
        .stdin(std::process::Stdio::null())
        .output()?;
    let after = cpu_secs(pid);
    let wall = started.elapsed().as_secs_f64();
    anyhow::ensure!(out.status.success(), "dsa-load (closed loop on {}) failed", targets.display());
    let figures: serde_json::Value = serde_json::from_slice(out.stdout.trim_ascii())?;
    // Every answer, whatever its status (0: none, not counted).
    let answered: u64 = figures["statuses"]
        .as_object()
        .map(|s| s.iter().filter(|(code, _)| code.as_str() != "0").filter_map(|(_, n)| n.as_u64()).sum())
        .unwrap_or(0);
    let n = (answered as f64).max(1.0);
    let (user, system) = (after.0 - before.0, after.1 - before.1);
    Ok(FrontLoad {
        figures,
        cpu_us: (user * 1e6 / n, system * 1e6 / n),
        busy: (user + system) / wall.max(f64::MIN_POSITIVE),
    })
}

/// Sequential requests: their latencies, sorted, and the statuses that were not 200.
async fn sequential(client: &reqwest::Client, urls: &[String], n: usize) -> (Vec<Duration>, u64) {
    let mut latencies = Vec::with_capacity(n);
    let mut failed = 0;
    for i in 0..n {
        let started = Instant::now();
        let ok = matches!(client.get(&urls[i % urls.len()]).send().await, Ok(r) if r.status().is_success());
        failed += u64::from(!ok);
        latencies.push(started.elapsed());
    }
    latencies.sort();
    (latencies, failed)
}

/// The flood benchmark (`BENCH_MODES=flood`): see the crate doc.
async fn flood(sim: &Simulator, connections: usize) -> anyhow::Result<()> {
    use dsa_tests::harness::fleet::{self as harness, NatsServer, PgDatabase, Role, WorkerProcess};
    let secs: f64 = env_or("BENCH_FLOOD_SECS", 60.0);
    let factor: f64 = env_or("BENCH_FLOOD_FACTOR", 3.0);
    let fleet_mode = env_or("BENCH_FLOOD_MODE", "standalone".to_owned()) == "fleet";
    let port = harness::free_port();
    // The fleet (NATS, Postgres, an in-process worker and ledger) or a standalone SQLite file.
    let mut fleet_parts = None;
    let mut sqlite = None;
    let (mut settings, keys) = if fleet_mode {
        let nats = NatsServer::start().await;
        let db = PgDatabase::create().await;
        let mut settings = harness::settings(&nats.url(), &db, sim, "flood");
        settings.fleet.ledger_ack_wait_secs = 10.0;
        let store = api::fleet::connect_pg(&settings).await?;
        let keys = keys(&store, 40).await?;
        let worker = Role::worker(&settings, Arc::default());
        let ledger = Role::ledger(&settings, Arc::default());
        fleet_parts = Some((nats, db, worker, ledger));
        (settings, keys)
    } else {
        let file = std::env::temp_dir().join(format!("dsa-flood-{}.db", uuid::Uuid::now_v7()));
        let mut settings = Settings::default();
        settings.database.url = format!("sqlite://{}?mode=rwc", file.display()).into();
        settings.engine = dsa_tests::harness::sim_engine(sim);
        let api::Standalone { state, ledger, store } = api::standalone(&settings).await?;
        let keys = keys(&store, 40).await?;
        drop((state, store));
        let _ = tokio::time::timeout(Duration::from_secs(10), ledger).await;
        sqlite = Some(file);
        (settings, keys)
    };
    unlimited(&mut settings);
    // The front's protection as shipped, unless the knobs say otherwise.
    settings.policy.max_in_flight = env_or("BENCH_FLOOD_MAX_IN_FLIGHT", api::policy::DEFAULT_MAX_IN_FLIGHT);
    settings.policy.shed_scheduling_lag_ms =
        env_or("BENCH_FLOOD_SHED_LAG_MS", api::policy::pressure::DEFAULT_SHED_SCHEDULING_LAG_MS);
    settings.server.listen = format!("127.0.0.1:{port}").parse()?;
    settings.bootstrap.create_dev_key = false;
    settings.server.public_metrics = std::env::var("BENCH_FLOOD_METRICS").is_ok();
    // One runtime worker thread for the one core the front is pinned to (`BENCH_FLOOD_WORKERS`
    // sets another count; tokio otherwise starts one per core of the machine, which then share
    // that core and wake each other).
    let workers: usize = env_or("BENCH_FLOOD_WORKERS", 1);
    let workers = workers.to_string();
    let mut front = WorkerProcess::spawn_role_with_env(
        &settings,
        if fleet_mode { "front" } else { "serve" },
        &[("TOKIO_WORKER_THREADS", workers.as_str())],
    );
    let pid = front.pid().ok_or_else(|| anyhow::anyhow!("the dsa front did not start"))?;
    let pinned = pin_front(pid);
    let front_cpu: f64 = env_or("BENCH_FLOOD_FRONT_CPU", 0.25);
    let capped = (front_cpu > 0.0 && front_cpu < 1.0).then(|| cap_cpu(pid, front_cpu)).flatten();
    let base = format!("http://{}", settings.server.listen);
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build()?;
    let started = Instant::now();
    // Ready, not only up: a fleet front answers `/healthz` (and 503 elsewhere) while it joins the bus.
    while !matches!(client.get(format!("{base}/readyz")).send().await, Ok(r) if r.status().is_success()) {
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(60) && front.running(),
            "the dsa front never got ready"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let urls: Vec<String> = keys.iter().flat_map(|k| NAMES.iter().map(|n| endpoint_url(&base, k, n))).collect();
    for url in urls.iter().take(NAMES.len()) {
        let r = client.get(url).send().await?;
        anyhow::ensure!(r.status().is_success(), "warm-up failed: {}", r.status());
    }
    let targets = std::env::temp_dir().join(format!("dsa-flood-targets-{}.txt", uuid::Uuid::now_v7()));
    std::fs::write(&targets, urls.iter().map(|u| format!("{}\n", &u[base.len()..])).collect::<String>())?;
    let load = |extra: &[String]| {
        let mut command = generator_command();
        command.arg("--addr").arg(settings.server.listen.to_string()).arg("--targets").arg(&targets).args(extra);
        command.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::piped());
        command
    };
    // Capacity: closed loop from the same generator.
    let capacity_secs: f64 = env_or("BENCH_FLOOD_CAPACITY_SECS", 5.0);
    let listen = settings.server.listen.to_string();
    let check = front_closed_loop(&listen, pid, &targets, connections, capacity_secs)?;
    let capacity = check.figures["ok_per_sec"].as_f64().unwrap_or(0.0);
    anyhow::ensure!(capacity > 0.0, "no capacity measured: {}", check.figures);
    // The same front process on cheaper requests from the same generator, on the same CPU
    // budget: `/healthz` (the HTTP stack), a check refused for an unknown key (+ the `/v1` layers,
    // the key lookup, an error answer), a check with a key of a name that cannot be parsed (+ the
    // key's rate window and credits, the name's parse); the cached check's cost is read against
    // them with nothing else of the run (NATS, Postgres, the worker and ledger consumer, the
    // generator) counted or sharing the front's core.
    // A key of the right form that was never stored.
    let (unknown_key, _) = api::keys::generate(KeyKind::Server);
    let stages = [
        ("GET /healthz", "/healthz".to_owned()),
        ("check, unknown key", format!("/v1/domains/check?client_key={unknown_key}&domain=example.com")),
        ("check, unparsable name", format!("/v1/domains/check?client_key={}&domain=-bad-.com", keys[0])),
    ];
    let mut healthz_capacity = 0.0;
    let mut healthz_cpu = (0.0, 0.0);
    let mut healthz_busy = 0.0;
    let mut costs = Vec::new();
    for (label, path) in &stages {
        let file = std::env::temp_dir().join(format!("dsa-flood-stage-{}.txt", uuid::Uuid::now_v7()));
        std::fs::write(&file, format!("{path}\n"))?;
        let measured = front_closed_loop(&listen, pid, &file, connections, capacity_secs);
        let _ = std::fs::remove_file(&file);
        let FrontLoad { figures, cpu_us: cpu, busy } = measured?;
        if path == "/healthz" {
            healthz_capacity = figures["ok_per_sec"].as_f64().unwrap_or(0.0);
            (healthz_cpu, healthz_busy) = (cpu, busy);
        }
        costs.push(format!("{label} {:.1} + {:.1} µs ({:?})", cpu.0, cpu.1, figures["statuses"]));
    }
    println!(
        "flood      {} front process alone on its core (CPU cap {}): cached check {capacity:.0}/s, GET /healthz {healthz_capacity:.0}/s; \
         cached check / healthz throughput: {:.2}; the front's CPU per request (every thread, user + system): \
         cached check {:.1} + {:.1} µs, {} → throughput at equal CPU, cached check / healthz {:.2}; \
         the front's CPU over wall time (1.00 = its core kept busy): cached check {:.2}, GET /healthz {:.2}",
        if fleet_mode { "fleet" } else { "standalone" },
        if capped.is_some() { front_cpu.to_string() } else { "none".to_owned() },
        capacity / healthz_capacity.max(f64::MIN_POSITIVE),
        check.cpu_us.0,
        check.cpu_us.1,
        costs.join(", "),
        (healthz_cpu.0 + healthz_cpu.1) / (check.cpu_us.0 + check.cpu_us.1).max(f64::MIN_POSITIVE),
        check.busy,
        healthz_busy,
    );
    if check.busy < 0.9 {
        println!(
            "flood      the front kept its core {:.0}% busy on cached checks: they wait for the ledger's durable commit \
             with {connections} connections, so their capacity here is that wait × connections, not the front's CPU \
             (BENCH_CONNECTIONS raises it)",
            check.busy * 100.0
        );
    }
    if std::env::var("BENCH_FLOOD_SECS").as_deref() == Ok("0") {
        front.sigkill();
        return flood_cleanup(capped, &targets, sqlite, fleet_parts).await;
    }
    let (baseline, _) = sequential(&client, &urls, 200).await;
    let baseline_p99 = percentile(&baseline, 0.99);
    let rss_before = rss_mib(pid);

    // The flood: open loop at factor × capacity from the generator process.
    let rate = capacity * factor;
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        tokio::spawn(async move {
            let mut peak: f64 = 0.0;
            while sampling.load(Ordering::Relaxed) {
                peak = peak.max(rss_mib(pid));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            peak
        })
    };
    let mut generator = tokio::process::Command::from(load(&[
        "--rate".into(),
        format!("{rate:.0}"),
        "--secs".into(),
        secs.to_string(),
    ]))
    .spawn()?;
    let stdout = generator.stdout.take().ok_or_else(|| anyhow::anyhow!("dsa-load's output"))?;
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
    // Recovery: from the generator's last send until five 200s in a row each within the bound,
    // probed from a thread and runtime of its own.
    let normal = (baseline_p99 * 2).max(Duration::from_millis(20));
    let mut probe = None;
    let mut figures = serde_json::Value::Null;
    while let Some(line) = lines.next_line().await? {
        let value: serde_json::Value = serde_json::from_str(&line)?;
        if value["event"] == "last_send" {
            let probe_url = urls[0].clone();
            probe = Some(std::thread::spawn(move || recovery(&probe_url, normal)));
        } else {
            figures = value;
        }
    }
    anyhow::ensure!(generator.wait().await?.success(), "dsa-load (open loop) failed");
    let recovered = probe
        .ok_or_else(|| anyhow::anyhow!("dsa-load never reported its last send"))?
        .join()
        .map_err(|_| anyhow::anyhow!("probe thread panicked"))??;
    tokio::time::sleep(Duration::from_secs(2)).await;
    sampling.store(false, Ordering::Relaxed);
    let rss_peak = sampler.await?.max(rss_before);
    let rss_after = rss_mib(pid);
    // And once the front has been idle a while (an allocator may return freed pages later).
    tokio::time::sleep(Duration::from_secs(10)).await;
    let rss_idle = rss_mib(pid);
    let statuses: std::collections::BTreeMap<String, u64> = serde_json::from_value(figures["statuses"].clone())?;
    let five_xx: Vec<String> =
        statuses.iter().filter(|(s, _)| s.as_str() >= "500").map(|(s, n)| format!("{s}: {n}")).collect();
    let unexpected: u64 =
        statuses.iter().filter(|(s, _)| s.as_str() >= "500" && *s != "502" && *s != "503").map(|(_, n)| n).sum();
    let load_avg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "flood      {} front; capacity {capacity:.0}/s (closed loop, {connections} conns, dsa-load); flood {factor}× = {rate:.0}/s \
         for {secs} s ({} scheduled, last sent after {:.1} s); admitted (200) {} p50 {} ms p99 {} ms max {} ms; \
         statuses {statuses:?} (0 = no answer); 5xx {five_xx:?}, undocumented 5xx {unexpected}; \
         RSS before {rss_before:.1} MiB, peak {rss_peak:.1} MiB, after {rss_after:.1} MiB, after 10 s more {rss_idle:.1} MiB \
         (after/before {:.2}, idle/before {:.2}); \
         normal service (5 × 200 within {:.1} ms) {:.3} s after the last send; pre-flood p99 {:.2} ms; \
         generator dispatch lag p50 {} ms p99 {} ms, {} connections opened; front pinned to its own core: {pinned}, \
         CPU capped at {}; load average {}",
        if fleet_mode { "fleet" } else { "standalone" },
        figures["scheduled"],
        figures["sent_secs"].as_f64().unwrap_or(0.0),
        figures["admitted_ms"]["count"],
        figures["admitted_ms"]["p50"],
        figures["admitted_ms"]["p99"],
        figures["admitted_ms"]["max"],
        rss_after / rss_before.max(f64::MIN_POSITIVE),
        rss_idle / rss_before.max(f64::MIN_POSITIVE),
        ms(normal),
        recovered.as_secs_f64(),
        ms(baseline_p99),
        figures["dispatch_lag_ms"]["p50"],
        figures["dispatch_lag_ms"]["p99"],
        figures["connections_opened"],
        if capped.is_some() { format!("{front_cpu} of a core (cgroup CPU quota)") } else { "no cap".to_owned() },
        load_avg.trim(),
    );
    front.sigkill();
    flood_cleanup(capped, &targets, sqlite, fleet_parts).await
}

/// What a flood run leaves once its front is gone: the cgroup, the targets file, the SQLite file,
/// the fleet's worker, ledger consumer and database.
async fn flood_cleanup(
    capped: Option<std::path::PathBuf>,
    targets: &std::path::Path,
    sqlite: Option<std::path::PathBuf>,
    fleet_parts: Option<(
        dsa_tests::harness::fleet::NatsServer,
        dsa_tests::harness::fleet::PgDatabase,
        dsa_tests::harness::fleet::Role,
        dsa_tests::harness::fleet::Role,
    )>,
) -> anyhow::Result<()> {
    // The front was killed just before: the group empties as its threads go.
    tokio::time::sleep(Duration::from_millis(200)).await;
    if let Some(group) = capped {
        let _ = std::fs::remove_dir(group);
    }
    let _ = std::fs::remove_file(targets);
    if let Some(file) = sqlite {
        // The database and the write-ahead log and index the killed front left beside it.
        dsa_tests::harness::remove_sqlite_database(&file);
    }
    if let Some((_nats, db, worker, ledger)) = fleet_parts {
        worker.stop().await;
        ledger.stop().await;
        db.drop_now().await;
    }
    Ok(())
}

/// Caps process `pid` (every thread) at `fraction` of one CPU with a CPU-quota cgroup (cgroup v1
/// `cpu` controller, or cgroup v2 `cpu.max`) of a 10 ms period, so that a one-core generator can
/// offer it several times its capacity; the group's directory, to remove once the process is gone,
/// or `None` where no writable CPU controller is mounted (then the front runs uncapped).
fn cap_cpu(pid: u32, fraction: f64) -> Option<std::path::PathBuf> {
    let period = 10_000u64;
    let quota = ((period as f64 * fraction) as u64).max(1_000);
    let name = format!("dsa-flood-{pid}");
    let v1 = std::path::Path::new("/sys/fs/cgroup/cpu").join(&name);
    if std::fs::create_dir(&v1).is_ok() {
        let ok = std::fs::write(v1.join("cpu.cfs_period_us"), period.to_string()).is_ok()
            && std::fs::write(v1.join("cpu.cfs_quota_us"), quota.to_string()).is_ok()
            && std::fs::write(v1.join("cgroup.procs"), pid.to_string()).is_ok();
        if ok {
            return Some(v1);
        }
        let _ = std::fs::remove_dir(&v1);
    }
    let v2 = std::path::Path::new("/sys/fs/cgroup").join(&name);
    if std::fs::create_dir(&v2).is_ok() {
        let ok = std::fs::write(v2.join("cpu.max"), format!("{quota} {period}")).is_ok()
            && std::fs::write(v2.join("cgroup.procs"), pid.to_string()).is_ok();
        if ok {
            return Some(v2);
        }
        let _ = std::fs::remove_dir(&v2);
    }
    None
}

/// The load generator (`dsa-load`, this package's binary), pinned with `taskset` to every CPU but
/// the front's last one when there are two or more.
fn generator_command() -> std::process::Command {
    let bin = env!("CARGO_BIN_EXE_dsa-load");
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    if cpus >= 2 && std::process::Command::new("taskset").arg("-V").output().is_ok_and(|o| o.status.success()) {
        let mut command = std::process::Command::new("taskset");
        command.args(["-c", &format!("0-{}", cpus - 2), bin]);
        command
    } else {
        std::process::Command::new(bin)
    }
}

/// Time until five 200s in a row, each within `normal`, on a runtime of its own;
/// `Duration::MAX` after two minutes without.
fn recovery(url: &str, normal: Duration) -> anyhow::Result<Duration> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build()?;
        let mut in_a_row = 0;
        let begun = Instant::now();
        loop {
            let t = Instant::now();
            let ok = matches!(client.get(url).send().await, Ok(r) if r.status().is_success());
            in_a_row = if ok && t.elapsed() <= normal { in_a_row + 1 } else { 0 };
            if in_a_row == 5 {
                return Ok(begun.elapsed());
            }
            if begun.elapsed() > Duration::from_secs(120) {
                return Ok(Duration::MAX);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
}

/// What one consensus run measured.
struct ConsensusFigures {
    available: usize,
    /// Queries per available answer: DNS, RDAP, WHOIS.
    per_answer: (f64, f64, f64),
    latencies: Vec<Duration>,
    confirmed: usize,
}

impl ConsensusFigures {
    fn total_per_answer(&self) -> f64 {
        self.per_answer.0 + self.per_answer.1 + self.per_answer.2
    }

    fn mean(&self) -> Duration {
        self.latencies.iter().sum::<Duration>() / u32::try_from(self.latencies.len().max(1)).unwrap_or(u32::MAX)
    }
}

/// Checks `names` one after another, uncached, with consensus set by `on`.
async fn consensus_run(
    sim: &Simulator,
    names: &[String],
    set: impl FnOnce(&mut workers::config::ConsensusConfig),
) -> anyhow::Result<ConsensusFigures> {
    let mut config = dsa_tests::harness::app::engine_config(sim);
    config.check_deadline_secs = 10.0;
    config.consensus.audit_one_in = 0;
    config.limits.whois.per_second = 1000.0;
    config.limits.whois.burst = 1000;
    config.limits.rdap.per_second = 1000.0;
    config.limits.rdap.burst = 1000;
    set(&mut config.consensus);
    let engine = workers::engine::Engine::new(config)?;
    let before = sim.stats();
    let mut latencies = Vec::with_capacity(names.len());
    let (mut available, mut confirmed) = (0, 0);
    for name in names {
        let domain = engine.parse(name)?;
        let started = Instant::now();
        let report = engine.check_uncached(&domain).await?;
        latencies.push(started.elapsed());
        if report.verdict.status == common::verdict::Status::Available {
            available += 1;
            confirmed += usize::from(report.verdict.confirmed_by.is_some());
        }
    }
    let after = sim.stats();
    latencies.sort_unstable();
    let per = |a: u64, b: u64| (b - a) as f64 / available.max(1) as f64;
    Ok(ConsensusFigures {
        available,
        per_answer: (
            per(before.dns.queries, after.dns.queries),
            per(before.rdap.queries, after.rdap.queries),
            per(before.whois.queries, after.whois.queries),
        ),
        latencies,
        confirmed,
    })
}

/// The consensus benchmark (`BENCH_MODES=consensus`): see the crate doc.
async fn consensus() -> anyhow::Result<()> {
    let n: usize = env_or("BENCH_CONSENSUS_NAMES", 100);
    let latency: String = env_or("BENCH_CONSENSUS_LATENCY_MS", "10,60,90".to_owned());
    let parts: Vec<u64> = latency.split(',').filter_map(|p| p.trim().parse().ok()).collect();
    let [dns, rdap, whois] = parts[..] else {
        anyhow::bail!("BENCH_CONSENSUS_LATENCY_MS must be dns,rdap,whois milliseconds, got {latency:?}");
    };
    let sim = Simulator::start(Scenario::demo()).await?;
    sim.set_knobs(Knobs { latency_ms: dsa_tests::sim::Latency { dns, rdap, whois }, ..Knobs::default() });
    let names = |tag: &str, tld: &str| (0..n).map(|i| format!("bench-{tag}-{i}.{tld}")).collect::<Vec<_>>();
    let off = consensus_run(&sim, &names("off", "com"), |c| {
        c.suffixes.insert("com".into(), false);
    })
    .await?;
    let on = consensus_run(&sim, &names("on", "com"), |c| {
        c.suffixes.insert("com".into(), true);
    })
    .await?;
    let io = consensus_run(&sim, &names("io", "io"), |_| {}).await?;
    let io_off = consensus_run(&sim, &names("iooff", "io"), |c| {
        c.suffixes.insert("io".into(), false);
    })
    .await?;
    sim.stop().await;
    let line = |name: &str, f: &ConsensusFigures| {
        println!(
            "consensus  {name:<18} {} available ({} confirmed); queries per available answer: dns {:.2}, rdap {:.2}, whois {:.2} \
             (total {:.2}); latency mean {:.1} ms, p50 {:.1} ms, p99 {:.1} ms",
            f.available,
            f.confirmed,
            f.per_answer.0,
            f.per_answer.1,
            f.per_answer.2,
            f.total_per_answer(),
            ms(f.mean()),
            ms(percentile(&f.latencies, 0.5)),
            ms(percentile(&f.latencies, 0.99)),
        );
    };
    println!(
        "consensus  simulator latency dns {dns} ms, rdap {rdap} ms, whois {whois} ms; {n} free names per run, sequential"
    );
    line(".com off", &off);
    line(".com on (whois)", &on);
    line(".io off", &io_off);
    line(".io on (dns)", &io);
    let ratio = |a: &ConsensusFigures, b: &ConsensusFigures| ms(a.mean()) / ms(b.mean()).max(f64::MIN_POSITIVE);
    println!(
        "consensus  .com: {:+.2} upstream queries per available answer, latency ratio on/off {:.2} (mean), {:.2} (p50); \
         .io: {:+.2} queries, ratio {:.2} (mean)",
        on.total_per_answer() - off.total_per_answer(),
        ratio(&on, &off),
        ms(percentile(&on.latencies, 0.5)) / ms(percentile(&off.latencies, 0.5)).max(f64::MIN_POSITIVE),
        io.total_per_answer() - io_off.total_per_answer(),
        ratio(&io, &io_off),
    );
    Ok(())
}

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
    let secs: u64 = env_or("BENCH_SECS", 5);
    let connections: usize = env_or("BENCH_CONNECTIONS", 64);
    let rate: u64 = env_or("BENCH_RATE", 2000);
    let modes: String = env_or("BENCH_MODES", "standalone,fleet,consensus,cluster".to_owned());
    let sim = Simulator::start(Scenario::demo()).await?;
    sim.set_knobs(Knobs::default());
    let report = |name: &str, f: &Figures| {
        println!(
            "{name:<10} closed loop {connections} conns {secs} s: {:>7.0} cached answers/s ({} errors) | open loop {}/s: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} failed); \
             /healthz at that rate: p50 {:.2} ms, p99 {:.2} ms",
            f.closed,
            f.closed_errors,
            f.rate,
            ms(f.p50),
            ms(f.p99),
            ms(f.max),
            f.open_failed,
            ms(f.healthz_p50),
            ms(f.healthz_p99)
        );
        let mut ratios = f.ratios.clone();
        let rounds: Vec<String> = f.ratios.iter().map(|r| format!("{r:.2}")).collect();
        println!(
            "{name:<10} baseline GET /healthz closed loop: {:>7.0}/s; cached check / healthz throughput: {:.2} \
             (median of {} alternated rounds: {})",
            f.healthz_closed,
            median(&mut ratios),
            rounds.len(),
            rounds.join(", ")
        );
    };
    let mut standalone_closed = None;
    if modes.contains("standalone") {
        let f = standalone(&sim, secs, connections, rate).await?;
        report("standalone", &f);
        let dir: std::path::PathBuf = env_or("BENCH_DB_DIR", std::env::temp_dir());
        if let Ok(sync) = sync_latency(&dir, 50) {
            println!(
                "standalone ledger disk ({}): 4 KiB write + fdatasync {:.2} ms → at most {:.0} durable charges/s per connection, \
                 {:.0}/s over {connections} connections in a closed loop (BENCH_DB_DIR=/dev/shm: no disk wait)",
                dir.display(),
                ms(sync),
                1.0 / sync.as_secs_f64().max(1e-9),
                connections as f64 / sync.as_secs_f64().max(1e-9)
            );
        }
        standalone_closed = Some(f.closed);
    }
    if modes.contains("flood") {
        flood(&sim, connections).await?;
    }
    if modes.contains("consensus") {
        consensus().await?;
    }
    let mut fleet_closed = None;
    if modes.split(',').any(|m| m == "fleet") {
        let f = fleet(&sim, secs, connections, rate, 1).await?;
        fleet_closed = Some(f.http.closed);
        report("fleet", &f.http);
        print_ledger("fleet", &f);
        if let Some(s) = standalone_closed {
            println!("ratio      fleet/standalone closed-loop throughput: {:.2}", f.http.closed / s);
        }
    }
    if modes.split(',').any(|m| m == "cluster") {
        let f = fleet(&sim, secs, connections, rate, 3).await?;
        report("cluster", &f.http);
        print_ledger("cluster", &f);
        if let Some(single) = fleet_closed {
            println!(
                "ratio      cluster (3 nats-servers, R3)/single-server fleet closed-loop throughput: {:.2}",
                f.http.closed / single
            );
        }
    }
    Ok(())
}

/// The ledger line of a fleet run (`fleet` or `cluster`): charges settled, settle lag, grouping
/// and the ledger consumer's settling throughput.
fn print_ledger(label: &str, f: &FleetFigures) {
    println!(
        "{label:<10} ledger: {} charges settled; settle lag over the whole run p50 {:.0} ms, p99 {:.0} ms; \
         during the {}/s open loop p50 {:.0} ms, p99 {:.0} ms; {:.1} charges per ledger message; settling throughput \
         {:.0} events/s (messages of 128)",
        f.charges,
        f.lag_p50_ms,
        f.lag_p99_ms,
        f.http.rate,
        f.open_lag_p50_ms,
        f.open_lag_p99_ms,
        f.charges_per_message,
        f.settle_per_sec
    );
}
