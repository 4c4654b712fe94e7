//! The front's request path: a request comes in through the [`routes`] behind the [`policy`]
//! (keys and [`origin`]s, per-minute limits, demo mode, load shedding), is answered from the
//! application [`state`] (verdict book, prices) or handed to a worker over the job bus
//! ([`dispatch`]), and its charge is reserved and committed in the [`credits`] book, whose
//! settled events the [`ledger`] side records (standalone) or forwards (fleet). [`error`] is the
//! one error type of an answer; [`openapi`] describes the routes; [`telemetry`] logs and counts.

pub mod bulk_jobs;
pub mod credits;
pub mod dispatch;
pub mod error;
pub mod keys;
pub mod ledger;
pub mod openapi;
pub mod origin;
pub mod policy;
pub mod routes;
pub mod state;
pub mod telemetry;
