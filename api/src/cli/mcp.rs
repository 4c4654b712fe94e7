//! `dsa mcp`: the MCP server over stdio for a desktop agent (Claude Desktop and other MCP hosts
//! that start a command), running the standalone service in this process.
//!
//! The settings load as for `dsa serve` (`--config`, `DSA_CONFIG`, `DSA_…`), so the key is looked
//! up in the same store and charged in the same ledger as a REST call. Beside a running `dsa serve`
//! on the same store, each process sees the other's charges within `fleet.credits_refresh_ms`
//! (this one re-reads them; `dsa serve` reads a key's settled usage when it first sees the key). Standard output carries
//! the MCP messages only; logs go to standard error. The process ends when the agent closes
//! standard input (or on Ctrl-C), after the charges made are settled.
//!
//! `dsa mcp --server URL` runs no service: it relays each message from standard input to the
//! `/mcp` endpoint of the dsa at `URL` (one POST each, the key as a Bearer token) and writes the
//! answers to standard output, so the agent's calls are limited and charged by that server.

use anyhow::Context as _;
use api::config::Settings;
use api::mcp::McpServer;
use rmcp::ServiceExt as _;
use secrecy::SecretString;

/// The environment variable holding the client key.
pub(crate) const KEY_VAR: &str = "DSA_CLIENT_KEY";

/// The client key from the environment.
fn key_from_env() -> anyhow::Result<String> {
    std::env::var(KEY_VAR)
        .ok()
        .map(|k| k.trim().to_owned())
        .filter(|k| !k.is_empty())
        .with_context(|| format!("{KEY_VAR} is not set: give the client key the agent's calls are charged to"))
}

/// Runs `dsa mcp` until the agent hangs up.
pub(crate) async fn run(settings: Settings) -> anyhow::Result<()> {
    let key = key_from_env()?;
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
    app.shut_down().await;
    tracing::info!("MCP server stopped; ledger drained");
    Ok(())
}

/// Largest message relayed, bytes (the server's own body limit, `/mcp`, is 64 KiB).
const MAX_MESSAGE: usize = 64 * 1024;

/// Runs `dsa mcp --server URL`: relays the agent's messages to the `/mcp` endpoint at `server`
/// until the agent closes standard input.
///
/// Each line of standard input is one JSON-RPC message, POSTed on its own (the endpoint is
/// stateless, so messages may run concurrently); a 200's body is written back as one line, a 202
/// (a notification) writes nothing, and a refusal (403 bad key, 429 limit, …) is answered to a
/// request as a JSON-RPC error whose message is the server's error text. The protocol version
/// agreed at `initialize` is sent along in `MCP-Protocol-Version`, as the HTTP transport asks.
pub(crate) async fn relay(server: url::Url) -> anyhow::Result<()> {
    use tokio::io::AsyncWriteExt as _;

    let key = key_from_env()?;
    let endpoint = if server.path().trim_end_matches('/').ends_with("/mcp") {
        server
    } else {
        server.join("/mcp").context("--server: not a base URL")?
    };
    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(120))
        .build()
        .context("HTTP client for --server")?;
    let relay = std::sync::Arc::new(Relay {
        http,
        endpoint,
        key,
        version: std::sync::Mutex::new(None),
        out: tokio::sync::Mutex::new(tokio::io::stdout()),
    });
    tracing::info!(endpoint = %relay.endpoint, "dsa MCP relay on stdio");
    let mut input = tokio::io::BufReader::new(tokio::io::stdin());
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        let message = tokio::select! {
            message = next_message(&mut input) => message.context("reading standard input")?,
            _ = tokio::signal::ctrl_c() => None,
        };
        let line = match message {
            None => break,
            Some(Message::TooLong) => {
                relay.reply_error(&serde_json::Value::Null, -32600, "Message over 64 KiB.", None).await;
                continue;
            }
            Some(Message::Line(line)) => line,
        };
        if line.trim().is_empty() {
            continue;
        }
        // At most MAX_IN_FLIGHT messages are relayed at once; past that, standard input waits.
        while tasks.len() >= MAX_IN_FLIGHT {
            tasks.join_next().await;
        }
        let relay = relay.clone();
        tasks.spawn(async move { relay.forward(line).await });
        // Finished tasks are reaped as we go, so the set holds only messages in flight.
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    relay.out.lock().await.flush().await.ok();
    Ok(())
}

/// Messages relayed at once by `dsa mcp --server` (the endpoint is stateless; an agent that sends
/// more waits for answers before its next lines are read).
const MAX_IN_FLIGHT: usize = 32;

/// One line of standard input.
#[derive(Debug, PartialEq, Eq)]
enum Message {
    /// A line of at most [`MAX_MESSAGE`] bytes, without its end of line.
    Line(String),
    /// A longer line (read and dropped, never held whole).
    TooLong,
}

