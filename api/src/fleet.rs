//! Fleet mode: the same check flow as standalone, distributed over NATS JetStream and Postgres.
//!
//! * `dsa front`: the HTTP front, with a verdict book ([`workers::book::VerdictBook`]) and no
//!   engine (it builds no probe); jobs to workers through [`crate::front::dispatch::NatsBus`], charges
//!   stored in the ledger stream through [`crate::front::ledger::forward`] before each answer, keys and
//!   settled usage from Postgres.
//! * `dsa worker`: the worker pool ([`workers::fleet::run_pool`], every job handled by
//!   [`workers::jobs`]) for the kinds of lookup in
//!   `fleet.worker_kinds` (`--kinds`), per-upstream limits held fleet-wide in the NATS KV bucket
//!   ([`workers::fleet::FleetBudget`], set on the engine as its upstream budget), self-correcting
//!   routing shared in another ([`workers::fleet::FleetRoutes`]).
//! * `dsa ledger`: the ledger consumer ([`workers::ledger::consume`]) settling charges in Postgres.
//!
//! Every role declares the streams, consumers and bucket idempotently at start.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use common::nats_auth::FleetRole;
use common::subjects::Names;
use workers::book::VerdictBook;
use workers::engine::Engine;

use crate::config::Settings;
use crate::front::credits::Credits;
use crate::front::dispatch::NatsBus;
use crate::front::state::{AppState, Clock, Parts};
use crate::store::Store;
use crate::store::postgres::PgStore;

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// Connects to NATS with a bounded first connection and endless reconnects afterwards, with
/// `inbox` as the client's inbox prefix (the role's, [`FleetRole::inbox`]: the server lets each
/// role subscribe to its own inboxes only, see `common::nats_auth`).
///
/// `url` is one server or a cluster's servers separated by commas
/// (`nats://n1:4222,nats://n2:4222,nats://n3:4222`); the client connects to any of them and moves
/// to another when its server goes away. Credentials may ride in any of them.
///
/// # Errors
/// When NATS cannot be reached within 5 s.
pub async fn connect_nats(url: &str, inbox: &str) -> anyhow::Result<async_nats::Client> {
    connect_nats_within(url, inbox, Some(Duration::from_secs(5))).await
}

