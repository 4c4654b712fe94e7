//! Logs (tracing) and metrics (Prometheus).

use std::sync::OnceLock;

use axum::http::HeaderValue;
use common::request_id::{self, RequestId};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;

/// Installs the log subscriber: `RUST_LOG`-style filter (`DSA_LOG` first), JSON lines when
/// `DSA_LOG_FORMAT=json`. Safe to call more than once.
pub fn init_logs() {
    let filter = std::env::var("DSA_LOG")
        .ok()
        .and_then(|s| EnvFilter::try_new(s).ok())
        .unwrap_or_else(|| EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")));
    // Colours only on a terminal: a log written to a file, a pipe or the journal carried ANSI
    // escape codes around every field name and level.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    let _ = if std::env::var("DSA_LOG_FORMAT").as_deref() == Ok("json") {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

/// How often the recorder's histograms are drained into their summaries when nobody scrapes
/// `/metrics` (the exporter's own default interval).
pub const METRICS_UPKEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// The process-wide Prometheus recorder (installed on first use), with a thread that runs its
/// upkeep every [`METRICS_UPKEEP_EVERY`].
///
/// A recorder built this way (`build_recorder`) keeps every histogram sample until something
/// drains it: a scrape does, and so does `PrometheusHandle::run_upkeep`. Without the upkeep
/// thread, a process nobody scrapes grows by a few hundred bytes per request for as long as it
/// runs (a 100,000-name bulk job added about 100 MiB).
pub fn prometheus() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        let _ = metrics::set_global_recorder(recorder);
        let upkeep = handle.clone();
        // A plain thread: the recorder may be made before (or outside) any async runtime.
        let spawned = std::thread::Builder::new().name("dsa-metrics-upkeep".into()).spawn(move || {
            loop {
                std::thread::sleep(METRICS_UPKEEP_EVERY);
                upkeep.run_upkeep();
            }
        });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "metrics upkeep thread not started; histograms drain only when scraped");
        }
        handle
    })
}

/// Middleware giving every request its id (`common::request_id`): the client's `x-request-id`
/// when well formed ([`RequestId::parse`]: at most 64 bytes of letters, digits, `-_.:`), a new
/// UUID v7 otherwise. The id is set on the request (so the `request` span and the handlers see the
/// validated id, never hostile bytes), is the task's current id while the request is served (the
/// jobs and ledger events it causes carry it), and is echoed in the answer's `x-request-id`.
pub async fn request_id(mut request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    let id = request
        .headers()
        .get(request_id::HTTP_HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(RequestId::parse)
        .unwrap_or_else(RequestId::generate);
    // Always a valid header value: the id is printable ASCII by construction.
    let value = HeaderValue::from_str(id.as_str()).ok();
    match &value {
        Some(v) => request.headers_mut().insert(request_id::HTTP_HEADER, v.clone()),
        None => request.headers_mut().remove(request_id::HTTP_HEADER),
    };
    let mut response = request_id::scope(id, next.run(request)).await;
    if let Some(v) = value {
        response.headers_mut().insert(request_id::HTTP_HEADER, v);
    }
    response
}

/// Middleware recording `dsa_http_requests_total{route,status}` and
/// `dsa_http_request_seconds{route}` (the matched route, never the raw path or query, so client
/// keys and domains stay out of metric labels).
pub async fn record_request(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    let route = request.extensions().get::<axum::extract::MatchedPath>().cloned();
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    let route = route.as_ref().map_or("unmatched", |p| p.as_str());
    let metrics = RouteMetrics::of(route);
    metrics.requests(response.status()).increment(1);
    metrics.seconds.record(started.elapsed().as_secs_f64());
    response
}

/// The metric handles of one route, made once: building a labelled metric's key (label strings,
/// hashing, the registry's look-up) on every request cost more than the increment itself.
struct RouteMetrics {
    route: String,
    seconds: metrics::Histogram,
    /// One counter per status answered; few statuses per route, so a list.
    by_status: std::sync::RwLock<Vec<(u16, metrics::Counter)>>,
}

impl RouteMetrics {
    /// The handles of `route` (a matched route pattern or `unmatched`: a bounded set).
    fn of(route: &str) -> std::sync::Arc<RouteMetrics> {
        type Routes = std::sync::RwLock<Vec<std::sync::Arc<RouteMetrics>>>;
        static ROUTES: OnceLock<Routes> = OnceLock::new();
        let routes = ROUTES.get_or_init(Default::default);
        let read = |r: &[std::sync::Arc<RouteMetrics>]| r.iter().find(|m| m.route == route).cloned();
        if let Some(m) = read(&routes.read().unwrap_or_else(std::sync::PoisonError::into_inner)) {
            return m;
        }
        let mut routes = routes.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(m) = read(&routes) {
            return m;
        }
        let m = std::sync::Arc::new(RouteMetrics {
            route: route.to_owned(),
            seconds: metrics::histogram!("dsa_http_request_seconds", "route" => route.to_owned()),
            by_status: Default::default(),
        });
        routes.push(m.clone());
        m
    }

    /// The `dsa_http_requests_total` counter of this route and `status`.
    fn requests(&self, status: axum::http::StatusCode) -> metrics::Counter {
        let code = status.as_u16();
        let find = |l: &[(u16, metrics::Counter)]| l.iter().find(|(c, _)| *c == code).map(|(_, m)| m.clone());
        if let Some(c) = find(&self.by_status.read().unwrap_or_else(std::sync::PoisonError::into_inner)) {
            return c;
        }
        let mut list = self.by_status.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(c) = find(&list) {
            return c;
        }
        let counter = metrics::counter!("dsa_http_requests_total", "route" => self.route.clone(), "status" => status.as_str().to_owned());
        list.push((code, counter.clone()));
        counter
    }
}
