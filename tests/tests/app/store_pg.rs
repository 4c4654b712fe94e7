//! The fleet's Postgres store (`api::store_pg::PgStore`) on a real server: every `Store` method,
//! ledger idempotence (replayed and concurrent overlapping batches), the per-front settled sum,
//! fail-fast connect, and the settling throughput (printed, not asserted).
//!
//! Server: `DSA_TEST_PG_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`, a role
//! allowed to CREATE DATABASE). Each test gets a fresh database `dsa_test_<uuid>`, migrated, and
//! drops it at the end (also when the test panics). Postgres unreachable = the test FAILS: start
//! it with `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use api::keys::{KeyKind, KeyRecord, KeyState, Plan};
use api::store::{KeyUpdate, NewKey, Store};
use api::store_pg::PgStore;
use common::messages::LedgerEvent;
use sqlx::{AssertSqlSafe, Connection, Executor, PgConnection};
use uuid::Uuid;

const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
const PERIOD: &str = "2026-11";

fn admin_url() -> String {
    std::env::var("DSA_TEST_PG_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned())
}

/// `admin` with its database path replaced by `db` (query string kept).
fn url_for_database(admin: &str, db: &str) -> String {
    let (base, query) = match admin.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (admin, None),
    };
    let (scheme, rest) = base.split_once("://").expect("DSA_TEST_PG_URL is a postgres:// URL");
    let authority = rest.split_once('/').map_or(rest, |(a, _)| a);
    match query {
        Some(q) => format!("{scheme}://{authority}/{db}?{q}"),
        None => format!("{scheme}://{authority}/{db}"),
    }
}

async fn admin_connection(admin: &str) -> PgConnection {
    match tokio::time::timeout(Duration::from_secs(5), PgConnection::connect(admin)).await {
        Ok(Ok(conn)) => conn,
        Ok(Err(e)) => panic!(
            "Postgres unreachable at DSA_TEST_PG_URL={admin}: {e}\n\
             start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"
        ),
        Err(_) => panic!("Postgres at DSA_TEST_PG_URL={admin}: no connection within 5 s"),
    }
}

/// A fresh, migrated database; dropped with the value (best effort).
struct TestDb {
    store: PgStore,
    name: String,
    admin: String,
}

impl TestDb {
    async fn new() -> Self {
        Self::with_pool(4).await
    }

    async fn with_pool(max_connections: u32) -> Self {
        let admin = admin_url();
        // Hex digits only, so safe to splice into CREATE/DROP DATABASE (which take no parameters).
        let name = format!("dsa_test_{}", Uuid::new_v4().simple());
        let mut conn = admin_connection(&admin).await;
        conn.execute(AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .await
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
        conn.close().await.ok();
        let store = PgStore::connect(&url_for_database(&admin, &name), max_connections)
            .await
            .expect("connect to the test database");
        store.migrate().await.expect("migrations apply");
        Self { store, name, admin }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        // Drop runs outside any async context we can await in (and also on panic), so a helper
        // thread with its own runtime drops the database; FORCE ends the pool's connections.
        let (admin, name) = (self.admin.clone(), self.name.clone());
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
            rt.block_on(async {
                let mut conn = PgConnection::connect(&admin).await.ok()?;
                conn.execute(AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))).await.ok()?;
                conn.close().await.ok()
            })
        })
        .join();
        if !matches!(dropped, Ok(Some(()))) {
            eprintln!("note: could not drop test database {}", self.name);
        }
    }
}

fn new_key(label: &str) -> NewKey {
    let (_, key_hash) = api::keys::generate(KeyKind::Server);
    NewKey {
        key_hash,
        kind: KeyKind::Server,
        plan: Plan::Starter,
        pricing_enabled: true,
        show_purchase_button: false,
        default_commission_percent: Some(12.5),
        purchase_url: Some("https://shop.example/checkout".into()),
        allowed_origins: vec!["https://shop.example".into(), "https://*.example.com".into()],
        label: label.into(),
    }
}

fn event(key: &KeyRecord, endpoint: &str, credits: i64, front: &str) -> LedgerEvent {
    LedgerEvent {
        event_id: Uuid::now_v7(),
        key_id: key.id.clone(),
        period: PERIOD.into(),
        endpoint: endpoint.into(),
        credits,
        charged_at: time::OffsetDateTime::now_utc(),
        front: front.into(),
        request_id: None,
    }
}

#[tokio::test]
async fn keys_create_find_list_and_state() {
    let db = TestDb::new().await;
    let s = &db.store;
    assert!(s.list_keys().await.expect("list").is_empty());

    let new = new_key("first");
    let a = s.create_key(new.clone()).await.expect("create");
    assert_eq!(a.kind, KeyKind::Server);
    assert_eq!(a.state, KeyState::Active);
    assert_eq!(a.plan, Plan::Starter);
    assert_eq!(a.monthly_allowance, 5_000);
    assert!(a.pricing_enabled && !a.show_purchase_button);
    assert_eq!(a.default_commission_percent, Some(12.5));
    assert_eq!(a.purchase_url.as_deref(), Some("https://shop.example/checkout"));
    assert_eq!(a.allowed_origins, new.allowed_origins);
    assert_eq!(a.label, "first");
    assert_eq!(a.fingerprint, new.key_hash[..8]);
    assert!(
        time::OffsetDateTime::parse(&a.created_at, &time::format_description::well_known::Rfc3339).is_ok(),
        "created_at is RFC 3339: {}",
        a.created_at
    );

    let found = s.find_key(&new.key_hash).await.expect("find").expect("found");
    assert_eq!(found, a);
    assert!(s.find_key("0000").await.expect("find").is_none());

    // A duplicate hash is refused (UNIQUE).
    assert!(s.create_key(new.clone()).await.is_err());

    let mut embed = new_key("second");
    embed.kind = KeyKind::Embed;
    embed.plan = Plan::Free;
    embed.default_commission_percent = None;
    embed.purchase_url = None;
    embed.allowed_origins = Vec::new();
    let b = s.create_key(embed).await.expect("create embed");
    assert_eq!(
        (b.kind, b.monthly_allowance, b.default_commission_percent, b.purchase_url.clone()),
        (KeyKind::Embed, 500, None, None)
    );
    assert!(b.allowed_origins.is_empty());

    let listed = s.list_keys().await.expect("list");
    assert_eq!(
        listed.iter().map(|k| k.id.as_str()).collect::<Vec<_>>(),
        [a.id.as_str(), b.id.as_str()],
        "oldest first"
    );

    // By id, then by fingerprint.
    assert!(s.set_key_state(&a.id, KeyState::Suspended).await.expect("set"));
    assert_eq!(s.find_key(&new.key_hash).await.expect("find").map(|k| k.state), Some(KeyState::Suspended));
    assert!(s.set_key_state(&b.fingerprint, KeyState::Disabled).await.expect("set"));
    assert!(!s.set_key_state("no-such-key", KeyState::Active).await.expect("set"));
    let states: Vec<_> = s.list_keys().await.expect("list").into_iter().map(|k| k.state).collect();
    assert_eq!(states, [KeyState::Suspended, KeyState::Disabled]);
}

