//! The `dsa` command's operator tools and service roles, one file per command group.
//!
//! This tree belongs to the `dsa` binary (declared from `main.rs`), not to the `api` library:
//! `main.rs` parses a [`Cli`], loads the settings and calls the group's `run`.
//!
//! - [`roles`]: `serve` (standalone), `front`, `worker`, `ledger`: the long-running processes;
//! - [`check`]: `dsa check`, the engine run directly;
//! - [`explain`]: `dsa explain`, a saved registry answer classified;
//! - [`keys`]: `dsa keys`, client keys and their settings;
//! - [`usage`]: `dsa usage`, a key's settled credits in a month;
//! - [`mcp`]: `dsa mcp`, the MCP server on stdio for desktop agents;
//! - [`accounts`]: `dsa accounts`, portal accounts;
//! - [`prices`]: `dsa prices`, the price table.

pub(crate) mod accounts;
pub(crate) mod bulk_job;
pub(crate) mod check;
pub(crate) mod explain;
pub(crate) mod keys;
pub(crate) mod mcp;
pub(crate) mod prices;
pub(crate) mod roles;
pub(crate) mod tlds;
pub(crate) mod usage;

use std::io::Read;
use std::path::PathBuf;

use anyhow::Context as _;
use api::config::Settings;
use api::store::{SqliteStore, Store};
use clap::{Parser, Subcommand};

use self::accounts::Accounts;
use self::explain::Explain;
use self::keys::Keys;
use self::prices::Prices;
use self::usage::parse_period;

/// dsa — the domain search API.
#[derive(Debug, Parser)]
#[command(name = "dsa", version, about)]
pub(crate) struct Cli {
    /// Configuration file (TOML); also `DSA_CONFIG`. See dsa.sample.toml.
    #[arg(long, short, global = true)]
    pub(crate) config: Option<PathBuf>,
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
}

/// The `dsa` commands; none is `serve`.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Runs the service in standalone mode (the default): front, workers and ledger in one process.
    Serve,
    /// Fleet: runs an HTTP front (jobs to NATS JetStream, keys and usage in Postgres).
    Front,
    /// Fleet: runs a worker pool (probes; per-upstream limits held fleet-wide).
    Worker {
        /// Kinds of lookup to serve, comma-separated (`check`, `whois`, `dns`); default
        /// `fleet.worker_kinds` (all three).
        #[arg(long)]
        kinds: Option<String>,
    },
    /// Fleet: runs the ledger consumer (charges settled in Postgres).
    Ledger,
    /// Serves MCP (Model Context Protocol) on stdin/stdout for a desktop AI agent, with the
    /// standalone service in this process (same settings and store as `dsa serve`). The client
    /// key is read from `DSA_CLIENT_KEY`; calls are charged to it as REST calls are. Logs go to
    /// standard error.
    Mcp {
        /// Relay to the `/mcp` endpoint of a running dsa at this URL (`https://dsa.example.com`)
        /// instead of running the service in this process; the key goes along as a Bearer token.
        #[arg(long, value_name = "URL")]
        server: Option<url::Url>,
    },
    /// Checks domains with the engine directly and prints each verdict with its evidence.
    ///
    /// Names come from the arguments and from `--file` (one a line; blank lines and `#` comments
    /// skipped). Up to `--concurrency` checks run at once, within the engine's per-upstream
    /// politeness limits (`engine.limits`), which still pace every registry. Results are printed
    /// in input order. Exit status 2 when any name got no definitive verdict or was invalid.
    Check {
        /// Domains (or URLs) to check.
        #[arg(required_unless_present = "file")]
        domains: Vec<String>,
        /// Also read names from this file, one a line; `-` for standard input.
        #[arg(long, short)]
        file: Option<PathBuf>,
        /// Checks in flight at once (at least 1).
        #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
        concurrency: u16,
        /// Print JSON lines instead of text.
        #[arg(long)]
        json: bool,
        /// Submit the names as a bulk job to this running dsa (`http://host:port`) instead of
        /// checking them here; results are printed as they arrive, progress on standard error.
        #[arg(long, requires = "key")]
        server: Option<url::Url>,
        /// The server key the job is charged to (with `--server`).
        #[arg(long, requires = "server")]
        key: Option<String>,
    },
    /// Reads a saved raw registry answer and prints its classification and the fields read (JSON).
    Explain {
        #[command(subcommand)]
        what: Explain,
    },
    /// Manages client keys. A key is named by its id, its 8-hex fingerprint or the full key.
    Keys {
        /// Print JSON (stable field names, never the key's hash) instead of tables.
        #[arg(long, global = true)]
        json: bool,
        #[command(subcommand)]
        action: Keys,
    },
    /// Shows a key's settled credit usage in a month: used, remaining and credits by endpoint.
    ///
    /// Usage is what the ledger has settled; a running server writes its charges in batches, so
    /// the last few seconds of traffic may not be counted yet.
    Usage {
        /// The key: id, 8-hex fingerprint or the full key.
        key: String,
        /// Month, YYYY-MM (UTC); default: the current month.
        #[arg(long, value_parser = parse_period)]
        period: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Manages the price table.
    Prices {
        #[command(subcommand)]
        action: Prices,
    },
    /// The TLD catalogue.
    Tlds {
        #[command(subcommand)]
        action: Tlds,
    },
    /// Manages portal accounts (`/account`). An account is named by its id or e-mail address.
    Accounts {
        /// Print JSON instead of tables.
        #[arg(long, global = true)]
        json: bool,
        #[command(subcommand)]
        action: Accounts,
    },
}