/// As [`connect_nats`], waiting for the first connection as long as `patience` (`None`: until
/// it comes, logging a warning every 5 s).
///
/// # Errors
/// When the URL is malformed, or NATS cannot be reached within `patience`.
pub async fn connect_nats_within(
    url: &str,
    inbox: &str,
    patience: Option<Duration>,
) -> anyhow::Result<async_nats::Client> {
    let shown = url.split(',').map(|u| common::nats_auth::redact_url(u.trim())).collect::<Vec<_>>().join(",");
    // Per-role credentials ride in the URL (`nats://dsa-worker:PASSWORD@host:4222`, see
    // nats/README.md); async-nats takes them as options, so they are moved out of the URLs.
    let mut credentials = None;
    let mut servers = Vec::new();
    for part in url.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match url::Url::parse(part) {
            Ok(mut parsed) if !parsed.username().is_empty() => {
                let user = percent_decode(parsed.username());
                let password = percent_decode(parsed.password().unwrap_or(""));
                credentials.get_or_insert((user, password));
                let _ = parsed.set_username("");
                let _ = parsed.set_password(None);
                servers.push(parsed.to_string());
            }
            _ => servers.push(part.to_owned()),
        }
    }
    let addrs: Vec<async_nats::ServerAddr> = servers
        .iter()
        .map(|s| s.parse::<async_nats::ServerAddr>())
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!("fleet.nats_url {shown}: {e}"))?;
    if addrs.is_empty() {
        anyhow::bail!("fleet.nats_url is empty");
    }
    let options = match credentials {
        Some((user, password)) => async_nats::ConnectOptions::with_user_and_password(user, password),
        None => async_nats::ConnectOptions::new(),
    };
    let options = options
        .custom_inbox_prefix(inbox)
        .connection_timeout(Duration::from_secs(5))
        .retry_on_initial_connect()
        .max_reconnects(None);
    let client = tokio::time::timeout(Duration::from_secs(5), async { options.connect(addrs).await })
        .await
        .map_err(|_| anyhow::anyhow!("fleet.nats_url {shown}: no connection within 5 s"))?
        .map_err(|e| anyhow::anyhow!("fleet.nats_url {shown}: {e}"))?;
    // retry_on_initial_connect returns at once; wait for the first connection.
    let started = std::time::Instant::now();
    let mut warned = Duration::ZERO;
    while client.connection_state() != async_nats::connection::State::Connected {
        let waited = started.elapsed();
        match patience {
            Some(limit) if waited > limit => anyhow::bail!(
                "fleet.nats_url {shown}: no connection within {} s (wrong credentials also end here)",
                limit.as_secs()
            ),
            None if waited >= warned + Duration::from_secs(5) => {
                warned = waited;
                tracing::warn!(nats_url = %shown, waited_secs = waited.as_secs(), "waiting for NATS (wrong credentials also end here)");
            }
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(client)
}

/// Connects to NATS as `role` and declares the streams, consumers and buckets the role relies on.
///
/// # Errors
/// When NATS cannot be reached or refuses a definition.
async fn join(
    settings: &Settings,
    role: FleetRole,
) -> anyhow::Result<(Names, async_nats::Client, async_nats::jetstream::Context)> {
    // A front waits for NATS as long as it takes (it answers 503 meanwhile, see `dsa front`);
    // a worker or ledger consumer with nothing to do without NATS fails fast and is restarted.
    let patience = (role != FleetRole::Front).then_some(Duration::from_secs(5));
    let names = Names::with_prefix(&settings.fleet.prefix);
    let nats = connect_nats_within(settings.fleet.nats_url.expose(), role.inbox(&names), patience).await?;
    let js = async_nats::jetstream::new(nats.clone());
    workers::fleet::streams::declare_role(&js, &names, settings.fleet.tuning(), role).await?;
    Ok((names, nats, js))
}

/// Connects and migrates the fleet's Postgres.
///
/// # Errors
/// When the URL is not Postgres or the database is unreachable.
pub async fn connect_pg(settings: &Settings) -> anyhow::Result<Arc<dyn Store>> {
    let url = settings.database.url.expose();
    if !url.starts_with("postgres://") && !url.starts_with("postgresql://") {
        anyhow::bail!("database.url must be a postgres:// URL in fleet mode");
    }
    let store = PgStore::connect(url, settings.database.max_connections)
        .await
        .map_err(|e| anyhow::anyhow!("database.url: {e}"))?;
    store.migrate().await?;
    Ok(Arc::new(store))
}

/// How often a front reads the ledger stream's oldest unsettled charge.
const UNSETTLED_WATCH: Duration = Duration::from_secs(15);

/// A running fleet front: its state and the ledger forwarder to drain at shutdown.
pub struct FleetFront {
    /// Shared state (drop every clone to close the ledger channel).
    pub state: AppState,
    /// Publishes charges to the ledger stream; finishes once the state is dropped and the charges
    /// in flight are acked or refused.
    pub forwarder: tokio::task::JoinHandle<()>,
    /// The store (Postgres).
    pub store: Arc<dyn Store>,
    /// The NATS client.
    pub nats: async_nats::Client,
}

/// Assembles a fleet front. Waits for NATS as long as it takes (a front started before its bus
/// answers 503 meanwhile, see [`joining_router`]); charges JetStream does not acknowledge in time
/// are applied to Postgres directly ([`crate::front::ledger::forward`]).
///
/// # Errors
/// A malformed NATS URL, Postgres, catalogue or configuration errors, naming the setting.
pub async fn front(settings: &Settings, clock: Clock) -> anyhow::Result<FleetFront> {
    let (names, nats, js) = join(settings, FleetRole::Front).await?;
    let store = connect_pg(settings).await?;
    // The front probes nothing: a verdict book (catalogue, cache, health, routes), no engine.
    let book = workers::book::VerdictBook::new(settings.engine.clone())?;
    // `GET /v1/tlds/{tld}` shows the fleet's routing state (the workers write it).
    share_routing(&book, &js, &names).await;
    let bus = Arc::new(NatsBus::start(nats.clone(), &names).await?);
    let (ledger_tx, ledger_rx) = crate::front::ledger::queue(crate::front::ledger::QUEUE_CAPACITY);
    let forwarder = tokio::spawn(crate::front::ledger::forward(
        js.clone(),
        names.ledger_charge.clone(),
        Some(store.clone()),
        ledger_rx,
    ));
    // The settlement lag as the stream sees it, exported by every front (the ledger consumer may
    // be the one that is down).
    tokio::spawn(crate::front::ledger::watch_unsettled(js.clone(), names.ledger_stream.clone(), UNSETTLED_WATCH));
    let (prices, platform_checkout) = crate::pricing_parts(settings)?;
    let front_id = format!("front-{}", uuid::Uuid::now_v7().simple());
    let refresh = Duration::from_millis(settings.fleet.credits_refresh_ms.max(1));
    let rate = crate::front::policy::RateWindows::fleet(nats.clone(), &js, &names.rate_bucket).await?;
    let demo_bucket = js
        .get_key_value(&names.demo_bucket)
        .await
        .map_err(|e| anyhow::anyhow!("demo bucket {}: {e}", names.demo_bucket))?;
    let state = AppState::new(Parts {
        book,
        bus,
        store: store.clone(),
        credits: Credits::new(store.clone(), ledger_tx, &front_id, Some(refresh)),
        prices,
        platform_checkout,
        policy: settings.policy.clone(),
        clock,
        tls: settings.server.tls_cert.is_some() && settings.server.tls_key.is_some(),
        request_timeout: std::time::Duration::from_secs_f64(settings.server.request_timeout_secs.max(0.1)),
        rate,
        demo_bucket: Some((demo_bucket, nats.clone())),
        demo_secret: store.shared_secret("demo_cookie").await?,
        webhooks: settings.webhooks.clone(),
    });
    // Webhook deliveries (issue 25): every front runs the loop; leases in Postgres share the work.
    crate::webhooks::deliver::spawn(&store, settings.webhooks.clone(), state.clock());
    state.set_watches_config(settings.watches.clone());
    crate::front::bulk_jobs::runner::spawn(&state, &front_id);
    Ok(FleetFront { state, forwarder, store, nats })
}

/// Runs a worker process until `shutdown`, then drains.
///
/// # Errors
/// NATS or engine errors at start.
pub async fn worker(
    settings: &Settings,
    stats: Arc<workers::fleet::PoolStats>,
    shutdown: impl Future<Output = ()> + Send,
) -> anyhow::Result<()> {
    let kinds = settings.fleet.worker_kinds()?;
    let (names, nats, js) = join(settings, FleetRole::Worker).await?;
    let engine = Engine::new(settings.engine.clone())?;
    if settings.fleet.fleet_rate_limits {
        engine.set_upstream_budget(Arc::new(workers::fleet::FleetBudget::open(&js, &names).await?));
    }
    share_routing(engine.book(), &js, &names).await;
    let lookups = workers::lookup::Lookups::new(engine).map_err(|e| anyhow::anyhow!("engine.records: {e}"))?;
    workers::fleet::run_pool(nats, names, lookups, &kinds, stats, settings.fleet.tuning(), shutdown).await?;
    Ok(())
}

/// Keeps `book`'s self-correcting routing decisions in the fleet's routing bucket; without the
/// bucket (an older server, missing permissions) they stay in process, with a warning.
async fn share_routing(book: &VerdictBook, js: &async_nats::jetstream::Context, names: &Names) {
    match workers::fleet::FleetRoutes::open(js, &names.routing_bucket).await {
        Ok(routes) => book.set_route_book(Arc::new(routes)),
        Err(e) => tracing::warn!(error = %e, bucket = %names.routing_bucket, "routing decisions stay per process"),
    }
}

/// Runs the ledger consumer until `shutdown`.
///
/// # Errors
/// NATS or Postgres errors at start.
pub async fn ledger(
    settings: &Settings,
    stats: Arc<workers::ledger::ConsumerStats>,
    shutdown: impl Future<Output = ()> + Send,
) -> anyhow::Result<()> {
    let (names, _nats, js) = join(settings, FleetRole::Ledger).await?;
    let store = connect_pg(settings).await?;
    workers::ledger::consume(js, names, store, stats, shutdown).await
}

/// What a front serves while it is still joining the fleet (NATS unreachable at start): `/healthz`
/// 200 (the process is alive), `/readyz` 503, and every other path a 503 in the API's error shape
/// with `Retry-After`, so that clients and load balancers see a front that is coming up rather
/// than a refused connection. Every answer closes its connection, so no client keeps one to this
/// stand-in once the real API serves on the same socket.
pub fn joining_router() -> axum::Router {
    use axum::http::{HeaderValue, StatusCode, header};
    use axum::response::IntoResponse;
    async fn not_ready() -> axum::response::Response {
        let body = serde_json::json!({
            "success": false,
            "error": "Service starting: not yet connected to the job bus; retry after the time in Retry-After.",
        });
        (StatusCode::SERVICE_UNAVAILABLE, [(header::RETRY_AFTER, "1")], axum::Json(body)).into_response()
    }
    async fn close(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
        let mut response = next.run(request).await;
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
    }
    axum::Router::new()
        .route("/healthz", axum::routing::get(crate::routes::health::healthz))
        .route("/readyz", axum::routing::get(not_ready))
        .fallback(not_ready)
        .layer(axum::middleware::from_fn(close))
}
