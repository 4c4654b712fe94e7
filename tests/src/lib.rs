//! dsa's test support: the registry simulator (`dsa-sim`) and the test harness used by the
//! end-to-end tests, the benchmarks and the README's offline demo.
//!
//! [`sim::Simulator`] serves a [`sim::Scenario`] over the real protocols on loopback —
//! authoritative DNS, RDAP over HTTP and WHOIS over TCP — answering with responses recorded from
//! real registries (`tests/fixtures/registry/`, provenance in `tests/fixtures/PROVENANCE.md`),
//! and writes the `[engine]` configuration that points dsa at it.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use dsa_tests::sim::{Scenario, Simulator};
//! let sim = Simulator::start(Scenario::demo()).await?;
//! let engine_toml = sim.engine_config_toml();
//! # drop(engine_toml); Ok(()) }
//! ```
//!
//! [`harness`] starts dsa in front of the simulator the way it runs in production — one
//! standalone process ([`harness::app::TestApp`]) or a fleet on a real nats-server and a fresh
//! Postgres database ([`harness::fleet`]) — for the test binaries in `tests/tests/` and the
//! benchmarks in `tests/benches/`.

pub mod harness;
pub mod sim;
