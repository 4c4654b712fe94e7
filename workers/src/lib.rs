//! dsa's workers: every kind of job, and the availability engine behind them.
//!
//! The path of a job, once the front has a [`common::domain::DomainName`] and no fresh verdict in
//! its [`book::VerdictBook`]:
//!
//! ```text
//! common::messages::Job ──► jobs::Jobs::run (span, request id, deadline, panic contained)
//!   (in-process bus, or        │
//!    fleet::pool over          ├─ check ─► worker cache → fleet bucket → claim ─┐
//!    fleet::pull)              ├─ whois ─► lookup::Lookups::whois             │
//!                              └─ dns   ─► lookup::Lookups::dns               ▼
//! engine::Engine::check_uncached ──► policy (restricted zone → done)
//!        ├─► probe::dns   (delegated → taken)      ┐  each behind politeness::Politeness
//!        ├─► probe::rdap  → parse::rdap            │  (governor rate limit, concurrency cap,
//!        └─► probe::whois → parse::whois           ┘   cooldown per upstream host)
//!        └─► engine::consensus: "available" confirmed by a second signal where required
//!        └─► book::VerdictBook (cache, health): the verdict kept once
//! ```
//!
//! * [`jobs`]: every kind of job in one place, run by standalone's in-process bus and the
//!   fleet's pool alike.
//! * [`book`]: what a front reads without probing: catalogue, verdict cache (serve-stale),
//!   health, routes.
//! * [`config`]: every upstream address, deadline and limit.
//! * [`engine`]: the order of questions and what each answer proves.
//! * [`probe`]: the DNS, RDAP and WHOIS clients.
//! * [`parse`]: the readers of WHOIS text and RDAP JSON.
//! * [`lookup`]: the record lookups behind `/v1/whois` and `/v1/dns`.
//! * [`politeness`], [`cache`]: rate limits and the verdict cache (with its last known store for
//!   serve-stale).
//! * [`health`]: per-suffix, per-method outcomes of the last hour (`GET /v1/tlds/{tld}`).
//! * [`job_panic`]: a panic in one job becomes an `unknown` answer; the worker lives on.
//! * [`routing`]: self-correcting routing decisions (WHOIS first while RDAP fails), in process or
//!   shared by the fleet.
//! * [`fleet`]: the NATS side — stream/consumer/bucket declarations, the one pull loop, the
//!   worker pool, and the fleet-wide upstream budget (an [`politeness::UpstreamBudget`] set on
//!   the engine).
//! * [`ledger`]: the ledger role — charges pulled from the ledger stream and settled in the
//!   store through the small [`ledger::LedgerStore`] trait the front's store implements.
//!
//! Module dependencies point one way: `fleet` → `jobs` → `lookup` → `engine` → `book`,
//! `politeness`, `probe`, `parse`, `cache`, `health` → `config`; the engine never names `fleet`.

pub mod book;
pub mod cache;
pub mod config;
pub mod engine;
pub mod fleet;
pub mod health;
pub mod job_panic;
pub mod jobs;
pub mod ledger;
pub mod lookup;
pub mod parse;
pub mod politeness;
pub mod probe;
pub mod routing;
pub mod singleflight;
