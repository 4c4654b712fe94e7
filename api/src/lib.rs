//! dsa's HTTP front and standalone mode.
//!
//! The crate is grouped by what each part serves; no module imports another around a circle (a
//! test checks it):
//!
//! * [`front`] — the front's request path: routes, policy (keys, origins, limits, demo mode,
//!   shedding), the application state, the job bus client, credits and the front's side of the
//!   ledger, errors, the OpenAPI document, logs and metrics;
//! * [`portal`] — the account portal and its accounts;
//! * [`pricing`] — price tables, commissions and purchase URLs;
//! * [`suggest`] — name suggestions;
//! * [`mcp`] — the MCP server for AI agents (`/mcp` and `dsa mcp`), its tools running the REST
//!   endpoints' code;
//! * [`store`] — keys, accounts and the ledger in SQLite or Postgres;
//! * [`fleet`] — the fleet's role launchers (front, worker, ledger); [`serve`] and [`standalone`]
//!   here launch standalone mode; the `dsa` command line (`src/cli/`) is the binary's.
//! * [`config`] and [`secret`] — the settings.
//!
//! The path of a check in standalone mode:
//!
//! ```text
//! HTTP GET /v1/domains/check ─► routes::check
//!     ├─ routes::keyed (middleware)  key → KeyRecord (403), origin (403), per-minute limit (429)
//!     ├─ credits::Credits::reserve   monthly allowance (429)
//!     ├─ routes::check::evaluate     verdict: front cache ─ or ─ single-flight job on the bus
//!     │                              (dispatch::InProcessBus ─► worker task ─► engine probes);
//!     │                              no answer → last known verdict within its bound, else 502
//!     ├─ pricing::quote / purchase   price table, commission, checkout URL
//!     └─ credits::Reservation::commit ─► ledger::run ─► store (ledger_entries + key_usage);
//!                                    the answer waits until the charge is committed (group commit)
//! ```
//!
//! `/v1/whois` and `/v1/dns` ([`routes::whois`], [`routes::dns`]) share the keyed prelude and the
//! credits and put their own job kinds on the bus; `/v1/domains/suggest` ([`routes::suggest`],
//! generation in [`suggest`]) is computed in the front; `/v1/tlds` ([`routes::tlds`]) is free.
//!
//! A bulk check (`GET|POST /v1/domains/bulk`, [`routes::bulk`]) runs the same path for up to ten
//! names at once: one credit hold for all of them, then every check concurrently, each charged
//! only for a definitive verdict.
//!
//! Watches (`/v1/watches`, [`routes::watches`], [`watches`]) follow a name's lifecycle: a
//! scheduler in `dsa serve` and every `dsa front` leases due watches in the store, re-checks them
//! as `watch` jobs on the bus and records one event per change ([`events`]).
//!
//! A bulk job (`/v1/jobs`, [`front::bulk_jobs`]) takes up to 100,000 names: the upload is
//! streamed into the store, the whole cost held, and a runner in every front process checks the
//! names in the background through the same [`routes::check::evaluate`], charging each once.
//!
//! Owners manage their keys in the account portal (`/account`, [`portal`]): accounts and sessions
//! in the same store ([`accounts`]), pages rendered on the server, no metered call.
//!
//! [`serve`] takes an already bound listener and a shutdown future, so tests bind port 0.

#![allow(clippy::module_name_repetitions)]

pub mod config;
pub mod events;
pub mod fleet;
pub mod front;
pub mod mcp;
pub mod portal;
pub mod pricing;
pub mod secret;
pub use workers::singleflight;
pub mod store;
pub mod suggest;
pub mod watches;
pub mod webhooks;

// The paths of the modules before they were grouped (issue 24), kept for the crate's users.
pub use front::{credits, dispatch, error, keys, ledger, openapi, origin, policy, routes, state, telemetry};
pub use portal::accounts;
pub use pricing::purchase;
pub use store::postgres as store_pg;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use axum::routing::get;
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::TraceLayer;
use workers::engine::Engine;

