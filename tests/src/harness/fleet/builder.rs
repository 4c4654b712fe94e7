//! [`Fleet`]: the whole fleet of one test, started by [`FleetBuilder`] and torn down in one place.
//!
//! ```text
//!  Fleet::builder("prefix")            start()                         stop().await
//!   .fronts(n).workers(m) ──► nats-server ─ Postgres db ─ simulator ──► fronts ─► workers ─► assert the
//!   .ledger(true)…            (declare)     (proxy?)                    stopped   stopped    job and ledger
//!                             fronts, workers, ledger, `dsa` processes                      queues drained
//!                                                                                           ─► ledger stopped
//!                                                                                           ─► db dropped
//!                                                                                           ─► nats stopped
//! ```
//!
//! # Why an explicit `stop().await` and a `Drop` that fails the test
//!
//! The teardown is async: a front drains its charges into the ledger stream, a worker finishes its
//! jobs, and the queues are read over NATS while the ledger consumer still settles them. `Drop`
//! is synchronous, and the three ways to run async code from it each break some test here:
//!
//! * `block_in_place` needs a multi-thread runtime; most fleet tests run on the current-thread
//!   runtime of `#[tokio::test]`, where it panics. Moving them all changes their scheduling.
//! * A teardown thread with its own runtime cannot stop the roles: they are tasks of the test's
//!   runtime, which `Drop` blocks, so a front draining its charges would never run (deadlock).
//! * Dropping the runtime's tasks (what happens anyway when the test returns) stops nothing
//!   gracefully: charges in flight are lost and the queues are never checked.
//!
//! So every test ends with [`Fleet::stop`] (or [`Fleet::drain`], then its last reads, then
//! `stop`), which stops the roles in order and asserts the queues drained. The [`Drop`] is the
//! guard that makes forgetting impossible: when `stop` did not run it still tears everything
//! down synchronously (role tasks aborted, `dsa` processes and nats-server SIGKILLed, the database
//! dropped from a thread of its own), and then **fails the test** — unless the test is already
//! panicking, when the teardown runs and the first failure is the one reported (a second panic
//! would abort the test binary).
//!
//! A test that deliberately leaves work in a queue says so with
//! [`FleetBuilder::expect_undrained`] / [`Fleet::expect_undrained`] and a reason, printed at
//! teardown; the other queue is still checked.
//!
//! This module is the one place where the fleet tests reach the roles' code (through [`Front`],
//! [`Role`] and [`WorkerProcess`] in the parent module): a change of a role's signature is fixed
//! there.

use std::sync::Arc;
use std::time::Duration;

use api::config::Settings;
use api::keys::Plan;
use api::store::Store;
use common::nats_auth::FleetRole;
use common::subjects::Names;

use super::{
    Front, LedgerStats, NatsCluster, NatsServer, PgDatabase, PgProxy, PoolStats, Role, WorkerProcess,
    assert_queue_drained, declare_all, pg_server_addr,
};
use crate::sim::{Knobs, Scenario, Simulator};

/// The per-role NATS passwords of a fleet built with [`FleetBuilder::role_users`]: front,
/// worker, ledger.
pub const ROLE_PASSWORDS: [&str; 3] = ["front-pw", "worker-pw", "ledger-pw"];

/// A queue the teardown asserts drained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queue {
    /// The jobs stream's consumers, one per lookup kind: no job pending or un-acked.
    Jobs,
    /// The ledger stream's consumer: no charge pending or un-acked.
    Ledger,
}

/// Where a fleet is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Running,
    /// Roles stopped and queues checked; NATS, Postgres and the simulator still up.
    Drained,
    Stopped,
}

type Configure = Box<dyn FnOnce(&mut Settings) + Send>;

/// What [`Fleet`] to start: counts of roles, the NATS configuration, the simulator's knobs and
/// settings changes. Defaults: one front, one worker, the ledger consumer, an open nats-server.
#[must_use = "a builder does nothing until start().await"]
pub struct FleetBuilder {
    prefix: String,
    fronts: usize,
    workers: usize,
    ledger: bool,
    worker_kinds: Option<String>,
    role_users: bool,
    nats_config: String,
    nats_cluster: usize,
    knobs: Option<Knobs>,
    scenario: Option<Scenario>,
    configure: Vec<Configure>,
    pg_proxy: bool,
    undrained: Vec<(Queue, String)>,
    clock: Option<api::state::Clock>,
}

