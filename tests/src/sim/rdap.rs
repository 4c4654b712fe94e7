//! RDAP over HTTP (axum): `GET /rdap/<suffix>/domain/<name>`, one base URL per suffix.
//!
//! Answers are recorded real domain objects (RFC 9083 §5.3) with the name rewritten:
//!
//! | truth | answer |
//! |---|---|
//! | registered | 200, the family's recorded object |
//! | held | 200, recorded object with `server hold` added to `status` |
//! | pending_delete | 200, recorded object with `status` = `pending delete`, `redemption period` (RFC 8056 §2) |
//! | reserved | 200, a small synthetic object: `status` = `server hold`, a "reserved" remark (no real recording exists; never 404 so dsa cannot call it available) |
//! | available | 404: CentralNic's recorded error object, or Verisign's empty body |
//!
//! With `rdap_false_404` on the suffix (a lying registry), held and pending-delete names are 404
//! too, like a free name.
//!
//! A malformed name is 400 with an RDAP error object (RFC 9083 §6). Over the rate limit: 429
//! with `Retry-After` (RFC 6585 §4). Faults: see [`Fault`].

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::serve::{IncomingStream, Listener};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use super::control::Control;
use super::recorded::{self, rewrite_domain};
use super::scenario::{Fault, Protocol, RdapFamily, Scenario, Truth, check_name, normalise};

/// Size of an `oversize` answer: 10 MiB, ten times dsa's default `max_body_bytes`.
pub(crate) const OVERSIZE_BYTES: usize = 10 * 1024 * 1024;

const RDAP_JSON: &str = "application/rdap+json";

/// Shared state of the RDAP handlers.
#[derive(Clone)]
struct RdapState {
    scenario: Arc<Scenario>,
    control: Arc<Control>,
    /// This listener's `http://<ip>:<port>`, for `self` links.
    origin: String,
    /// This listener's address (its rate limit is its own).
    ip: std::net::IpAddr,
}

/// The RDAP router (built apart from serving so it can be exercised directly).
fn router(state: RdapState) -> Router {
    Router::new()
        .route("/rdap/{suffix}/domain/{name}", get(domain))
        .route("/registrar/domain/{name}", get(registrar_domain))
        .with_state(state)
}

/// Starts the RDAP server on `ip`:`port` (127.0.0.1 unless the scenario is served on several
/// hosts); it stops when `control` says so.
pub(crate) async fn start(
    scenario: Arc<Scenario>,
    control: Arc<Control>,
    ip: Ipv4Addr,
    port: u16,
) -> anyhow::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = TcpListener::bind((ip, port)).await?;
    let addr = listener.local_addr()?;
    let stopped = control.stopped();
    let state = RdapState { scenario, control, origin: format!("http://{addr}"), ip: addr.ip() };
    let app = router(state).into_make_service_with_connect_info::<ConnMeta>();
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(FaultListener(listener), app).with_graceful_shutdown(stopped).await {
            tracing::error!(error = %e, "RDAP server stopped");
        }
    });
    Ok((addr, task))
}

