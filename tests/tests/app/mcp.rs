//! `/mcp` over HTTP (issue 27): the keyed prelude refuses before any MCP processing (403 for a
//! bad key or a refused origin, 429 past the per-minute limit, each in the API's error shape),
//! the key is taken from `client_key` or `Authorization: Bearer`, the transport's own refusals
//! are in the error shape too, and a tool call is charged like its REST call. The SDK-driven
//! tests of both transports are in `tests/mcp` (`.ci/mcp.sh`).

use api::keys::{KeyKind, Plan};
use dsa_tests::harness::app::{KeyOpts, TestApp};
use serde_json::{Value, json};

const ACCEPT: &str = "application/json, text/event-stream";

async fn post(app: &TestApp, query: &str, headers: &[(&str, &str)], body: &Value) -> (u16, Value) {
    let mut request = app
        .http
        .post(app.url(&format!("/mcp{query}")))
        .header("Accept", ACCEPT)
        .header("Content-Type", "application/json")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or_else(|_| json!({ "raw": text })))
}

fn list() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

#[tokio::test]
async fn the_keyed_prelude_refuses_before_any_mcp_processing() {
    let app = TestApp::spawn_with(|s| {
        s.policy.per_minute = api::policy::PlanRates { free: 3, starter: 100, pro: 100, reseller: 100 }
    })
    .await;
    // No key at all: the REST 400.
    let (status, body) = post(&app, "", &[], &list()).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("Missing required parameter: client_key.")), "{body}");
    // A made-up key, in either place: 403 with the REST text, no JSON-RPC answer.
    for (query, headers) in
        [("?client_key=dsa_server_nope", vec![]), ("", vec![("Authorization", "Bearer dsa_server_nope")])]
    {
        let (status, body) = post(&app, query, &headers, &list()).await;
        assert_eq!((status, body["error"].as_str()), (403, Some("Invalid or disabled client key.")), "{body}");
        assert!(body.get("jsonrpc").is_none());
    }
    // A server key from a browser page (what a DNS-rebinding page would send): 403.
    let server = app.key(KeyOpts::default()).await;
    let (status, body) =
        post(&app, &format!("?client_key={server}"), &[("Origin", "http://rebound.example")], &list()).await;
    assert_eq!(status, 403, "{body}");
    assert!(body["error"].as_str().is_some_and(|e| e.contains("Server keys")), "{body}");
    // An embed key from an origin it does not allow: 403; from its own origin: served.
    let embed = app
        .key(KeyOpts {
            kind: KeyKind::Embed,
            allowed_origins: vec!["https://shop.example".into()],
            ..KeyOpts::default()
        })
        .await;
    let (status, _) = post(&app, &format!("?client_key={embed}"), &[("Origin", "https://evil.example")], &list()).await;
    assert_eq!(status, 403);
    let (status, body) =
        post(&app, &format!("?client_key={embed}"), &[("Origin", "https://shop.example")], &list()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["tools"].as_array().map(Vec::len), Some(6), "{body}");
    // The per-minute limit (3 for this plan): the fourth request of the minute is a 429 with
    // Retry-After, whatever it carries.
    let limited = app.key(KeyOpts { plan: Plan::Free, ..KeyOpts::default() }).await;
    for _ in 0..3 {
        assert_eq!(post(&app, "", &[("Authorization", &format!("Bearer {limited}"))], &list()).await.0, 200);
    }
    let response = app
        .http
        .post(app.url("/mcp"))
        .header("Authorization", format!("Bearer {limited}"))
        .header("Accept", ACCEPT)
        .header("Content-Type", "application/json")
        .body(list().to_string())
        .send()
        .await
        .expect("request");
    assert_eq!(response.status().as_u16(), 429);
    assert!(response.headers().get("retry-after").is_some());
    assert!(response.headers().get("ratelimit").is_some());
    assert_eq!(app.finish(Some(&limited)).await, 0, "listing tools charges nothing");
}

#[tokio::test]
async fn transport_refusals_use_the_error_shape_and_stateless_methods() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let q = format!("?client_key={key}");
    // Not JSON: the transport's 415, in the API's shape.
    let response = app
        .http
        .post(app.url(&format!("/mcp{q}")))
        .header("Accept", ACCEPT)
        .header("Content-Type", "text/plain")
        .body("hello")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status().as_u16(), 415);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["success"], false, "{body}");
    // Over the body cap: 413.
    let huge = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"pad": "x".repeat(100_000)}});
    let (status, body) = post(&app, &q, &[], &huge).await;
    assert_eq!((status, body["success"].as_bool()), (413, Some(false)), "{body}");
    // Stateless: no server stream (GET) and no session to end (DELETE).
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let response = app
            .http
            .request(method.clone(), app.url(&format!("/mcp{q}")))
            .header("Accept", ACCEPT)
            .send()
            .await
            .expect("request");
        assert_eq!(response.status().as_u16(), 405, "{method}");
        assert_eq!(response.headers()["allow"], "POST");
        let body: Value = response.json().await.expect("json");
        assert_eq!(body["success"], false);
    }
    // A plain client that sends no Accept at all still gets the JSON answer.
    let response = app
        .http
        .post(app.url(&format!("/mcp{q}")))
        .header("Content-Type", "application/json")
        .body(list().to_string())
        .send()
        .await
        .expect("request");
    assert_eq!(response.status().as_u16(), 200);
    assert!(response.headers()["content-type"].to_str().expect("ascii").starts_with("application/json"));
    app.finish(None).await;
}

#[tokio::test]
async fn a_tool_call_is_charged_like_its_rest_call_and_errors_keep_the_rest_text() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let q = format!("?client_key={key}");
    let (status, _, rest) = app.get(&format!("/v1/domains/check{q}&domain=example.com")).await;
    assert_eq!(status, 200, "{rest}");
    let (status, body) = post(&app, &q, &[], &call("check_domain", json!({"domain": "example.com"}))).await;
    assert_eq!(status, 200, "{body}");
    let result = &body["result"];
    assert_eq!(result["isError"], false, "{body}");
    let structured = &result["structuredContent"];
    assert_eq!(structured["domain"], rest["domain"]);
    assert_eq!(structured["available"], rest["available"]);
    assert_eq!(structured["credits_cost"], 1);
    assert_eq!(structured["credits_remaining"].as_i64(), rest["credits_remaining"].as_i64().map(|r| r - 1));
    // A bad domain: the REST 400 text as a tool error, nothing charged.
    let (_, _, rest_bad) = app.get(&format!("/v1/domains/check{q}&domain=exa_mple.com")).await;
    let (status, body) = post(&app, &q, &[], &call("check_domain", json!({"domain": "exa_mple.com"}))).await;
    assert_eq!(status, 200);
    assert_eq!(body["result"]["isError"], true, "{body}");
    assert_eq!(body["result"]["content"][0]["text"], rest_bad["error"]);
    assert_eq!(body["result"]["_meta"]["dsa/status"], 400);
    // An unknown tool is a JSON-RPC error, not a tool result.
    let (status, body) = post(&app, &q, &[], &call("register_domain", json!({}))).await;
    assert_eq!(status, 200);
    assert!(body["error"]["message"].as_str().is_some_and(|m| m.contains("Unknown tool")), "{body}");
    assert_eq!(app.finish(Some(&key)).await, 2, "the REST check and the MCP check");
}