impl FleetBuilder {
    /// The fronts' clock (default: the system's), so a test can move time for the watches.
    pub fn clock(mut self, clock: api::state::Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// The simulator's scenario (default: the demo scenario).
    pub fn scenario(mut self, scenario: Scenario) -> Self {
        self.scenario = Some(scenario);
        self
    }

    /// Fronts started in process (default 1).
    pub fn fronts(mut self, n: usize) -> Self {
        self.fronts = n;
        self
    }

    /// Worker pools started in process, sharing [`Fleet::pool_stats`] (default 1).
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n;
        self
    }

    /// Whether the ledger consumer starts in process, counting into [`Fleet::ledger_stats`]
    /// (default yes).
    pub fn ledger(mut self, on: bool) -> Self {
        self.ledger = on;
        self
    }

    /// The kinds of job the builder's workers take (`fleet.worker_kinds`, e.g. `"check"`); the
    /// other roles keep the default.
    pub fn worker_kinds(mut self, kinds: &str) -> Self {
        self.worker_kinds = Some(kinds.to_owned());
        self
    }

    /// Runs nats-server with the authorization block the code generates
    /// (`common::nats_auth::authorization`, as `nats/nats.conf`) and every role on its own user
    /// with [`ROLE_PASSWORDS`]; anonymous clients are refused. The harness then reads the queues
    /// with the worker's and the ledger's credentials, and declares nothing itself.
    pub fn role_users(mut self) -> Self {
        self.role_users = true;
        self
    }

    /// Lines added to the nats-server configuration (after the port, address and JetStream store).
    pub fn nats_config(mut self, extra: &str) -> Self {
        self.nats_config.push_str(extra);
        self.nats_config.push('\n');
        self
    }

    /// Runs NATS as a JetStream cluster of `size` nodes on loopback ([`NatsCluster`]) instead of
    /// one server, every stream and bucket with `min(size, 3)` replicas (`fleet.replicas`,
    /// `fleet.ledger_replicas`) and every role given all the nodes' URLs. [`Fleet::nats_node_mut`]
    /// kills and resumes a node.
    pub fn nats_cluster(mut self, size: usize) -> Self {
        self.nats_cluster = size.max(1);
        self
    }

    /// The simulator's knobs from the start (default: no latency, no faults).
    pub fn knobs(mut self, knobs: Knobs) -> Self {
        self.knobs = Some(knobs);
        self
    }

    /// Changes the settings every role starts with (after the harness's, see
    /// [`super::settings`]); called in order.
    pub fn configure(mut self, change: impl FnOnce(&mut Settings) + Send + 'static) -> Self {
        self.configure.push(Box::new(change));
        self
    }

    /// Puts a [`PgProxy`] between every role and Postgres ([`Fleet::pg_proxy`] cuts it);
    /// [`Fleet::store`] still reads the database directly.
    pub fn pg_proxy(mut self) -> Self {
        self.pg_proxy = true;
        self
    }

    /// Teardown does not assert `queue` drained, printing `why` instead. For tests that leave
    /// work there on purpose (no worker for a job, an event nobody consumes).
    pub fn expect_undrained(mut self, queue: Queue, why: &str) -> Self {
        self.undrained.push((queue, why.to_owned()));
        self
    }

