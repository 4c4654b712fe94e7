//! The `dsa` command: runs the service (standalone by default) and the operator tools.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use api::config::Settings;
use api::keys::{KeyKind, KeyRecord, KeyState, Plan};
use api::store::{KeyUpdate, NewKey, SqliteStore, Store};
use clap::{Parser, Subcommand};
use tokio::net::TcpListener;
use workers::engine::Engine;

/// dsa — the domain search API.
#[derive(Debug, Parser)]
#[command(name = "dsa", version, about)]
struct Cli {
    /// Configuration file (TOML); also `DSA_CONFIG`. See dsa.sample.toml.
    #[arg(long, short, global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
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
    /// Manages portal accounts (`/account`). An account is named by its id or e-mail address.
    Accounts {
        /// Print JSON instead of tables.
        #[arg(long, global = true)]
        json: bool,
        #[command(subcommand)]
        action: Accounts,
    },
}

#[derive(Debug, Subcommand)]
enum Accounts {
    /// Lists every account.
    List,
    /// Shows an account and its keys with this month's usage.
    Show {
        /// Id or e-mail address.
        account: String,
    },
    /// Disables an account: it cannot sign in and its sessions end (its keys keep their state).
    Disable {
        /// Id or e-mail address.
        account: String,
    },
    /// Enables a disabled account again.
    Enable {
        /// Id or e-mail address.
        account: String,
    },
    /// Prints a one-time password-reset link (valid `policy.portal.reset_token_secs`). Give it to
    /// the account's owner over a channel you trust; dsa sends no e-mail.
    ResetLink {
        /// Id or e-mail address.
        account: String,
    },
}

