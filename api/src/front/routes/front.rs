//! dsa's public face: the front page (`GET /`), the embeddable widget (`GET /widget.js`, spec
//! §4.6) and the page's stylesheet (`GET /assets/front.css`).
//!
//! * The page is rendered on the server with minijinja from templates compiled into the binary
//!   (`api/templates/`); its live search is the widget itself in demo mode, calling
//!   `GET /domain-check` ([`super::domain_check`]). It is served with a strict
//!   Content-Security-Policy: scripts and styles only from this origin, nothing inline.
//! * The widget (`api/static/widget.js`) is plain JavaScript, also compiled in. Its version is a
//!   digest of its bytes: `/widget.js?v=<version>` is cached for a year (`immutable`); a bare
//!   `/widget.js` (or an old `v`) for 5 minutes, so pages that load it without a version pick up a
//!   new release soon. [`widget()`]'s `integrity` is the Subresource Integrity value published in
//!   the snippet of `docs/widget-and-portal.md` (a test compares them).

use std::sync::OnceLock;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha384};
use utoipa::IntoParams;

use crate::front::error::ApiError;
use crate::front::keys::Plan;
use crate::front::state::AppState;

/// The Content-Security-Policy of the front page: nothing inline, nothing from elsewhere.
pub const FRONT_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Cache lifetime of a versioned asset URL (one year, `immutable`).
const LONG_CACHE: &str = "public, max-age=31536000, immutable";
/// Cache lifetime of an unversioned (or outdated) asset URL.
const SHORT_CACHE: &str = "public, max-age=300";

/// A static file compiled into the binary, with its version and SRI value.
#[derive(Debug)]
pub struct Asset {
    /// The bytes served.
    pub body: &'static str,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// Version: the first 12 hex digits of the SHA-384 digest of `body`.
    pub version: String,
    /// Subresource Integrity value (W3C SRI §3.5): `sha384-` + base64 of the SHA-384 digest.
    pub integrity: String,
}

impl Asset {
    pub(crate) fn new(body: &'static str, content_type: &'static str) -> Self {
        let digest = Sha384::digest(body.as_bytes());
        Self {
            body,
            content_type,
            version: hex::encode(&digest[..6]),
            integrity: format!("sha384-{}", base64::engine::general_purpose::STANDARD.encode(digest)),
        }
    }

    pub(crate) fn respond(&self, requested_version: Option<&str>, headers: &HeaderMap) -> Response {
        let etag = format!("\"{}\"", self.version);
        let cache = if requested_version == Some(self.version.as_str()) { LONG_CACHE } else { SHORT_CACHE };
        let not_modified = headers
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|t| t.trim().trim_start_matches("W/") == etag));
        let mut response = if not_modified {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            ([(header::CONTENT_TYPE, self.content_type)], self.body).into_response()
        };
        let h = response.headers_mut();
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
        if let Ok(v) = HeaderValue::from_str(&etag) {
            h.insert(header::ETAG, v);
        }
        h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
        // Other sites embed the widget, also under Cross-Origin-Embedder-Policy.
        h.insert("cross-origin-resource-policy", HeaderValue::from_static("cross-origin"));
        response
    }
}

/// The widget script (`api/static/widget.js`).
pub fn widget() -> &'static Asset {
    static WIDGET: OnceLock<Asset> = OnceLock::new();
    WIDGET.get_or_init(|| Asset::new(include_str!("../../../static/widget.js"), "text/javascript; charset=utf-8"))
}

/// The front page's stylesheet (`api/static/front.css`).
pub fn front_css() -> &'static Asset {
    static CSS: OnceLock<Asset> = OnceLock::new();
    CSS.get_or_init(|| Asset::new(include_str!("../../../static/front.css"), "text/css; charset=utf-8"))
}

/// The `v` parameter of a versioned asset URL.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AssetQuery {
    /// The asset's version (first 12 hex digits of its SHA-384). When it matches, the answer may
    /// be cached for a year; otherwise for 5 minutes.
    pub v: Option<String>,
}