use crate::config::Settings;
use crate::front::credits::Credits;
use crate::front::dispatch::InProcessBus;
use crate::front::error::{ApiError, error_response};
use crate::front::keys::{KeyKind, Plan};
use crate::front::state::{AppState, Parts};
use crate::pricing::PriceTable;
use crate::pricing::purchase::CheckoutUrl;
use crate::store::{NewKey, SqliteStore, Store};

/// Builds the router over a state (no listener; tests drive it with `oneshot`).
pub fn router(state: AppState, hsts_max_age_secs: Option<u64>) -> Router {
    // Install the metrics recorder before the first request counts anything.
    telemetry::prometheus();
    let request_id = HeaderName::from_static("x-request-id");
    let cors = CorsLayer::new()
        .allow_origin(AllowOrigin::mirror_request())
        .allow_methods([Method::GET, Method::POST, Method::DELETE, Method::OPTIONS])
        // `Authorization` and the MCP headers for browser MCP clients on `/mcp` (embed keys).
        .allow_headers([
            header::CONTENT_TYPE,
            header::AUTHORIZATION,
            HeaderName::from_static("mcp-protocol-version"),
            HeaderName::from_static("mcp-method"),
            HeaderName::from_static("mcp-name"),
        ])
        // What a browser script may read: the IETF RateLimit fields of every metered answer, the
        // wait of a 429/503, and the request id to quote in a support request.
        .expose_headers([
            header::RETRY_AFTER,
            request_id,
            HeaderName::from_static("ratelimit"),
            HeaderName::from_static("ratelimit-policy"),
        ])
        .max_age(std::time::Duration::from_secs(600));
    // Metered endpoints: the keyed prelude (key → origin → per-minute limit → rate headers).
    let metered = Router::new()
        .route("/v1/domains/check", get(routes::check::check).fallback(method_not_allowed))
        .route("/domain-check", get(routes::domain_check::domain_check).fallback(method_not_allowed))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), routes::keyed::key_or_demo));
    // Record lookups and bulk checks: key required (no demo mode), each kind on its own queue of
    // the bus (a bulk's checks go on the check queue, all at once).
    let lookups = Router::new()
        .route(
            "/v1/domains/bulk",
            get(routes::bulk::bulk_get).post(routes::bulk::bulk_post).fallback(method_not_allowed),
        )
        .route("/v1/whois", get(routes::whois::whois).fallback(method_not_allowed))
        .route("/v1/dns", get(routes::dns::dns).fallback(method_not_allowed))
        .route("/v1/domains/suggest", get(routes::suggest::suggest).fallback(method_not_allowed))
        .merge(webhook_routes())
        // Watches (our extension): server keys only, answered from the store.
        .route("/v1/watches", get(routes::watches::list).post(routes::watches::create).fallback(method_not_allowed))
        .route(
            "/v1/watches/{id}",
            get(routes::watches::get_one).delete(routes::watches::delete).fallback(method_not_allowed),
        )
        .route("/v1/watches/{id}/events", get(routes::watches::events).fallback(method_not_allowed))
        // Bulk jobs (issue 26): server keys only, checked in the handlers.
        .route("/v1/jobs", get(front::bulk_jobs::routes::list).fallback(method_not_allowed))
        .route(
            "/v1/jobs/bulk-check",
            axum::routing::post(front::bulk_jobs::routes::submit).fallback(method_not_allowed),
        )
        .route(
            "/v1/jobs/{id}",
            get(front::bulk_jobs::routes::get_job)
                .delete(front::bulk_jobs::routes::cancel)
                .fallback(method_not_allowed),
        )
        .route("/v1/jobs/{id}/results", get(front::bulk_jobs::routes::results).fallback(method_not_allowed))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), routes::keyed::require_key));
    let docs: Router<AppState> =
        utoipa_swagger_ui::SwaggerUi::new("/docs").url("/v1/openapi.json", openapi::document().clone()).into();
    let portal = if state.policy().portal.enabled { portal::router() } else { Router::new() };
    let mut router = Router::new()
        .merge(portal)
        .merge(metered)
        .merge(lookups)
        // MCP for AI agents: the same tools and credits over the Streamable HTTP transport.
        .merge(mcp::http::routes(&state))
        .merge(docs)
        .route("/", get(routes::front::front_page))
        .route("/widget.js", get(routes::front::widget_js))
        .route("/assets/front.css", get(routes::front::front_stylesheet))
        // Free: the catalogue and its live health describe the service, not a domain.
        .route("/v1/tlds", get(routes::tlds::list).fallback(method_not_allowed))
        .route("/v1/tlds/{tld}", get(routes::tlds::detail).fallback(method_not_allowed))
        .route("/readyz", get(routes::health::readyz))
        .route_layer(axum::middleware::from_fn(telemetry::record_request))
        .fallback(not_found)
        .with_state(state.clone());
    // Liveness and metrics are never refused (`policy/pressure.rs` does not shed them either):
    // outside the in-flight cap below, inside everything else.
    let liveness = Router::new()
        .route("/healthz", get(routes::health::healthz))
        .route("/metrics", get(routes::health::metrics))
        .route_layer(axum::middleware::from_fn(telemetry::record_request))
        .with_state(state.clone());
    // Every request ends within `server.request_timeout_secs` (500 in the spec's shape, never a
    // hung connection); past `policy.max_in_flight` requests at once, a fast 503 with
    // Retry-After instead of an unbounded queue. Both inside CORS, so browsers can read them.
    // One cap for the whole front: a router's layer is applied to each route (and method)
    // separately, and `ConcurrencyLimitLayer` would give each its own `max_in_flight`.
    let max_in_flight = state.policy().max_in_flight;
    let guard = tower::ServiceBuilder::new()
        .layer(axum::error_handling::HandleErrorLayer::new(|e: tower::BoxError| async move {
            if e.is::<tower::timeout::error::Elapsed>() { ApiError::TimedOut } else { ApiError::Overloaded }
        }))
        .option_layer((max_in_flight > 0).then(tower::load_shed::LoadShedLayer::new))
        .option_layer((max_in_flight > 0).then(|| tower::limit::GlobalConcurrencyLimitLayer::new(max_in_flight)))
        .timeout(state.request_timeout());
    router = router.layer(guard).merge(liveness);
    let router = router
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(TraceLayer::new_for_http().make_span_with(|req: &axum::http::Request<_>| {
            let id = req.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("-");
            tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), request_id = %id)
        }))
        .layer(axum::middleware::from_fn(telemetry::request_id));
    // Outermost but for CORS (browsers read the 503 too), so that a refused request costs as
    // little CPU as possible: shedding on scheduling lag (`policy/pressure.rs`).
    let limits = state.policy();
    let pressure = policy::pressure::Pressure::start(
        std::time::Duration::from_millis(limits.shed_scheduling_lag_ms),
        limits.shed_min_in_flight,
        limits.max_in_flight,
        Some(state.credits().ledger().clone()),
    );
    let mut router = router.layer(axum::middleware::from_fn_with_state(pressure, policy::pressure::shed)).layer(cors);
    if let Some(max_age) = hsts_max_age_secs
        && let Ok(value) = HeaderValue::from_str(&format!("max-age={max_age}; includeSubDomains"))
    {
        router = router.layer(SetResponseHeaderLayer::if_not_present(header::STRICT_TRANSPORT_SECURITY, value));
    }
    router
}