#[tokio::test]
async fn ledger_is_idempotent_and_settles_usage() {
    let db = TestDb::new().await;
    let s = &db.store;
    let key = s.create_key(new_key("ledger")).await.expect("create");
    assert_eq!(s.settled_usage(&key.id, PERIOD).await.expect("usage"), 0);
    assert_eq!(s.apply_ledger(Vec::new()).await.expect("empty batch"), 0);

    let batch: Vec<_> = (1..=10).map(|i| event(&key, "check", i, "front-1")).collect();
    assert_eq!(s.apply_ledger(batch.clone()).await.expect("apply"), 10);
    assert_eq!(s.settled_usage(&key.id, PERIOD).await.expect("usage"), 55);
    assert_eq!(s.ledger_count(&key.id, PERIOD).await.expect("count"), 10);

    // The same batch again (a redelivery): nothing new, usage unchanged.
    assert_eq!(s.apply_ledger(batch.clone()).await.expect("replay"), 0);
    assert_eq!(s.settled_usage(&key.id, PERIOD).await.expect("usage"), 55);
    assert_eq!(s.ledger_count(&key.id, PERIOD).await.expect("count"), 10);

    // Duplicates inside one batch, mixed with old and new events: each new id counts once.
    let fresh: Vec<_> = (0..3).map(|_| event(&key, "whois", 100, "front-1")).collect();
    let mut mixed = vec![fresh[0].clone(), fresh[0].clone(), batch[3].clone()];
    mixed.extend([fresh[1].clone(), fresh[2].clone(), fresh[1].clone(), fresh[0].clone()]);
    assert_eq!(s.apply_ledger(mixed).await.expect("mixed"), 3);
    assert_eq!(s.settled_usage(&key.id, PERIOD).await.expect("usage"), 355);
    assert_eq!(s.ledger_count(&key.id, PERIOD).await.expect("count"), 13);

    // Another period is another usage row (the allowance resets monthly).
    let mut next = event(&key, "check", 7, "front-1");
    next.period = "2026-12".into();
    assert_eq!(s.apply_ledger(vec![next]).await.expect("apply"), 1);
    assert_eq!(s.settled_usage(&key.id, "2026-12").await.expect("usage"), 7);
    assert_eq!(s.settled_usage(&key.id, PERIOD).await.expect("usage"), 355);

    // A batch naming an unknown key fails as a whole: nothing of it is applied.
    let ghost = KeyRecord { id: "no-such-key".into(), ..key.clone() };
    let bad = vec![event(&key, "check", 1, "front-1"), event(&ghost, "check", 1, "front-1")];
    assert!(s.apply_ledger(bad).await.is_err());
    assert_eq!(s.settled_usage(&key.id, PERIOD).await.expect("usage"), 355);
    assert_eq!(s.ledger_count(&key.id, PERIOD).await.expect("count"), 13);
}

#[tokio::test]
async fn concurrent_overlapping_batches_count_each_event_once() {
    let db = TestDb::with_pool(8).await;
    let s = &db.store;
    let keys = [
        s.create_key(new_key("k1")).await.expect("create"),
        s.create_key(new_key("k2")).await.expect("create"),
        s.create_key(new_key("k3")).await.expect("create"),
    ];
    // 3,000 distinct events over three keys; four tasks each settle an overlapping two-thirds
    // of them, in different orders and batch sizes, all at once.
    let events: Vec<_> = (0..3_000).map(|i| event(&keys[i % 3], "check", (i % 5) as i64 + 1, "front-1")).collect();
    let mut expected: HashMap<String, i64> = HashMap::new();
    for e in &events {
        *expected.entry(e.key_id.clone()).or_default() += e.credits;
    }
    let mut tasks = Vec::new();
    for t in 0..4usize {
        let mut mine: Vec<_> =
            events.iter().enumerate().filter(|(i, _)| i % 3 != t % 3).map(|(_, e)| e.clone()).collect();
        if t % 2 == 1 {
            mine.reverse();
        }
        mine.rotate_left(t * 250);
        let store = s.clone();
        tasks.push(tokio::spawn(async move {
            let mut applied = 0;
            for chunk in mine.chunks(100 + 50 * t) {
                applied += store.apply_ledger(chunk.to_vec()).await.expect("apply");
            }
            applied
        }));
    }
    let mut applied = 0;
    for task in tasks {
        applied += task.await.expect("task");
    }
    // Every event is covered by at least one task; the union is all 3,000.
    assert_eq!(applied, 3_000, "each distinct event applied exactly once");
    for key in &keys {
        assert_eq!(s.settled_usage(&key.id, PERIOD).await.expect("usage"), expected[&key.id]);
        assert_eq!(s.ledger_count(&key.id, PERIOD).await.expect("count"), 1_000);
    }
}