    /// Starts nats-server, a fresh database, the simulator and the roles; returns once the fronts
    /// serve (workers and the ledger consumer start as tasks and may still be connecting).
    ///
    /// # Panics
    /// When a part cannot start (no nats-server, no Postgres, a role's start-up error).
    pub async fn start(mut self) -> Fleet {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let names = Names::with_prefix(&self.prefix);
        let mut nats_config = self.nats_config.clone();
        if self.role_users {
            let passwords = ROLE_PASSWORDS.map(str::to_owned);
            nats_config
                .push_str(&common::nats_auth::authorization(&names, &common::nats_auth::Passwords::Literal(passwords)));
        }
        let nats = if self.nats_cluster > 1 {
            NatsCluster::start(self.nats_cluster, &nats_config).await.nodes
        } else {
            vec![NatsServer::start_with_config(&nats_config).await]
        };
        let urls = nats.iter().map(NatsServer::url).collect::<Vec<_>>().join(",");
        let db = PgDatabase::create().await;
        let sim = match self.scenario.take() {
            Some(scenario) => super::sim_with(scenario).await,
            None => super::sim().await,
        };
        if let Some(knobs) = self.knobs {
            sim.set_knobs(knobs);
        }
        let mut settings = super::settings(&urls, &db, &sim, &self.prefix);
        if self.nats_cluster > 1 {
            settings.fleet.replicas = self.nats_cluster.min(3);
            settings.fleet.ledger_replicas = self.nats_cluster.min(3);
        }
        for change in self.configure {
            change(&mut settings);
        }
        let mut direct = settings.clone();
        direct.database.url = db.url.clone().into();
        let proxy = if self.pg_proxy {
            let proxy = PgProxy::start(pg_server_addr()).await;
            settings.database.url = proxy.url_for(&db.url).into();
            Some(proxy)
        } else {
            None
        };
        let store = super::connect_store(&direct).await;
        if !self.role_users {
            // As an operator does with `nats/*.json`: every stream, consumer and bucket exists
            // before any role, so the teardown and the tests can read them whichever roles ran.
            let client = connect_all(&nats).await;
            declare_all(client, &settings).await;
        }
        let mut fleet = Fleet {
            prefix: self.prefix,
            names,
            role_users: self.role_users,
            settings,
            store,
            fronts: Vec::new(),
            workers: Vec::new(),
            pool_stats: Arc::new(PoolStats::default()),
            ledger: None,
            ledger_stats: Arc::new(LedgerStats::default()),
            processes: Vec::new(),
            undrained: self.undrained,
            clock: self.clock,
            phase: Phase::Running,
            proxy,
            sim,
            db,
            nats,
        };
        for _ in 0..self.fronts {
            fleet.add_front().await;
        }
        let mut worker_settings = fleet.role_settings(FleetRole::Worker);
        if let Some(kinds) = self.worker_kinds {
            worker_settings.fleet.worker_kinds = kinds;
        }
        for _ in 0..self.workers {
            let stats = fleet.pool_stats.clone();
            fleet.add_worker_with(&worker_settings, stats);
        }
        if self.ledger {
            let stats = fleet.ledger_stats.clone();
            fleet.start_ledger(stats);
        }
        fleet
    }
}

/// A running fleet of one test: nats-server, a fresh Postgres database, the registry simulator,
/// fronts, worker pools, the ledger consumer and `dsa` processes. End every test with
/// [`Fleet::stop`]; see the module doc for what dropping it without does.
#[must_use = "a fleet must be stopped with stop().await"]
pub struct Fleet {
    prefix: String,
    names: Names,
    role_users: bool,
    settings: Settings,
    store: Arc<dyn Store>,
    fronts: Vec<Option<Front>>,
    workers: Vec<Option<Role>>,
    pool_stats: Arc<PoolStats>,
    ledger: Option<Role>,
    ledger_stats: Arc<LedgerStats>,
    /// `(role, process)`: `front`, `worker` or `ledger`.
    processes: Vec<(String, WorkerProcess)>,
    undrained: Vec<(Queue, String)>,
    clock: Option<api::state::Clock>,
    phase: Phase,
    proxy: Option<PgProxy>,
    sim: Simulator,
    db: PgDatabase,
    /// One server, or the nodes of a cluster ([`FleetBuilder::nats_cluster`]).
    nats: Vec<NatsServer>,
}

/// A client of whichever of `nodes` answers (the others are tried when it goes away).
async fn connect_all(nodes: &[NatsServer]) -> async_nats::Client {
    let urls: Vec<String> = nodes.iter().map(NatsServer::url).collect();
    async_nats::connect(urls).await.expect("connect to nats-server")
}

impl Fleet {
    /// A builder for a fleet whose NATS names carry `prefix` (one per test).
    pub fn builder(prefix: &str) -> FleetBuilder {
        FleetBuilder {
            prefix: prefix.to_owned(),
            fronts: 1,
            workers: 1,
            ledger: true,
            worker_kinds: None,
            role_users: false,
            nats_config: String::new(),
            nats_cluster: 1,
            knobs: None,
            scenario: None,
            configure: Vec::new(),
            pg_proxy: false,
            undrained: Vec::new(),
            clock: None,
        }
    }

    /// `fronts` fronts, `workers` workers and the ledger consumer, with the defaults otherwise.
    pub async fn start(prefix: &str, fronts: usize, workers: usize) -> Self {
        Self::builder(prefix).fronts(fronts).workers(workers).start().await
    }

