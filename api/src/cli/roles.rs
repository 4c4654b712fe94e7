//! The long-running roles: `dsa serve` (standalone, the default), and the fleet's `front`,
//! `worker` and `ledger`.

use std::future::Future;

use api::config::Settings;
use tokio::net::TcpListener;

/// Runs `dsa serve`: front, workers and ledger in one process.
pub(crate) async fn serve(settings: Settings) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let app = api::standalone(&settings).await?;
    if settings.bootstrap.create_dev_key
        && let Some(key) = api::ensure_dev_key(app.store.as_ref()).await?
    {
        let addr = settings.server.listen;
        eprintln!("\nCreated a development key (shown once; keep it secret):\n\n    {key}\n");
        eprintln!("Try:\n    curl 'http://{addr}/v1/domains/check?client_key={key}&domain=example.com'\n");
    }
    let scheduler = api::start_watch_scheduler(&app.state, &settings, "standalone");
    serve_http(&settings, app.state.clone(), "standalone", started, None).await?;
    drop(scheduler);
    app.shut_down().await;
    tracing::info!("stopped; ledger drained");
    Ok(())
}

/// Runs `dsa front`: a fleet HTTP front.
///
/// The port is bound first, for HTTP and HTTPS alike: while the front joins the fleet (NATS
/// unreachable at start: it waits for it) it answers with [`api::fleet::joining_router`] (503,
/// `/healthz` 200), and then serves the API on the same socket, which never stops listening in
/// between.
pub(crate) async fn front(settings: Settings) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    // A bad certificate fails the start at once, before any waiting for the fleet.
    let tls = tls_config(&settings).await?;
    let listener = std::net::TcpListener::bind(settings.server.listen)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|e| anyhow::anyhow!("server.listen {}: {e}", settings.server.listen))?;
    // The same socket twice: the stand-in stops accepting on its copy while the other keeps the
    // socket listening, so a connection made in between waits in the backlog.
    let stand_in = Listener { socket: listener.try_clone()?, tls: tls.clone() };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    // Its answers close their connections, so a second is plenty for the last ones to go.
    let grace = std::time::Duration::from_secs(1);
    let joining = tokio::spawn(stand_in.stand_in(api::fleet::joining_router(), stopped, grace));
    let app = tokio::select! {
        app = api::fleet::front(&settings, api::state::system_clock()) => app?,
        () = shutdown_signal() => {
            tracing::info!("stopped before joining the fleet");
            return Ok(());
        }
    };
    // A fresh fleet gets its first key the way standalone does (one front creates it; the
    // others find it there).
    if settings.bootstrap.create_dev_key
        && let Some(key) = api::ensure_dev_key(app.store.as_ref()).await?
    {
        let addr = settings.server.listen;
        eprintln!("\nCreated the fleet's first key (shown once; keep it secret):\n\n    {key}\n");
        eprintln!("Try:\n    curl 'http://{addr}/v1/domains/check?client_key={key}&domain=example.com'\n");
    }
    // The stand-in stops accepting at once and answers what it accepted before (for at most
    // `grace`) beside the API, which takes the next connections from the same socket.
    let _ = stop.send(true);
    tokio::spawn(async move {
        if let Ok(Err(e)) = joining.await {
            tracing::warn!(error = %e, "the stand-in listener ended with an error");
        }
    });
    let scheduler = api::start_watch_scheduler(&app.state, &settings, "front");
    serve_http(&settings, app.state.clone(), "front", started, Some(Listener { socket: listener, tls })).await?;
    drop(scheduler);
    let api::fleet::FleetFront { state, forwarder, nats, .. } = app;
    drop(state);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), forwarder).await;
    let _ = nats.flush().await;
    tracing::info!("stopped; charges forwarded");
    Ok(())
}

/// The server's TLS configuration when `server.tls_cert` and `server.tls_key` are both set.
///
/// # Errors
/// A message naming the settings when the files cannot be read or do not hold a certificate
/// chain and its key.
async fn tls_config(settings: &Settings) -> anyhow::Result<Option<axum_server::tls_rustls::RustlsConfig>> {
    let (Some(cert), Some(key)) = (&settings.server.tls_cert, &settings.server.tls_key) else { return Ok(None) };
    axum_server::tls_rustls::RustlsConfig::from_pem_file(cert, key)
        .await
        .map(Some)
        .map_err(|e| anyhow::anyhow!("server.tls_cert/tls_key: {e}"))
}

/// A bound public socket and how it speaks: HTTPS with `tls`, else plain HTTP.
struct Listener {
    socket: std::net::TcpListener,
    tls: Option<axum_server::tls_rustls::RustlsConfig>,
}

