//! The `dsa` command: runs the service (standalone by default) and the operator tools.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use api::config::Settings;
use api::keys::{KeyKind, Plan};
use api::store::{NewKey, SqliteStore, Store};
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
    /// Checks domains with the engine directly and prints each verdict with its evidence.
    Check {
        /// Domains (or URLs) to check.
        #[arg(required = true)]
        domains: Vec<String>,
        /// Print JSON lines instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Reads a saved raw registry answer and prints its classification and the fields read (JSON).
    Explain {
        #[command(subcommand)]
        what: Explain,
    },
    /// Manages client keys.
    Keys {
        #[command(subcommand)]
        action: Keys,
    },
    /// Manages the price table.
    Prices {
        #[command(subcommand)]
        action: Prices,
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
    /// Creates a key and prints it once.
    Create {
        /// embed (browser-side) or server (secret).
        #[arg(long, default_value = "server")]
        kind: String,
        /// free, starter, pro or reseller.
        #[arg(long, default_value = "free")]
        plan: String,
        /// Responses carry pricing.
        #[arg(long)]
        pricing: bool,
        /// Responses carry a purchase button (needs --purchase-url or redirect_url).
        #[arg(long)]
        purchase_button: bool,
        /// Default commission, percent.
        #[arg(long)]
        commission: Option<f64>,
        /// Checkout URL.
        #[arg(long)]
        purchase_url: Option<String>,
        /// Allowed origin (repeatable).
        #[arg(long = "origin")]
        origins: Vec<String>,
        /// Label.
        #[arg(long, default_value = "")]
        label: String,
    },
    /// Lists keys (fingerprints, never the keys).
    List,
    /// Disables a key (by id or fingerprint).
    Disable {
        /// Key id or fingerprint.
        key: String,
    },
    /// Suspends a key.
    Suspend {
        /// Key id or fingerprint.
        key: String,
    },
    /// Re-enables a key.
    Enable {
        /// Key id or fingerprint.
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
        Command::Check { domains, json } => check(settings, domains, json).await,
        Command::Explain { what } => explain(what).map(|()| ExitCode::SUCCESS),
        Command::Keys { action } => keys(settings, action).await.map(|()| ExitCode::SUCCESS),
        Command::Prices { action: Prices::Import { porkbun, as_of, out } } => {
            let text = std::fs::read_to_string(&porkbun)?;
            let import = api::pricing::PriceTable::import_porkbun(&text)?;
            let mut provenance = import.table.provenance().clone();
            provenance.sample = false;
            if let Some(date) = as_of {
                let format = time::macros::format_description!("[year]-[month]-[day]");
                provenance.as_of = Some(time::Date::parse(&date, &format).map_err(|e| anyhow::anyhow!("--as-of {date}: {e}"))?);
            }
            let table = import.table.with_provenance(provenance);
            std::fs::write(&out, table.to_json()?)?;
            println!("wrote {} prices to {} ({} entries skipped: not in the IANA root zone)", table.len(), out.display(), import.skipped.len());
            Ok(ExitCode::SUCCESS)
        }
    }
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
    let tls = settings.server.tls_cert.is_some() && settings.server.tls_key.is_some();
    let hsts = tls.then_some(settings.server.hsts_max_age_secs);
    let router = api::router(app.state.clone(), hsts);
    let shutdown = async {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        {
            let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => return,
            };
            tokio::select! { _ = ctrl_c => {}, _ = term.recv() => {} }
        }
        #[cfg(not(unix))]
        let _ = ctrl_c.await;
    };
    if let (true, Some(cert), Some(key)) = (tls, &settings.server.tls_cert, &settings.server.tls_key) {
        let tls_config = axum_server::tls_rustls::RustlsConfig::from_pem_file(cert, key)
            .await
            .map_err(|e| anyhow::anyhow!("server.tls_cert/tls_key: {e}"))?;
        let handle = axum_server::Handle::new();
        let h = handle.clone();
        tokio::spawn(async move {
            shutdown.await;
            h.graceful_shutdown(Some(std::time::Duration::from_secs(10)));
        });
        tracing::info!(listen = %settings.server.listen, ready_ms = started.elapsed().as_millis() as u64, "dsa standalone listening (https)");
        axum_server::bind_rustls(settings.server.listen, tls_config).handle(handle).serve(router.into_make_service()).await?;
    } else {
        let listener = TcpListener::bind(settings.server.listen)
            .await
            .map_err(|e| anyhow::anyhow!("server.listen {}: {e}", settings.server.listen))?;
        tracing::info!(listen = %listener.local_addr()?, ready_ms = started.elapsed().as_millis() as u64, "dsa standalone listening (http)");
        api::serve(listener, router, shutdown).await?;
    }
    let api::Standalone { state, ledger, .. } = app;
    drop(state);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), ledger).await;
    tracing::info!("stopped; ledger drained");
    Ok(())
}