/// `dsa tlds …`.
#[derive(Debug, Subcommand)]
pub(crate) enum Tlds {
    /// Rebuilds the catalogue from the IANA TLD list, the IANA RDAP bootstrap, zonedb, php-whois and
    /// the Public Suffix List in a data directory, and reports what changed against the catalogue
    /// in use (`engine.catalogue`, else the built-in one).
    Refresh {
        /// Directory with the inputs (`iana/tlds-alpha-by-domain.txt`, `iana/rdap/dns.json`,
        /// `tld/zonedb-zones.jsonl`, `whois-servers/php-whois/module.tld.servers.json`,
        /// `psl/public_suffix_list.dat`, `PROVENANCE.md`).
        #[arg(long)]
        data_dir: PathBuf,
        /// Write the new catalogue here (then set `engine.catalogue` to it and restart).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Exit with status 1 when anything changed (for a scheduled job).
        #[arg(long)]
        check: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// The bytes of `file`, or of standard input for `-` or no file.
pub(crate) fn read_input(file: Option<PathBuf>) -> anyhow::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    match file {
        Some(path) if path.as_os_str() != "-" => bytes = std::fs::read(&path)?,
        _ => {
            std::io::stdin().read_to_end(&mut bytes)?;
        }
    }
    Ok(bytes)
}

/// Prints `value` as pretty JSON on standard output.
pub(crate) fn print_json(value: &serde_json::Value) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// Opens the store `database.url` names and brings its schema up to date, as `serve` does:
/// Postgres for `postgres://`/`postgresql://` URLs (the fleet's), else SQLite (standalone).
pub(crate) async fn open_store(settings: &Settings) -> anyhow::Result<Box<dyn Store>> {
    // The URL is not echoed: a Postgres URL carries a password.
    let url = settings.database.url.expose();
    let store: Box<dyn Store> = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Box::new(
            api::store_pg::PgStore::connect(url, 2)
                .await
                .context("cannot open the Postgres database named by database.url (DSA_DATABASE__URL)")?,
        )
    } else {
        Box::new(
            SqliteStore::connect(url, 1)
                .await
                .context("cannot open the database named by database.url (DSA_DATABASE__URL)")?,
        )
    };
    store.migrate().await.context("cannot migrate the database named by database.url")?;
    Ok(store)
}

/// The key an operator named by id, fingerprint or full key.
pub(crate) async fn resolve(store: &dyn Store, typed: &str) -> anyhow::Result<api::keys::KeyRecord> {
    let typed = typed.trim();
    if typed.is_empty() {
        anyhow::bail!("the key argument is empty; give the key's id, its 8-hex fingerprint or the full key");
    }
    let reference = api::keys::lookup_ref(typed);
    match store.find_key_by_ref(&reference).await? {
        Some(key) => Ok(key),
        // Never echo a full key: name it by the fingerprint of its hash.
        None if typed.starts_with("dsa_") => anyhow::bail!(
            "no key matches the full key given (its fingerprint would be {}); is this the right database?",
            api::keys::fingerprint(&reference)
        ),
        None => anyhow::bail!(
            "no key with id or fingerprint {typed:?}; give the key's id, its 8-hex fingerprint or the full key (see `dsa keys list`)"
        ),
    }
}