impl Listener {
    /// Binds `server.listen` with the settings' TLS configuration.
    async fn bind(settings: &Settings) -> anyhow::Result<Self> {
        let tls = tls_config(settings).await?;
        let socket = std::net::TcpListener::bind(settings.server.listen)
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|e| anyhow::anyhow!("server.listen {}: {e}", settings.server.listen))?;
        Ok(Self { socket, tls })
    }

    /// Serves `router` (with the client's address) until `shutdown` resolves, then lets the
    /// requests in flight finish (HTTPS: for at most `grace`).
    async fn serve(
        self,
        router: axum::Router,
        shutdown: impl Future<Output = ()> + Send + 'static,
        grace: std::time::Duration,
    ) -> anyhow::Result<()> {
        match self.tls {
            Some(config) => {
                let handle = axum_server::Handle::new();
                let h = handle.clone();
                tokio::spawn(async move {
                    shutdown.await;
                    h.graceful_shutdown(Some(grace));
                });
                axum_server::from_tcp_rustls(self.socket, config)?
                    .handle(handle)
                    .serve(router.into_make_service_with_connect_info::<std::net::SocketAddr>())
                    .await?;
            }
            None => api::serve(TcpListener::from_std(self.socket)?, router, shutdown).await?,
        }
        Ok(())
    }
}

impl Listener {
    /// Serves `router` as a stand-in until `stop` is set (or its sender dropped), then stops
    /// accepting connections and answers those it accepted before for `grace` more, then closes
    /// what is left: the listening socket's other copy takes the next connections meanwhile.
    ///
    /// Plain HTTP stops accepting before any connection is told to shut down: hyper closes a
    /// connection told to shut down before its first request arrived, which refused the request
    /// of a client whose connection the stand-in had just accepted (the front's switch-over test
    /// saw one such in a rehearsal). HTTPS (`axum_server`) stops accepting and shuts its
    /// connections down together, for now.
    async fn stand_in(
        self,
        router: axum::Router,
        mut stop: tokio::sync::watch::Receiver<bool>,
        grace: std::time::Duration,
    ) -> anyhow::Result<()> {
        if self.tls.is_some() {
            let stopped = async move {
                let _ = stop.wait_for(|stopped| *stopped).await;
            };
            return self.serve(router, stopped, grace).await;
        }
        let listener = UntilStopped { inner: TcpListener::from_std(self.socket)?, stop: stop.clone() };
        let closing = async move {
            let _ = stop.wait_for(|stopped| *stopped).await;
            tokio::time::sleep(grace).await;
        };
        axum::serve(listener, router.into_make_service()).with_graceful_shutdown(closing).await?;
        Ok(())
    }
}

/// A listener that accepts until `stop` is set (or its sender dropped), then accepts nothing more:
/// the connections waiting are left in the socket's backlog for its other copy.
struct UntilStopped {
    inner: TcpListener,
    stop: tokio::sync::watch::Receiver<bool>,
}