/// `/v1/webhooks` (server keys; the keyed prelude is the caller's layer).
fn webhook_routes() -> Router<AppState> {
    use axum::routing::post;
    use routes::webhooks as w;
    Router::new()
        .route("/v1/webhooks", post(w::create).get(w::list).fallback(method_not_allowed))
        .route("/v1/webhooks/{id}", get(w::get_one).delete(w::delete).fallback(method_not_allowed))
        .route("/v1/webhooks/{id}/deliveries", get(w::deliveries).fallback(method_not_allowed))
        .route("/v1/webhooks/{id}/deliveries/{delivery_id}/retry", post(w::retry).fallback(method_not_allowed))
        .route("/v1/webhooks/{id}/test", post(w::test).fallback(method_not_allowed))
        .route("/v1/webhooks/{id}/rotate-secret", post(w::rotate_secret).fallback(method_not_allowed))
        .route("/v1/webhooks/{id}/enable", post(w::enable).fallback(method_not_allowed))
}

async fn not_found() -> ApiError {
    ApiError::NotFound
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("handler panicked");
    error_response(StatusCode::INTERNAL_SERVER_ERROR, "Internal server error; retry after a short delay.")
}

/// A running standalone application: its state and the ledger consumer to drain at shutdown.
pub struct Standalone {
    /// Shared state (drop it, and every clone, to close the ledger channel).
    pub state: AppState,
    /// The ledger consumer; finishes once the state is dropped and every event is applied.
    pub ledger: tokio::task::JoinHandle<()>,
    /// The store.
    pub store: Arc<dyn Store>,
}