async fn domain(
    State(state): State<RdapState>,
    ConnectInfo(conn): ConnectInfo<ConnMeta>,
    Path((suffix, name)): Path<(String, String)>,
) -> Response {
    let control = &state.control;
    control.count_query(Protocol::Rdap);
    if !control.admit(Protocol::Rdap, conn.peer.ip(), state.ip) {
        tracing::debug!(%name, client = %conn.peer, "RDAP rate limit exceeded");
        let mut resp = error_object(
            StatusCode::TOO_MANY_REQUESTS,
            "Too Many Requests",
            "Query rate limit exceeded for this client; retry later.",
        );
        resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return resp;
    }
    let delay = control.latency(Protocol::Rdap);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let fault = control.fault(Protocol::Rdap);
    if fault != Fault::None {
        control.count_fault(Protocol::Rdap);
        tracing::debug!(%name, ?fault, "RDAP fault");
    }
    match fault {
        Fault::None => answer(&state, &suffix, &name),
        Fault::Reset => {
            // The response is never written: the connection's writer sees the flag and
            // closes the socket with an RST instead.
            conn.ctl.reset.store(true, Ordering::SeqCst);
            StatusCode::OK.into_response()
        }
        Fault::Stall => {
            control.stopped().await;
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
        Fault::Slow => {
            let normal = answer(&state, &suffix, &name);
            let (parts, body) = normal.into_parts();
            match axum::body::to_bytes(body, usize::MAX).await {
                Ok(bytes) => Response::from_parts(parts, slow_body(bytes, control)),
                Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
            }
        }
        Fault::Oversize => {
            let mut object = domain_object(&state, &suffix, &name, Truth::Registered);
            // The padding is spliced into the serialised text: serialising a 10 MiB string in a
            // debug build on a loaded machine took longer than the probe's timeout.
            static PADDING: std::sync::LazyLock<String> =
                std::sync::LazyLock::new(|| format!("\"{}\"", "x".repeat(OVERSIZE_BYTES)));
            object["remarks"] = json!([{ "title": "padding", "description": ["dsa-sim-padding"] }]);
            let text = object.to_string().replacen("\"dsa-sim-padding\"", &PADDING, 1);
            (StatusCode::OK, [(header::CONTENT_TYPE, RDAP_JSON)], text).into_response()
        }
    }
}

/// Host name of the simulated registrar RDAP service that thin-registry answers link to
/// (`.test`, RFC 6761: never resolvable, so only an explicit test-only referral allowance reaches
/// it).
pub const REGISTRAR_HOST: &str = "registrar.dsa-sim.test";

/// Names starting with this get a registrar `related` link to a loopback address that no
/// allowance covers (a hostile link: dsa must refuse to follow it).
pub const HOSTILE_PREFIX: &str = "hostile-";

/// Names starting with this get an RFC 9537 redacted registrar answer.
pub const PRIVATE_PREFIX: &str = "private-";

/// Points the registry answer's `related` links (thin registries: the registrar's RDAP record) at
/// the simulated registrar, or at a refused loopback address for [`HOSTILE_PREFIX`] names.
fn set_related_link(state: &RdapState, object: &mut Value, name: &str) {
    let port = state.origin.rsplit(':').next().unwrap_or("80");
    let href = if name.starts_with(HOSTILE_PREFIX) {
        format!("https://127.0.0.1:{port}/registrar/domain/{name}")
    } else {
        format!("http://{REGISTRAR_HOST}:{port}/registrar/domain/{name}")
    };
    let link = json!({"value": href, "rel": "related", "href": href, "type": RDAP_JSON});
    if !object["links"].is_array() {
        object["links"] = json!([]);
    }
    if let Some(links) = object["links"].as_array_mut() {
        links.retain(|l| l["rel"] != "related");
        links.push(link);
    }
}

/// The simulated registrar's RDAP answer for a registered name: registrant published
/// (organisation and country), or redacted per RFC 9537 for [`PRIVATE_PREFIX`] names.
async fn registrar_domain(State(state): State<RdapState>, Path(name): Path<String>) -> Response {
    state.control.count_query(Protocol::Rdap);
    let name = normalise(&name);
    let registered = state.scenario.truth_at(&name, state.control.now()) != Truth::Available
        && state.scenario.tld_of(&name).is_some();
    if check_name(&name).is_err() || !registered {
        return error_object(StatusCode::NOT_FOUND, "Not Found", "No such domain at this registrar.");
    }
    let registrant = if name.starts_with(PRIVATE_PREFIX) {
        json!({"objectClassName": "entity", "roles": ["registrant"],
            "vcardArray": ["vcard", [["version", {}, "text", "4.0"], ["fn", {}, "text", "REDACTED FOR PRIVACY"],
                ["adr", {}, "text", ["", "", "", "", "", "", ""]]]]})
    } else {
        json!({"objectClassName": "entity", "roles": ["registrant"],
            "vcardArray": ["vcard", [["version", {}, "text", "4.0"], ["fn", {}, "text", "Domain Administrator"],
                ["org", {}, "text", "Dsa Sim Holdings Ltd"],
                ["adr", {"cc": "GB"}, "text", ["", "", "1 Example Street", "London", "", "EC1A 1AA", ""]]]]})
    };
    let mut object = json!({
        "rdapConformance": ["rdap_level_0", "icann_rdap_response_profile_1", "redacted"],
        "objectClassName": "domain",
        "ldhName": name,
        "status": ["client transfer prohibited"],
        "events": [
            {"eventAction": "registration", "eventDate": "2001-04-03T12:00:00Z"},
            {"eventAction": "expiration", "eventDate": "2031-04-03T12:00:00Z"},
            {"eventAction": "last changed", "eventDate": "2026-01-15T08:30:00Z"}
        ],
        "entities": [
            {"objectClassName": "entity", "roles": ["registrar"], "handle": "9999",
             "vcardArray": ["vcard", [["version", {}, "text", "4.0"], ["fn", {}, "text", "Dsa Sim Registrar, Inc."]]]},
            registrant
        ],
        "links": [{"rel": "self", "href": format!("{}/registrar/domain/{name}", state.origin), "type": RDAP_JSON}],
    });
    if name.starts_with(PRIVATE_PREFIX) {
        object["redacted"] = json!([
            {"name": {"type": "Registrant Name"}, "prePath": "$.entities[?(@.roles[0]=='registrant')].vcardArray[1][?(@[0]=='fn')][3]", "method": "emptyValue"},
            {"name": {"type": "Registrant Organization"}, "prePath": "$.entities[?(@.roles[0]=='registrant')].vcardArray[1][?(@[0]=='org')]", "method": "removal"},
            {"name": {"type": "Registrant Country"}, "prePath": "$.entities[?(@.roles[0]=='registrant')].vcardArray[1][?(@[0]=='adr')][3][6]", "method": "emptyValue"}
        ]);
    }
    rdap_json(StatusCode::OK, &object)
}

/// The normal (fault-free) answer.
fn answer(state: &RdapState, suffix: &str, raw_name: &str) -> Response {
    let name = normalise(raw_name);
    if check_name(&name).is_err() {
        return error_object(StatusCode::BAD_REQUEST, "Bad Request", "Malformed domain name.");
    }
    let Some(tld) = state.scenario.tld(suffix).filter(|t| t.offers(Protocol::Rdap)) else {
        // Not one of our RDAP services: the path does not exist.
        return StatusCode::NOT_FOUND.into_response();
    };
    let family = tld.rdap_family;
    let holder = state.scenario.tld_of(&name).map(|t| t.suffix.as_str());
    let now = state.control.now();
    let truth = state.scenario.truth_at(&name, now);
    let lies = tld.rdap_false_404 && truth.is_registered_undelegated();
    if holder != Some(tld.suffix.as_str()) || holder == Some(name.as_str()) || truth == Truth::Available || lies {
        return not_found(state, family, suffix, &name);
    }
    let mut object = domain_object(state, suffix, &name, truth);
    if let Some(timeline) = state.scenario.timeline(&name) {
        timeline_facts(&mut object, timeline, now);
    }
    rdap_json(StatusCode::OK, &object)
}

/// A timeline name's expiry date and phase statuses (RFC 8056 §2: `redemption period` with
/// `pending delete` in redemption, `pending delete` alone afterwards).
fn timeline_facts(object: &mut Value, timeline: &super::scenario::Timeline, now: time::OffsetDateTime) {
    use super::scenario::Phase;
    let expires_at = match timeline.reregistered_at {
        Some(at) if now >= at => at + time::Duration::days(365),
        _ => timeline.expires_at,
    };
    let expiry = expires_at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default();
    if let Some(events) = object["events"].as_array_mut() {
        events.retain(|e| e["eventAction"] != "expiration");
        events.push(json!({"eventAction": "expiration", "eventDate": expiry}));
    } else {
        object["events"] = json!([{"eventAction": "expiration", "eventDate": expiry}]);
    }
    match timeline.phase(now) {
        Phase::Redemption => object["status"] = json!(["pending delete", "redemption period"]),
        Phase::PendingDelete => object["status"] = json!(["pending delete"]),
        Phase::Registered | Phase::Free => {}
    }
}

/// The recorded domain object of `family`, parsed once.
fn recorded_object(family: RdapFamily) -> &'static Value {
    static VERISIGN: LazyLock<Value> = LazyLock::new(|| parse(RdapFamily::Verisign));
    static CENTRALNIC: LazyLock<Value> = LazyLock::new(|| parse(RdapFamily::Centralnic));
    fn parse(family: RdapFamily) -> Value {
        // A fixture that is not JSON is a build-time mistake caught by the unit tests; fall
        // back to an empty object rather than panic in a server.
        serde_json::from_str(recorded::rdap_domain(family).text).unwrap_or_else(|e| {
            tracing::error!(error = %e, ?family, "RDAP fixture is not JSON");
            json!({})
        })
    }
    match family {
        RdapFamily::Verisign => &VERISIGN,
        RdapFamily::Centralnic => &CENTRALNIC,
    }
}

