//! Benchmark of watches (issue 25) over a simulated month, on the registry simulator with
//! timelines and the shipped politeness limits, through a standalone front (in-process bus,
//! SQLite) whose clock the bench moves together with the simulator's. Not a timed test:
//! `cargo bench -p dsa-tests --bench watches`.
//!
//! `BENCH_WATCHES` names (default 100; the 10,000 is for a release build), one in
//! `BENCH_DROP_EVERY` (10) deleted before the month and freed during it (five drop instants, an
//! hour apart, on day 15), the others registered far from expiry all month. The clock moves an
//! hour at a time, 10 s at a time from 2 min before to 3 min after each drop.
//!
//! The names are `watched-{i}.{tld}`, dealt round-robin over `BENCH_TLDS` real open gTLDs
//! (default 20, at most 46; `org` first). The interactive checks below are on `.com`. The
//! simulator serves `.com` and the watched TLDs on `BENCH_HOSTS` upstream hosts (default
//! `BENCH_TLDS` + 1: every TLD its own RDAP host, 127.0.0.`k`, and its own DNS server; fewer:
//! the TLDs, `.com` first, are dealt round-robin over them, as registry back-ends serve many TLDs
//! live). dsa's politeness budgets are per upstream host and stay the shipped ones (RDAP 10
//! queries/s, DNS 50 queries/s): a real watch list of 10,000 names spans many registries, each
//! with its own budget, whereas on one host the DNS looks alone (4 per name per simulated day)
//! would take 40,000 / 50 = 800 s of real time per simulated day. Printed:
//! * **registry queries per name per day outside the drop windows** (RDAP queries the simulator
//!   saw while no watch's drop window was open, over names × days; target ≤ 2);
//! * **`domain.available` delay** after the registry freed each dropping name, simulated seconds
//!   (worst and median; target ≤ 60 s);
//! * **false `domain.available`** (emitted before the name was free, or for a name that never
//!   dropped; target 0);
//! * **interactive check p99** (`/v1/domains/check` of available names nobody checked before,
//!   one at a time; `BENCH_CHECKS`, default 200, while the scheduler is idle, then one every
//!   250 ms while it runs the month), and their ratio (target ≤ 1.2). The simulator counts the
//!   queries of every host together: the interactive checks' own RDAP queries (measured per
//!   check while idle) are subtracted from the registry count above;
//! * the TLDs and hosts, and the real time the creation (with the first checks) and the month
//!   took.
//!
//! `BENCH_BACKGROUND_SHARE` sets `engine.limits.background_share` (the share of each budget the
//! re-checks may use; default the shipped value). The bench waits for the scheduler through its
//! own read-only connection to the front's SQLite file (a count over the due index), not the
//! store's paged listing, which at 10,000 watches would be the bench's own bottleneck.

use std::time::{Duration, Instant};

use dsa_tests::harness::app::{KeyOpts, TestApp, TestClock};
use dsa_tests::harness::bench::{OPEN_GTLDS, env_or, ms, percentile};
use dsa_tests::sim::Scenario;
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use time::OffsetDateTime;
use time::macros::datetime;

const T0: OffsetDateTime = datetime!(2026-03-01 00:00 UTC);
const DAYS: i64 = 30;

/// The watched names' TLDs (not `com`: the interactive checks' own registry).
const TLDS: [&str; 46] = OPEN_GTLDS;

/// The `i`-th watched name, its TLD dealt round-robin over the first `tlds` of [`TLDS`].
fn watched(i: usize, tlds: usize) -> String {
    format!("watched-{i}.{}", TLDS[i % tlds])
}

fn free_at(i: usize) -> OffsetDateTime {
    datetime!(2026-03-16 00:00 UTC) + time::Duration::hours((i % 5) as i64)
}

