//! The registry simulator: real-protocol stand-ins for the registries dsa talks to.
//!
//! ```text
//!  scenario.toml ──► Scenario ──► Simulator::start ──┬─► dns    hickory-server, UDP+TCP: a zone per suffix,
//!  (truth per name,                                 │           NS delegation for registered names only
//!   registries,                                     ├─► rdap   axum: GET /rdap/<suffix>/domain/<name>,
//!   knobs)                                          │           recorded objects rewritten to the name
//!                                                   └─► whois  TCP port 43 style: one line in, a recorded
//!                                                               registry text out, close (RFC 3912)
//!        control: live knobs (latency, per-IP rate limits, faults) + counters + shutdown, shared by all
//! ```
//!
//! * [`scenario`] — the TOML world: registries, truths, knobs.
//! * `recorded` — the real responses embedded from `tests/fixtures/registry/` and the
//!   templating that puts the queried name in them.
//! * `dns`, `rdap`, `whois` — the three servers.
//! * `control` — what the servers share: knobs, limiters, counters ([`SimStats`]), shutdown.
//! * [`Simulator`] — starts everything and writes the `[engine]` config for dsa.
//!
//! Everything listens on 127.0.0.1 only, unless [`Simulator::start_spread`] serves the registries
//! as several upstream hosts (127.0.0.2 and up, loopback too).

mod control;
mod dns;
mod rdap;
mod recorded;
pub mod scenario;
mod simulator;
mod whois;

pub use control::{ProtocolStats, SimStats};
pub use dns::SLOW_TYPE_DELAY;
pub use rdap::{HOSTILE_PREFIX, PRIVATE_PREFIX, REGISTRAR_HOST};
pub use scenario::{
    DomainSpec, Fault, Faults, Knobs, Latency, Phase, Protocol, RateLimit, RdapFamily, Scenario, Timeline,
    TimelineSpec, TldSpec, Truth, WhoisFamily,
};
pub use simulator::{MAX_HOSTS, Ports, Simulator, UpstreamHost};
pub use whois::REGISTRAR_WHOIS_HOST;