async fn check(settings: Settings, domains: Vec<String>, json: bool) -> anyhow::Result<ExitCode> {
    let engine = Engine::new(settings.engine)?;
    let mut all_ok = true;
    for input in domains {
        let domain = match engine.parse(&input) {
            Ok(d) => d,
            Err(e) => {
                all_ok = false;
                if json {
                    println!("{}", serde_json::json!({ "input": input, "error": e.to_string() }));
                } else {
                    println!("{input}: {e}");
                }
                continue;
            }
        };
        match engine.check_uncached(&domain).await {
            Ok(report) => {
                if json {
                    println!("{}", serde_json::to_string(&report)?);
                } else {
                    let v = &report.verdict;
                    println!("{}  {:?}  via {:?}{}", v.domain, v.status, v.method, if v.authoritative { " (authoritative)" } else { "" });
                    for step in &report.steps {
                        println!("    {:<5} {:<28} {}", step.protocol.as_str(), step.upstream, step.outcome);
                    }
                    println!("    evidence: {}", v.evidence);
                }
                all_ok &= report.verdict.status.is_definitive();
            }
            Err(e) => {
                all_ok = false;
                if json {
                    println!("{}", serde_json::json!({ "input": input, "error": e.to_string() }));
                } else {
                    println!("{input}: {e}");
                }
            }
        }
    }
    Ok(if all_ok { ExitCode::SUCCESS } else { ExitCode::from(2) })
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

async fn keys(settings: Settings, action: Keys) -> anyhow::Result<()> {
    let store = SqliteStore::connect(&settings.database.url, 1).await?;
    store.migrate().await?;
    match action {
        Keys::Create { kind, plan, pricing, purchase_button, commission, purchase_url, origins, label } => {
            let kind = KeyKind::parse(&kind).ok_or_else(|| anyhow::anyhow!("--kind must be embed or server"))?;
            let plan = Plan::parse(&plan).ok_or_else(|| anyhow::anyhow!("--plan must be free, starter, pro or reseller"))?;
            if let Some(c) = commission {
                api::pricing::CommissionPercent::new(c)?;
            }
            if let Some(u) = &purchase_url {
                api::purchase::CheckoutUrl::parse(u)?;
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
                    allowed_origins: origins,
                    label,
                })
                .await?;
            println!("{key}");
            eprintln!("created {} key {} ({} plan, {} credits a month); the key is shown only now", kind.as_str(), record.fingerprint, plan.as_str(), record.monthly_allowance);
        }
        Keys::List => {
            println!("{:<10} {:<7} {:<10} {:<9} {:>9}  label", "key", "kind", "state", "plan", "allowance");
            for k in store.list_keys().await? {
                println!("{:<10} {:<7} {:<10} {:<9} {:>9}  {}", k.fingerprint, k.kind.as_str(), k.state.as_str(), k.plan.as_str(), k.monthly_allowance, k.label);
            }
        }
        Keys::Disable { key } => set_state(&store, &key, api::keys::KeyState::Disabled).await?,
        Keys::Suspend { key } => set_state(&store, &key, api::keys::KeyState::Suspended).await?,
        Keys::Enable { key } => set_state(&store, &key, api::keys::KeyState::Active).await?,
    }
    Ok(())
}

async fn set_state(store: &SqliteStore, key: &str, state: api::keys::KeyState) -> anyhow::Result<()> {
    if store.set_key_state(key, state).await? {
        println!("{key}: {}", state.as_str());
        Ok(())
    } else {
        anyhow::bail!("no key with id or fingerprint {key}")
    }
}