#[tokio::test]
async fn settled_by_front_sums_one_fronts_entries() {
    let db = TestDb::new().await;
    let s = &db.store;
    let key = s.create_key(new_key("fronts")).await.expect("create");
    let other = s.create_key(new_key("other")).await.expect("create");
    let batch = vec![
        event(&key, "check", 1, "front-a"),
        event(&key, "whois", 2, "front-a"),
        event(&key, "check", 4, "front-b"),
        event(&other, "check", 8, "front-a"),
    ];
    assert_eq!(s.apply_ledger(batch).await.expect("apply"), 4);
    let by = |id: String, front: &'static str| {
        let s = s.clone();
        async move { s.settled_by_front(&id, PERIOD, front).await.expect("settled_by_front") }
    };
    assert_eq!(by(key.id.clone(), "front-a").await, 3);
    assert_eq!(by(key.id.clone(), "front-b").await, 4);
    assert_eq!(by(key.id.clone(), "front-c").await, 0);
    assert_eq!(by(other.id.clone(), "front-a").await, 8);
    assert_eq!(s.settled_by_front(&key.id, "2026-12", "front-a").await.expect("other period"), 0);
    assert_eq!(s.settled_usage(&key.id, PERIOD).await.expect("usage"), 7);
}

/// The others' settled credits are read in one snapshot: with this front's batches settling
/// continuously, the figure never comes out short (the defect: a separate read of this front's
/// part let a settling batch shrink the others' view, or a retry loop gave up under load).
#[tokio::test]
async fn others_settled_usage_holds_while_this_front_settles_continuously() {
    let db = TestDb::new().await;
    let s = db.store.clone();
    let key = s.create_key(new_key("snapshot")).await.expect("create");
    assert_eq!(s.apply_ledger(vec![event(&key, "check", 40, "front-b")]).await.expect("apply"), 1);
    let writer = {
        let (s, key) = (s.clone(), key.clone());
        tokio::spawn(async move {
            for _ in 0..200 {
                let batch = (0..5).map(|_| event(&key, "check", 1, "front-a")).collect();
                s.apply_ledger(batch).await.expect("apply");
            }
        })
    };
    let mut reads = 0;
    while !writer.is_finished() {
        assert_eq!(s.settled_by_others(&key.id, PERIOD, "front-a").await.expect("read"), 40);
        reads += 1;
    }
    writer.await.expect("writer");
    assert!(reads > 10, "the reads overlapped the settling ({reads})");
    assert_eq!(s.settled_by_others(&key.id, PERIOD, "front-b").await.expect("read"), 1_000);
}

