//! The `dsa` command: runs the service (standalone by default) and the operator tools.
//!
//! This file parses the command line, loads the settings and hands over to the command's module
//! in [`cli`] (one file per command group); the service itself is the `api` library.

mod cli;

use std::process::ExitCode;

use api::config::Settings;
use clap::Parser as _;

use crate::cli::{Cli, Command};

/// The process's allocator: jemalloc, configured at build time (`.cargo/config.toml`,
/// `JEMALLOC_SYS_WITH_MALLOC_CONF`) with background threads that return freed pages to the system
/// about a second after they are freed. With the system allocator a front's resident memory stayed
/// at its peak after a flood of requests; see `docs/operators.md`, "Memory".
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    api::telemetry::init_logs();
    // One rustls crypto provider for the whole process (HTTPS serving, RDAP, NATS, Postgres TLS).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("dsa: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(run(cli));
    // The command has finished (a role has drained): what is left on the runtime (a pool's
    // connections closing, a blocking task) gets two seconds, never an unbounded wait. A one-shot
    // command was seen printing its result and then not exiting for 19 minutes under load.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("dsa: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Loads the settings (every command reads them, so a bad configuration fails first) and runs
/// the command; no command is `serve`.
async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let settings = Settings::load(cli.config.as_deref())?;
    let success = |()| ExitCode::SUCCESS;
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => cli::roles::serve(settings).await.map(success),
        Command::Front => cli::roles::front(settings).await.map(success),
        Command::Worker { kinds } => cli::roles::worker(settings, kinds).await.map(success),
        Command::Ledger => cli::roles::ledger(settings).await.map(success),
        Command::Mcp { server } => match server {
            Some(url) => cli::mcp::relay(url).await.map(success),
            None => cli::mcp::run(settings).await.map(success),
        },
        Command::Check { domains, file, json, server: Some(server), key: Some(key), .. } => {
            cli::bulk_job::run(server, key, domains, file, json).await
        }
        Command::Check { domains, file, concurrency, json, .. } => {
            cli::check::run(settings, domains, file, concurrency, json).await
        }
        Command::Explain { what } => cli::explain::run(what).map(success),
        Command::Keys { json, action } => cli::keys::run(settings, action, json).await.map(success),
        Command::Usage { key, period, json } => cli::usage::run(settings, &key, period, json).await.map(success),
        Command::Accounts { json, action } => cli::accounts::run(settings, action, json).await.map(success),
        Command::Prices { action } => cli::prices::run(action).map(success),
        Command::Tlds { action: cli::Tlds::Refresh { data_dir, out, check, json } } => {
            cli::tlds::refresh(&settings, &data_dir, out, check, json)
        }
    }
}
