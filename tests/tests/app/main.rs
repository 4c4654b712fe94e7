//! The end-to-end suite that needs no NATS: one test binary (after crates.io's), so the workspace
//! links one executable for all of it instead of one per file. The modules follow a check's path:
//!
//! * [`sim`] — the registry simulator itself; [`engine`] — the availability engine against it
//!   (real DNS, RDAP and WHOIS on loopback);
//! * the API over HTTP through a standalone front ([`dsa_tests::harness::app::TestApp`]):
//!   [`check`] (`/v1/domains/check`), [`bulk`], [`lookups`] (`/v1/dns`, `/v1/whois`),
//!   [`suggest`], [`tlds`], [`front`] (the front page, the widget, `/domain-check`), [`policy`]
//!   (limits, origins, demo mode), [`contract`] (the OpenAPI document and the router agree),
//!   [`mcp`] (the MCP endpoint's prelude and charges) and [`portal`] (the account portal);
//! * prices, commissions and purchase URLs ([`pricing`]);
//! * the ledger's Postgres store ([`store_pg`]);
//! * the standalone ledger when its disk fails a sync ([`ledger_disk`]);
//! * the `dsa` command itself, the real binary ([`cli`]: operator commands, `dsa check`, the
//!   sample configuration, HTTPS);
//! * the code's layout: no import circles inside `api` ([`layout`]);
//! * the fuzz targets' invariants on every input that ever crashed a fuzzer ([`fuzz_regressions`]).
//!
//! Tests share this process: one that needs process-wide state installs it idempotently (the
//! rustls provider: `let _ = …install_default()`), files and databases are named per test,
//! servers listen on ports the system picks, and none changes the environment or the current
//! directory (a child process gets its own).
//!
//! Run one module with a filter: `cargo test -p dsa-tests --test app -- bulk::`.

mod bulk;
mod bulk_jobs;
mod check;
mod cli;
mod consensus;
mod contract;
mod engine;
mod front;
mod fuzz_regressions;
mod layout;
mod ledger_disk;
mod lookups;
mod mcp;
mod policy;
mod portal;
mod pricing;
mod sim;
mod store_pg;
mod suggest;
mod tlds;
mod verify;
mod watch_webhooks;
mod watches;
mod webhooks;