impl Standalone {
    /// Stops standalone mode once the HTTP server (or MCP session) has ended: drops the state,
    /// which closes the ledger queue, waits (at most [`SHUTDOWN_WAIT`]) until every queued charge
    /// is applied and confirmed, then closes the store's connections ([`Store::close`], also
    /// bounded by [`SHUTDOWN_WAIT`]), so the SQLite file is whole on its own once the process
    /// has exited.
    pub async fn shut_down(self) {
        let Self { state, ledger, store } = self;
        drop(state);
        if tokio::time::timeout(SHUTDOWN_WAIT, ledger).await.is_err() {
            tracing::warn!("the ledger did not drain in {SHUTDOWN_WAIT:?}");
        }
        if tokio::time::timeout(SHUTDOWN_WAIT, store.close()).await.is_err() {
            tracing::warn!("the store's connections did not close in {SHUTDOWN_WAIT:?}");
        }
    }
}

/// The longest [`Standalone::shut_down`] waits for the ledger to drain, and then for the store's
/// connections to close.
pub const SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Assembles standalone mode: SQLite store (migrated), engine, in-process bus, credits, ledger.
///
/// # Errors
/// Storage, catalogue, price table or URL configuration errors, each naming the setting.
pub async fn standalone(settings: &Settings) -> anyhow::Result<Standalone> {
    standalone_with_clock(settings, state::system_clock()).await
}

/// [`standalone`] with an injected clock (tests cross minute and month boundaries with it).
///
/// # Errors
/// As [`standalone`].
pub async fn standalone_with_clock(settings: &Settings, clock: state::Clock) -> anyhow::Result<Standalone> {
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::connect(settings.database.url.expose(), settings.database.max_connections).await.map_err(|e| {
            anyhow::anyhow!("database.url {}: {e}", common::nats_auth::redact_url(settings.database.url.expose()))
        })?,
    );
    standalone_with_store(settings, store, clock).await
}

/// [`standalone_with_clock`] over a store opened by the caller (tests run the portal on Postgres
/// this way); the store is migrated here.
///
/// # Errors
/// As [`standalone`].
pub async fn standalone_with_store(
    settings: &Settings,
    store: Arc<dyn Store>,
    clock: state::Clock,
) -> anyhow::Result<Standalone> {
    assemble(settings, store, clock, None).await
}

/// [`standalone`] for a process that shares its store with another running instance (`dsa mcp`
/// beside `dsa serve`): like a fleet front, it re-reads the credits the other instance settled
/// every `fleet.credits_refresh_ms`, so its view of a key's allowance lags by at most that much.
///
/// # Errors
/// As [`standalone`].
pub async fn standalone_beside_others(settings: &Settings) -> anyhow::Result<Standalone> {
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::connect(settings.database.url.expose(), settings.database.max_connections).await.map_err(|e| {
            anyhow::anyhow!("database.url {}: {e}", common::nats_auth::redact_url(settings.database.url.expose()))
        })?,
    );
    let refresh = std::time::Duration::from_millis(settings.fleet.credits_refresh_ms.max(1));
    assemble(settings, store, state::system_clock(), Some(refresh)).await
}

