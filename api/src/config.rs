//! Typed configuration: defaults → file → environment (`DSA_…`, `__` for nesting).
//!
//! `DSA_CONFIG` (or `--config`) names the file; `dsa.sample.toml` at the repository root lists
//! every knob with its default. Start-up fails with a message naming the bad setting.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};
use workers::config::EngineConfig;

pub use crate::secret::Secret;

/// Everything dsa reads at start-up.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// HTTP listener.
    pub server: ServerConfig,
    /// Key and ledger storage.
    pub database: DatabaseConfig,
    /// The availability engine (upstreams, limits, cache).
    pub engine: EngineConfig,
    /// Prices and checkout.
    pub pricing: PricingConfig,
    /// The in-process job bus of standalone mode.
    pub jobs: JobsConfig,
    /// First-run conveniences of standalone mode.
    pub bootstrap: BootstrapConfig,
    /// Rate limits, demo mode, origin defaults.
    pub policy: crate::front::policy::PolicyConfig,
    /// Fleet mode (`dsa front`, `dsa worker`, `dsa ledger`): NATS JetStream and Postgres.
    pub fleet: FleetConfig,
    /// Webhook deliveries (issue 25).
    pub webhooks: crate::webhooks::WebhookConfig,
    /// Watches (`/v1/watches`): the monthly fee and the re-check scheduler.
    pub watches: crate::watches::WatchesConfig,
}

/// Fleet settings. The fleet's `database.url` must be a `postgres://` URL.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FleetConfig {
    /// NATS server URL (JetStream enabled; KV needs nats-server ≥ 2.10). It may carry the role's
    /// credentials (`nats://dsa-worker:PASSWORD@host:4222`), hence a [`Secret`].
    pub nats_url: Secret,
    /// Prefix of every stream, subject and bucket name (several deployments on one NATS).
    pub prefix: String,
    /// Availability-check jobs a worker process runs at once.
    pub worker_concurrency: usize,
    /// WHOIS jobs a worker process runs at once (its own slots: slow registries never take the
    /// checks' slots).
    pub whois_concurrency: usize,
    /// DNS jobs a worker process runs at once.
    pub dns_concurrency: usize,
    /// Watch re-check jobs a worker process runs at once (few: watches yield to users' lookups).
    pub watch_concurrency: usize,
    /// Kinds of lookup `dsa worker` serves (comma-separated: `check,whois,dns,watch`); `--kinds`
    /// overrides it.
    pub worker_kinds: String,
    /// How often a front re-reads other fronts' settled charges, milliseconds (the overspend
    /// bound grows with it).
    pub credits_refresh_ms: u64,
    /// Hold the per-upstream rate limits fleet-wide through the NATS KV bucket.
    pub fleet_rate_limits: bool,
    /// A job held this long by a worker without progress is redelivered, seconds.
    pub job_ack_wait_secs: f64,
    /// A ledger batch held this long without an ack is redelivered, seconds.
    pub ledger_ack_wait_secs: f64,
    /// Most jobs the jobs stream holds; beyond it a publish is refused (`discard: new`) and the
    /// front answers 502 at once instead of queueing without bound.
    pub jobs_max_msgs: i64,
    /// Most bytes the jobs stream holds (same refusal beyond it).
    pub jobs_max_bytes: i64,
    /// Replicas of every stream and KV bucket when a role creates it: 1 on a single NATS
    /// server, 3 on a three-server cluster (the fleet then keeps serving when one server is
    /// lost). An existing stream or bucket keeps its own count.
    pub replicas: usize,
    /// Replicas of the ledger stream when a role creates it, at least `replicas`: 1 on a single
    /// NATS server, 3 in a production cluster (an acked charge then survives the loss of a server).
    pub ledger_replicas: usize,
}