/// Issue 29: the settled credits per key, month and front (`key_usage_by_front`, migration 0011)
/// follow the ledger in the settling transaction — overlapping concurrent batches, duplicates and
/// redeliveries included — and are what a front's refresh reads: one row, not a sum over its
/// entries of the month (that sum grew with every charge: at 6,000 charges a second the fleet
/// bench's Postgres fetched a million index entries a second). The migration's backfill counts
/// entries settled before it.
#[tokio::test]
async fn per_front_usage_follows_the_ledger_and_is_what_fronts_read() {
    let db = TestDb::new().await;
    let s = db.store.clone();
    let key = s.create_key(new_key("by-front")).await.expect("create");
    let other = s.create_key(new_key("other")).await.expect("create");
    let fronts = ["front-a", "front-b", "bulk-job:0192"];
    let events: Vec<LedgerEvent> = (0..600)
        .map(|i| event(if i % 5 == 0 { &other } else { &key }, "check", 1 + i % 3, fronts[i as usize % 3]))
        .collect();
    // Four writers on overlapping windows of the events: each event is settled once, whichever
    // writer gets it first.
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (s, events) = (s.clone(), events.clone());
            tokio::spawn(async move {
                let from = w * 100;
                for chunk in events[from..from + 300].chunks(25) {
                    s.apply_ledger(chunk.to_vec()).await.expect("apply");
                }
            })
        })
        .collect();
    for w in writers {
        w.await.expect("writer");
    }
    assert_eq!(s.apply_ledger(events.clone()).await.expect("redelivery"), 0);
    let sums = |sql: &'static str| {
        let pool = s.pool().clone();
        async move {
            let rows: Vec<(String, String, String, i64)> = sqlx::query_as(sql).fetch_all(&pool).await.expect("sums");
            rows
        }
    };
    let table = "SELECT key_id, period, front, used FROM key_usage_by_front ORDER BY 1, 2, 3";
    let from_entries =
        "SELECT key_id, period, front, SUM(credits)::int8 FROM ledger_entries GROUP BY 1, 2, 3 ORDER BY 1, 2, 3";
    let kept = sums(table).await;
    assert_eq!(kept.len(), 6, "two keys × three fronts: {kept:?}");
    assert_eq!(kept, sums(from_entries).await, "key_usage_by_front is the ledger's sum per key, month and front");
    let expected = |k: &KeyRecord, f: &str| {
        events.iter().filter(|e| e.key_id == k.id && e.front == f).map(|e| e.credits).sum::<i64>()
    };
    assert_eq!(s.settled_by_front(&key.id, PERIOD, "front-a").await.expect("read"), expected(&key, "front-a"));
    assert_eq!(
        s.settled_by_others(&key.id, PERIOD, "front-a").await.expect("read"),
        expected(&key, "front-b") + expected(&key, "bulk-job:0192")
    );

    // The refresh reads the table: an entry written behind the ledger consumer's back (not how
    // entries are written) is in the key's ledger but not in what the front reads.
    sqlx::query(
        "INSERT INTO ledger_entries (event_id, key_id, period, endpoint, credits, charged_at, front) \
         VALUES ($1, $2, $3, 'check', 1000, now(), 'front-a')",
    )
    .bind(Uuid::now_v7().to_string())
    .bind(&key.id)
    .bind(PERIOD)
    .execute(s.pool())
    .await
    .expect("entry");
    assert_eq!(s.settled_by_front(&key.id, PERIOD, "front-a").await.expect("read"), expected(&key, "front-a"));

    // The migration's backfill (run again on an emptied table) counts every entry there is.
    sqlx::query("DELETE FROM key_usage_by_front").execute(s.pool()).await.expect("empty");
    let migration = std::fs::read_to_string(format!(
        "{}/../migrations/postgres/0011_key_usage_by_front.sql",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("migration");
    s.pool().execute(AssertSqlSafe(migration)).await.expect("the migration runs again");
    assert_eq!(sums(table).await, sums(from_entries).await, "backfilled");
    assert_eq!(s.settled_by_front(&key.id, PERIOD, "front-a").await.expect("read"), expected(&key, "front-a") + 1000);
}

/// Issue 29: a front's credit views of many keys (what it re-reads every refresh interval) come
/// from one statement per `CREDIT_VIEWS_PER_STATEMENT` keys and equal the per-key reads: the
/// others' settled credits plus the open bulk jobs' holds not yet settled; an unknown id is left
/// out.
#[tokio::test]
async fn credit_views_of_many_keys_equal_the_per_key_reads() {
    let db = TestDb::new().await;
    let s = db.store.clone();
    let mut keys = Vec::new();
    let mut events = Vec::new();
    for i in 0..(api::store::CREDIT_VIEWS_PER_STATEMENT as i64 + 3) {
        let key = s.create_key(new_key("views")).await.expect("create");
        events.extend([event(&key, "check", 2, "front-a"), event(&key, "check", 1 + i % 4, "front-b")]);
        keys.push(key);
    }
    // An open job of the first key holding 10 credits, 3 of them settled; a finished one.
    for (id, state) in [("job-open", "running"), ("job-done", "done")] {
        sqlx::query(
            "INSERT INTO bulk_jobs (id, key_id, period, state, held, created_at) VALUES ($1, $2, $3, $4, 10, 0)",
        )
        .bind(id)
        .bind(&keys[0].id)
        .bind(PERIOD)
        .bind(state)
        .execute(s.pool())
        .await
        .expect("job");
        events.push(event(&keys[0], "bulk", 3, &format!("bulk-job:{id}")));
    }
    s.apply_ledger(events).await.expect("apply");
    let mut asked: Vec<String> = keys.iter().map(|k| k.id.clone()).collect();
    asked.push("no-such-key".into());
    let views: HashMap<String, i64> =
        s.credit_views(&asked, PERIOD, "front-a").await.expect("views").into_iter().collect();
    assert_eq!(views.len(), keys.len(), "one view per known key");
    for key in &keys {
        let settled = s.settled_by_others(&key.id, PERIOD, "front-a").await.expect("settled");
        let held = s.bulk_jobs().expect("jobs").held_credits(&key.id, PERIOD).await.expect("held");
        assert_eq!(views[&key.id], settled + held, "{}", key.id);
    }
    // The first key: front-b's 1, both jobs' settled 3 + 3, the open job's unsettled 7.
    assert_eq!(views[&keys[0].id], 1 + 6 + 7);
}

#[tokio::test]
async fn shared_secrets_are_created_once_and_shared() {
    let db = TestDb::new().await;
    let first = db.store.shared_secret("demo_cookie").await.expect("secret");
    assert_eq!(first.len(), 64, "256 bits, hex");
    let (a, b) = tokio::join!(db.store.shared_secret("demo_cookie"), db.store.shared_secret("demo_cookie"));
    assert_eq!((a.expect("a"), b.expect("b")), (first.clone(), first.clone()));
    assert_ne!(db.store.shared_secret("other").await.expect("other"), first);
}

#[tokio::test]
async fn operator_lookups_updates_and_usage_by_endpoint() {
    let db = TestDb::new().await;
    let s = &db.store;
    let new = new_key("cli");
    let key = s.create_key(new.clone()).await.expect("create");

    // find_key_by_ref: id, fingerprint, hash; nothing; an ambiguous fingerprint.
    let by_ref = |r: String| {
        let s = s.clone();
        async move { s.find_key_by_ref(&r).await }
    };
    for reference in [key.id.clone(), key.fingerprint.clone(), new.key_hash.clone()] {
        assert_eq!(by_ref(reference.clone()).await.expect("lookup"), Some(key.clone()), "{reference}");
    }
    assert!(by_ref("nothing".into()).await.expect("none").is_none());
    let mut twin_a = new_key("twin a");
    twin_a.key_hash = format!("abcdef01{}", "0".repeat(56));
    let mut twin_b = new_key("twin b");
    twin_b.key_hash = format!("abcdef01{}", "1".repeat(56));
    let twin = s.create_key(twin_a.clone()).await.expect("create twin a");
    s.create_key(twin_b).await.expect("create twin b");
    let err = by_ref("abcdef01".into()).await.expect_err("ambiguous fingerprint");
    assert!(err.to_string().contains("more than one key"), "{err}");
    assert_eq!(by_ref(twin_a.key_hash.clone()).await.expect("by hash").map(|k| k.id), Some(twin.id.clone()));

    // update_key: an empty update changes nothing.
    let same = s.update_key(&key.id, KeyUpdate::default()).await.expect("update").expect("exists");
    assert_eq!(same, key);
    // Every field, including removing the optional ones.
    let update = KeyUpdate {
        plan: Some(Plan::Pro),
        pricing_enabled: Some(false),
        show_purchase_button: Some(true),
        default_commission_percent: Some(None),
        purchase_url: Some(None),
        allowed_origins: Some(vec!["https://new.example".into()]),
        label: Some("renamed".into()),
    };
    let changed = s.update_key(&key.id, update).await.expect("update").expect("exists");
    assert_eq!(changed.plan, Plan::Pro);
    assert_eq!(changed.monthly_allowance, 25_000, "a plan sets its allowance");
    assert!(!changed.pricing_enabled && changed.show_purchase_button);
    assert_eq!(changed.default_commission_percent, None);
    assert_eq!(changed.purchase_url, None);
    assert_eq!(changed.allowed_origins, ["https://new.example"]);
    assert_eq!(changed.label, "renamed");
    assert_eq!(
        (changed.id.as_str(), changed.created_at.as_str(), changed.state),
        (key.id.as_str(), key.created_at.as_str(), key.state)
    );
    // Setting values back, leaving the rest.
    let partial = KeyUpdate {
        default_commission_percent: Some(Some(7.5)),
        purchase_url: Some(Some("https://shop.example/again".into())),
        ..KeyUpdate::default()
    };
    let again = s.update_key(&key.id, partial).await.expect("update").expect("exists");
    assert_eq!(again.default_commission_percent, Some(7.5));
    assert_eq!(again.purchase_url.as_deref(), Some("https://shop.example/again"));
    assert_eq!((again.plan, again.label.as_str()), (Plan::Pro, "renamed"));
    assert_eq!(s.find_key_by_ref(&key.id).await.expect("reread"), Some(again));
    assert!(
        s.update_key("no-such-key", KeyUpdate { label: Some("x".into()), ..KeyUpdate::default() })
            .await
            .expect("update")
            .is_none()
    );
    // The twin was not touched.
    assert_eq!(by_ref(twin.id.clone()).await.expect("twin"), Some(twin.clone()));

    // usage_by_endpoint: per endpoint, by name, for that key and period only.
    assert!(s.usage_by_endpoint(&key.id, PERIOD).await.expect("usage").is_empty());
    let mut batch = vec![
        event(&key, "whois", 2, "front-a"),
        event(&key, "check", 1, "front-a"),
        event(&key, "check", 1, "front-b"),
        event(&key, "bulk", 10, "front-a"),
        event(&twin, "check", 100, "front-a"),
    ];
    let mut december = event(&key, "check", 1000, "front-a");
    december.period = "2026-12".into();
    batch.push(december);
    assert_eq!(s.apply_ledger(batch).await.expect("apply"), 6);
    assert_eq!(
        s.usage_by_endpoint(&key.id, PERIOD).await.expect("usage"),
        [("bulk".to_owned(), 10), ("check".to_owned(), 2), ("whois".to_owned(), 2)]
    );
}

#[tokio::test]
async fn connect_fails_fast_when_postgres_is_unreachable() {
    // A port nothing listens on: refused at once, reported with its cause, within the 5 s
    // connect timeout (never the pool's 30 s default).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let started = Instant::now();
    let err = PgStore::connect(&format!("postgres://postgres:secret@127.0.0.1:{port}/dsa"), 2)
        .await
        .expect_err("nothing listens there");
    let message = format!("{err:#}");
    assert!(started.elapsed() < Duration::from_secs(7), "took {:?}", started.elapsed());
    assert!(message.contains(&format!("127.0.0.1:{port}/dsa")), "{message}");
    assert!(message.contains("cannot connect to Postgres"), "{message}");
    assert!(!message.contains("secret"), "no password in errors: {message}");
}

#[tokio::test]
async fn settling_throughput() {
    let db = TestDb::with_pool(4).await;
    let s = &db.store;
    let keys = [
        s.create_key(new_key("t1")).await.expect("create"),
        s.create_key(new_key("t2")).await.expect("create"),
        s.create_key(new_key("t3")).await.expect("create"),
        s.create_key(new_key("t4")).await.expect("create"),
    ];
    let events: Vec<_> = (0..20_000).map(|i| event(&keys[i % 4], "check", 1, "front-1")).collect();
    let started = Instant::now();
    let mut applied = 0;
    for chunk in events.chunks(500) {
        applied += s.apply_ledger(chunk.to_vec()).await.expect("apply");
    }
    let elapsed = started.elapsed();
    assert_eq!(applied, 20_000);
    for key in &keys {
        assert_eq!(s.settled_usage(&key.id, PERIOD).await.expect("usage"), 5_000);
    }
    println!(
        "store_pg throughput: {applied} events in batches of 500, one at a time: {:.2?} = {:.0} events/s",
        elapsed,
        applied as f64 / elapsed.as_secs_f64()
    );
    // Replaying them all (every event a duplicate) costs about as much and applies nothing.
    let started = Instant::now();
    let mut replayed = 0;
    for chunk in events.chunks(500) {
        replayed += s.apply_ledger(chunk.to_vec()).await.expect("replay");
    }
    assert_eq!(replayed, 0);
    println!(
        "store_pg throughput: the same 20000 replayed (all duplicates): {:.2?} = {:.0} events/s",
        started.elapsed(),
        20_000.0 / started.elapsed().as_secs_f64()
    );
}

/// The two schemas are kept parallel by hand (`migrations/sqlite`, `migrations/postgres`): after
/// every migration of each, they hold the same tables with the same columns, so a store method
/// written for one dialect finds what it reads in the other.
#[tokio::test]
async fn sqlite_and_postgres_schemas_hold_the_same_tables_and_columns() {
    use std::collections::BTreeSet;

    let pg = TestDb::new().await;
    let pg_columns: BTreeSet<(String, String)> = sqlx::query_as(
        "SELECT table_name::text, column_name::text FROM information_schema.columns \
         WHERE table_schema = 'public' AND table_name <> '_sqlx_migrations'",
    )
    .fetch_all(pg.store.pool())
    .await
    .expect("Postgres columns")
    .into_iter()
    .collect();

    let sqlite = api::store::SqliteStore::connect("sqlite::memory:", 1).await.expect("SQLite in memory");
    sqlite.migrate().await.expect("SQLite migrations apply");
    let sqlite_columns: BTreeSet<(String, String)> = sqlx::query_as(
        "SELECT m.name, p.name FROM sqlite_master AS m JOIN pragma_table_info(m.name) AS p \
         WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name <> '_sqlx_migrations'",
    )
    .fetch_all(sqlite.pool())
    .await
    .expect("SQLite columns")
    .into_iter()
    .collect();

    assert!(pg_columns.len() > 20, "the Postgres schema was read: {pg_columns:?}");
    // Columns one dialect has on purpose. `settled_at`: in the fleet a charge is settled by the
    // ledger consumer after the answer, and the column records when (an operator reads the settle
    // lag from it in SQL); standalone settles in the answer's own transaction.
    // `key_usage_by_front`: what each fleet front re-reads every second (Postgres's migration
    // 0011); a standalone server sums its few reads from the ledger instead (SQLite's 0011).
    let fleet_only: Vec<(String, String)> = [("ledger_entries", "settled_at")]
        .into_iter()
        .chain(["key_id", "period", "front", "used"].map(|column| ("key_usage_by_front", column)))
        .map(|(table, column)| (table.to_owned(), column.to_owned()))
        .collect();
    for column in &fleet_only {
        assert!(pg_columns.contains(column), "{column:?} is no longer in Postgres: drop it from this list");
    }
    let pg_columns: BTreeSet<_> = pg_columns.into_iter().filter(|c| !fleet_only.contains(c)).collect();
    let only_pg: Vec<_> = pg_columns.difference(&sqlite_columns).collect();
    let only_sqlite: Vec<_> = sqlite_columns.difference(&pg_columns).collect();
    assert!(
        only_pg.is_empty() && only_sqlite.is_empty(),
        "the schemas differ (table, column):\n  only in Postgres: {only_pg:?}\n  only in SQLite: {only_sqlite:?}"
    );
    let migrations = |dir: &str| {
        let mut names: Vec<String> = std::fs::read_dir(format!("{}/../migrations/{dir}", env!("CARGO_MANIFEST_DIR")))
            .expect("migrations directory")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(migrations("sqlite"), migrations("postgres"), "each migration exists in both dialects, under one name");
}

/// Events (issue 25) on both stores: an occurrence's stable id is recorded once however often it
/// is emitted, a key reads only its own events, in order, after a cursor, about one subject.
#[tokio::test]
async fn events_are_recorded_once_per_id_and_read_in_order_on_both_stores() {
    let pg = TestDb::new().await;
    let sqlite = api::store::SqliteStore::connect("sqlite::memory:", 1).await.expect("SQLite in memory");
    sqlite.migrate().await.expect("SQLite migrations apply");
    for store in [&pg.store as &dyn Store, &sqlite as &dyn Store] {
        let mine = store.create_key(new_key("mine")).await.expect("create");
        let other = store.create_key(new_key("other")).await.expect("create");
        let at = time::macros::datetime!(2026-11-27 10:00:00.25 UTC);
        let emit = |key: &KeyRecord, parts: &[&str], subject: Option<&str>| api::events::NewEvent {
            id: api::events::event_id(parts),
            key_id: key.id.clone(),
            event_type: "domain.state_changed".into(),
            subject: subject.map(str::to_owned),
            occurred_at: at,
            data: serde_json::json!({"domain": "example.com", "from": "registered", "to": parts[1]}),
        };
        assert!(store.emit_event(emit(&mine, &["w1", "redemption"], Some("w1"))).await.expect("emit"));
        // The same occurrence again (a re-check repeated after a crash): not a second event.
        assert!(!store.emit_event(emit(&mine, &["w1", "redemption"], Some("w1"))).await.expect("emit"));
        assert!(store.emit_event(emit(&mine, &["w2", "available"], Some("w2"))).await.expect("emit"));
        assert!(store.emit_event(emit(&mine, &["w1", "pending_delete"], Some("w1"))).await.expect("emit"));
        assert!(store.emit_event(emit(&other, &["w9", "available"], Some("w9"))).await.expect("emit"));
        // Not an object: refused before it reaches the table.
        let mut bad = emit(&mine, &["w1", "bad"], Some("w1"));
        bad.data = serde_json::json!([1, 2]);
        assert!(store.emit_event(bad).await.is_err());

        let all = store.list_events(&mine.id, None, 0, 100).await.expect("list");
        let tos: Vec<_> = all.iter().map(|e| e.data["to"].as_str().unwrap_or_default()).collect();
        assert_eq!(tos, ["redemption", "available", "pending_delete"], "the key's own events, in order");
        assert!(all.windows(2).all(|w| w[0].seq < w[1].seq));
        assert_eq!(all[0].occurred_at, "2026-11-27T10:00:00.25Z");
        let w1 = store.list_events(&mine.id, Some("w1"), 0, 100).await.expect("list");
        assert_eq!(w1.len(), 2);
        let after = store.list_events(&mine.id, Some("w1"), w1[0].seq, 100).await.expect("list");
        assert_eq!(after, w1[1..].to_vec(), "the page after the cursor");
        assert_eq!(store.list_events(&mine.id, None, 0, 1).await.expect("list").len(), 1, "the limit");
        assert_eq!(store.find_event(&mine.id, &all[1].id).await.expect("find"), Some(all[1].clone()));
        let theirs = store.list_events(&other.id, None, 0, 10).await.expect("list");
        assert!(store.find_event(&mine.id, &theirs[0].id).await.expect("find").is_none(), "not another key's");
    }
}

// --- webhooks (issue 25) ---------------------------------------------------------------------

/// The webhook fan-out and the delivery claims, on both stores; on Postgres with several
/// fan-outs and claimers at once (each front runs both): every event becomes exactly one delivery
/// per matching webhook, no delivery is claimed twice while its lease holds, an expired lease
/// (a killed process) gives the delivery back, and a delivered one is never claimed again.
#[tokio::test]
async fn webhook_fan_out_and_claims_share_the_work_without_duplicates() {
    use api::webhooks::{AttemptOutcome, NewWebhook};
    use std::collections::HashSet;

    let pg = TestDb::with_pool(8).await;
    let sqlite = api::store::SqliteStore::connect("sqlite::memory:", 1).await.expect("SQLite in memory");
    sqlite.migrate().await.expect("SQLite migrations apply");
    let stores: [(&str, std::sync::Arc<dyn Store>); 2] =
        [("postgres", std::sync::Arc::new(pg.store.clone())), ("sqlite", std::sync::Arc::new(sqlite))];
    for (name, store) in stores {
        let key = store.create_key(new_key("hooks")).await.expect("create");
        let other = store.create_key(new_key("other")).await.expect("create");
        let hook = |types: &[&str]| NewWebhook {
            key_id: key.id.clone(),
            url: "https://hooks.example/x".into(),
            event_types: types.iter().map(|t| (*t).to_owned()).collect(),
            description: String::new(),
            secret: api::webhooks::new_secret(),
            now_ms: 1,
        };
        let all = store.create_webhook(hook(&[])).await.expect("create").expect("under the limit");
        let available = store.create_webhook(hook(&["domain.available"])).await.expect("create").expect("ok");
        let _expiring = store.create_webhook(hook(&["domain.expiring"])).await.expect("create").expect("ok");
        let events = 120;
        for n in 0..events {
            for k in [&key, &other] {
                let new = api::events::NewEvent {
                    id: api::events::event_id(&[name, &k.id, &n.to_string()]),
                    key_id: k.id.clone(),
                    event_type: if n % 2 == 0 { "domain.available" } else { "domain.registered" }.into(),
                    subject: None,
                    occurred_at: time::OffsetDateTime::now_utc(),
                    data: serde_json::json!({"n": n}),
                };
                assert!(store.emit_event(new).await.expect("emit"));
            }
        }
        // Four fan-outs at once, until nothing is left.
        let fan = |store: std::sync::Arc<dyn Store>| async move {
            let mut total = 0;
            loop {
                let n = store.fan_out_events(1_000, 16).await.expect("fan out");
                if n == 0 {
                    return total;
                }
                total += n;
            }
        };
        let counts = futures::future::join_all((0..4).map(|_| fan(store.clone()))).await;
        assert_eq!(counts.iter().sum::<u64>(), 2 * events, "{name}: every event dispatched once: {counts:?}");
        // Four claimers at once, batches of 7: every due delivery claimed exactly once.
        let claim = |store: std::sync::Arc<dyn Store>, who: usize| async move {
            let mut mine = Vec::new();
            for round in 0.. {
                let got = store.claim_deliveries(&format!("c{who}-{round}"), 2_000, 62_000, 7).await.expect("claim");
                if got.is_empty() {
                    return mine;
                }
                mine.extend(got.into_iter().map(|d| (d.id, d.webhook.id, d.attempts, format!("c{who}-{round}"))));
            }
            mine
        };
        let claimed: Vec<_> = futures::future::join_all((0..4).map(|i| claim(store.clone(), i))).await.concat();
        let ids: HashSet<_> = claimed.iter().map(|c| c.0.clone()).collect();
        assert_eq!(ids.len(), claimed.len(), "{name}: a delivery claimed twice under a live lease");
        // The key's 120 events to `all`, its 60 available ones to `available`; none to `expiring`,
        // none of the other key's.
        assert_eq!(claimed.len() as u64, events + events / 2, "{name}");
        assert_eq!(claimed.iter().filter(|c| c.1 == all.id).count() as u64, events, "{name}");
        assert_eq!(claimed.iter().filter(|c| c.1 == available.id).count() as u64, events / 2, "{name}");
        // While the leases hold, nothing more; once they expire (a killed process), all again.
        assert!(store.claim_deliveries("late", 61_000, 121_000, 1000).await.expect("claim").is_empty());
        let again = store.claim_deliveries("after-expiry", 62_000, 122_000, 1000).await.expect("claim");
        assert_eq!(again.len(), claimed.len(), "{name}: expired leases give the deliveries back");
        // Delivered under the current claim: never claimed again. A result under the lost claim
        // is recorded as an attempt but does not move the delivery.
        for d in &again {
            let outcome = |owner: &str, delivered: bool| AttemptOutcome {
                delivery_id: d.id.clone(),
                lease_owner: owner.to_owned(),
                attempt: d.attempts + 1,
                at_ms: 62_500,
                status: Some(if delivered { 204 } else { 503 }),
                error: None,
                latency_ms: 3,
                delivered,
                next_attempt_ms: (!delivered).then_some(63_000),
            };
            let stale = store.record_attempt(&d.webhook.id, outcome("c0-0", false), i64::MAX).await.expect("record");
            assert!(!stale.applied, "{name}: a lost claim moves nothing");
            let done = store.record_attempt(&d.webhook.id, outcome("after-expiry", true), i64::MAX).await.expect("ok");
            assert!(done.applied, "{name}");
        }
        assert!(store.claim_deliveries("later", 10_000_000, 10_060_000, 1000).await.expect("claim").is_empty());
        // Read back a page (at most 100) at a time, newest first.
        let (mut seen, mut before) = (Vec::new(), i64::MAX);
        loop {
            let page = store.list_deliveries(&all.id, before, 100).await.expect("list");
            let Some(last) = page.last() else { break };
            before = last.seq;
            seen.extend(page);
        }
        assert_eq!(seen.len() as u64, events, "{name}");
        assert!(seen.windows(2).all(|w| w[0].seq > w[1].seq), "{name}");
        assert!(seen.iter().all(|d| d.state == "delivered" && d.attempts == 1 && d.attempt_log.len() == 2), "{name}");
    }
}

/// Order per subject (a watch's events in the order they happened), on both stores: a delivery
/// is not claimed while the same webhook has a pending delivery of an earlier event about the
/// same subject, whether that one is due later or being attempted; a delivered or given-up one
/// no longer holds the later ones back; other subjects, other webhooks and events without a
/// subject are not held. On Postgres, four claimers at once never hold two deliveries of one
/// subject for one webhook.
#[tokio::test]
async fn webhook_claims_keep_the_order_of_each_subjects_events() {
    use api::webhooks::{AttemptOutcome, ClaimedDelivery, NewWebhook};
    use std::collections::{HashMap, HashSet};

    let pg = TestDb::with_pool(8).await;
    let sqlite = api::store::SqliteStore::connect("sqlite::memory:", 1).await.expect("SQLite in memory");
    sqlite.migrate().await.expect("SQLite migrations apply");
    let stores: [(&str, std::sync::Arc<dyn Store>); 2] =
        [("postgres", std::sync::Arc::new(pg.store.clone())), ("sqlite", std::sync::Arc::new(sqlite))];
    for (name, store) in stores {
        let key = store.create_key(new_key("ordered")).await.expect("create");
        let hook = || NewWebhook {
            key_id: key.id.clone(),
            url: "https://hooks.example/x".into(),
            event_types: Vec::new(),
            description: String::new(),
            secret: api::webhooks::new_secret(),
            now_ms: 1,
        };
        let a = store.create_webhook(hook()).await.expect("create").expect("ok");
        let b = store.create_webhook(hook()).await.expect("create").expect("ok");
        let mut event_of: HashMap<String, &str> = HashMap::new();
        let emit = |label: &'static str, subject: Option<&'static str>| {
            let store = store.clone();
            let key_id = key.id.clone();
            async move {
                let id = api::events::event_id(&[name, label]);
                let new = api::events::NewEvent {
                    id: id.clone(),
                    key_id,
                    event_type: "domain.state_changed".into(),
                    subject: subject.map(str::to_owned),
                    occurred_at: time::OffsetDateTime::now_utc(),
                    data: serde_json::json!({"label": label}),
                };
                assert!(store.emit_event(new).await.expect("emit"));
                (id, label)
            }
        };
        for (label, subject) in [
            ("w1-1", Some("w1")),
            ("w1-2", Some("w1")),
            ("w2-1", Some("w2")),
            ("w1-3", Some("w1")),
            ("none-1", None),
            ("none-2", None),
        ] {
            let (id, label) = emit(label, subject).await;
            event_of.insert(id, label);
        }
        while store.fan_out_events(1_000, 100).await.expect("fan out") > 0 {}
        let labels = |got: &[ClaimedDelivery], hook: &str| {
            let mut l: Vec<&str> =
                got.iter().filter(|d| d.webhook.id == hook).map(|d| event_of[d.event_id.as_str()]).collect();
            l.sort_unstable();
            l
        };
        // The first of each subject, and the events without one; for each webhook.
        let first = store.claim_deliveries("first", 2_000, 62_000, 100).await.expect("claim");
        for hook in [&a.id, &b.id] {
            assert_eq!(labels(&first, hook), ["none-1", "none-2", "w1-1", "w2-1"], "{name}");
        }
        // While w1-1 is being attempted (under its lease), w1-2 and w1-3 wait.
        assert!(store.claim_deliveries("second", 3_000, 63_000, 100).await.expect("claim").is_empty(), "{name}");
        let record = |d: &ClaimedDelivery, owner: &str, delivered: bool, next: Option<i64>| {
            let store = store.clone();
            let outcome = AttemptOutcome {
                delivery_id: d.id.clone(),
                lease_owner: owner.to_owned(),
                attempt: d.attempts + 1,
                at_ms: 2_500,
                status: Some(if delivered { 204 } else { 503 }),
                error: None,
                latency_ms: 3,
                delivered,
                next_attempt_ms: next,
            };
            let hook = d.webhook.id.clone();
            async move { assert!(store.record_attempt(&hook, outcome, i64::MAX).await.expect("record").applied) }
        };
        let find = |got: &[ClaimedDelivery], hook: &str, label: &str| {
            got.iter().find(|d| d.webhook.id == hook && event_of[d.event_id.as_str()] == label).cloned().expect(label)
        };
        // a: w1-1 delivered → w1-2 next (not w1-3). b: w1-1 failed, retried later → w1-2 still waits.
        record(&find(&first, &a.id, "w1-1"), "first", true, None).await;
        record(&find(&first, &b.id, "w1-1"), "first", false, Some(100_000)).await;
        let next = store.claim_deliveries("next", 4_000, 64_000, 100).await.expect("claim");
        assert_eq!(labels(&next, &a.id), ["w1-2"], "{name}");
        assert!(labels(&next, &b.id).is_empty(), "{name}: an earlier delivery due later holds the later ones");
        // b: w1-1 given up (failed) → w1-2 goes.
        let retried = store.claim_deliveries("retry", 100_000, 160_000, 100).await.expect("claim");
        let of_b = labels(&retried, &b.id);
        assert!(of_b.contains(&"w1-1") && !of_b.contains(&"w1-2"), "{name}: {of_b:?}");
        record(&find(&retried, &b.id, "w1-1"), "retry", false, None).await;
        let after = store.claim_deliveries("after", 100_001, 160_001, 100).await.expect("claim");
        assert_eq!(labels(&after, &b.id), ["w1-2"], "{name}: a given-up delivery no longer holds the order");

        // Many events over a few subjects, four claimers at once.
        let key2 = store.create_key(new_key("ordered-many")).await.expect("create");
        let c =
            store.create_webhook(NewWebhook { key_id: key2.id.clone(), ..hook() }).await.expect("create").expect("ok");
        for n in 0..60 {
            let subject = format!("s{}", n % 5);
            let new = api::events::NewEvent {
                id: api::events::event_id(&[name, "many", &n.to_string()]),
                key_id: key2.id.clone(),
                event_type: "domain.state_changed".into(),
                subject: Some(subject),
                occurred_at: time::OffsetDateTime::now_utc(),
                data: serde_json::json!({"n": n}),
            };
            assert!(store.emit_event(new).await.expect("emit"));
        }
        while store.fan_out_events(200_000, 100).await.expect("fan out") > 0 {}
        let claim = |store: std::sync::Arc<dyn Store>, who: usize| async move {
            let mut mine = Vec::new();
            for round in 0.. {
                let got =
                    store.claim_deliveries(&format!("many-{who}-{round}"), 200_000, 260_000, 7).await.expect("claim");
                if got.is_empty() {
                    break;
                }
                mine.extend(got);
            }
            mine
        };
        let got: Vec<ClaimedDelivery> =
            futures::future::join_all((0..4).map(|i| claim(store.clone(), i))).await.concat();
        let mine: Vec<&ClaimedDelivery> = got.iter().filter(|d| d.webhook.id == c.id).collect();
        let ns: HashSet<i64> = mine.iter().filter_map(|d| d.data["n"].as_i64()).collect();
        assert_eq!(ns, (0..5).collect(), "{name}: the first event of each of the 5 subjects, once each: {ns:?}");
        assert_eq!(mine.len(), 5, "{name}");
    }
}