/// The scenario: `.com` first (the simulator's host 0), then the watched TLDs.
fn scenario(n: usize, drop_every: usize, tlds: usize) -> Scenario {
    let mut toml =
        String::from("[[tld]]\nsuffix = \"com\"\nprotocols = [\"dns\", \"rdap\"]\nrdap_family = \"verisign\"\n");
    for tld in &TLDS[..tlds] {
        toml.push_str(&format!(
            "[[tld]]\nsuffix = \"{tld}\"\nprotocols = [\"dns\", \"rdap\"]\nrdap_family = \"centralnic\"\n"
        ));
    }
    for i in 0..n {
        let (expires, redemption, pending, free) = if i.is_multiple_of(drop_every) {
            let free = free_at(i);
            let fmt = |t: OffsetDateTime| t.format(&time::format_description::well_known::Rfc3339).expect("rfc3339");
            (
                "2026-01-20T00:00:00Z".to_owned(),
                "2026-02-19T00:00:00Z".to_owned(),
                fmt(free - time::Duration::days(5)),
                fmt(free),
            )
        } else {
            (
                "2027-09-01T00:00:00Z".to_owned(),
                "2027-10-01T00:00:00Z".to_owned(),
                "2027-10-31T00:00:00Z".to_owned(),
                "2027-11-05T00:00:00Z".to_owned(),
            )
        };
        toml.push_str(&format!(
            "\n[[timeline]]\nname = \"{}\"\nexpires_at = \"{expires}\"\nredemption_at = \"{redemption}\"\n\
             pending_delete_at = \"{pending}\"\nfree_at = \"{free}\"\n",
            watched(i, tlds)
        ));
    }
    Scenario::from_toml(&toml).expect("scenario")
}

/// Every watch of the key (paged): for the final tally only.
async fn all_watches(app: &TestApp, key_id: &str) -> Vec<api::watches::WatchRecord> {
    let mut out: Vec<api::watches::WatchRecord> = Vec::new();
    loop {
        let after = out.last().map(|w| w.id.clone());
        let page = app.store.list_watches(key_id, after.as_deref(), 100).await.expect("watches");
        let done = page.len() < 100;
        out.extend(page);
        if done {
            return out;
        }
    }
}

/// A read-only pool on the front's SQLite file (WAL: it reads beside the front's writes).
async fn reader(app: &TestApp) -> SqlitePool {
    let options =
        SqliteConnectOptions::new().filename(app.db_path()).read_only(true).busy_timeout(Duration::from_secs(10));
    SqlitePoolOptions::new().max_connections(1).connect_with(options).await.expect("open the front's database")
}

/// Waits until no watch of the key is due at `now` (`next_check_at`, unix seconds, after it; a
/// leased watch keeps its due time until its check is written).
async fn settle(db: &SqlitePool, key_id: &str, now: OffsetDateTime) {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let due: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM watches WHERE key_id = ? AND next_check_at <= ?")
            .bind(key_id)
            .bind(now.unix_timestamp())
            .fetch_one(db)
            .await
            .expect("count the due watches");
        if due == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "the scheduler did not catch up at {now}: {due} watches due");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether any watch's drop window (as the scheduler predicts it: 6 h before to 2 days after
/// `predicted_drop_at`, unix seconds) is open at `at`.
async fn in_window(db: &SqlitePool, key_id: &str, at: OffsetDateTime) -> bool {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM watches WHERE key_id = ? AND predicted_drop_at IS NOT NULL \
         AND predicted_drop_at <= ? + 21600 AND predicted_drop_at >= ? - 172800)",
    )
    .bind(key_id)
    .bind(at.unix_timestamp())
    .bind(at.unix_timestamp())
    .fetch_one(db)
    .await
    .expect("drop windows")
}