async fn assemble(
    settings: &Settings,
    store: Arc<dyn Store>,
    clock: state::Clock,
    credits_refresh: Option<std::time::Duration>,
) -> anyhow::Result<Standalone> {
    store.migrate().await?;
    // One engine, shared by the in-process workers; the front reads its verdict book.
    let engine = Engine::new(settings.engine.clone())?;
    let book = engine.book().clone();
    let lookups = workers::lookup::Lookups::new(engine).map_err(|e| anyhow::anyhow!("engine.records: {e}"))?;
    let jobs = workers::jobs::Jobs::new(lookups);
    let bus = Arc::new(InProcessBus::start(jobs, &settings.jobs.kinds(), settings.jobs.queue));
    let (ledger_tx, ledger_rx) = ledger::queue(ledger::QUEUE_CAPACITY);
    let ledger = tokio::spawn(ledger::run(store.clone(), ledger_rx));
    let (prices, platform_checkout) = pricing_parts(settings)?;
    let state = AppState::new(Parts {
        book,
        bus,
        store: store.clone(),
        credits: Credits::new(
            store.clone(),
            ledger_tx,
            &format!("standalone-{}", uuid::Uuid::now_v7().simple()),
            credits_refresh,
        ),
        prices,
        platform_checkout,
        policy: settings.policy.clone(),
        clock,
        tls: settings.server.tls_cert.is_some() && settings.server.tls_key.is_some(),
        request_timeout: std::time::Duration::from_secs_f64(settings.server.request_timeout_secs.max(0.1)),
        rate: policy::RateWindows::local(),
        demo_bucket: None,
        demo_secret: store.shared_secret("demo_cookie").await?,
        webhooks: settings.webhooks.clone(),
    });
    // Webhook deliveries (issue 25): the loop ends when the store is dropped.
    webhooks::deliver::spawn(&store, settings.webhooks.clone(), state.clock());
    state.set_watches_config(settings.watches.clone());
    front::bulk_jobs::runner::spawn(&state, state.credits().front());
    Ok(Standalone { state, ledger, store })
}

/// The price table and platform checkout URL named by the settings (shared by every front).
///
/// # Errors
/// A message naming `pricing.table` or `pricing.platform_checkout_url`.
pub fn pricing_parts(settings: &Settings) -> anyhow::Result<(PriceTable, Option<CheckoutUrl>)> {
    let prices = match &settings.pricing.table {
        Some(path) => PriceTable::load(path).map_err(|e| anyhow::anyhow!("pricing.table {}: {e}", path.display()))?,
        None => PriceTable::embedded()?,
    };
    if prices.provenance().sample {
        tracing::warn!("serving the shipped SAMPLE price table; set pricing.table to your own prices");
    }
    let platform_checkout = settings
        .pricing
        .platform_checkout_url
        .as_deref()
        .map(CheckoutUrl::parse)
        .transpose()
        .map_err(|e| anyhow::anyhow!("pricing.platform_checkout_url: {e}"))?;
    Ok((prices, platform_checkout))
}

/// Creates the development key on a first start (no key yet). Returns the key to print.
///
/// # Errors
/// Storage errors.
pub async fn ensure_dev_key(store: &dyn Store) -> anyhow::Result<Option<String>> {
    if !store.list_keys().await?.is_empty() {
        return Ok(None);
    }
    let (key, key_hash) = keys::generate(KeyKind::Server);
    store
        .create_key(NewKey {
            key_hash,
            kind: KeyKind::Server,
            plan: Plan::Free,
            pricing_enabled: true,
            show_purchase_button: true,
            default_commission_percent: None,
            purchase_url: Some("https://checkout.example/register".into()),
            allowed_origins: Vec::new(),
            label: "development key (created on first start)".into(),
        })
        .await?;
    Ok(Some(key))
}

/// Starts this process's watch scheduler over `state`'s store, job bus and clock (`dsa serve`,
/// every `dsa front`), unless `watches.scheduler` is off. Dropping the handle stops it.
pub fn start_watch_scheduler(
    state: &AppState,
    settings: &Settings,
    role: &str,
) -> Option<watches::scheduler::Scheduler> {
    settings.watches.scheduler.then(|| {
        watches::scheduler::start(
            state.store().clone(),
            state.bus_handle(),
            state.clock(),
            settings.watches.clone(),
            format!("{role}-{}", uuid::Uuid::now_v7().simple()),
        )
    })
}

/// Serves `router` on `listener` until `shutdown` resolves, then drains in-flight requests.
///
/// # Errors
/// I/O errors of the listener.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router.into_make_service_with_connect_info::<std::net::SocketAddr>())
        .with_graceful_shutdown(shutdown)
        .await
}
