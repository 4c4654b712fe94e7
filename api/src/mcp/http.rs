//! `/mcp`: the MCP Streamable HTTP transport (rmcp's tower service) behind the keyed prelude.
//!
//! ```text
//! POST /mcp ─► require_key_or_bearer: per-address limit (429) → key: client_key or Bearer (400/403)
//!              → origin (403) → per-minute limit (429)
//!          ─► json_errors: rmcp's own refusals (406, 413, 415, 400…) in the `{"success":false,…}` shape
//!          ─► StreamableHttpService (stateless, JSON answers) ─► McpServer
//! ```
//!
//! **Stateless** (`legacy_session_mode: false`, no session manager): every POST carries one
//! JSON-RPC message and gets its answer in the response (`application/json`), or a 202 for a
//! notification. The server keeps nothing between requests, so there is no session count to
//! cap and no per-session memory; GET (a server-to-client stream) and DELETE (ending a session)
//! answer 405, as the transport allows for a server without streams or sessions. Bodies are
//! capped at [`MAX_BODY_BYTES`]; the router's request timeout and in-flight limit apply as to
//! any route.
//!
//! Each HTTP request passes the prelude and counts towards the key's per-minute limit, the
//! `initialize` and `tools/list` requests of a client included. `Origin` follows the REST rules
//! (a server key never from a browser, an embed key only from its allowed origins), which is
//! the check against DNS rebinding the MCP specification asks for; rmcp's own `Host` allowlist
//! (loopback only by default) is off, since dsa is served under its operator's host names.

use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::McpServer;
use crate::front::error::{ApiError, error_response};
use crate::front::routes::keyed;
use crate::front::state::AppState;

/// The path of the MCP endpoint.
pub const PATH: &str = "/mcp";

/// Largest request body read, in bytes: a `tools/call` of `check_domains` with ten names of
/// the longest accepted input (1,024 characters each) fits several times over. Larger is a 413.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Largest error body of rmcp's read to rewrite it in the error shape.
const MAX_ERROR_BODY: usize = 8 * 1024;

/// The `/mcp` route over `state`, behind the keyed prelude (merge it into the router).
pub fn routes(state: &AppState) -> Router<AppState> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .disable_allowed_hosts()
        .with_max_request_body_bytes(MAX_BODY_BYTES);
    let server = McpServer::behind_prelude(state.clone());
    let service =
        StreamableHttpService::new(move || Ok(server.clone()), Arc::new(NeverSessionManager::default()), config);
    Router::new()
        .route_service(PATH, service)
        .route_layer(axum::middleware::from_fn(json_errors))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), keyed::require_key_or_bearer))
}

/// Adapts the transport to the API's conventions. In: a POST whose `Accept` is absent or only
/// wildcards (`curl`, generic HTTP clients) is taken as accepting the two media types the
/// transport requires, since it answers JSON either way. Out: the transport's error answers
/// (plain text, or a JSON-RPC error object for a message it cannot route) are rewritten in the
/// API's error shape, keeping the status and `Allow`; 5xx texts are logged, not shown.
async fn json_errors(mut request: Request, next: Next) -> Response {
    if request.method() == axum::http::Method::POST && accepts_anything(request.headers()) {
        request.headers_mut().insert(header::ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
    }
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_ERROR_BODY).await.unwrap_or_default();
    let said = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(json) => json.pointer("/error/message").and_then(|m| m.as_str()).map(str::to_owned),
        Err(_) => Some(String::from_utf8_lossy(&bytes).trim().to_owned()),
    }
    .filter(|text| !text.is_empty());
    let text = if status.is_server_error() {
        tracing::error!(%status, said = said.as_deref().unwrap_or(""), "MCP transport error");
        ApiError::Internal(anyhow::anyhow!("MCP transport")).to_string()
    } else {
        match (status, said) {
            (StatusCode::METHOD_NOT_ALLOWED, _) => {
                "Method not allowed: /mcp takes POST only (stateless Streamable HTTP; no server-sent stream, no sessions to end)."
                    .to_owned()
            }
            (_, Some(text)) => format!("MCP request refused: {text}"),
            (_, None) => format!("MCP request refused ({status})."),
        }
    };
    let mut out = error_response(status, &text);
    if status == StatusCode::METHOD_NOT_ALLOWED {
        out.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
    } else if let Some(allow) = parts.headers.get(header::ALLOW) {
        out.headers_mut().insert(header::ALLOW, allow.clone());
    }
    out
}

/// Whether `Accept` is absent, or names no media type but wildcards (`*/*`, `application/*`).
fn accepts_anything(headers: &axum::http::HeaderMap) -> bool {
    let mut ranges = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|range| range.split(';').next().unwrap_or("").trim())
        .filter(|media| !media.is_empty())
        .peekable();
    ranges.peek().is_none() || ranges.all(|media| media == "*/*" || media.eq_ignore_ascii_case("application/*"))
}