impl FleetConfig {
    /// The consumers' timing.
    pub fn tuning(&self) -> workers::fleet::Tuning {
        workers::fleet::Tuning {
            job_ack_wait_secs: self.job_ack_wait_secs,
            ledger_ack_wait_secs: self.ledger_ack_wait_secs,
            jobs_max_msgs: self.jobs_max_msgs,
            jobs_max_bytes: self.jobs_max_bytes,
            replicas: self.replicas,
            ledger_replicas: self.ledger_replicas,
        }
    }
}

impl Default for FleetConfig {
    fn default() -> Self {
        Self {
            nats_url: "nats://127.0.0.1:4222".into(),
            prefix: String::new(),
            worker_concurrency: 64,
            whois_concurrency: 16,
            dns_concurrency: 64,
            watch_concurrency: 4,
            worker_kinds: "check,whois,dns,watch".into(),
            credits_refresh_ms: 1000,
            fleet_rate_limits: true,
            job_ack_wait_secs: 3.0,
            ledger_ack_wait_secs: 10.0,
            jobs_max_msgs: workers::fleet::JOBS_MAX_MSGS,
            jobs_max_bytes: workers::fleet::JOBS_MAX_BYTES,
            replicas: 1,
            ledger_replicas: 1,
        }
    }
}

/// HTTP listener settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// TLS certificate chain (PEM). With `tls_key`, the server speaks HTTPS only; production must
    /// run on TLS (spec §1), directly or behind a TLS-terminating proxy.
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    pub tls_key: Option<PathBuf>,
    /// Send `Strict-Transport-Security` (only when TLS is on), seconds of `max-age`.
    pub hsts_max_age_secs: u64,
    /// Longest time one request may take, seconds (beyond: 500 in the spec's shape).
    pub request_timeout_secs: f64,
    /// Where `/healthz` and `/metrics` are served for operators. For `dsa worker` and
    /// `dsa ledger` (none: not served); for `dsa serve` and `dsa front`, the only place
    /// `/metrics` is served unless `public_metrics` is on.
    pub admin_listen: Option<SocketAddr>,
    /// Also serve `/metrics` on the public listener (`dsa serve`, `dsa front`). Off by default:
    /// the metrics are operational data (per-endpoint counts, upstream health, ledger lag), and
    /// the public listener answers `/metrics` with a 404.
    pub public_metrics: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            tls_cert: None,
            tls_key: None,
            hsts_max_age_secs: 31_536_000,
            request_timeout_secs: 30.0,
            admin_listen: None,
            public_metrics: false,
        }
    }
}

/// Storage settings. `Debug` shows the URL with its password replaced by `***`.
#[derive(Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseConfig {
    /// sqlx URL. Standalone default: a SQLite file in the working directory. A Postgres URL
    /// carries a password, hence a [`Secret`]: never echo it; show
    /// [`common::nats_auth::redact_url`] of [`Secret::expose`] where a message must name it.
    pub url: Secret,
    /// Pool size.
    pub max_connections: u32,
}

impl std::fmt::Debug for DatabaseConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseConfig")
            .field("url", &common::nats_auth::redact_url(self.url.expose()))
            .field("max_connections", &self.max_connections)
            .finish()
    }
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        Self { url: "sqlite://dsa.db?mode=rwc".into(), max_connections: 5 }
    }
}

/// Prices and checkout settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default, deny_unknown_fields)]
pub struct PricingConfig {
    /// Price table file (JSON or CSV, see `docs/operators.md`, "Prices"); default: the shipped sample table.
    pub table: Option<PathBuf>,
    /// The platform's checkout URL, used when a request says `redirect_checkout=1`.
    pub platform_checkout_url: Option<String>,
}

/// In-process job bus (standalone mode).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct JobsConfig {
    /// Worker tasks running availability checks.
    pub workers: usize,
    /// Worker tasks running WHOIS lookups (their own queue and tasks).
    pub whois_workers: usize,
    /// Worker tasks running DNS lookups (their own queue and tasks).
    pub dns_workers: usize,
    /// Worker tasks running watch re-checks (their own queue and tasks; few, so that watches
    /// yield to users' lookups).
    pub watch_workers: usize,
    /// Jobs waiting at most per kind; beyond, requests get 502 at once (back-pressure).
    pub queue: usize,
}

