//! `/mcp` in the OpenAPI document: one operation (POST), the JSON-RPC envelope as its body and
//! answer. The tools themselves are described by the MCP server (`tools/list`), not here.
//!
//! This file names nothing of the MCP server itself, so the OpenAPI document can list it
//! without a circle between the two.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::front::error::ErrorBody;

/// A JSON-RPC method the MCP endpoint serves.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
pub enum McpMethod {
    /// Starts a conversation (clients of MCP versions before 2026-07-28).
    #[serde(rename = "initialize")]
    Initialize,
    /// Acknowledges `initialize` (a notification: no `id`, answered 202).
    #[serde(rename = "notifications/initialized")]
    Initialized,
    /// What the server supports (clients of MCP 2026-07-28 and later).
    #[serde(rename = "server/discover")]
    Discover,
    /// Liveness.
    #[serde(rename = "ping")]
    Ping,
    /// The tools, with their input and output schemas.
    #[serde(rename = "tools/list")]
    ListTools,
    /// Runs a tool: `params` is `{"name": …, "arguments": {…}}`.
    #[serde(rename = "tools/call")]
    CallTool,
}

/// A JSON-RPC request id: an integer or a string.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum McpId {
    /// An integer id.
    Number(i64),
    /// A string id.
    Text(String),
}

/// One JSON-RPC 2.0 message from the client: a request (with `id`) or a notification.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
    "params": {"name": "check_domain", "arguments": {"domain": "example.com"}}}))]
pub struct McpRequest {
    /// Always `2.0`.
    #[schema(example = "2.0", pattern = "^2\\.0$")]
    pub jsonrpc: String,
    /// The request's id (a string or an integer), echoed in the answer; absent on a
    /// notification.
    #[schema(example = 1)]
    pub id: Option<McpId>,
    /// The method.
    pub method: McpMethod,
    /// The method's parameters.
    #[schema(value_type = Option<Object>)]
    pub params: Option<Value>,
}

/// A JSON-RPC error (an unknown tool or method, malformed parameters). A tool that ran and
/// failed answers a `result` with `isError: true` instead.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct McpError {
    /// JSON-RPC error code (`-32602` invalid parameters, `-32601` unknown method…).
    pub code: i64,
    /// What went wrong.
    pub message: String,
    /// Details, when any.
    #[schema(value_type = Option<Object>)]
    pub data: Option<Value>,
}

/// The JSON-RPC answer to a request: `result` or `error`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "{…}"}],
    "structuredContent": {"success": true, "domain": "example.com", "available": false, "message": "Taken",
        "credits_cost": 1, "credits_remaining": 499}, "isError": false}}))]
pub struct McpAnswer {
    /// Always `2.0`.
    #[schema(example = "2.0")]
    pub jsonrpc: String,
    /// The request's id.
    #[schema(example = 1)]
    pub id: McpId,
    /// The method's result. For `tools/call`: `content` (the result as JSON text),
    /// `structuredContent` (the same result as an object, in the shape of the matching REST
    /// answer) and `isError` (`true` when the call failed: the text is the REST error, and
    /// `_meta` carries `dsa/status`, the REST status, and `dsa/retry_after_secs` when a wait is
    /// known).
    #[schema(value_type = Option<Object>)]
    pub result: Option<Value>,
    /// The error, when the request could not be run.
    pub error: Option<McpError>,
}

/// Operation of `POST /mcp` for the OpenAPI document only: the route itself is the MCP
/// transport ([`crate::mcp::http::routes`]), and this function is never called.
#[utoipa::path(
    post,
    path = "/mcp",
    tag = "agents",
    operation_id = "mcp",
    summary = "MCP endpoint for AI agents (Streamable HTTP)",
    description = "The Model Context Protocol over Streamable HTTP, for AI agents and their hosts: `tools/list` names the tools (`check_domain`, `check_domains`, `whois`, `dns_records`, `suggest_domains`, `list_tlds`) with their input and output schemas, and `tools/call` runs one. A tool's result has the shape of the matching REST answer and costs the same credits; a failed call is a result with `isError: true` whose text is the REST error (`Monthly credit limit reached`…).\n\nStateless: every POST carries one JSON-RPC message and gets its answer as `application/json` (202 for a notification); there is no session and no server-sent stream, so GET and DELETE answer 405. Send `Accept: application/json, text/event-stream` and `Content-Type: application/json`; bodies are limited to 64 KiB.\n\nThe key goes in `client_key` or in an `Authorization: Bearer <key>` header. Every POST counts as one request towards the key's per-minute limit; browsers follow the origin rules of the REST API.",
    request_body(content = McpRequest, content_type = "application/json", description = "One JSON-RPC 2.0 request or notification."),
    security(("client_key" = [])),
    responses(
        (status = 200, description = "The JSON-RPC answer to the request: a `result`, or an `error` when the method or tool is unknown or its parameters malformed.",
            content((McpAnswer = "application/json"))),
        (status = 202, description = "A notification (no `id`) was accepted; no body."),
        (status = 400, description = "Missing `client_key` (and no Bearer token), or a message the transport cannot take (an unsupported `MCP-Protocol-Version`, a JSON-RPC response sent to the server).", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended (`Invalid or disabled client key.`), or the request's origin is not allowed for the key.", body = ErrorBody),
        (status = 406, description = "The request's `Accept` excludes `application/json` or `text/event-stream`.", body = ErrorBody,
            example = json!({"success": false, "error": "MCP request refused: Not Acceptable: Client must accept both application/json and text/event-stream"})),
        (status = 413, description = "The body is over 64 KiB.", body = ErrorBody,
            example = json!({"success": false, "error": "MCP request refused: Payload Too Large: request body exceeds 65536 bytes"})),
        (status = 415, description = "The body is not `application/json`, or not a JSON-RPC message.", body = ErrorBody,
            example = json!({"success": false, "error": "MCP request refused: Unsupported Media Type: Content-Type must be application/json"})),
        (status = 429, description = "Per-minute limit (each POST counts; `Retry-After`: the next window), or too many requests from this address.", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
    )
)]
pub fn mcp() {}
