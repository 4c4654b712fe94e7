//! The test harness: dsa running the production code in front of the registry simulator
//! ([`crate::sim`]), on real sockets, one isolated set of servers per test.
//!
//! * [`app`] — standalone mode: [`app::TestApp::spawn`] starts the simulator and a front on
//!   127.0.0.1:0 with its own SQLite file (zero2prod's `spawn_app()`); requests go over HTTP;
//!   [`app::TestApp::finish`] stops it, drains the ledger and returns the key's ledger entries,
//!   so each test checks "successful responses charged = entries".
//! * [`fleet`] — the fleet: [`fleet::Fleet::builder`] starts a nats-server process per test
//!   ([`fleet::NatsServer`]), a fresh Postgres database per test ([`fleet::PgDatabase`]), fronts
//!   ([`fleet::Front`]), workers and the ledger consumer as tasks ([`fleet::Role`]) or as `dsa`
//!   processes to SIGKILL ([`fleet::WorkerProcess`]), and a proxy to cut Postgres off
//!   ([`fleet::PgProxy`]). Its teardown, [`fleet::Fleet::stop`], stops the roles in order and
//!   asserts that no job is left un-acked and no ledger event unapplied; a fleet dropped without
//!   it fails the test.
//! * [`bench`] — the small measuring helpers the benchmarks share (percentiles, knobs).
//! * [`binary`] — the `dsa` binary for tests that run the real command ([`binary::dsa_binary`]).
//!
//! Its users are this crate's three test binaries — `app` (`tests/tests/app/`, everything
//! without NATS), `fleet` (`tests/tests/fleet/`) and `fleet_faults` (`tests/tests/fleet_faults.rs`,
//! the tests that kill processes, kept apart so they never run beside the others) — and the
//! benchmarks (`tests/benches/`). Nothing in production depends on it.

pub mod app;
pub mod bench;
pub mod binary;
pub mod fleet;
pub mod webhooks;

use workers::config::EngineConfig;

use crate::sim::Simulator;

#[derive(serde::Deserialize)]
struct EngineFile {
    engine: EngineConfig,
}

/// The engine settings the simulator writes for itself (every upstream pointed at its servers),
/// before any test or benchmark adjusts deadlines and limits.
///
/// # Panics
/// When the simulator's own configuration does not parse (a harness bug).
pub fn sim_engine(sim: &Simulator) -> EngineConfig {
    toml::from_str::<EngineFile>(&sim.engine_config_toml()).expect("simulator config parses").engine
}

/// One charge of `credits` to `key_id` for a check, made now by `front`, as a front would
/// record it: a fresh event id (UUID v7), the current billing period, no request id. Tests and
/// benchmarks that need another time or endpoint override the fields with struct-update syntax.
pub fn ledger_event(key_id: &str, credits: i64, front: &str) -> common::messages::LedgerEvent {
    let charged_at = time::OffsetDateTime::now_utc();
    common::messages::LedgerEvent {
        event_id: uuid::Uuid::now_v7(),
        key_id: key_id.to_owned(),
        period: common::messages::billing_period(charged_at),
        endpoint: "check".into(),
        credits,
        charged_at,
        front: front.to_owned(),
        request_id: None,
    }
}

/// Removes a SQLite database file a test made and the write-ahead log and shared-memory index
/// SQLite keeps beside it (`<file>-wal`, `<file>-shm`, left behind when its last connection was
/// not closed cleanly): a test run leaves nothing in the temporary directory. Missing files are
/// not an error.
pub fn remove_sqlite_database(file: &std::path::Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut path = file.as_os_str().to_owned();
        path.push(suffix);
        let _ = std::fs::remove_file(path);
    }
}

/// A directory of a test's own in the temporary directory (`<prefix>-<UUID v7>`), created when
/// made and removed with everything in it when dropped, however the test ends (a failed
/// assertion unwinds through the drop too): a test run leaves nothing behind.
#[derive(Debug)]
pub struct ScratchDir(std::path::PathBuf);

impl ScratchDir {
    /// Creates `<temp dir>/<prefix>-<UUID v7>`.
    ///
    /// # Panics
    /// When the directory cannot be created (the test could not run).
    pub fn new(prefix: &str) -> Self {
        let path = std::env::temp_dir().join(format!("{prefix}-{}", uuid::Uuid::now_v7().simple()));
        std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
        Self(path)
    }

    /// The directory's path.
    pub fn path(&self) -> &std::path::Path {
        &self.0
    }

    /// `name` inside the directory.
    pub fn join(&self, name: impl AsRef<std::path::Path>) -> std::path::PathBuf {
        self.0.join(name)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
