//! `dsa mcp`: the MCP server over stdio for a desktop agent (Claude Desktop and other MCP hosts
//! that start a command), running the standalone service in this process.
//!
//! The settings load as for `dsa serve` (`--config`, `DSA_CONFIG`, `DSA_…`), so the key is looked
//! up in the same store and charged in the same ledger as a REST call. Beside a running `dsa serve`
//! on the same store, each process sees the other's charges within `fleet.credits_refresh_ms`
//! (this one re-reads them; `dsa serve` reads a key's settled usage when it first sees the key). Standard output carries
//! the MCP messages only; logs go to standard error. The process ends when the agent closes
//! standard input (or on Ctrl-C), after the charges made are settled.

use anyhow::Context as _;
use api::config::Settings;
use api::mcp::McpServer;
use rmcp::ServiceExt as _;
use secrecy::SecretString;

/// The environment variable holding the client key.
pub(crate) const KEY_VAR: &str = "DSA_CLIENT_KEY";

/// Runs `dsa mcp` until the agent hangs up.
pub(crate) async fn run(settings: Settings) -> anyhow::Result<()> {
    let key = std::env::var(KEY_VAR)
        .ok()
        .map(|k| k.trim().to_owned())
        .filter(|k| !k.is_empty())
        .with_context(|| format!("{KEY_VAR} is not set: give the client key the agent's calls are charged to"))?;
    // The store may be shared with a running `dsa serve`: see its charges within the refresh.
    let app = api::standalone_beside_others(&settings).await?;
    // Said once at start, in the agent host's log; every call checks the key again (it may be
    // enabled, disabled or replaced while the agent runs) and answers the REST error text.
    if let Err(e) = app.state.key(&key).await {
        tracing::warn!(error = %e, "{KEY_VAR} is not usable now; every tool call will answer this error");
    }
    let server = McpServer::for_key(app.state.clone(), SecretString::from(key));
    tracing::info!("dsa MCP server on stdio");
    let running = server.serve(rmcp::transport::stdio()).await.context("MCP handshake on stdio")?;
    tokio::select! {
        outcome = running.waiting() => { outcome.context("MCP session on stdio")?; }
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted"),
    }
    let api::Standalone { state, ledger, .. } = app;
    drop(state);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), ledger).await;
    tracing::info!("MCP server stopped; ledger drained");
    Ok(())
}