#[derive(Debug, Subcommand)]
enum Explain {
    /// A WHOIS answer (raw bytes as received on port 43).
    Whois {
        /// Registry suffix the answer is for (`com`, `com.af`).
        #[arg(long)]
        suffix: String,
        /// WHOIS server that produced it (selects the marker family).
        #[arg(long)]
        server: Option<String>,
        /// Charset of the answer when not UTF-8 (e.g. iso-8859-1).
        #[arg(long)]
        charset: Option<String>,
        /// File to read; `-` or absent for standard input.
        file: Option<PathBuf>,
    },
    /// An RDAP answer body.
    Rdap {
        /// The HTTP status the server returned.
        #[arg(long, default_value_t = 200)]
        status: u16,
        /// File to read; `-` or absent for standard input.
        file: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum Keys {
    /// Creates a key and prints it once on standard output (details on standard error).
    Create {
        /// embed (browser-side) or server (secret).
        #[arg(long, default_value = "server", value_parser = parse_kind)]
        kind: KeyKind,
        /// free, starter, pro or reseller.
        #[arg(long, default_value = "free", value_parser = parse_plan)]
        plan: Plan,
        /// Responses carry pricing.
        #[arg(long)]
        pricing: bool,
        /// Responses carry a purchase button (needs --purchase-url or redirect_url).
        #[arg(long)]
        purchase_button: bool,
        /// Default commission, percent (0 to 1000).
        #[arg(long, value_parser = parse_commission)]
        commission: Option<f64>,
        /// Checkout URL (absolute http or https).
        #[arg(long, value_parser = parse_purchase_url)]
        purchase_url: Option<String>,
        /// Allowed origin, scheme://host[:port] or scheme://*.domain[:port] (repeatable).
        #[arg(long = "origin", value_name = "ORIGIN", value_parser = parse_origin)]
        origins: Vec<String>,
        /// Label.
        #[arg(long, default_value = "")]
        label: String,
    },
    /// Lists keys (fingerprints, never the keys).
    List,
    /// Shows a key's settings and this month's usage.
    Show {
        /// The key: id, 8-hex fingerprint or the full key.
        key: String,
    },
    /// Changes a key's settings.
    Set {
        /// The key: id, 8-hex fingerprint or the full key.
        key: String,
        /// New plan (free, starter, pro, reseller); also sets the monthly allowance to its credits.
        #[arg(long, value_parser = parse_plan)]
        plan: Option<Plan>,
        /// Responses carry pricing.
        #[arg(long, value_name = "on|off", value_parser = parse_switch)]
        pricing: Option<bool>,
        /// Responses carry a purchase button.
        #[arg(long, value_name = "on|off", value_parser = parse_switch)]
        purchase_button: Option<bool>,
        /// Default commission, percent (0 to 1000), or none.
        #[arg(long, value_name = "N|none", value_parser = parse_commission_or_none)]
        commission: Option<Clearable<f64>>,
        /// Checkout URL (absolute http or https), or none.
        #[arg(long, value_name = "URL|none", value_parser = parse_purchase_url_or_none)]
        purchase_url: Option<Clearable<String>>,
        /// Adds an allowed origin, scheme://host[:port] or scheme://*.domain[:port] (repeatable).
        #[arg(long = "origin", value_name = "ORIGIN", value_parser = parse_origin)]
        origins: Vec<String>,
        /// Removes an allowed origin (repeatable).
        #[arg(long = "remove-origin", value_name = "ORIGIN", value_parser = parse_origin)]
        remove_origins: Vec<String>,
        /// Empties the allowed-origins list first (--origin then adds to the empty list).
        #[arg(long)]
        clear_origins: bool,
        /// Label.
        #[arg(long)]
        label: Option<String>,
    },
    /// Disables a key (turned off by its owner or the operator).
    Disable {
        /// The key: id, 8-hex fingerprint or the full key.
        key: String,
    },
    /// Suspends a key (turned off by the operator: abuse, unpaid).
    Suspend {
        /// The key: id, 8-hex fingerprint or the full key.
        key: String,
    },
    /// Re-enables a key.
    Enable {
        /// The key: id, 8-hex fingerprint or the full key.
        key: String,
    },
}

#[derive(Debug, Subcommand)]
enum Prices {
    /// Converts a registrar's pricing export into a dsa price table.
    Import {
        /// Porkbun pricing API response (JSON).
        #[arg(long)]
        porkbun: PathBuf,
        /// Date the prices were valid (YYYY-MM-DD), recorded in the table's header.
        #[arg(long)]
        as_of: Option<String>,
        /// Output file (JSON).
        #[arg(long)]
        out: PathBuf,
    },
}

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
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("dsa: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let settings = Settings::load(cli.config.as_deref())?;
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(settings).await.map(|()| ExitCode::SUCCESS),
        Command::Front => front(settings).await.map(|()| ExitCode::SUCCESS),
        Command::Worker { kinds } => {
            let mut settings = settings;
            if let Some(kinds) = kinds {
                common::lookup::LookupKind::parse_list(&kinds).map_err(|e| anyhow::anyhow!("--kinds: {e}"))?;
                settings.fleet.worker_kinds = kinds;
            }
            admin(&settings).await?;
            let stats = std::sync::Arc::new(workers::fleet::PoolStats::default());
            api::fleet::worker(&settings, stats, shutdown_signal()).await.map(|()| ExitCode::SUCCESS)
        }
        Command::Ledger => {
            admin(&settings).await?;
            let stats = std::sync::Arc::new(api::ledger::ConsumerStats::default());
            api::fleet::ledger(&settings, stats, shutdown_signal()).await.map(|()| ExitCode::SUCCESS)
        }
        Command::Check { mut domains, file, concurrency, json } => {
            if let Some(file) = file {
                let text = String::from_utf8(read_input(Some(file.clone()))?)
                    .map_err(|_| anyhow::anyhow!("--file {}: not UTF-8 text", file.display()))?;
                domains.extend(
                    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_owned),
                );
            }
            anyhow::ensure!(!domains.is_empty(), "dsa check: no domain names given (arguments or --file)");
            check(settings, domains, usize::from(concurrency), json).await
        }
        Command::Explain { what } => explain(what).map(|()| ExitCode::SUCCESS),
        Command::Keys { json, action } => keys(settings, action, json).await.map(|()| ExitCode::SUCCESS),
        Command::Usage { key, period, json } => usage(settings, &key, period, json).await.map(|()| ExitCode::SUCCESS),
        Command::Accounts { json, action } => accounts(settings, action, json).await.map(|()| ExitCode::SUCCESS),
        Command::Prices { action: Prices::Import { porkbun, as_of, out } } => {
            let text = std::fs::read_to_string(&porkbun)?;
            let import = api::pricing::PriceTable::import_porkbun(&text)?;
            let mut provenance = import.table.provenance().clone();
            provenance.sample = false;
            if let Some(date) = as_of {
                let format = time::macros::format_description!("[year]-[month]-[day]");
                provenance.as_of =
                    Some(time::Date::parse(&date, &format).map_err(|e| anyhow::anyhow!("--as-of {date}: {e}"))?);
            }
            let table = import.table.with_provenance(provenance);
            std::fs::write(&out, table.to_json()?)?;
            println!(
                "wrote {} prices to {} ({} entries skipped: not in the IANA root zone)",
                table.len(),
                out.display(),
                import.skipped.len()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Serves `/healthz` and `/metrics` on `server.admin_listen` for the worker and ledger roles.
async fn admin(settings: &Settings) -> anyhow::Result<()> {
    let Some(addr) = settings.server.admin_listen else { return Ok(()) };
    let listener = TcpListener::bind(addr).await.map_err(|e| anyhow::anyhow!("server.admin_listen {addr}: {e}"))?;
    api::telemetry::prometheus();
    let router = axum::Router::new()
        .route("/healthz", axum::routing::get(api::routes::health::healthz))
        .route("/metrics", axum::routing::get(api::routes::health::metrics));
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            tracing::error!(error = %e, "admin listener stopped");
        }
    });
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! { _ = ctrl_c => {}, _ = term.recv() => {} }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

async fn serve(settings: Settings) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let app = api::standalone(&settings).await?;
    if settings.bootstrap.create_dev_key
        && let Some(key) = api::ensure_dev_key(app.store.as_ref()).await?
    {
        let addr = settings.server.listen;
        eprintln!("\nCreated a development key (shown once; keep it secret):\n\n    {key}\n");
        eprintln!("Try:\n    curl 'http://{addr}/v1/domains/check?client_key={key}&domain=example.com'\n");
    }
    serve_http(&settings, app.state.clone(), "standalone", started).await?;
    let api::Standalone { state, ledger, .. } = app;
    drop(state);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), ledger).await;
    tracing::info!("stopped; ledger drained");
    Ok(())
}

