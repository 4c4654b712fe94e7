//! Network rules: `/v1/dns` (and every endpoint that looks a name up) on public names only, RDAP
//! redirects, proxies, `/metrics`, streaming bulk deadlines, and suggestions that charge once.

use dsa_tests::harness::app::{KeyOpts, TestApp};
use serde_json::Value;

fn assert_refused(status: u16, body: &Value, asked: &str) {
    assert_eq!(status, 400, "{asked}: {body}");
    assert_eq!(body["success"], false, "{asked}: {body}");
    assert_eq!(body.as_object().map(|o| o.len()), Some(2), "the spec's error shape: {body}");
}

/// Issue 32, item 5. `/v1/dns` resolved internal names (`kubernetes.default.svc.cluster.local`,
/// `metadata.google.internal`, split-horizon zones): only the syntax was checked. Now special-use
/// and internal names are a 400 that says why, before any credit is taken, and the endpoints that
/// look up a registrable domain (check, WHOIS) refuse the same names.
#[tokio::test]
async fn dns_and_lookups_answer_public_names_only() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let (status, _, body) = app.get(&format!("/v1/dns?client_key={key}&domain=example.com&types=A")).await;
    assert_eq!(status, 200, "a public name is answered: {body}");
    let cases = [
        ("kubernetes.default.svc.cluster.local", ".local"),
        ("kubernetes.default.svc", ".svc"),
        ("metadata.google.internal", ".internal"),
        ("localhost", ""),
        ("db.localhost", ".localhost"),
        ("printer.local", ".local"),
        ("x.test", ".test"),
        ("www.example", ".example"),
        ("a.invalid", ".invalid"),
        ("x.alt", ".alt"),
        ("expyuzz4wqqyqhjn.onion", ".onion"),
        ("router.home.arpa", ".home.arpa"),
        ("10.in-addr.arpa", ".arpa"),
        ("1.0.0.127.in-addr.arpa", ".arpa"),
        ("fileserver.corp", ".corp"),
        ("nas.lan", ".lan"),
        ("router.home", ".home"),
        ("wiki.intranet", ".intranet"),
    ];
    for (name, why) in cases {
        let (status, _, body) = app.get(&format!("/v1/dns?client_key={key}&domain={name}&types=A")).await;
        assert_refused(status, &body, name);
        let error = body["error"].as_str().unwrap_or_default();
        assert!(error.contains(why), "{name}: the error names why ({why}): {error}");
    }
    // The registrable-domain endpoints: internal TLDs were already refused; .arpa names were not.
    for name in ["router.home.arpa", "10.in-addr.arpa", "metadata.google.internal", "printer.local"] {
        for path in ["/v1/domains/check", "/v1/whois"] {
            let (status, _, body) = app.get(&format!("{path}?client_key={key}&domain={name}")).await;
            assert_refused(status, &body, &format!("{path} {name}"));
        }
    }
    assert_eq!(app.finish(Some(&key)).await, 1, "only the public lookup was charged");
}

/// A loopback HTTP server answering every request with `respond(path)`; returns its port.
async fn loopback(respond: impl Fn(String) -> axum::response::Response + Clone + Send + Sync + 'static) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
        let respond = respond.clone();
        async move { respond(uri.path().to_owned()) }
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    port
}

fn rdap_not_found() -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        axum::http::StatusCode::NOT_FOUND,
        [(axum::http::header::CONTENT_TYPE, "application/rdap+json")],
        r#"{"errorCode":404,"title":"Not Found"}"#,
    )
        .into_response()
}

fn redirect_to(location: String) -> axum::response::Response {
    use axum::response::IntoResponse;
    (axum::http::StatusCode::FOUND, [(axum::http::header::LOCATION, location)]).into_response()
}