/// Handler of `GET /widget.js`: the embeddable widget (spec §4.6).
#[utoipa::path(
    get,
    path = "/widget.js",
    tag = "front page",
    operation_id = "widgetScript",
    summary = "The embeddable search widget",
    description = "JavaScript for the one-line embed: `<script src=\".../widget.js\" data-key=\"YOUR_EMBED_KEY\"></script>` renders a search box that checks names with your embed key from the allowed origins you set.",
    params(AssetQuery),
    responses(
        (status = 200, description = "The widget script (`text/javascript; charset=utf-8`). Embed it with the snippet the front page shows, \
which carries the versioned URL and its Subresource Integrity hash.", content_type = "text/javascript", body = String),
        (status = 304, description = "Not modified (`If-None-Match` matched the `ETag`)."),
    )
)]
pub async fn widget_js(Query(q): Query<AssetQuery>, headers: HeaderMap) -> Response {
    widget().respond(q.v.as_deref(), &headers)
}

/// Handler of `GET /assets/front.css`: the front page's stylesheet.
#[utoipa::path(
    get,
    path = "/assets/front.css",
    tag = "front page",
    operation_id = "frontStylesheet",
    summary = "The front page's stylesheet",
    description = "The CSS that styles the front page (`text/css`).",
    params(AssetQuery),
    responses(
        (status = 200, description = "The front page's stylesheet.", content_type = "text/css", body = String),
        (status = 304, description = "Not modified."),
    )
)]
pub async fn front_stylesheet(Query(q): Query<AssetQuery>, headers: HeaderMap) -> Response {
    front_css().respond(q.v.as_deref(), &headers)
}

/// One row of the plans table.
#[derive(Debug, Serialize)]
struct PlanRow {
    name: &'static str,
    credits: String,
    per_minute: String,
}

/// One row of the endpoint list, read from the OpenAPI document.
#[derive(Debug, Serialize)]
struct EndpointRow {
    method: String,
    path: String,
    summary: String,
}

/// What the front page says about the spec's endpoints (others show their OpenAPI summary). The
/// list itself comes from the OpenAPI document, so it only shows what this build serves.
const ENDPOINT_BLURBS: &[(&str, &str)] = &[
    ("/v1/domains/check", "Is a domain available? With your key's price and checkout link. 1 credit."),
    ("/v1/whois", "WHOIS data of a registered domain. 2 credits."),
    ("/v1/dns", "DNS records: A, AAAA, MX, NS, TXT, CNAME, SOA, CAA, SRV. 1 credit."),
    ("/v1/domains/bulk", "Up to 10 domains in one call. 1 credit per domain."),
    ("/v1/domains/suggest", "Up to 20 available-name ideas from a keyword. 5 credits."),
    ("/domain-check", "The front page's short form of the check. 1 credit; without a key, the demo."),
];

/// The template environment, with every template compiled in.
fn templates() -> &'static minijinja::Environment<'static> {
    static ENV: OnceLock<minijinja::Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = minijinja::Environment::new();
        // Templates are part of the binary: a syntax error is a build defect, caught by the tests.
        for (name, source) in [
            ("layout.html", include_str!("../../../templates/layout.html")),
            ("front.html", include_str!("../../../templates/front.html")),
        ] {
            if let Err(e) = env.add_template(name, source) {
                tracing::error!(template = name, error = %e, "template does not compile");
            }
        }
        env
    })
}

/// Digits with thousands separators (`50,000`).
fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// The base URL the page was reached at, for the snippet (`https://dsa.example`): https when dsa
/// serves TLS or `policy.demo.cookie_secure` says a proxy in front of it does.
pub(crate) fn base_url(state: &AppState, headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .filter(|h| h.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']')))
        .unwrap_or("dsa.example");
    format!("{}://{host}", if state.cookie_secure() { "https" } else { "http" })
}

