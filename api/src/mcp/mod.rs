//! The MCP server for AI agents (Model Context Protocol, on the official Rust SDK `rmcp`): the
//! REST calls an agent needs as MCP tools, over two transports.
//!
//! ```text
//! dsa mcp (stdio) ─────────────┐  key: DSA_CLIENT_KEY, looked up and rate limited per call
//!                              ├─► McpServer::call_tool ─► tools::call ─► the REST endpoint's function
//! POST /mcp (Streamable HTTP) ─┘  key: the keyed prelude (client_key or Bearer), per request     (credits,
//!                                                                                     cache, errors)
//! ```
//!
//! * [`tools`] — the tool list and the call of each into its REST endpoint's code;
//! * [`schema`] — output schemas, the REST bodies' schemas from the OpenAPI document;
//! * [`http`] — `/mcp`: rmcp's Streamable HTTP service, stateless, behind the keyed prelude;
//! * [`doc`] — `/mcp` in the OpenAPI document.
//!
//! A REST error becomes a tool result with `isError: true` whose text is the REST `error` text
//! ("Monthly credit limit reached" stays that text), so an agent reads it; the HTTP status it
//! would have had is in `_meta` (`dsa/status`, and `dsa/retry_after_secs` when known).

pub mod doc;
pub mod http;
pub mod schema;
pub mod tools;

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult, MetaObject,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use secrecy::{ExposeSecret, SecretString};

use crate::front::error::ApiError;
use crate::front::keys::KeyRecord;
use crate::front::routes::keyed::Keyed;
use crate::front::state::AppState;
use tools::ToolError;

/// What the agent is told at `initialize` about using these tools.
const INSTRUCTIONS: &str = "Domain name availability from the registries themselves. Never guess whether a \
domain is free: check it with `check_domain` (one name) or `check_domains` (up to 10). `suggest_domains` \
proposes names from a keyword; with `verify` it also confirms some with the registry (only those marked \
`available: true` are known to be free). Calls cost credits from the key's monthly allowance \
(each tool's description says how many); an error result says why a call failed and costs nothing.";

/// How a tool call finds its key.
#[derive(Clone)]
enum Auth {
    /// `/mcp`: the keyed prelude admitted the key for this HTTP request (in its extensions).
    Prelude,
    /// `dsa mcp`: the key from the environment, looked up and rate limited at each call as the
    /// prelude would.
    Presented(Arc<SecretString>),
}

/// The MCP server: the application state and where the key comes from. Cheap to clone.
#[derive(Clone)]
pub struct McpServer {
    state: AppState,
    auth: Auth,
}

impl McpServer {
    /// A server for `/mcp`, whose requests the keyed prelude has admitted.
    pub fn behind_prelude(state: AppState) -> Self {
        Self { state, auth: Auth::Prelude }
    }

    /// A server for one key presented once (stdio): every call looks it up and applies its
    /// per-minute limit, so a key disabled meanwhile stops working at once.
    pub fn for_key(state: AppState, key: SecretString) -> Self {
        Self { state, auth: Auth::Presented(Arc::new(key)) }
    }

    /// The key admitted for this call.
    ///
    /// # Errors
    /// 403 unknown or disabled key, 429 per-minute limit (stdio); an internal error when the
    /// prelude's key is missing from an HTTP request (a routing bug).
    pub async fn admit(&self, context: &RequestContext<RoleServer>) -> Result<Arc<KeyRecord>, ApiError> {
        match &self.auth {
            Auth::Prelude => context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Keyed>())
                .map(|keyed| keyed.key.clone())
                .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("/mcp is missing the keyed prelude"))),
            Auth::Presented(presented) => {
                let key = self.state.key(presented.expose_secret()).await?;
                self.state.rate_limit(&key).await.map_err(|(e, _)| e)?;
                Ok(key)
            }
        }
    }
}

/// A tool result for a failed call: the REST error text, with the REST status in `_meta`.
pub fn error_result(error: &ToolError) -> CallToolResult {
    let mut meta = MetaObject::new();
    if let ToolError::Api(api) = error {
        let status = api.status();
        if status.is_server_error() || status == axum::http::StatusCode::BAD_GATEWAY {
            match api {
                ApiError::Internal(cause) => tracing::error!(error = ?cause, "MCP tool failed"),
                other => tracing::warn!(error = %other, "MCP tool got no answer"),
            }
        } else {
            tracing::debug!(error = %api, %status, "MCP tool refused");
        }
        meta.insert("dsa/status".into(), status.as_u16().into());
        let retry_after = match api {
            ApiError::TooManyRequests { retry_after_secs, .. } => *retry_after_secs,
            ApiError::CreditsExhausted { retry_after_secs } => Some(*retry_after_secs),
            ApiError::Overloaded => Some(1),
            ApiError::Unavailable => Some(5),
            _ => None,
        };
        if let Some(secs) = retry_after {
            meta.insert("dsa/retry_after_secs".into(), secs.into());
        }
    } else {
        meta.insert("dsa/status".into(), 400.into());
    }
    CallToolResult::error(vec![ContentBlock::text(error.to_string())]).with_meta(Some(meta))
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut implementation = Implementation::new("dsa", env!("CARGO_PKG_VERSION"));
        implementation.title = Some("dsa — domain search".into());
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(implementation)
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::list().to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        if !tools::list().iter().any(|t| t.name == name) {
            // An unknown tool is a protocol error (MCP: tools/call, "Unknown tool").
            return Err(ErrorData::invalid_params(format!("Unknown tool: {name}"), None));
        }
        let key = match self.admit(&context).await {
            Ok(key) => key,
            Err(e) => return Ok(error_result(&ToolError::Api(e)).into()),
        };
        let args = request.arguments.unwrap_or_default();
        let result = match tools::call(&self.state, key, name, args).await {
            Ok(Some(value)) => CallToolResult::structured(value),
            Ok(None) => return Err(ErrorData::invalid_params(format!("Unknown tool: {name}"), None)),
            Err(e) => error_result(&e),
        };
        Ok(result.into())
    }
}