/// Issue 32, item 6: RDAP redirects went https → http and to any port of an allowed host. Now a
/// redirect is followed only to `https://` on port 443 or within the same origin; a registry
/// (loopback here) redirecting to http:// or to another port gets no answer (an upstream error,
/// an `unknown` verdict), never the other server's.
#[tokio::test]
async fn rdap_redirects_stay_on_https_port_443() {
    use workers::probe::rdap::RdapProbe;
    let other = loopback(|_| rdap_not_found()).await;
    let allowed: std::collections::BTreeSet<String> = ["127.0.0.1".to_owned(), "localhost".to_owned()].into();
    let probe = RdapProbe::new(workers::config::RdapConfig::default()).expect("client");
    for target in [format!("http://localhost:{other}"), format!("https://localhost:{other}")] {
        let registry = loopback({
            let target = target.clone();
            move |path| redirect_to(format!("{target}{path}"))
        })
        .await;
        let outcome = probe.lookup(&format!("http://127.0.0.1:{registry}/"), "dsa-redirected.com", &allowed).await;
        match outcome {
            Err(workers::probe::ProbeError::Upstream { message, .. }) => {
                assert!(message.contains("refused"), "{target}: {message}");
            }
            other => panic!("a redirect to {target} must be refused, got {other:?}"),
        }
    }
    // Within the same origin a redirect is still followed.
    let same =
        loopback(
            |path| if path.starts_with("/moved/") { rdap_not_found() } else { redirect_to(format!("/moved{path}")) },
        )
        .await;
    let answer = probe.lookup(&format!("http://127.0.0.1:{same}/"), "dsa-moved.com", &allowed).await.expect("followed");
    assert_eq!(answer.status, 404);
}

/// Issue 32, item 6: the registry clients honoured `HTTPS_PROXY`/`HTTP_PROXY`, and a proxy
/// resolves the host itself (the referral client's pinned, checked address was undone: DNS
/// rebinding). The parent runs [`registry_clients_child`] in a child process whose proxy
/// variables point at a loopback listener: the child's RDAP and referral requests reach their
/// servers directly and the "proxy" sees no connection.
#[tokio::test]
async fn registry_clients_ignore_proxy_variables() {
    let proxy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let proxy_url = format!("http://127.0.0.1:{}", proxy.local_addr().expect("addr").port());
    proxy.set_nonblocking(true).expect("nonblocking");
    let mut child = std::process::Command::new(std::env::current_exe().expect("test binary"));
    child.args(["--exact", "bus::network::registry_clients_child", "--include-ignored", "--nocapture"]);
    for var in ["NO_PROXY", "no_proxy"] {
        child.env_remove(var);
    }
    for var in ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy"] {
        child.env(var, &proxy_url);
    }
    let out = tokio::task::spawn_blocking(move || child.output()).await.expect("join").expect("child runs");
    let mut through_proxy = 0;
    while proxy.accept().is_ok() {
        through_proxy += 1;
    }
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("1 passed"), "the child test ran and passed:\n{text}");
    assert_eq!(through_proxy, 0, "connections went to the proxy:\n{text}");
}