/// The next line of `input`, reading at most [`MAX_MESSAGE`] + 1 bytes of it into memory; a
/// longer line is skipped to its end in bounded pieces. `None` at the end of the input.
///
/// # Errors
/// Read errors, and a line that is not UTF-8.
async fn next_message(input: &mut (impl tokio::io::AsyncBufRead + Unpin)) -> std::io::Result<Option<Message>> {
    use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _};

    let mut line = Vec::new();
    let read = (&mut *input).take(MAX_MESSAGE as u64 + 1).read_until(b'\n', &mut line).await?;
    if read == 0 {
        return Ok(None);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    } else if line.len() > MAX_MESSAGE {
        // Drop the rest of the line, a bounded piece at a time.
        loop {
            line.clear();
            let read = (&mut *input).take(MAX_MESSAGE as u64).read_until(b'\n', &mut line).await?;
            if read == 0 || line.last() == Some(&b'\n') {
                return Ok(Some(Message::TooLong));
            }
        }
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line)
        .map(|line| Some(Message::Line(line)))
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// The relay's shared parts.
struct Relay {
    http: reqwest::Client,
    endpoint: url::Url,
    key: String,
    /// The protocol version the `initialize` answer agreed on, if any.
    version: std::sync::Mutex<Option<String>>,
    out: tokio::sync::Mutex<tokio::io::Stdout>,
}

impl Relay {
    /// Forwards one message and writes its answer, if it has one.
    async fn forward(&self, line: String) {
        let message: serde_json::Value = match serde_json::from_str(&line) {
            Ok(m) if line.len() <= MAX_MESSAGE => m,
            Ok(_) => return self.reply_error(&serde_json::Value::Null, -32600, "Message over 64 KiB.", None).await,
            Err(e) => {
                return self.reply_error(&serde_json::Value::Null, -32700, &format!("Parse error: {e}"), None).await;
            }
        };
        let id = message.get("id").cloned();
        let initialize = message.get("method").and_then(|m| m.as_str()) == Some("initialize");
        let mut request = self
            .http
            .post(self.endpoint.clone())
            .bearer_auth(&self.key)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .body(line);
        let agreed = self.version.lock().ok().and_then(|v| v.clone());
        if let (false, Some(version)) = (initialize, agreed) {
            request = request.header("MCP-Protocol-Version", version);
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "relay: no answer from the server");
                if let Some(id) = &id {
                    self.reply_error(id, -32000, "The dsa server did not answer; retry shortly.", None).await;
                }
                return;
            }
        };
        let status = response.status();
        let body = response.bytes().await.unwrap_or_default();
        if status == reqwest::StatusCode::ACCEPTED {
            return;
        }
        if status.is_success() {
            if initialize
                && let Ok(answer) = serde_json::from_slice::<serde_json::Value>(&body)
                && let Some(v) = answer.pointer("/result/protocolVersion").and_then(|v| v.as_str())
                && let Ok(mut agreed) = self.version.lock()
            {
                *agreed = Some(v.to_owned());
            }
            return self.write(&body).await;
        }
        let said = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|b| b.get("error").and_then(|e| e.as_str()).map(str::to_owned))
            .unwrap_or_else(|| format!("The dsa server refused the request ({status})."));
        if let Some(id) = &id {
            self.reply_error(id, -32000, &said, Some(status.as_u16())).await;
        }
    }

    /// Writes a JSON-RPC error for request `id`.
    async fn reply_error(&self, id: &serde_json::Value, code: i64, message: &str, status: Option<u16>) {
        let mut error = serde_json::json!({ "code": code, "message": message });
        if let Some(status) = status {
            error["data"] = serde_json::json!({ "dsa/status": status });
        }
        let reply = serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": error });
        self.write(reply.to_string().as_bytes()).await;
    }

    /// Writes one line to standard output (lines never interleave).
    async fn write(&self, bytes: &[u8]) {
        use tokio::io::AsyncWriteExt as _;
        let mut out = self.out.lock().await;
        let trimmed = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        if out.write_all(trimmed).await.is_err() || out.write_all(b"\n").await.is_err() || out.flush().await.is_err() {
            tracing::warn!("relay: standard output closed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn standard_input_is_read_a_bounded_line_at_a_time() {
        let mut input = b"{\"a\":1}\r\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 3 * MAX_MESSAGE + 7));
        input.extend(b"\n{\"b\":2}\n");
        input.extend(std::iter::repeat_n(b'y', MAX_MESSAGE));
        input.extend(b"\n");
        input.extend(std::iter::repeat_n(b'z', MAX_MESSAGE + 1));
        let mut reader = tokio::io::BufReader::with_capacity(4096, &input[..]);
        let mut read = Vec::new();
        while let Some(message) = next_message(&mut reader).await.expect("read") {
            read.push(match message {
                Message::Line(line) => format!("line of {}", line.len()),
                Message::TooLong => "too long".to_owned(),
            });
        }
        assert_eq!(
            read,
            ["line of 7", "too long", "line of 7", &format!("line of {MAX_MESSAGE}"), "too long"],
            "a line over the limit is dropped whole, the next one read as usual, the last without a newline too"
        );
        let mut bad = tokio::io::BufReader::new(&b"\xff\xfe\n"[..]);
        assert!(next_message(&mut bad).await.is_err(), "not UTF-8");
    }
}
