//! Standalone mode under test: a real dsa front (standalone mode, fresh SQLite file) on
//! 127.0.0.1:0 in front of the registry simulator, with the ledger running in process.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::sim::{Knobs, Scenario, Simulator};
use api::config::Settings;
use api::keys::{KeyKind, KeyState, Plan};
use api::store::{NewKey, Store};
use tokio::sync::oneshot;
use workers::config::EngineConfig;

/// A running front + simulator; [`TestApp::finish`] stops it and drains the ledger.
pub struct TestApp {
    /// The front's address (127.0.0.1, a free port).
    pub addr: SocketAddr,
    /// An HTTP client for the tests' requests.
    pub http: reqwest::Client,
    /// The registry simulator the front's engine asks (its knobs inject latency and faults).
    pub sim: Simulator,
    /// The front's store (keys, ledger), for setting up and checking what the API did.
    pub store: Arc<dyn Store>,
    db_path: PathBuf,
    /// The watch scheduler, as `dsa serve` runs it (`None` when `watches.scheduler` is off).
    scheduler: Option<api::watches::scheduler::Scheduler>,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
    ledger: Option<tokio::task::JoinHandle<()>>,
}

/// Settings of a key created for a test.
#[derive(Debug, Clone)]
pub struct KeyOpts {
    /// Server or browser key.
    pub kind: KeyKind,
    /// The plan (monthly credits, per-minute limit).
    pub plan: Plan,
    /// Whether responses carry `pricing` (spec §2.2).
    pub pricing_enabled: bool,
    /// Whether responses carry `purchase` for available names.
    pub show_purchase_button: bool,
    /// The key's default commission, percent.
    pub default_commission_percent: Option<f64>,
    /// The key's purchase (checkout) URL.
    pub purchase_url: Option<String>,
    /// Allowed origins (`https://shop.example`, `https://*.example.com`).
    pub allowed_origins: Vec<String>,
}

impl Default for KeyOpts {
    fn default() -> Self {
        Self {
            kind: KeyKind::Server,
            plan: Plan::Free,
            pricing_enabled: true,
            show_purchase_button: true,
            default_commission_percent: None,
            purchase_url: Some("https://shop.example/checkout?ref=dsa".into()),
            allowed_origins: Vec::new(),
        }
    }
}

/// Engine settings pointing at `sim` with short deadlines.
pub fn engine_config(sim: &Simulator) -> EngineConfig {
    let mut config = super::sim_engine(sim);
    config.overrides_only = true;
    config.rdap.timeout_secs = 1.5;
    config.whois.idle_timeout_secs = 1.0;
    config.whois.total_timeout_secs = 2.0;
    config.dns.timeout_secs = 0.5;
    config.check_deadline_secs = 3.0;
    config.limits.whois.per_second = 100.0;
    config.limits.whois.burst = 100;
    config.limits.whois.concurrency = 16;
    config
}

impl TestApp {
    /// Starts the simulator (demo scenario, no latency) and a front on port 0.
    pub async fn spawn() -> Self {
        Self::spawn_with(|_| {}).await
    }

    /// Same, with a hook to adjust the settings.
    pub async fn spawn_with(adjust: impl FnOnce(&mut Settings)) -> Self {
        Self::spawn_full(adjust, api::state::system_clock()).await
    }

    /// Same, with an injected clock.
    pub async fn spawn_full(adjust: impl FnOnce(&mut Settings), clock: api::state::Clock) -> Self {
        Self::spawn_scenario(Scenario::demo(), adjust, clock).await
    }

    /// Same, with the simulator serving `scenario` instead of the demo one.
    pub async fn spawn_scenario(
        scenario: Scenario,
        adjust: impl FnOnce(&mut Settings),
        clock: api::state::Clock,
    ) -> Self {
        Self::spawn_spread(scenario, 1, adjust, clock).await
    }