impl axum::serve::Listener for UntilStopped {
    type Io = tokio::net::TcpStream;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        tokio::select! {
            // Checked first, so nothing is accepted once `stop` is set (accepting is cancel-safe:
            // a connection not taken stays in the backlog).
            biased;
            () = async { drop(self.stop.wait_for(|stopped| *stopped).await) } => std::future::pending().await,
            accepted = axum::serve::Listener::accept(&mut self.inner) => accepted,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// Serves the API over HTTP or HTTPS until a shutdown signal, then drains in-flight requests, on
/// `listener` when given (bound by the caller), else on `server.listen`.
async fn serve_http(
    settings: &Settings,
    state: api::state::AppState,
    role: &str,
    started: std::time::Instant,
    listener: Option<Listener>,
) -> anyhow::Result<()> {
    let tls = settings.server.tls_cert.is_some() && settings.server.tls_key.is_some();
    let hsts = tls.then_some(settings.server.hsts_max_age_secs);
    let mut router = api::router(state, hsts);
    admin(settings).await?;
    if !settings.server.public_metrics {
        // The metrics live on the admin listener (if any): the public one does not serve them.
        router = router.layer(axum::middleware::from_fn(metrics_not_public));
    }
    let listener = match listener {
        Some(listener) => listener,
        None => Listener::bind(settings).await?,
    };
    let scheme = if listener.tls.is_some() { "https" } else { "http" };
    tracing::info!(listen = %listener.socket.local_addr()?, ready_ms = started.elapsed().as_millis() as u64, role, "dsa listening ({scheme})");
    listener.serve(router, shutdown_signal(), std::time::Duration::from_secs(10)).await
}

/// Runs `dsa worker`: a fleet worker pool serving `kinds` (default `fleet.worker_kinds`).
pub(crate) async fn worker(mut settings: Settings, kinds: Option<String>) -> anyhow::Result<()> {
    if let Some(kinds) = kinds {
        common::lookup::LookupKind::parse_list(&kinds).map_err(|e| anyhow::anyhow!("--kinds: {e}"))?;
        settings.fleet.worker_kinds = kinds;
    }
    let stats = std::sync::Arc::new(workers::fleet::PoolStats::default());
    // The worker's own readiness: its pool's pull loops alive and fetching.
    let kinds = settings.fleet.worker_kinds()?.len();
    let pool = stats.clone();
    let readyz = axum::routing::get(move || {
        let pool = pool.clone();
        async move { api::routes::health::worker_readyz(&pool, kinds) }
    });
    admin_with(&settings, Some(readyz)).await?;
    api::fleet::worker(&settings, stats, shutdown_signal()).await
}

/// Runs `dsa ledger`: the fleet's ledger consumer.
pub(crate) async fn ledger(settings: Settings) -> anyhow::Result<()> {
    admin(&settings).await?;
    let stats = std::sync::Arc::new(api::ledger::ConsumerStats::default());
    api::fleet::ledger(&settings, stats, shutdown_signal()).await
}

/// Answers `/metrics` on the public listener with a 404 (spec §7 shape) unless
/// `server.public_metrics` is on: operational data (per-endpoint counts, upstream health) is not
/// for the public; operators read it on `server.admin_listen`.
async fn metrics_not_public(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    use axum::response::IntoResponse;
    if request.uri().path() == "/metrics" {
        let body = serde_json::json!({"success": false, "error": "Not found: /metrics is served to operators only."});
        return (axum::http::StatusCode::NOT_FOUND, axum::Json(body)).into_response();
    }
    next.run(request).await
}

/// Serves `/healthz` and `/metrics` on `server.admin_listen` (every role; for `serve` and `front`
/// the public listener then no longer serves `/metrics`).
async fn admin(settings: &Settings) -> anyhow::Result<()> {
    admin_with(settings, None).await
}

/// [`admin`], plus `/readyz` for a role without a public listener (a worker).
async fn admin_with(settings: &Settings, readyz: Option<axum::routing::MethodRouter>) -> anyhow::Result<()> {
    let Some(addr) = settings.server.admin_listen else { return Ok(()) };
    let listener = TcpListener::bind(addr).await.map_err(|e| anyhow::anyhow!("server.admin_listen {addr}: {e}"))?;
    api::telemetry::prometheus();
    let mut router = axum::Router::new()
        .route("/healthz", axum::routing::get(api::routes::health::healthz))
        .route("/metrics", axum::routing::get(api::routes::health::metrics));
    if let Some(readyz) = readyz {
        router = router.route("/readyz", readyz);
    }
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

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A client whose connection the stand-in accepted just before the front switched over
    /// still gets its answer (the stand-in's 503) on it, and the next connection waits in the
    /// backlog for the socket's other copy instead of going to the stand-in. Before, the switch
    /// shut every stand-in connection down, and hyper closes one that has not sent its request
    /// yet: the client's request was refused.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_stand_in_answers_what_it_accepted_before_it_stopped() {
        let socket = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        socket.set_nonblocking(true).expect("non-blocking");
        let addr = socket.local_addr().expect("address");
        let other_copy = socket.try_clone().expect("clone");
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let stand_in = Listener { socket, tls: None };
        let serving =
            tokio::spawn(stand_in.stand_in(api::fleet::joining_router(), stopped, std::time::Duration::from_secs(1)));
        // Connected and accepted (the stand-in answers on another connection meanwhile), no
        // request sent yet.
        let mut early = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let mut probe = tokio::net::TcpStream::connect(addr).await.expect("connect");
        probe.write_all(b"GET /readyz HTTP/1.1\r\nhost: x\r\n\r\n").await.expect("request");
        let mut answer = Vec::new();
        probe.read_to_end(&mut answer).await.expect("the stand-in answers and closes");
        assert!(answer.starts_with(b"HTTP/1.1 503"), "{}", String::from_utf8_lossy(&answer));
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        stop.send(true).expect("stop");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;

        early.write_all(b"GET /v1/domains/check HTTP/1.1\r\nhost: x\r\n\r\n").await.expect("request");
        let mut answer = Vec::new();
        let read = tokio::time::timeout(std::time::Duration::from_secs(5), early.read_to_end(&mut answer)).await;
        assert!(matches!(read, Ok(Ok(_))), "the connection was answered and closed: {read:?}");
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 503"), "the stand-in's answer: {answer}");

        // Stopped: a new connection is not accepted by the stand-in; it waits for the other copy.
        let mut late = tokio::net::TcpStream::connect(addr).await.expect("connect (backlog)");
        late.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n").await.expect("request");
        let mut byte = [0_u8; 1];
        let unanswered = tokio::time::timeout(std::time::Duration::from_millis(300), late.read(&mut byte)).await;
        assert!(unanswered.is_err(), "nothing answers a connection the stand-in no longer accepts");
        let (taken, _) =
            TcpListener::from_std(other_copy).expect("tokio").accept().await.expect("the other copy accepts it");
        drop(taken);
        tokio::time::timeout(std::time::Duration::from_secs(5), serving)
            .await
            .expect("the stand-in ends after its grace")
            .expect("task")
            .expect("served");
    }
}