async fn front(settings: Settings) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let app = api::fleet::front(&settings, api::state::system_clock()).await?;
    // A fresh fleet gets its first key the way standalone does (one front creates it; the
    // others find it there).
    if settings.bootstrap.create_dev_key
        && let Some(key) = api::ensure_dev_key(app.store.as_ref()).await?
    {
        let addr = settings.server.listen;
        eprintln!("\nCreated the fleet's first key (shown once; keep it secret):\n\n    {key}\n");
        eprintln!("Try:\n    curl 'http://{addr}/v1/domains/check?client_key={key}&domain=example.com'\n");
    }
    serve_http(&settings, app.state.clone(), "front", started).await?;
    let api::fleet::FleetFront { state, forwarder, nats, .. } = app;
    drop(state);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), forwarder).await;
    let _ = nats.flush().await;
    tracing::info!("stopped; charges forwarded");
    Ok(())
}

/// Serves the API over HTTP or HTTPS until a shutdown signal, then drains in-flight requests.
async fn serve_http(
    settings: &Settings,
    state: api::state::AppState,
    role: &str,
    started: std::time::Instant,
) -> anyhow::Result<()> {
    let tls = settings.server.tls_cert.is_some() && settings.server.tls_key.is_some();
    let hsts = tls.then_some(settings.server.hsts_max_age_secs);
    let router = api::router(state, hsts);
    if let (true, Some(cert), Some(key)) = (tls, &settings.server.tls_cert, &settings.server.tls_key) {
        let tls_config = axum_server::tls_rustls::RustlsConfig::from_pem_file(cert, key)
            .await
            .map_err(|e| anyhow::anyhow!("server.tls_cert/tls_key: {e}"))?;
        let handle = axum_server::Handle::new();
        let h = handle.clone();
        tokio::spawn(async move {
            shutdown_signal().await;
            h.graceful_shutdown(Some(std::time::Duration::from_secs(10)));
        });
        tracing::info!(listen = %settings.server.listen, ready_ms = started.elapsed().as_millis() as u64, role, "dsa listening (https)");
        axum_server::bind_rustls(settings.server.listen, tls_config)
            .handle(handle)
            .serve(router.into_make_service_with_connect_info::<std::net::SocketAddr>())
            .await?;
    } else {
        let listener = TcpListener::bind(settings.server.listen)
            .await
            .map_err(|e| anyhow::anyhow!("server.listen {}: {e}", settings.server.listen))?;
        tracing::info!(listen = %listener.local_addr()?, ready_ms = started.elapsed().as_millis() as u64, role, "dsa listening (http)");
        api::serve(listener, router, shutdown_signal()).await?;
    }
    Ok(())
}