/// The domain object for `name` with `truth` (registered, held, pending delete or reserved).
fn domain_object(state: &RdapState, suffix: &str, name: &str, truth: Truth) -> Value {
    let family = state.scenario.tld(suffix).map(|t| t.rdap_family).unwrap_or_default();
    let sample = recorded::rdap_domain(family).domain;
    let template = recorded_object(family);
    let upper = template["ldhName"].as_str().is_some_and(|s| !s.bytes().any(|b| b.is_ascii_lowercase()));
    let ldh = if upper { name.to_ascii_uppercase() } else { name.to_owned() };
    let self_url = format!("{}/rdap/{suffix}/domain/{ldh}", state.origin);
    let mut object = if truth == Truth::Reserved {
        // No registry publishes a recorded RDAP answer for a reserved name; keep the
        // family's notices (terms of use) and say what the name is.
        json!({
            "rdapConformance": template.get("rdapConformance").cloned().unwrap_or(json!(["rdap_level_0"])),
            "notices": template.get("notices").cloned().unwrap_or(json!([])),
            "objectClassName": "domain",
            "ldhName": ldh,
            "status": ["server hold"],
            "remarks": [{
                "title": "Reserved Name",
                "description": ["This name is reserved by the registry and is not available for registration."],
            }],
            "links": [],
        })
    } else {
        let mut object = template.clone();
        rewrite_strings(&mut object, sample, name);
        object["ldhName"] = json!(ldh);
        match truth {
            Truth::Held => {
                if let Some(status) = object["status"].as_array_mut() {
                    status.push(json!("server hold"));
                } else {
                    object["status"] = json!(["server hold"]);
                }
            }
            Truth::PendingDelete => object["status"] = json!(["pending delete", "redemption period"]),
            _ => {}
        }
        object
    };
    set_self_link(&mut object, &self_url);
    if truth != Truth::Reserved && family == RdapFamily::Verisign {
        set_related_link(state, &mut object, name);
    }
    object
}