    /// Same, with the scenario's registries spread over `hosts` simulated upstream hosts
    /// ([`Simulator::start_spread`]; 1 is [`TestApp::spawn_scenario`]).
    pub async fn spawn_spread(
        scenario: Scenario,
        hosts: usize,
        adjust: impl FnOnce(&mut Settings),
        clock: api::state::Clock,
    ) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let sim = Simulator::start_spread(scenario, hosts).await.expect("simulator starts");
        sim.set_knobs(Knobs::default());
        let db_path = std::env::temp_dir().join(format!("dsa-test-{}.db", uuid::Uuid::now_v7()));
        Self::spawn_on(sim, db_path, adjust, clock).await
    }

    /// A front over `sim` and the SQLite file at `db_path` (a new one, or the file of a front
    /// that [`TestApp::crash`]ed).
    pub async fn spawn_on(
        sim: Simulator,
        db_path: PathBuf,
        adjust: impl FnOnce(&mut Settings),
        clock: api::state::Clock,
    ) -> Self {
        Self::spawn_wrapped(sim, db_path, adjust, clock, |store| store).await
    }

    /// [`TestApp::spawn_on`] with the front's store replaced by `wrap` of the SQLite store (a
    /// store that injects faults around the real one).
    pub async fn spawn_wrapped(
        sim: Simulator,
        db_path: PathBuf,
        adjust: impl FnOnce(&mut Settings),
        clock: api::state::Clock,
        wrap: impl FnOnce(Arc<dyn Store>) -> Arc<dyn Store>,
    ) -> Self {
        let mut settings = Settings::default();
        settings.database.url = format!("sqlite://{}?mode=rwc", db_path.display()).into();
        settings.engine = engine_config(&sim);
        settings.pricing.platform_checkout_url = Some("https://platform.example/checkout".into());
        settings.jobs.workers = 8;
        // Tests hit keys hard; the per-minute limits get their own tests.
        settings.policy.per_minute =
            api::policy::PlanRates { free: 100_000, starter: 100_000, pro: 100_000, reseller: 100_000 };
        settings.policy.per_ip_per_minute = 0;
        // The test's own client runs on the server's runtime thread, so the scheduling lag would
        // measure the test's load as the front's: shedding on delay has its own tests.
        settings.policy.shed_scheduling_lag_ms = 0;
        adjust(&mut settings);
        let sqlite =
            api::store::SqliteStore::connect(settings.database.url.expose(), settings.database.max_connections)
                .await
                .expect("open the SQLite store");
        let app =
            api::standalone_with_store(&settings, wrap(Arc::new(sqlite)), clock).await.expect("standalone starts");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let router = api::router(app.state.clone(), None);
        let scheduler = api::start_watch_scheduler(&app.state, &settings, "test");
        let (tx, rx) = oneshot::channel::<()>();
        let api::Standalone { state, ledger, store } = app;
        let server = tokio::spawn(async move {
            let _keep = state;
            api::serve(listener, router, async {
                let _ = rx.await;
            })
            .await
            .expect("serve");
        });
        Self {
            addr,
            http: reqwest::Client::builder().build().expect("client"),
            sim,
            store,
            db_path,
            scheduler,
            shutdown: Some(tx),
            server: Some(server),
            ledger: Some(ledger),
        }
    }

    /// Creates a key; returns the key string.
    pub async fn key(&self, opts: KeyOpts) -> String {
        let (key, key_hash) = api::keys::generate(opts.kind);
        self.store
            .create_key(NewKey {
                key_hash,
                kind: opts.kind,
                plan: opts.plan,
                pricing_enabled: opts.pricing_enabled,
                show_purchase_button: opts.show_purchase_button,
                default_commission_percent: opts.default_commission_percent,
                purchase_url: opts.purchase_url,
                allowed_origins: opts.allowed_origins,
                label: "test".into(),
            })
            .await
            .expect("create key");
        key
    }

    /// Sets a key's state by its key string.
    pub async fn set_state(&self, key: &str, state: KeyState) {
        let hash = api::keys::hash_key(key);
        let record = self.store.find_key(&hash).await.expect("store").expect("key exists");
        assert!(self.store.set_key_state(&record.id, state).await.expect("store"));
    }

    /// Key id of a key string.
    pub async fn key_id(&self, key: &str) -> String {
        self.store.find_key(&api::keys::hash_key(key)).await.expect("store").expect("key exists").id
    }

    /// Spends `n` of the key's credits this month through the ledger, as if `n` checks had been
    /// charged earlier: `n` ledger events of one credit each, applied to the store (so they count
    /// among the entries [`TestApp::finish`] returns).
    pub async fn spend(&self, key: &str, n: u32) {
        let key_id = self.key_id(key).await;
        let events = (0..n).map(|_| super::ledger_event(&key_id, 1, "test")).collect();
        assert_eq!(self.store.apply_ledger(events).await.expect("apply the ledger events"), u64::from(n));
    }

    /// The front's SQLite file (read it with a connection of your own, e.g. read-only).
    pub fn db_path(&self) -> &Path {
        &self.db_path
    }

    /// URL of a path.
    pub fn url(&self, path_and_query: &str) -> String {
        format!("http://{}{}", self.addr, path_and_query)
    }

    /// GET, returning status, headers and JSON body.
    pub async fn get(&self, path_and_query: &str) -> (u16, reqwest::header::HeaderMap, serde_json::Value) {
        self.get_with(path_and_query, &[]).await
    }

    /// GET with extra headers.
    pub async fn get_with(
        &self,
        path_and_query: &str,
        headers: &[(&str, &str)],
    ) -> (u16, reqwest::header::HeaderMap, serde_json::Value) {
        let mut request = self.http.get(self.url(path_and_query));
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let response = request.send().await.expect("request");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.json().await.unwrap_or(serde_json::Value::Null);
        (status, headers, body)
    }

    /// Stops the front at once, as a SIGKILL would stop `dsa serve`: the scheduler, the server
    /// and the ledger writer are aborted mid-work (nothing drained, leases left held). Returns
    /// the simulator and the SQLite file, for [`TestApp::spawn_on`].
    pub async fn crash(mut self) -> (Simulator, PathBuf) {
        drop(self.scheduler.take());
        if let Some(server) = self.server.take() {
            server.abort();
            let _ = server.await;
        }
        if let Some(ledger) = self.ledger.take() {
            ledger.abort();
            let _ = ledger.await;
        }
        self.shutdown.take();
        (self.sim, self.db_path)
    }

    /// Stops the front, drains the ledger and returns the number of ledger entries for `key`
    /// this month (the teardown check: charges = entries).
    pub async fn finish(mut self, key: Option<&str>) -> i64 {
        let key_id = match key {
            Some(k) => Some(self.key_id(k).await),
            None => None,
        };
        drop(self.scheduler.take());
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(server) = self.server.take() {
            server.await.expect("server task");
        }
        if let Some(ledger) = self.ledger.take() {
            tokio::time::timeout(std::time::Duration::from_secs(10), ledger)
                .await
                .expect("ledger drains")
                .expect("ledger task");
        }
        let count = match key_id {
            Some(id) => self
                .store
                .ledger_count(&id, &common::messages::billing_period(time::OffsetDateTime::now_utc()))
                .await
                .expect("count"),
            None => 0,
        };
        super::remove_sqlite_database(&self.db_path);
        count
    }
}

/// A clock tests can move.
#[derive(Clone)]
pub struct TestClock(Arc<std::sync::Mutex<time::OffsetDateTime>>);

impl TestClock {
    /// A clock at `at`.
    pub fn at(at: time::OffsetDateTime) -> Self {
        Self(Arc::new(std::sync::Mutex::new(at)))
    }

    /// Moves the clock.
    pub fn set(&self, at: time::OffsetDateTime) {
        *self.0.lock().expect("clock") = at;
    }

    /// As the state's clock.
    pub fn clock(&self) -> api::state::Clock {
        let inner = self.0.clone();
        Arc::new(move || *inner.lock().expect("clock"))
    }
}