/// Run by [`registry_clients_ignore_proxy_variables`] in a child process with proxy variables.
#[tokio::test]
#[ignore = "run by registry_clients_ignore_proxy_variables in a child process with proxy variables set"]
async fn registry_clients_child() {
    let server = loopback(|_| rdap_not_found()).await;
    let allowed: std::collections::BTreeSet<String> = ["127.0.0.1".to_owned()].into();
    let probe = workers::probe::rdap::RdapProbe::new(workers::config::RdapConfig::default()).expect("client");
    let answer = probe.lookup(&format!("http://127.0.0.1:{server}/"), "dsa-proxy.com", &allowed).await;
    assert_eq!(answer.map(|a| a.status).ok(), Some(404), "the RDAP probe reached its server directly");
    let rdap_ok = loopback(|_| {
        use axum::response::IntoResponse;
        ([(axum::http::header::CONTENT_TYPE, "application/rdap+json")], r#"{"objectClassName":"domain"}"#)
            .into_response()
    })
    .await;
    let mut config = workers::config::ReferralConfig::default();
    config.test_only_allow.insert("registrar.test".into(), format!("127.0.0.1:{rdap_ok}"));
    let body = workers::engine::registration::referral::fetch_rdap(
        &format!("http://registrar.test:{rdap_ok}/domain/dsa-proxy.com"),
        &config,
    )
    .await;
    assert!(body.is_ok(), "the referral client reached its pinned address directly: {body:?}");
}

/// Starts `dsa serve` on a free port with `env` (standalone, a scratch SQLite file); returns the
/// child, its port and its directory once `/healthz` answers.
async fn dsa_serve(env: &[(&str, &str)]) -> (std::process::Child, u16, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("dsa-bus-serve-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).expect("dir");
    let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
    let mut command = std::process::Command::new(dsa_tests::harness::binary::dsa_binary());
    command
        .env("DSA_SERVER__LISTEN", format!("127.0.0.1:{port}"))
        .env("DSA_DATABASE__URL", format!("sqlite://{}?mode=rwc", dir.join("dsa.db").display()))
        .env("DSA_BOOTSTRAP__CREATE_DEV_KEY", "false")
        .env("DSA_ENGINE__OVERRIDES_ONLY", "true")
        .env_remove("DSA_CONFIG")
        .env_remove("DSA_SERVER__ADMIN_LISTEN")
        .env_remove("DSA_SERVER__PUBLIC_METRICS")
        .current_dir(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("start dsa");
    for _ in 0..200 {
        if reqwest::get(format!("http://127.0.0.1:{port}/healthz")).await.is_ok() {
            return (child, port, dir);
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("dsa serve did not start on {port}");
}

/// Issue 32, item 6: `/metrics` was public unless `admin_listen` was set, and the OpenAPI
/// document promised a 200 that then was a 404. Now the public listener never serves it unless
/// the operator opts in (`server.public_metrics`), and the served document does not list it.
#[tokio::test(flavor = "multi_thread")]
async fn metrics_are_not_public_by_default() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (mut child, port, dir) = dsa_serve(&[]).await;
    let metrics = reqwest::get(format!("http://127.0.0.1:{port}/metrics")).await.expect("answers");
    let status = metrics.status().as_u16();
    let body: Value = metrics.json().await.unwrap_or(Value::Null);
    let document: Value = reqwest::get(format!("http://127.0.0.1:{port}/v1/openapi.json"))
        .await
        .expect("doc")
        .json()
        .await
        .expect("json");
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!((status, &body["success"]), (404, &Value::Bool(false)), "public /metrics by default: {body}");
    assert!(document["paths"].get("/metrics").is_none(), "the public document lists /metrics");

    let (mut child, port, dir) = dsa_serve(&[("DSA_SERVER__PUBLIC_METRICS", "true")]).await;
    let metrics = reqwest::get(format!("http://127.0.0.1:{port}/metrics")).await.expect("answers");
    let status = metrics.status().as_u16();
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(status, 200, "the operator opted in");
}

/// Issue 32, item 6: the NDJSON bulk stream kept running after the request timeout (and the
/// concurrency limit, which end with the response head) had let go of the request: a slow
/// upstream held its checks for as long as they took. Now the stream keeps the request's
/// deadline: past it the running checks are dropped, uncharged, and an error line in the spec's
/// shape ends the stream.
#[tokio::test]
async fn streaming_bulk_stops_at_the_request_timeout() {
    use dsa_tests::sim::{Knobs, Latency};
    let app = TestApp::spawn_with(|s| {
        s.server.request_timeout_secs = 1.0;
        s.engine.check_deadline_secs = 8.0;
        s.engine.rdap.timeout_secs = 8.0;
    })
    .await;
    let key = app.key(KeyOpts::default()).await;
    // Every registry answers after 4 s: no check can finish within the 1 s request timeout.
    app.sim.set_knobs(Knobs { latency_ms: Latency { rdap: 4000, whois: 4000, dns: 4000 }, ..Knobs::default() });
    let started = std::time::Instant::now();
    let response = app
        .http
        .get(
            app.url(&format!("/v1/domains/bulk?client_key={key}&domains=dsa-slow-1.com,dsa-slow-2.org,dsa-slow-3.net")),
        )
        .header("accept", "application/x-ndjson")
        .timeout(std::time::Duration::from_secs(20))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status().as_u16(), 200);
    let body = response.text().await.expect("the stream ends");
    let ended = started.elapsed();
    let lines: Vec<Value> = body.lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect();
    assert!(
        ended < std::time::Duration::from_millis(2500),
        "the stream ran {ended:?} past a 1 s request timeout: {lines:?}"
    );
    let last = lines.last().expect("a last line");
    assert_eq!(last["success"], false, "{last}");
    assert!(last["error"].as_str().is_some_and(|e| e.contains("timed out")), "{last}");
    assert_eq!(last.as_object().map(|o| o.len()), Some(2), "the spec's error shape: {last}");
    assert_eq!(app.finish(Some(&key)).await, 0, "nothing was charged for the unfinished checks");
}