async fn check(settings: Settings, domains: Vec<String>, concurrency: usize, json: bool) -> anyhow::Result<ExitCode> {
    use futures::StreamExt as _;
    let engine = Engine::new(settings.engine)?;
    // `buffered`: up to `concurrency` checks at once, results in input order. The engine's
    // governor (per-upstream rate, concurrency cap, cooldown) paces them per registry.
    let mut results = futures::stream::iter(domains)
        .map(|input| {
            let engine = engine.clone();
            async move { check_one(&engine, input, json).await }
        })
        .buffered(concurrency.max(1));
    let mut all_ok = true;
    while let Some(result) = results.next().await {
        let (text, ok) = result?;
        println!("{text}");
        all_ok &= ok;
    }
    Ok(if all_ok { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

/// One name of `dsa check`: the text to print and whether the verdict is definitive.
async fn check_one(engine: &Engine, input: String, json: bool) -> anyhow::Result<(String, bool)> {
    let failed = |e: &dyn std::fmt::Display| {
        if json {
            serde_json::json!({ "input": input, "error": e.to_string() }).to_string()
        } else {
            format!("{input}: {e}")
        }
    };
    let domain = match engine.parse(&input) {
        Ok(d) => d,
        Err(e) => return Ok((failed(&e), false)),
    };
    match engine.check_uncached(&domain).await {
        Ok(report) => {
            let ok = report.verdict.status.is_definitive();
            if json {
                return Ok((serde_json::to_string(&report)?, ok));
            }
            let v = &report.verdict;
            let mut text = format!(
                "{}  {:?}  via {:?}{}",
                v.domain,
                v.status,
                v.method,
                if v.authoritative { " (authoritative)" } else { "" }
            );
            for step in &report.steps {
                text.push_str(&format!("\n    {:<5} {:<28} {}", step.protocol.as_str(), step.upstream, step.outcome));
            }
            text.push_str(&format!("\n    evidence: {}", v.evidence));
            Ok((text, ok))
        }
        Err(e) => Ok((failed(&e), false)),
    }
}

fn read_input(file: Option<PathBuf>) -> anyhow::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    match file {
        Some(path) if path.as_os_str() != "-" => bytes = std::fs::read(&path)?,
        _ => {
            std::io::stdin().read_to_end(&mut bytes)?;
        }
    }
    Ok(bytes)
}

fn explain(what: Explain) -> anyhow::Result<()> {
    let out = match what {
        Explain::Whois { suffix, server, charset, file } => {
            let raw = read_input(file)?;
            let suffix = suffix.trim_start_matches('.').to_ascii_lowercase();
            let r = workers::parse::whois::read_whois(&raw, server.as_deref(), &suffix, charset.as_deref());
            serde_json::json!({
                "class": r.class, "pending_delete": r.pending_delete, "marker": r.marker,
                "record": r.record, "bytes": raw.len(),
            })
        }
        Explain::Rdap { status, file } => {
            let raw = read_input(file)?;
            let r = workers::parse::rdap::read_rdap(status, &raw);
            serde_json::json!({ "class": format!("{:?}", r.class), "detail": r.detail, "record": r.record })
        }
    };
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// dsa keys / dsa usage: operator tools over the same store and configuration as `serve`.

/// A setting that `dsa keys set` can change or remove (`none`).
#[derive(Debug, Clone, PartialEq)]
enum Clearable<T> {
    /// Remove the setting.
    Clear,
    /// Set it to this value.
    Set(T),
}

impl<T> Clearable<T> {
    fn into_option(self) -> Option<T> {
        match self {
            Clearable::Clear => None,
            Clearable::Set(value) => Some(value),
        }
    }
}

// Argument parsers: clap reports their errors with the argument's name and exits with status 2.

fn parse_kind(text: &str) -> Result<KeyKind, String> {
    KeyKind::parse(&text.to_ascii_lowercase())
        .ok_or_else(|| format!("unknown key kind {text:?}; expected embed or server"))
}

fn parse_plan(text: &str) -> Result<Plan, String> {
    Plan::parse(text).ok_or_else(|| format!("unknown plan {text:?}; expected free, starter, pro or reseller"))
}

fn parse_switch(text: &str) -> Result<bool, String> {
    match text.to_ascii_lowercase().as_str() {
        "on" | "yes" | "true" | "1" => Ok(true),
        "off" | "no" | "false" | "0" => Ok(false),
        _ => Err(format!("{text:?}: expected on or off")),
    }
}

fn parse_commission(text: &str) -> Result<f64, String> {
    api::pricing::CommissionPercent::parse(text)
        .map(api::pricing::CommissionPercent::value)
        .map_err(|_| format!("{text:?}: the commission must be a number of percent from 0 to 1000"))
}

fn parse_commission_or_none(text: &str) -> Result<Clearable<f64>, String> {
    if text.eq_ignore_ascii_case("none") { Ok(Clearable::Clear) } else { parse_commission(text).map(Clearable::Set) }
}

/// Stores the URL as [`api::purchase::CheckoutUrl`] serialises it, the form responses use.
fn parse_purchase_url(text: &str) -> Result<String, String> {
    match api::purchase::CheckoutUrl::parse(text) {
        Ok(url) => Ok(url.as_str().to_owned()),
        Err(api::purchase::PurchaseError::InvalidCheckoutUrl { reason }) => {
            Err(format!("must be an absolute http(s) URL: it {reason}"))
        }
        Err(e) => Err(e.to_string()),
    }
}

fn parse_purchase_url_or_none(text: &str) -> Result<Clearable<String>, String> {
    if text.eq_ignore_ascii_case("none") { Ok(Clearable::Clear) } else { parse_purchase_url(text).map(Clearable::Set) }
}

fn parse_origin(text: &str) -> Result<String, String> {
    api::keys::parse_origin(text)
}

/// A billing period as the ledger writes it (`YYYY-MM`, see `common::messages::billing_period`).
fn parse_period(text: &str) -> Result<String, String> {
    let bad = || format!("{text:?}: expected a month as YYYY-MM, e.g. 2026-07");
    let (year, month) = text.split_once('-').ok_or_else(bad)?;
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(year, 4) || !digits(month, 2) || !matches!(month.parse::<u8>(), Ok(1..=12)) {
        return Err(bad());
    }
    Ok(text.to_owned())
}

/// Opens the configured SQLite database and brings its schema up to date, as `serve` does.
/// The store `database.url` names: Postgres for `postgres://`/`postgresql://` URLs (the fleet's),
/// else SQLite (standalone), migrated either way.
async fn open_store(settings: &Settings) -> anyhow::Result<Box<dyn Store>> {
    // The URL is not echoed: a Postgres URL carries a password.
    let url = &settings.database.url;
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
async fn resolve(store: &dyn Store, typed: &str) -> anyhow::Result<KeyRecord> {
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

/// The stable JSON form of a key for scripts: every setting, never the key or its hash.
fn key_json(k: &KeyRecord) -> serde_json::Value {
    serde_json::json!({
        "id": k.id,
        "fingerprint": k.fingerprint,
        "kind": k.kind.as_str(),
        "state": k.state.as_str(),
        "plan": k.plan.as_str(),
        "monthly_allowance": k.monthly_allowance,
        "pricing_enabled": k.pricing_enabled,
        "show_purchase_button": k.show_purchase_button,
        "default_commission_percent": k.default_commission_percent,
        "purchase_url": k.purchase_url,
        "allowed_origins": k.allowed_origins,
        "label": k.label,
        "created_at": k.created_at,
        "account_id": k.account_id,
    })
}

async fn find_account(store: &dyn Store, who: &str) -> anyhow::Result<api::accounts::Account> {
    store
        .find_account(&who.trim().to_lowercase())
        .await?
        .ok_or_else(|| anyhow::anyhow!("no account {who:?} (give its id or e-mail address; `dsa accounts list`)"))
}

async fn accounts(settings: Settings, action: Accounts, json: bool) -> anyhow::Result<()> {
    use api::accounts::AccountState;
    let store = open_store(&settings).await?;
    match action {
        Accounts::List => {
            let accounts = store.list_accounts().await?;
            let keys = store.list_keys().await?;
            let count = |id: &str| keys.iter().filter(|k| k.account_id.as_deref() == Some(id)).count();
            if json {
                let list = accounts
                    .iter()
                    .map(|a| {
                        let mut v = serde_json::to_value(a).unwrap_or_default();
                        v["keys"] = count(&a.id).into();
                        v
                    })
                    .collect();
                return print_json(&serde_json::Value::Array(list));
            }
            println!("{:<36} {:<32} {:<9} {:>4}  {:<10}  name", "id", "e-mail", "state", "keys", "created");
            for a in &accounts {
                println!(
                    "{:<36} {:<32} {:<9} {:>4}  {:<10}  {}",
                    a.id,
                    a.email,
                    a.state.as_str(),
                    count(&a.id),
                    a.created_at.get(..10).unwrap_or(&a.created_at),
                    a.display_name
                );
            }
            if accounts.is_empty() {
                eprintln!("no accounts yet; owners sign up at /account/signup");
            }
        }
        Accounts::Show { account } => {
            let a = find_account(store.as_ref(), &account).await?;
            let keys = store.account_keys(&a.id).await?;
            let mut usages = Vec::new();
            for k in &keys {
                usages.push(Usage::of(store.as_ref(), k, this_month()).await?);
            }
            if json {
                let mut v = serde_json::to_value(&a)?;
                v["keys"] = keys
                    .iter()
                    .zip(&usages)
                    .map(|(k, u)| {
                        let mut kv = key_json(k);
                        kv["usage"] = u.json();
                        kv
                    })
                    .collect();
                return print_json(&v);
            }
            println!("account   {}", a.id);
            println!("e-mail    {}", a.email);
            println!("name      {}", a.display_name);
            println!("state     {}", a.state.as_str());
            println!("created   {}", a.created_at);
            for (k, u) in keys.iter().zip(&usages) {
                println!(
                    "key       {} {:<6} {:<9} {:<8} used {} of {} this month",
                    k.fingerprint,
                    k.kind.as_str(),
                    k.state.as_str(),
                    k.plan.as_str(),
                    u.used,
                    k.monthly_allowance
                );
            }
        }
        Accounts::Disable { account } => {
            let a = find_account(store.as_ref(), &account).await?;
            store.set_account_state(&a.id, AccountState::Disabled).await?;
            eprintln!("account {} ({}) disabled; its sessions ended", a.id, a.email);
        }
        Accounts::Enable { account } => {
            let a = find_account(store.as_ref(), &account).await?;
            store.set_account_state(&a.id, AccountState::Active).await?;
            eprintln!("account {} ({}) enabled", a.id, a.email);
        }
        Accounts::ResetLink { account } => {
            let a = find_account(store.as_ref(), &account).await?;
            let base = settings
                .policy
                .portal
                .public_url
                .clone()
                .unwrap_or_else(|| format!("http://{}", settings.server.listen));
            let link = api::portal::reset_link(store.as_ref(), &settings.policy.portal, &base, &a.id).await?;
            println!("{link}");
            eprintln!(
                "one-time reset link for {} valid {} s; it ends every session of the account when used",
                a.email, settings.policy.portal.reset_token_secs
            );
        }
    }
    Ok(())
}

fn print_json(value: &serde_json::Value) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

fn print_key(k: &KeyRecord) {
    println!("{:<20}{}", "key", k.fingerprint);
    println!("{:<20}{}", "id", k.id);
    println!("{:<20}{}", "kind", k.kind.as_str());
    println!("{:<20}{}", "state", k.state.as_str());
    println!("{:<20}{}", "plan", k.plan.as_str());
    println!("{:<20}{} credits", "monthly allowance", k.monthly_allowance);
    println!("{:<20}{}", "pricing", on_off(k.pricing_enabled));
    println!("{:<20}{}", "purchase button", on_off(k.show_purchase_button));
    println!(
        "{:<20}{}",
        "default commission",
        k.default_commission_percent.map_or_else(|| "none".to_owned(), |c| format!("{c}%"))
    );
    println!("{:<20}{}", "purchase url", k.purchase_url.as_deref().unwrap_or("none"));
    match (k.allowed_origins.as_slice(), k.kind) {
        ([], KeyKind::Embed) => println!("{:<20}none: any origin is accepted", "allowed origins"),
        ([], KeyKind::Server) => println!("{:<20}none (server keys are refused from browsers)", "allowed origins"),
        (origins, _) => {
            for (i, origin) in origins.iter().enumerate() {
                println!("{:<20}{origin}", if i == 0 { "allowed origins" } else { "" });
            }
        }
    }
    println!("{:<20}{}", "label", k.label);
    println!("{:<20}{}", "created", k.created_at);
}

/// A key's settled usage in one period.
struct Usage {
    period: String,
    used: i64,
    remaining: i64,
    by_endpoint: Vec<(String, i64)>,
}

impl Usage {
    async fn of(store: &dyn Store, key: &KeyRecord, period: String) -> anyhow::Result<Self> {
        let used = store.settled_usage(&key.id, &period).await?;
        let by_endpoint = store.usage_by_endpoint(&key.id, &period).await?;
        // Remaining is measured against today's allowance, also for past months.
        Ok(Self { remaining: (key.monthly_allowance - used).max(0), used, by_endpoint, period })
    }

    fn json(&self) -> serde_json::Value {
        let by_endpoint: serde_json::Map<String, serde_json::Value> =
            self.by_endpoint.iter().map(|(e, c)| (e.clone(), (*c).into())).collect();
        serde_json::json!({
            "period": self.period,
            "used": self.used,
            "remaining": self.remaining,
            "by_endpoint": by_endpoint,
        })
    }

    fn print(&self, key: &KeyRecord) {
        println!("usage of {} in {} (UTC)", key.fingerprint, self.period);
        println!("  {:<18}{:>9}", "used", self.used);
        println!("  {:<18}{:>9}", "allowance", key.monthly_allowance);
        println!("  {:<18}{:>9}", "remaining", self.remaining);
        if self.by_endpoint.is_empty() {
            println!("  no charges");
        } else {
            println!("  {:<18}{:>9}", "endpoint", "credits");
            for (endpoint, credits) in &self.by_endpoint {
                println!("  {endpoint:<18}{credits:>9}");
            }
        }
    }
}

fn this_month() -> String {
    common::messages::billing_period(time::OffsetDateTime::now_utc())
}

async fn keys(settings: Settings, action: Keys, json: bool) -> anyhow::Result<()> {
    let store = open_store(&settings).await?;
    match action {
        Keys::Create { kind, plan, pricing, purchase_button, commission, purchase_url, origins, label } => {
            if kind == KeyKind::Server && !origins.is_empty() {
                eprintln!(
                    "note: server keys are refused from browsers whatever their allowed origins; --origin matters for embed keys"
                );
            }
            let mut allowed_origins: Vec<String> = Vec::new();
            for origin in origins {
                if !allowed_origins.contains(&origin) {
                    allowed_origins.push(origin);
                }
            }
            let (key, key_hash) = api::keys::generate(kind);
            let record = store
                .create_key(NewKey {
                    key_hash,
                    kind,
                    plan,
                    pricing_enabled: pricing,
                    show_purchase_button: purchase_button,
                    default_commission_percent: commission,
                    purchase_url,
                    allowed_origins,
                    label,
                })
                .await?;
            if json {
                let mut value = key_json(&record);
                value["key"] = key.into();
                print_json(&value)?;
            } else {
                println!("{key}");
            }
            eprintln!(
                "created {} key {} ({} plan, {} credits a month); the key is shown only now",
                kind.as_str(),
                record.fingerprint,
                plan.as_str(),
                record.monthly_allowance
            );
        }
        Keys::List => {
            let keys = store.list_keys().await?;
            if json {
                return print_json(&keys.iter().map(key_json).collect());
            }
            // The owning account's e-mail address ("-": an operator key).
            let owners: std::collections::HashMap<String, String> = match store.list_accounts().await {
                Ok(accounts) => accounts.into_iter().map(|a| (a.id, a.email)).collect(),
                Err(_) => std::collections::HashMap::new(),
            };
            println!(
                "{:<10} {:<7} {:<10} {:<9} {:>9}  {:<10}  {:<28}  label",
                "key", "kind", "state", "plan", "allowance", "created", "account"
            );
            for k in &keys {
                let created = k.created_at.get(..10).unwrap_or(&k.created_at);
                let owner = k.account_id.as_ref().map_or("-", |id| owners.get(id).map_or(id.as_str(), String::as_str));
                println!(
                    "{:<10} {:<7} {:<10} {:<9} {:>9}  {:<10}  {:<28}  {}",
                    k.fingerprint,
                    k.kind.as_str(),
                    k.state.as_str(),
                    k.plan.as_str(),
                    k.monthly_allowance,
                    created,
                    owner,
                    k.label
                );
            }
            if keys.is_empty() {
                eprintln!("no keys yet; create one with `dsa keys create`");
            }
        }
        Keys::Show { key } => {
            let record = resolve(store.as_ref(), &key).await?;
            let usage = Usage::of(store.as_ref(), &record, this_month()).await?;
            if json {
                let mut value = key_json(&record);
                value["usage"] = usage.json();
                print_json(&value)?;
            } else {
                print_key(&record);
                usage.print(&record);
            }
        }
        Keys::Set {
            key,
            plan,
            pricing,
            purchase_button,
            commission,
            purchase_url,
            origins,
            remove_origins,
            clear_origins,
            label,
        } => {
            let record = resolve(store.as_ref(), &key).await?;
            let allowed_origins = if clear_origins || !origins.is_empty() || !remove_origins.is_empty() {
                // Entries stored before origins were validated are compared in normalised form.
                let same =
                    |have: &String, want: &String| api::keys::parse_origin(have).as_ref().unwrap_or(have) == want;
                let mut list = if clear_origins { Vec::new() } else { record.allowed_origins.clone() };
                for gone in &remove_origins {
                    let before = list.len();
                    list.retain(|have| !same(have, gone));
                    if list.len() == before && !clear_origins {
                        anyhow::bail!("--remove-origin {gone}: not in the key's allowed origins");
                    }
                }
                for origin in origins {
                    if !list.iter().any(|have| same(have, &origin)) {
                        list.push(origin);
                    }
                }
                if record.kind == KeyKind::Server && !list.is_empty() {
                    eprintln!(
                        "note: server keys are refused from browsers whatever their allowed origins; --origin matters for embed keys"
                    );
                }
                Some(list)
            } else {
                None
            };
            let update = KeyUpdate {
                plan,
                pricing_enabled: pricing,
                show_purchase_button: purchase_button,
                default_commission_percent: commission.map(Clearable::into_option),
                purchase_url: purchase_url.map(Clearable::into_option),
                allowed_origins,
                label,
            };
            if update.is_empty() {
                anyhow::bail!(
                    "nothing to change: give at least one of --plan, --pricing, --purchase-button, --commission, --purchase-url, --origin, --remove-origin, --clear-origins, --label"
                );
            }
            let updated = store
                .update_key(&record.id, update)
                .await?
                .ok_or_else(|| anyhow::anyhow!("key {} was deleted meanwhile", record.fingerprint))?;
            if json {
                print_json(&key_json(&updated))?;
            } else {
                print_changes(&record, &updated);
            }
        }
        Keys::Disable { key } => set_state(store.as_ref(), &key, KeyState::Disabled, json).await?,
        Keys::Suspend { key } => set_state(store.as_ref(), &key, KeyState::Suspended, json).await?,
        Keys::Enable { key } => set_state(store.as_ref(), &key, KeyState::Active, json).await?,
    }
    Ok(())
}

/// Prints `fingerprint: field old → new` for every setting that changed.
fn print_changes(before: &KeyRecord, after: &KeyRecord) {
    let (old, new) = (key_json(before), key_json(after));
    let mut changed = false;
    if let (Some(old), Some(new)) = (old.as_object(), new.as_object()) {
        for (field, value) in new {
            let was = old.get(field).unwrap_or(&serde_json::Value::Null);
            if was != value {
                changed = true;
                println!("{}: {field} {was} → {value}", after.fingerprint);
            }
        }
    }
    if !changed {
        println!("{}: no change", after.fingerprint);
    }
}

async fn set_state(store: &dyn Store, key: &str, state: KeyState, json: bool) -> anyhow::Result<()> {
    let record = resolve(store, key).await?;
    // By id, so a fingerprint shared by two keys can never change both.
    if !store.set_key_state(&record.id, state).await? {
        anyhow::bail!("key {} was deleted meanwhile", record.fingerprint);
    }
    if json {
        let updated = store
            .find_key_by_ref(&record.id)
            .await?
            .ok_or_else(|| anyhow::anyhow!("key {} was deleted meanwhile", record.fingerprint))?;
        print_json(&key_json(&updated))
    } else {
        println!(
            "{}: {} → {} (a running server notices within 5 s)",
            record.fingerprint,
            record.state.as_str(),
            state.as_str()
        );
        Ok(())
    }
}

async fn usage(settings: Settings, key: &str, period: Option<String>, json: bool) -> anyhow::Result<()> {
    let store = open_store(&settings).await?;
    let record = resolve(store.as_ref(), key).await?;
    let usage = Usage::of(store.as_ref(), &record, period.unwrap_or_else(this_month)).await?;
    if json {
        let mut value = usage.json();
        value["id"] = record.id.clone().into();
        value["fingerprint"] = record.fingerprint.clone().into();
        value["monthly_allowance"] = record.monthly_allowance.into();
        print_json(&value)
    } else {
        usage.print(&record);
        Ok(())
    }
}