/// The 404 answer of `family`.
fn not_found(state: &RdapState, family: RdapFamily, suffix: &str, name: &str) -> Response {
    let Some(rec) = recorded::rdap_not_found(family) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    match serde_json::from_str::<Value>(&rewrite_domain(rec.text, rec.domain, name)) {
        Ok(mut body) => {
            set_self_link(&mut body, &format!("{}/rdap/{suffix}/domain/{name}", state.origin));
            rdap_json(StatusCode::NOT_FOUND, &body)
        }
        Err(_) => StatusCode::NOT_FOUND.into_response(),
    }
}

/// Rewrites `sample` to `name` in every string of `value`.
fn rewrite_strings(value: &mut Value, sample: &str, name: &str) {
    match value {
        Value::String(s) => *s = rewrite_domain(s, sample, name),
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite_strings(v, sample, name)),
        Value::Object(map) => map.values_mut().for_each(|v| rewrite_strings(v, sample, name)),
        _ => {}
    }
}

/// Points the `self` link (RFC 9083 §4.2) at the simulator, adding one when missing.
fn set_self_link(object: &mut Value, url: &str) {
    if !object["links"].is_array() {
        object["links"] = json!([]);
    }
    let Some(links) = object["links"].as_array_mut() else {
        return;
    };
    match links.iter_mut().find(|l| l["rel"] == "self") {
        Some(link) => {
            link["href"] = json!(url);
            if link.get("value").is_some() {
                link["value"] = json!(url);
            }
        }
        None => links.push(json!({"rel": "self", "href": url, "type": RDAP_JSON})),
    }
}

