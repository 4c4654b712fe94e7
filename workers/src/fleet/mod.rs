//! The fleet side of the workers: JetStream declarations, the pull loop, the worker pool, and the
//! fleet-wide upstream budget.
//!
//! The path of a job in the fleet:
//!
//! ```text
//! front ──publish Job (Nats-Msg-Id = job id, Dsa-Reply-To = inbox, ──► stream DSA_JOBS
//!   ▲ │                 Dsa-Request-Id = request id)                   │ a pull consumer per kind
//!   │ │                                                                ▼ (pull::pull)
//!   │ └─ no ack / no "started" in 0.5 s: core publish dsa.direct.<kind> ─► worker (direct, queue group)
//!   └──── core publish JobReply to the inbox ◄── worker: jobs::Jobs::run, then ack / nak / term
//! ```
//!
//! * [`streams`]: every stream, consumer and KV bucket, declared in one place (and kept equal to
//!   `nats/*.json` by a test).
//! * [`pull`](mod@pull): the one JetStream pull loop (bounded fetch, slots, ack / nak / term,
//!   liveness, drain), generic over what a message means.
//! * [`pool`]: the worker pool, one pull loop per kind of job over [`crate::jobs`].
//! * [`budget`]: the fleet-wide per-upstream rate limit over NATS KV, the
//!   [`crate::politeness::UpstreamBudget`] a worker's engine holds in fleet mode.
//! * `direct`: the second path of interactive jobs (core NATS, a queue group per kind) for the
//!   seconds in which the jobs stream or its consumer elects a leader.
//! * [`presence`]: how many worker pools the fleet has (the budget's fallback share).
//! * `shared`: the fleet-wide verdict cache and lookup claims (one registry query per name in
//!   flight, fleet-wide).
//! * [`routes`]: self-correcting routing decisions shared over NATS KV, the
//!   [`crate::routing::RouteBook`] of a worker (and read by fronts for `/v1/tlds/{tld}`).
//!
//! Dependencies point one way: `pool` uses `pull` and the jobs, which use the engine; the
//! engine's politeness layer knows only the [`crate::politeness::UpstreamBudget`] trait, which
//! `budget` implements.

pub mod budget;
mod direct;
pub mod pool;
pub mod presence;
pub mod pull;
pub mod routes;
mod shared;
pub mod streams;

pub use budget::FleetBudget;
pub use pool::{PoolStats, run_pool};
pub use pull::{LiveLoop, Liveness, Pull, Settle, pull, pull_with_slots};
pub use routes::FleetRoutes;
pub use streams::{JOB_MAX_DELIVER, JOBS_MAX_BYTES, JOBS_MAX_MSGS, Tuning, declare};

/// Errors declaring or running the fleet side.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// A JetStream call failed.
    #[error("JetStream: {0}")]
    JetStream(String),
}

fn js_err(e: impl std::fmt::Display) -> FleetError {
    FleetError::JetStream(e.to_string())
}