/// Renders the front page.
///
/// # Errors
/// [`ApiError::Internal`] when the template fails (a build defect).
pub fn render_front(state: &AppState, headers: &HeaderMap) -> Result<String, ApiError> {
    let rates = &state.policy().per_minute;
    let plans: Vec<PlanRow> =
        [("Free Developer", Plan::Free), ("Starter", Plan::Starter), ("PRO", Plan::Pro), ("Reseller", Plan::Reseller)]
            .into_iter()
            .map(|(name, plan)| PlanRow {
                name,
                credits: thousands(plan.monthly_credits()),
                per_minute: thousands(i64::from(rates.of(plan))),
            })
            .collect();
    let mut endpoints = Vec::new();
    for (path, item) in &crate::front::openapi::document().paths.paths {
        for (method, op) in [("GET", &item.get), ("POST", &item.post)] {
            let Some(op) = op else { continue };
            let tags = op.tags.as_deref().unwrap_or_default();
            if tags.iter().any(|t| t == "operations" || t == "front page") && path != "/domain-check" {
                continue;
            }
            let summary = ENDPOINT_BLURBS
                .iter()
                .find(|(p, _)| p == path)
                .map_or_else(|| op.summary.clone().unwrap_or_default().replace('`', ""), |(_, b)| (*b).to_owned());
            endpoints.push(EndpointRow { method: method.to_owned(), path: path.clone(), summary });
        }
    }
    let demo = &state.policy().demo;
    let template = templates().get_template("front.html").map_err(|e| ApiError::Internal(e.into()))?;
    template
        .render(minijinja::context! {
            base => base_url(state, headers),
            widget_version => widget().version.as_str(),
            widget_integrity => widget().integrity.as_str(),
            css_version => front_css().version.as_str(),
            plans => minijinja::Value::from(minijinja::value::Serde(&plans)),
            endpoints => minijinja::Value::from(minijinja::value::Serde(&endpoints)),
            demo_enabled => demo.enabled,
            demo_checks => demo.checks_per_session,
        })
        .map_err(|e| ApiError::Internal(e.into()))
}

/// Handler of `GET /`: dsa's front page — a live search (the widget in demo mode), the plans,
/// the endpoints and the embed snippet.
#[utoipa::path(
    get,
    path = "/",
    tag = "front page",
    operation_id = "frontPage",
    summary = "The front page",
    description = "The service's public page: a live domain search (the widget in demo mode), the plans and the API's endpoints. HTML.",
    responses(
        (status = 200, description = "The front page (HTML, strict Content-Security-Policy).", content_type = "text/html", body = String),
        (status = 500, description = "Unexpected server error.", body = crate::front::error::ErrorBody),
    )
)]
pub async fn front_page(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    let html = render_front(&state, &headers)?;
    let mut response = Html(html).into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(FRONT_CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("strict-origin-when-cross-origin"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_compile() {
        for name in ["layout.html", "front.html"] {
            assert!(templates().get_template(name).is_ok(), "{name} must compile");
        }
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(500), "500");
        assert_eq!(thousands(5_000), "5,000");
        assert_eq!(thousands(50_000), "50,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    /// The documented snippet (`docs/widget-and-portal.md`, "The widget") pins the widget by
    /// version and SRI hash: both must be current.
    #[test]
    fn documented_snippet_matches_the_widget() {
        let page = include_str!("../../../../docs/widget-and-portal.md");
        let w = widget();
        assert!(
            page.contains(&format!("integrity=\"{}\"", w.integrity)),
            "docs/widget-and-portal.md must publish the widget's SRI hash: integrity=\"{}\"",
            w.integrity
        );
        assert!(
            page.contains(&format!("/widget.js?v={}", w.version)),
            "docs/widget-and-portal.md must use the widget's versioned URL: /widget.js?v={}",
            w.version
        );
    }

    #[test]
    fn widget_is_small() {
        // Spec budget: ≤ 15 KB gzipped; the raw file is a generous upper bound of that.
        assert!(widget().body.len() < 60 * 1024);
        assert!(!widget().body.contains("innerHTML"), "the widget never uses innerHTML");
        assert!(!widget().body.contains("eval("), "the widget never uses eval");
    }
}