    /// The NATS name prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Every NATS subject, stream, consumer and bucket name of this fleet.
    pub fn names(&self) -> &Names {
        &self.names
    }

    /// The settings the roles started with (for a fleet with [`FleetBuilder::role_users`], without
    /// credentials: see [`Fleet::role_settings`]).
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The settings of `role`: on a fleet with per-role users, its user's URL.
    pub fn role_settings(&self, role: FleetRole) -> Settings {
        let mut s = self.settings.clone();
        if self.role_users {
            let password = self.role_password(role);
            let urls: Vec<String> =
                self.nats.iter().map(|n| format!("nats://{}:{password}@127.0.0.1:{}", role.user(), n.port)).collect();
            s.fleet.nats_url = urls.join(",").into();
        }
        s
    }

    /// The NATS password of `role` on a fleet with per-role users.
    ///
    /// # Panics
    /// On an open fleet (no users).
    pub fn role_password(&self, role: FleetRole) -> &'static str {
        assert!(self.role_users, "the fleet runs without per-role users (FleetBuilder::role_users)");
        match role {
            FleetRole::Front => ROLE_PASSWORDS[0],
            FleetRole::Worker => ROLE_PASSWORDS[1],
            FleetRole::Ledger => ROLE_PASSWORDS[2],
        }
    }

    /// The fleet's Postgres store, connected directly (never through the proxy).
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// A store of its own (a new connection pool) on the fleet's database, connected directly.
    pub async fn connect_store(&self) -> Arc<dyn Store> {
        let mut direct = self.settings.clone();
        direct.database.url = self.db.url.clone().into();
        super::connect_store(&direct).await
    }

    /// The database's name (`dsa_fleet_<uuid>`).
    pub fn db_name(&self) -> &str {
        &self.db.name
    }

    /// The database's direct URL.
    pub fn db_url(&self) -> &str {
        &self.db.url
    }

    /// The registry simulator.
    pub fn sim(&self) -> &Simulator {
        &self.sim
    }

    /// The nats-server (on a cluster, its first node).
    pub fn nats(&self) -> &NatsServer {
        &self.nats[0]
    }

    /// The nats-server (on a cluster, its first node), to kill and resume.
    pub fn nats_mut(&mut self) -> &mut NatsServer {
        &mut self.nats[0]
    }

    /// Node `i` of the NATS cluster (0 on a single server), to kill and resume.
    ///
    /// # Panics
    /// When there is no such node.
    pub fn nats_node_mut(&mut self, i: usize) -> &mut NatsServer {
        &mut self.nats[i]
    }

    /// How many NATS nodes the fleet runs on (1: a single server).
    pub fn nats_nodes(&self) -> usize {
        self.nats.len()
    }

    /// Every NATS node's client URL, comma-separated (what the roles were given).
    pub fn nats_urls(&self) -> String {
        self.nats.iter().map(NatsServer::url).collect::<Vec<_>>().join(",")
    }

    /// The proxy in front of Postgres.
    ///
    /// # Panics
    /// When the fleet was built without [`FleetBuilder::pg_proxy`].
    pub fn pg_proxy(&self) -> &PgProxy {
        self.proxy.as_ref().expect("the fleet was built without FleetBuilder::pg_proxy")
    }

    /// Counters shared by the workers the builder started.
    pub fn pool_stats(&self) -> &Arc<PoolStats> {
        &self.pool_stats
    }

    /// Counters of the ledger consumer the builder started.
    pub fn ledger_stats(&self) -> &Arc<LedgerStats> {
        &self.ledger_stats
    }

    /// A JetStream context on an open server (for a fleet with per-role users, connect as a role).
    pub async fn jetstream(&self) -> async_nats::jetstream::Context {
        async_nats::jetstream::new(connect_all(&self.nats).await)
    }

    /// A fresh key of `plan` in the fleet's store: `(key, key id)`.
    pub async fn key(&self, plan: Plan) -> (String, String) {
        super::key(&self.store, plan).await
    }

    /// Front `i` (in the order they started, [`FleetBuilder::fronts`] first).
    ///
    /// # Panics
    /// When there is no such front or it was stopped.
    pub fn front(&self, i: usize) -> &Front {
        self.fronts.get(i).and_then(Option::as_ref).unwrap_or_else(|| panic!("no running front {i}"))
    }

    /// The URL of `path` on front 0.
    pub fn url(&self, path: &str) -> String {
        self.front(0).url(path)
    }

    /// Starts one more front on the fleet's settings (a front's user on a fleet with users);
    /// returns its index.
    pub async fn add_front(&mut self) -> usize {
        let settings = self.role_settings(FleetRole::Front);
        self.add_front_with(&settings).await
    }

    /// Starts one more front on `settings`; returns its index.
    pub async fn add_front_with(&mut self, settings: &Settings) -> usize {
        let clock = self.clock.clone().unwrap_or_else(api::state::system_clock);
        self.fronts.push(Some(Front::start_with_clock(settings, clock).await));
        self.fronts.len() - 1
    }

    /// Stops front `i` gracefully (its charges forwarded to the ledger stream).
    pub async fn stop_front(&mut self, i: usize) {
        if let Some(front) = self.fronts.get_mut(i).and_then(Option::take) {
            front.stop().await;
        }
    }

    /// Stops front `i` at once, as a SIGKILL would (its scheduler's leases stay held until they
    /// run out; charges in flight are lost).
    pub fn crash_front(&mut self, i: usize) {
        if let Some(mut front) = self.fronts.get_mut(i).and_then(Option::take) {
            front.abort();
        }
    }

    /// Starts one more worker pool on the fleet's settings counting into `stats`; returns its
    /// index.
    pub fn add_worker(&mut self, stats: Arc<PoolStats>) -> usize {
        let settings = self.role_settings(FleetRole::Worker);
        self.add_worker_with(&settings, stats)
    }

    /// Starts one more worker pool on `settings` (other kinds, another user) counting into
    /// `stats`; returns its index.
    pub fn add_worker_with(&mut self, settings: &Settings, stats: Arc<PoolStats>) -> usize {
        self.workers.push(Some(Role::worker(settings, stats)));
        self.workers.len() - 1
    }

    /// Stops worker `i` gracefully (drained).
    pub async fn stop_worker(&mut self, i: usize) {
        if let Some(worker) = self.workers.get_mut(i).and_then(Option::take) {
            worker.stop().await;
        }
    }

    /// Starts the ledger consumer on the fleet's settings counting into `stats`.
    ///
    /// # Panics
    /// When one runs already.
    pub fn start_ledger(&mut self, stats: Arc<LedgerStats>) {
        assert!(self.ledger.is_none(), "a ledger consumer runs already");
        self.ledger = Some(Role::ledger(&self.role_settings(FleetRole::Ledger), stats));
    }

    /// Starts the ledger consumer over `store` (a wrapper that misbehaves) counting into `stats`.
    ///
    /// # Panics
    /// When one runs already.
    pub fn start_ledger_with_store(&mut self, store: Arc<dyn Store>, stats: Arc<LedgerStats>) {
        assert!(self.ledger.is_none(), "a ledger consumer runs already");
        self.ledger = Some(Role::ledger_with_store(&self.role_settings(FleetRole::Ledger), store, stats));
    }

    /// Stops the ledger consumer gracefully.
    pub async fn stop_ledger(&mut self) {
        if let Some(ledger) = self.ledger.take() {
            ledger.stop().await;
        }
    }

    /// Aborts the ledger consumer mid-flight (a crash: nothing acked).
    pub fn crash_ledger(&mut self) {
        if let Some(ledger) = self.ledger.take() {
            ledger.crash();
        }
    }

    /// Starts `dsa ROLE` (`front`, `worker`, `ledger`) as a process on `settings`; returns its
    /// index for [`Fleet::process`]. Stopped with SIGTERM at teardown, SIGKILLed on drop.
    pub fn spawn_process(&mut self, role: &str, settings: &Settings) -> usize {
        self.processes.push((role.to_owned(), WorkerProcess::spawn_role(settings, role)));
        self.processes.len() - 1
    }

    /// As [`Fleet::spawn_process`], with `env` set for the process (`DSA_LOG`, `DSA_LOG_FORMAT`).
    pub fn spawn_process_with_env(&mut self, role: &str, settings: &Settings, env: &[(&str, &str)]) -> usize {
        self.processes.push((role.to_owned(), WorkerProcess::spawn_role_with_env(settings, role, env)));
        self.processes.len() - 1
    }

    /// Process `i`, to SIGKILL or read its log.
    ///
    /// # Panics
    /// When there is no such process.
    pub fn process(&mut self, i: usize) -> &mut WorkerProcess {
        &mut self.processes[i].1
    }

    /// Teardown does not assert `queue` drained, printing `why` instead.
    pub fn expect_undrained(&mut self, queue: Queue, why: &str) {
        self.undrained.push((queue, why.to_owned()));
    }

    /// Stops every role in order — fronts (their charges forwarded), workers, then, once the
    /// job and ledger queues are asserted drained while the ledger consumer still settles, the
    /// ledger consumer — and leaves NATS, Postgres and the simulator up for the test's last
    /// reads. [`Fleet::stop`] still has to follow. A second call does nothing.
    ///
    /// # Panics
    /// When a queue is not drained within 10 s (and was not declared undrained).
    pub async fn drain(&mut self) {
        if self.phase != Phase::Running {
            return;
        }
        self.phase = Phase::Drained;
        for front in std::mem::take(&mut self.fronts).into_iter().flatten() {
            front.stop().await;
        }
        self.terminate_processes("front").await;
        for worker in std::mem::take(&mut self.workers).into_iter().flatten() {
            worker.stop().await;
        }
        self.terminate_processes("worker").await;
        for queue in [Queue::Jobs, Queue::Ledger] {
            if let Some((_, why)) = self.undrained.iter().find(|(q, _)| *q == queue) {
                eprintln!("[fleet {}] {queue:?} queue not asserted drained: {why}", self.prefix);
                continue;
            }
            let client = self.queue_client(queue).await;
            assert_queue_drained(&async_nats::jetstream::new(client), &self.names, queue).await;
        }
        self.stop_ledger().await;
        self.terminate_processes("ledger").await;
    }

    /// Tears the fleet down: [`Fleet::drain`] (when the test did not), then drops the database
    /// and stops nats-server and the simulator.
    ///
    /// # Panics
    /// As [`Fleet::drain`].
    pub async fn stop(mut self) {
        self.drain().await;
        self.proxy.take();
        self.db.drop_now().await;
        self.nats.iter_mut().for_each(NatsServer::kill);
        self.phase = Phase::Stopped;
    }

    /// SIGTERMs the processes of `role` still running and waits for them.
    ///
    /// # Panics
    /// When one has not exited 15 s after its SIGTERM (it is SIGKILLed first).
    async fn terminate_processes(&mut self, role: &str) {
        for (_, process) in self.processes.iter_mut().filter(|(r, _)| r == role) {
            let exited = process.terminate(Duration::from_secs(15)).await;
            assert!(
                exited,
                "teardown: a `dsa {role}` process did not exit within 15 s of its SIGTERM; its log: {}",
                std::fs::read_to_string(&process.log).unwrap_or_default()
            );
        }
    }

    /// A client that may read `queue`'s consumers: anonymous on an open server, else the user of
    /// the role that consumes it (with that role's inbox prefix, the only one it may use).
    async fn queue_client(&self, queue: Queue) -> async_nats::Client {
        if !self.role_users {
            return connect_all(&self.nats).await;
        }
        let role = match queue {
            Queue::Jobs => FleetRole::Worker,
            Queue::Ledger => FleetRole::Ledger,
        };
        async_nats::ConnectOptions::with_user_and_password(role.user().into(), self.role_password(role).into())
            .custom_inbox_prefix(role.inbox(&self.names))
            .connect(self.nats.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect::<Vec<_>>())
            .await
            .unwrap_or_else(|e| panic!("connect as {}: {e}", role.user()))
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        if self.phase == Phase::Stopped {
            return;
        }
        // Synchronous teardown: tasks aborted, processes killed, database dropped (from a thread
        // of its own, see `PgDatabase`), nats-server killed.
        for front in self.fronts.iter_mut().flatten() {
            front.abort();
        }
        for worker in self.workers.iter_mut().flatten() {
            worker.abort();
        }
        if let Some(ledger) = self.ledger.as_mut() {
            ledger.abort();
        }
        self.processes.clear();
        self.proxy.take();
        self.db.drop_blocking();
        self.nats.iter_mut().for_each(NatsServer::kill);
        if !std::thread::panicking() {
            panic!(
                "the fleet `{}` was dropped without `fleet.stop().await`: its queues were never checked; end the test with it",
                self.prefix
            );
        }
    }
}