/// One interactive check of a name nobody checked before; its latency.
async fn check(http: &reqwest::Client, url: String) -> Duration {
    let started = Instant::now();
    let response = http.get(url).send().await.expect("check");
    let status = response.status().as_u16();
    let body = response.text().await.unwrap_or_default();
    assert_eq!(status, 200, "{body}");
    started.elapsed()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: usize = env_or("BENCH_WATCHES", 100);
    let drop_every: usize = env_or("BENCH_DROP_EVERY", 10).max(1);
    let samples: usize = env_or("BENCH_CHECKS", 200);
    let tlds: usize = env_or("BENCH_TLDS", 20).clamp(1, TLDS.len());
    let hosts: usize = env_or("BENCH_HOSTS", tlds + 1).clamp(1, tlds + 1);
    let clock = TestClock::at(T0);
    // The scenario's `i`-th TLD (`.com` first) on host `i mod hosts`.
    let app = TestApp::spawn_spread(
        scenario(n, drop_every, tlds),
        hosts,
        |s| {
            // The shipped politeness limits (the harness raises WHOIS's only; these names are on
            // RDAP and DNS).
            s.engine.limits.rdap = workers::config::LimitsConfig::default().rdap;
            s.engine.limits.dns = workers::config::LimitsConfig::default().dns;
            // The shipped share unless `BENCH_BACKGROUND_SHARE` says otherwise.
            s.engine.limits.background_share =
                env_or("BENCH_BACKGROUND_SHARE", workers::config::LimitsConfig::default().background_share);
            s.watches.tick_ms = 20;
            s.watches.monthly_fee = 0;
            s.watches.max_per_key = i64::try_from(n).unwrap_or(i64::MAX).max(1000);
        },
        clock.clock(),
    )
    .await;
    let db = reader(&app).await;
    app.sim.set_now(Some(T0));
    let key = app.key(KeyOpts { plan: api::keys::Plan::Reseller, ..KeyOpts::default() }).await;
    let key_id = app.key_id(&key).await;
    let started = Instant::now();
    for i in 0..n {
        let response = app
            .http
            .post(app.url(&format!("/v1/watches?client_key={key}")))
            .json(&serde_json::json!({"domain": watched(i, tlds)}))
            .send()
            .await
            .expect("create");
        assert_eq!(response.status().as_u16(), 201, "{:?}", response.text().await);
    }
    settle(&db, &key_id, T0).await;
    let creation_wall = started.elapsed();
    eprintln!("{n} watches created and first checked in {:.1} s", creation_wall.as_secs_f64());

    // Interactive checks with the scheduler idle (nothing due).
    let http = reqwest::Client::new();
    let url = |i: usize| app.url(&format!("/v1/domains/check?client_key={key}&domain=fresh-{i}.com"));
    let mut idle: Vec<Duration> = Vec::new();
    let rdap_idle = app.sim.stats().rdap.queries;
    for i in 0..samples {
        idle.push(check(&http, url(i)).await);
    }
    // The interactive checks' own RDAP queries per check (counted with the watches' queries):
    // subtracted from the month's count below.
    let per_check = (app.sim.stats().rdap.queries - rdap_idle) as f64 / samples.max(1) as f64;

    // The month, with interactive checks running beside it.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let busy = {
        let (http, stop, done) = (http.clone(), stop.clone(), done.clone());
        // One check every 250 ms, at most 6,000 (about 25 minutes; within the plan's monthly credits).
        let urls: Vec<String> = (0..6000).map(|i| url(samples + i)).collect();
        tokio::spawn(async move {
            let mut out = Vec::new();
            for u in urls {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                out.push(check(&http, u).await);
                done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            out
        })
    };
    let frees: Vec<OffsetDateTime> = (0..5).map(free_at).collect();
    let end = T0 + time::Duration::days(DAYS);
    let (mut outside_queries, mut outside_secs, mut outside_checks) = (0_u64, 0_i64, 0_usize);
    let mut now = T0;
    let month = Instant::now();
    while now < end {
        let fine =
            frees.iter().any(|f| now >= *f - time::Duration::minutes(2) && now < *f + time::Duration::minutes(3));
        let mut next = if fine { now + time::Duration::seconds(10) } else { now + time::Duration::hours(1) };
        if let Some(start) =
            frees.iter().map(|f| *f - time::Duration::minutes(2)).filter(|s| *s > now && *s < next).min()
        {
            next = start;
        }
        // Inside a drop window when any watch's window (as the scheduler predicts it) is open.
        let outside = !in_window(&db, &key_id, now).await && !in_window(&db, &key_id, next).await;
        let (before, checks_before) = (app.sim.stats().rdap.queries, done.load(std::sync::atomic::Ordering::Relaxed));
        clock.set(next);
        app.sim.set_now(Some(next));
        settle(&db, &key_id, next).await;
        if outside {
            outside_queries += app.sim.stats().rdap.queries - before;
            outside_checks += done.load(std::sync::atomic::Ordering::Relaxed) - checks_before;
            outside_secs += (next - now).whole_seconds();
        }
        now = next;
    }
    let month_wall = month.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut with_watches = busy.await.expect("checks");
    db.close().await;

    // The events.
    let mut delays: Vec<i64> = Vec::new();
    let mut false_available = 0;
    let mut missing = 0;
    for w in &all_watches(&app, &key_id).await {
        let label = w.domain.split('.').next().unwrap_or_default();
        let i: usize = label.trim_start_matches("watched-").parse().expect("index");
        let events = app.store.list_events(&key_id, Some(&w.id), 0, 1000).await.expect("events");
        let available: Vec<_> = events.iter().filter(|e| e.event_type == "domain.available").collect();
        if !i.is_multiple_of(drop_every) {
            false_available += available.len();
            continue;
        }
        match available.as_slice() {
            [] => missing += 1,
            [one, rest @ ..] => {
                false_available += rest.len();
                let at = OffsetDateTime::parse(
                    one.data["checked_at"].as_str().expect("checked_at"),
                    &time::format_description::well_known::Rfc3339,
                )
                .expect("rfc3339");
                let delay = (at - free_at(i)).whole_seconds();
                if delay < 0 {
                    false_available += 1;
                } else {
                    delays.push(delay);
                }
            }
        }
    }
    delays.sort_unstable();
    idle.sort_unstable();
    with_watches.sort_unstable();
    let (p99_idle, p99_busy) = (percentile(&idle, 0.99), percentile(&with_watches, 0.99));
    let outside_days = outside_secs as f64 / 86_400.0;
    println!(
        "watches: {n} names ({} dropping during the month) over {tlds} TLDs (+ .com) on {hosts} simulated hosts, \
         {DAYS} simulated days in {:.0} s (creation and first checks {:.0} s)",
        n.div_ceil(drop_every),
        month_wall.as_secs_f64(),
        creation_wall.as_secs_f64()
    );
    let watch_queries = (outside_queries as f64 - outside_checks as f64 * per_check).max(0.0);
    println!(
        "  registry queries per name per day outside the drop windows: {:.3} (target <= 2; {watch_queries:.0} RDAP queries over {outside_days:.1} days: {outside_queries} seen, less {outside_checks} interactive checks x {per_check:.2})",
        watch_queries / n as f64 / outside_days.max(f64::MIN_POSITIVE)
    );
    println!(
        "  domain.available after the registry freed the name: worst {} s, median {} s over {} names (target <= 60 s); not seen: {missing}",
        delays.last().copied().unwrap_or(-1),
        delays.get(delays.len() / 2).copied().unwrap_or(-1),
        delays.len()
    );
    println!("  false domain.available: {false_available} (target 0)");
    println!(
        "  interactive check p99: {:.1} ms idle ({} checks), {:.1} ms with the watches running ({} checks): ratio {:.2} (target <= 1.2)",
        ms(p99_idle),
        idle.len(),
        ms(p99_busy),
        with_watches.len(),
        ms(p99_busy) / ms(p99_idle).max(f64::MIN_POSITIVE)
    );
    app.finish(None).await;
}