impl Default for JobsConfig {
    fn default() -> Self {
        Self { workers: 64, whois_workers: 16, dns_workers: 64, watch_workers: 4, queue: 4096 }
    }
}

impl JobsConfig {
    /// Worker tasks per kind of lookup for the in-process bus.
    pub fn kinds(&self) -> Vec<(common::lookup::LookupKind, usize)> {
        use common::lookup::LookupKind;
        vec![
            (LookupKind::Check, self.workers),
            (LookupKind::Whois, self.whois_workers),
            (LookupKind::Dns, self.dns_workers),
            (LookupKind::Watch, self.watch_workers),
        ]
    }
}

impl FleetConfig {
    /// The kinds `dsa worker` serves, each with its concurrency.
    ///
    /// # Errors
    /// A message naming `fleet.worker_kinds` for an unknown kind.
    pub fn worker_kinds(&self) -> anyhow::Result<Vec<(common::lookup::LookupKind, usize)>> {
        use common::lookup::LookupKind;
        let kinds =
            LookupKind::parse_list(&self.worker_kinds).map_err(|e| anyhow::anyhow!("fleet.worker_kinds: {e}"))?;
        Ok(kinds
            .into_iter()
            .map(|k| {
                let n = match k {
                    LookupKind::Check => self.worker_concurrency,
                    LookupKind::Whois => self.whois_concurrency,
                    LookupKind::Dns => self.dns_concurrency,
                    LookupKind::Watch => self.watch_concurrency,
                };
                (k, n)
            })
            .collect())
    }
}

/// First-run conveniences.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct BootstrapConfig {
    /// On a first start with no key in the database, create a development server key and print it.
    pub create_dev_key: bool,
}

impl Default for BootstrapConfig {
    fn default() -> Self {
        Self { create_dev_key: true }
    }
}

impl Settings {
    /// Loads defaults, then `file` (if any; else `DSA_CONFIG`; else `dsa.toml` when present), then
    /// `DSA_…` environment variables (`DSA_SERVER__LISTEN=0.0.0.0:8080`).
    ///
    /// # Errors
    /// A message naming the file or the setting that is wrong.
    pub fn load(file: Option<&Path>) -> anyhow::Result<Self> {
        let mut figment = Figment::from(Serialized::defaults(Settings::default()));
        let env_file = std::env::var_os("DSA_CONFIG").map(PathBuf::from);
        let chosen = file.map(Path::to_path_buf).or(env_file);
        match chosen {
            Some(path) => {
                if !path.exists() {
                    anyhow::bail!("config file {} does not exist", path.display());
                }
                figment = figment.merge(Toml::file(path));
            }
            None if Path::new("dsa.toml").exists() => figment = figment.merge(Toml::file("dsa.toml")),
            None => {}
        }
        // Only variables naming a section are settings; DSA_CONFIG, DSA_LOG, DSA_LOG_FORMAT and
        // DSA_TEST_DATA (tests) are read elsewhere. The sections are the struct's own fields, so a
        // new one is reachable from the environment without a list to keep in step.
        let sections: Vec<String> = match serde_json::to_value(Settings::default()) {
            Ok(serde_json::Value::Object(fields)) => fields.keys().map(|s| format!("{s}__")).collect(),
            _ => Vec::new(),
        };
        figment = figment.merge(
            Env::prefixed("DSA_")
                .filter(move |key| {
                    let key = key.as_str().to_ascii_lowercase();
                    sections.iter().any(|s| key.starts_with(s.as_str()))
                })
                .split("__"),
        );
        figment.extract().map_err(|e| anyhow::anyhow!("bad configuration: {e}"))
    }
}