fn rdap_json(status: StatusCode, body: &Value) -> Response {
    (status, [(header::CONTENT_TYPE, RDAP_JSON)], body.to_string()).into_response()
}

/// An RDAP error response (RFC 9083 §6).
fn error_object(status: StatusCode, title: &str, description: &str) -> Response {
    let body = json!({
        "rdapConformance": ["rdap_level_0"],
        "errorCode": status.as_u16(),
        "title": title,
        "description": [description],
    });
    rdap_json(status, &body)
}

/// `bytes` at one byte per second; ends early when the simulator stops.
fn slow_body(bytes: Bytes, control: &Control) -> Body {
    let stopped = Box::pin(control.stopped());
    let stream = futures::stream::unfold((bytes, 0usize, stopped), |(bytes, at, mut stopped)| async move {
        if at >= bytes.len() {
            return None;
        }
        if at > 0 {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
                () = &mut stopped => return None,
            }
        }
        let chunk = bytes.slice(at..at + 1);
        Some((Ok::<_, io::Error>(chunk), (bytes, at + 1, stopped)))
    });
    Body::from_stream(stream)
}

// --- Connection plumbing for the `reset` fault ---

/// Per-connection switch a handler flips to have the connection reset.
#[derive(Debug, Default)]
struct ConnCtl {
    reset: AtomicBool,
}

/// Connect info of one connection: the client address and its reset switch.
#[derive(Debug, Clone)]
struct ConnMeta {
    peer: SocketAddr,
    ctl: Arc<ConnCtl>,
}

impl Connected<IncomingStream<'_, FaultListener>> for ConnMeta {
    fn connect_info(stream: IncomingStream<'_, FaultListener>) -> Self {
        stream.remote_addr().clone()
    }
}

/// A TCP listener whose connections can be reset from a handler.
struct FaultListener(TcpListener);

impl Listener for FaultListener {
    type Io = FaultIo;
    type Addr = ConnMeta;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.0.accept().await {
                Ok((stream, peer)) => {
                    let ctl = Arc::new(ConnCtl::default());
                    return (FaultIo { inner: stream, ctl: ctl.clone() }, ConnMeta { peer, ctl });
                }
                Err(e) => {
                    // Mostly EMFILE; back off like axum's own listener does.
                    tracing::warn!(error = %e, "RDAP accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        let peer = self.0.local_addr()?;
        Ok(ConnMeta { peer, ctl: Arc::new(ConnCtl::default()) })
    }
}

/// A TCP stream that turns its first write after a reset request into a TCP RST.
struct FaultIo {
    inner: TcpStream,
    ctl: Arc<ConnCtl>,
}

impl FaultIo {
    /// When a reset was requested: arm SO_LINGER 0 (so the close hyper does next sends an RST
    /// rather than a FIN) and fail the write.
    fn check_reset(&self) -> io::Result<()> {
        if !self.ctl.reset.load(Ordering::SeqCst) {
            return Ok(());
        }
        #[expect(deprecated, reason = "SO_LINGER 0 never blocks; it is how an RST is produced")]
        let _ = self.inner.set_linger(Some(Duration::ZERO));
        Err(io::Error::new(io::ErrorKind::ConnectionReset, "simulated reset"))
    }
}

impl AsyncRead for FaultIo {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for FaultIo {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.check_reset()?;
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.check_reset()?;
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check_reset()?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check_reset()?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixtures_are_json_domain_objects() {
        for family in [RdapFamily::Verisign, RdapFamily::Centralnic] {
            assert_eq!(recorded_object(family)["objectClassName"], "domain", "{family:?}");
        }
        let nf = recorded::rdap_not_found(RdapFamily::Centralnic).map(|r| r.text).unwrap_or("");
        let nf: Value = serde_json::from_str(nf).expect("404 fixture is JSON");
        assert_eq!(nf["errorCode"], 404);
    }
}
