//! The API contract (issue 9): the OpenAPI document at `/v1/openapi.json` and the router agree,
//! route for route and method for method; the document is self-consistent; and the HTTP
//! conventions it promises hold on real answers (rate-limit fields, request ids, CORS exposure,
//! `Retry-After` right for each cause of a 429).
//!
//! The route list is read from the router itself (its `Debug` output names every path it
//! matches), and each route's methods are found by asking it, so the test keeps up with new
//! endpoints without a list to maintain. Routes in `api::openapi::UNDESCRIBED` are exempt, and
//! must not answer JSON.

use std::collections::{BTreeMap, BTreeSet};

use api::keys::{KeyKind, Plan};
use dsa_tests::harness::app::{KeyOpts, TestApp, TestClock};
use serde_json::Value;
use time::macros::datetime;

/// Methods a route can be probed with; HEAD (served with GET) and OPTIONS (CORS preflight) are
/// answered by the framework for every route and are not operations.
const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// Every path the router matches, read from its `Debug` output (`RouteId(n): "/path"` in its
/// `path_router`), without axum's private fallback and nesting routes. The test checks that this
/// reading finds known routes, so a change in axum's `Debug` format fails loudly.
fn router_paths(router: &axum::Router) -> BTreeSet<String> {
    let debug = format!("{router:?}");
    // `Router { path_router: …, fallback_router: …, … }`: the fallback's own "/" is not a route.
    let (routes, _) = debug.split_once("fallback_router:").expect("axum's Router Debug names its fallback_router");
    let mut paths = BTreeSet::new();
    let mut rest = routes;
    while let Some(at) = rest.find("RouteId(") {
        rest = &rest[at + "RouteId(".len()..];
        let Some(open) = rest.find("): \"") else { break };
        if !rest[..open].chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let path_start = &rest[open + 4..];
        let Some(close) = path_start.find('"') else { break };
        let path = &path_start[..close];
        if path.starts_with('/') && !path.contains("__private__axum") {
            paths.insert(path.to_owned());
        }
        rest = &path_start[close..];
    }
    paths
}

/// A concrete request path for a route template (`{name}` and `{*rest}` filled in).
fn concrete(template: &str) -> String {
    template
        .split('/')
        .map(|segment| if segment.starts_with('{') && segment.ends_with('}') { "x" } else { segment })
        .collect::<Vec<_>>()
        .join("/")
}

/// The document as JSON, exactly as served.
fn document() -> Value {
    serde_json::to_value(api::openapi::document()).expect("the document serialises")
}

/// (path, method) → operation, for every operation in the document.
fn operations(doc: &Value) -> BTreeMap<(String, String), Value> {
    let mut ops = BTreeMap::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in METHODS.iter().chain(&["head", "options", "trace"]) {
            if let Some(op) = item.get(*method) {
                ops.insert((path.clone(), (*method).to_owned()), op.clone());
            }
        }
    }
    ops
}

fn is_metered(op: &Value) -> bool {
    op["security"].as_array().is_some_and(|reqs| reqs.iter().any(|r| r.get("client_key").is_some()))
}

/// A router over a standalone state, for reading its routes.
async fn standalone_router() -> (axum::Router, api::Standalone) {
    let mut settings = api::config::Settings::default();
    let db = std::env::temp_dir().join(format!("dsa-contract-{}.db", uuid::Uuid::now_v7()));
    settings.database.url = format!("sqlite://{}?mode=rwc", db.display()).into();
    let app = api::standalone(&settings).await.expect("standalone starts");
    (api::router(app.state.clone(), None), app)
}

#[tokio::test]
async fn every_route_is_described_and_every_described_operation_is_served() {
    let (router, standalone) = standalone_router().await;
    let served = router_paths(&router);
    drop(router);
    drop(standalone);
    // The reading of the router works (else every other assertion here would be vacuous).
    for known in ["/v1/domains/check", "/healthz", "/v1/openapi.json", "/docs"] {
        assert!(served.contains(known), "router paths read from its Debug output miss {known}: {served:?}");
    }
    let doc = document();
    let ops = operations(&doc);
    let described: BTreeSet<String> = ops.keys().map(|(p, _)| p.clone()).collect();

    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts { plan: Plan::Reseller, ..KeyOpts::default() }).await;
    let mut problems = Vec::new();
    for path in &served {
        if let Some(reason) = api::openapi::undescribed(path) {
            // Exempt routes are pages, scripts or the document: none may be a JSON operation.
            let response = app.http.get(app.url(&concrete(path))).send().await.expect("request");
            let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
            if content_type.contains("json") && path != "/v1/openapi.json" {
                problems.push(format!("{path} is exempt ({reason}) but answers {content_type}: describe it"));
            }
            continue;
        }
        if !described.contains(path) {
            problems
                .push(format!("{path} is served but not in the OpenAPI document (annotate it and add it to ApiDoc)"));
            continue;
        }
        // Which methods does the route answer? Anything but 405 means served.
        for method in METHODS {
            let url = app.url(&format!("{}?client_key={key}", concrete(path)));
            let request = app.http.request(method.to_uppercase().parse().expect("method"), url);
            let status = request.send().await.expect("request").status().as_u16();
            let documented = ops.contains_key(&(path.clone(), method.to_owned()));
            if status == 405 && documented {
                problems.push(format!("{} {path} is described but answers 405", method.to_uppercase()));
            } else if status != 405 && !documented {
                problems.push(format!("{} {path} answers {status} but is not described", method.to_uppercase()));
            }
        }
    }
    for path in &described {
        if !served.contains(path) {
            problems.push(format!("{path} is described but the router does not serve it"));
        }
    }
    assert!(problems.is_empty(), "router and document disagree:\n  {}", problems.join("\n  "));
    app.finish(None).await;
}

/// Every `$ref` in `value`, with where it was found.
fn refs<'a>(value: &'a Value, at: String, out: &mut Vec<(String, &'a str)>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if k == "$ref"
                    && let Some(target) = v.as_str()
                {
                    out.push((at.clone(), target));
                }
                refs(v, format!("{at}/{k}"), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                refs(v, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn the_document_is_self_consistent_and_describes_the_conventions() {
    let doc = document();
    assert_eq!(doc["openapi"], "3.1.0");
    let mut found = Vec::new();
    refs(&doc, String::new(), &mut found);
    assert!(!found.is_empty());
    for (at, target) in found {
        let pointer = target.strip_prefix('#').unwrap_or_else(|| panic!("{at}: external $ref {target}"));
        assert!(doc.pointer(pointer).is_some(), "{at}: $ref {target} points nowhere");
    }
    let ops = operations(&doc);
    let mut ids = BTreeSet::new();
    for ((path, method), op) in &ops {
        let name = format!("{} {path}", method.to_uppercase());
        let id = op["operationId"].as_str().unwrap_or_else(|| panic!("{name}: no operationId"));
        assert!(ids.insert(id.to_owned()), "{name}: operationId {id} is used twice");
        assert!(op["tags"].as_array().is_some_and(|t| !t.is_empty()), "{name}: no tag");
        assert!(op["summary"].as_str().is_some_and(|s| !s.is_empty()), "{name}: no summary");
        let responses = op["responses"].as_object().unwrap_or_else(|| panic!("{name}: no responses"));
        assert!(responses.keys().any(|s| s.starts_with('2')), "{name}: no success response");
        for (status, response) in responses {
            let headers = &response["headers"];
            assert!(headers.get("X-Request-Id").is_some(), "{name} {status}: X-Request-Id not described");
            if status.as_str() >= "400" {
                assert_eq!(
                    response["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/ErrorBody",
                    "{name} {status}: errors use the spec's shape (§7)"
                );
            }
            if status == "429" || status == "503" {
                assert!(headers.get("Retry-After").is_some(), "{name} {status}: Retry-After not described");
            }
            if is_metered(op) {
                for h in ["RateLimit-Policy", "RateLimit"] {
                    assert!(headers.get(h).is_some(), "{name} {status}: {h} not described");
                }
            }
        }
        if is_metered(op) {
            for status in ["200", "400", "403", "429"] {
                assert!(responses.contains_key(status), "{name}: a metered operation documents {status}");
            }
            // Every metered operation but the suggestions (pure computation; its optional DNS
            // pre-check degrades to `checked_by: none`) waits on an upstream: 502 when it fails.
            // The MCP endpoint answers a tool's upstream failure inside its JSON-RPC result
            // (`isError`), never as an HTTP 502.
            if op["operationId"] != "suggestDomains" && op["operationId"] != "mcp" {
                assert!(responses.contains_key("502"), "{name}: an operation that asks upstreams documents 502");
            }
        }
    }
    let exempt = doc["x-undescribed-routes"].as_array().expect("x-undescribed-routes");
    assert_eq!(exempt.len(), api::openapi::UNDESCRIBED.len());
    assert!(exempt.iter().all(|e| e["reason"].as_str().is_some_and(|r| !r.is_empty())));
}

#[tokio::test]
async fn metered_answers_carry_rate_limit_fields_and_request_ids_readable_by_browsers() {
    let app = TestApp::spawn().await;
    let origin = "https://shop.example";
    let key =
        app.key(KeyOpts { kind: KeyKind::Embed, allowed_origins: vec![origin.into()], ..KeyOpts::default() }).await;
    let doc = document();
    let mut seen = 0;
    for ((path, method), op) in operations(&doc) {
        if !is_metered(&op) {
            continue;
        }
        seen += 1;
        // Required parameters from the document's examples, so a well-described operation answers
        // for real; the fields must be there whatever the status.
        let mut url = reqwest::Url::parse(&app.url(&concrete(&path))).expect("url");
        url.query_pairs_mut().append_pair("client_key", &key);
        for param in op["parameters"].as_array().into_iter().flatten() {
            if param["in"] == "query"
                && param["required"] == true
                && let Some(example) = param.get("example")
            {
                let value = example.as_str().map_or_else(|| example.to_string(), str::to_owned);
                url.query_pairs_mut().append_pair(param["name"].as_str().expect("name"), &value);
            }
        }
        let response = app
            .http
            .request(method.to_uppercase().parse().expect("method"), url.clone())
            .header("Origin", origin)
            .send()
            .await
            .expect("request");
        let status = response.status().as_u16();
        let headers = response.headers();
        let name = format!("{} {url} → {status}", method.to_uppercase());
        assert!(op["responses"].get(status.to_string()).is_some(), "{name}: status not in the document");
        for field in ["ratelimit-policy", "ratelimit", "x-request-id"] {
            assert!(headers.get(field).is_some(), "{name}: no {field}");
        }
        let exposed = headers
            .get("access-control-expose-headers")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        for field in ["ratelimit-policy", "ratelimit", "x-request-id", "retry-after"] {
            assert!(exposed.split(',').any(|h| h.trim() == field), "{name}: {field} not exposed ({exposed})");
        }
        assert_eq!(headers["access-control-allow-origin"], origin, "{name}");
    }
    assert!(seen >= 1, "no metered operation in the document");
    app.finish(None).await;
}

#[tokio::test]
async fn every_429_carries_retry_after_right_for_its_cause() {
    // Monthly credits: to 00:00 UTC on the 1st of next month.
    let clock = TestClock::at(datetime!(2026-11-30 23:59:30 UTC));
    let app = TestApp::spawn_full(
        |s| s.policy.per_minute = api::policy::PlanRates { free: 2, starter: 100, pro: 100, reseller: 100 },
        clock.clock(),
    )
    .await;
    let key = app.key(KeyOpts { plan: Plan::Starter, ..KeyOpts::default() }).await;
    let key_id = app.key_id(&key).await;
    let spent = common::messages::LedgerEvent {
        event_id: uuid::Uuid::now_v7(),
        key_id,
        period: "2026-11".into(),
        endpoint: "check".into(),
        credits: 5_000,
        charged_at: datetime!(2026-11-15 12:00:00 UTC),
        front: "test".into(),
        request_id: None,
    };
    app.store.apply_ledger(vec![spent]).await.expect("ledger");
    let (status, headers, body) = app.get(&format!("/v1/domains/check?client_key={key}&domain=example.com")).await;
    assert_eq!((status, body["error"].as_str()), (429, Some("Monthly credit limit reached")), "spec §7 text");
    assert_eq!(headers["retry-after"], "30", "seconds to 2026-12-01T00:00:00Z");

    // Per-minute limit: to the next minute window (here 30 s away).
    let free = app.key(KeyOpts::default()).await;
    for _ in 0..2 {
        assert_eq!(app.get(&format!("/v1/domains/check?client_key={free}&domain=example.com")).await.0, 200);
    }
    let (status, headers, body) = app.get(&format!("/v1/domains/check?client_key={free}&domain=example.com")).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(headers["retry-after"], "30");
    assert_eq!(headers["ratelimit"], "\"per-minute\";r=0;t=30");

    // Demo limit: the demo counters are per UTC day, so to 00:00 UTC; a new day gives new checks.
    clock.set(datetime!(2026-11-22 23:00:00 UTC));
    let first = app.http.get(app.url("/v1/domains/check?domain=example.com")).send().await.expect("get");
    assert_eq!(first.status().as_u16(), 200);
    let cookie = first.headers()["set-cookie"].to_str().expect("ascii").split(';').next().expect("pair").to_owned();
    let demo = |app: &TestApp| {
        let cookie = cookie.clone();
        let url = app.url("/v1/domains/check?domain=example.com");
        let http = app.http.clone();
        async move {
            let response = http.get(url).header("Cookie", cookie).send().await.expect("get");
            (response.status().as_u16(), response.headers().get("retry-after").cloned())
        }
    };
    assert_eq!(demo(&app).await.0, 200);
    let (status, retry_after) = demo(&app).await;
    assert_eq!(status, 429);
    assert_eq!(retry_after.expect("Retry-After on the demo limit"), "3600");
    clock.set(datetime!(2026-11-23 00:00:01 UTC));
    assert_eq!(demo(&app).await.0, 200, "a new UTC day, as Retry-After said");
    app.finish(None).await;
}

#[tokio::test]
async fn unknown_paths_and_methods_say_what_to_do() {
    let app = TestApp::spawn().await;
    let (status, _, body) = app.get("/v1/nope").await;
    assert_eq!(status, 404);
    assert_eq!(body["success"], false);
    assert!(body["error"].as_str().expect("text").contains("/docs"), "{body}");
    let response = app.http.delete(app.url("/v1/domains/check")).send().await.expect("request");
    assert_eq!(response.status().as_u16(), 405);
    let allow = response.headers().get("allow").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["success"], false);
    assert!(body["error"].as_str().expect("text").contains("Allow"), "{body}");
    assert!(allow.is_some_and(|a| a.contains("GET")), "the 405 names the allowed methods");
    app.finish(None).await;
}

#[test]
fn the_bulk_operations_document_both_forms_the_body_and_the_limit() {
    let doc = document();
    let item = &doc["paths"]["/v1/domains/bulk"];
    for method in ["get", "post"] {
        let op = &item[method];
        let ok = &op["responses"]["200"]["content"];
        assert!(
            ok["application/json"]["schema"]["$ref"].as_str().is_some_and(|r| r.ends_with("/BulkResponse")),
            "{op}"
        );
        assert!(
            ok["application/x-ndjson"]["schema"]["$ref"].as_str().is_some_and(|r| r.ends_with("/BulkStreamLine")),
            "{op}"
        );
        assert!(op["responses"]["400"]["description"].as_str().is_some_and(|d| d.contains("more than 10")), "{op}");
    }
    let body = &item["post"]["requestBody"];
    assert_eq!(body["required"], true, "{body}");
    assert!(
        body["content"]["application/json"]["schema"]["$ref"].as_str().is_some_and(|r| r.ends_with("/BulkRequest"))
    );
    let domains = &doc["components"]["schemas"]["BulkRequest"]["properties"]["domains"];
    assert_eq!((domains["minItems"].as_u64(), domains["maxItems"].as_u64()), (Some(1), Some(10)), "{domains}");
    assert!(item["post"]["responses"].get("415").is_some());
    assert!(item["get"]["responses"].get("415").is_none(), "a GET has no body to refuse");
}

/// Every text of the document (descriptions, summaries, reasons), with where it is.
fn texts(value: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match value {
        Value::String(s) => out.push((at.to_owned(), s.clone())),
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                texts(v, &format!("{at}/{i}"), out);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                texts(v, &format!("{at}/{k}"), out);
            }
        }
        _ => {}
    }
}

/// Issue 30: the document is written for the API's users, not copied from Rust docs: no Rust
/// paths or intra-doc links, no "Handler of", no references to a specification outsiders never
/// see, no configuration keys; every operation has a short summary (one line, no trailing period)
/// and a description.
#[test]
fn the_document_speaks_to_api_users_not_rust_readers() {
    let doc = document();
    let mut all = Vec::new();
    texts(&doc, "", &mut all);
    let banned = [
        "super::",
        "crate::",
        "Handler of",
        "spec §",
        "the spec's",
        "(§",
        "[`",
        "](",
        "module doc",
        "engine.",
        "policy.",
        "server.request",
        "server.public",
        "fleet.",
    ];
    let offending: Vec<String> = all
        .iter()
        .filter(|(_, text)| banned.iter().any(|b| text.contains(b)))
        .map(|(at, text)| format!("{at}: {}", text.chars().take(120).collect::<String>()))
        .collect();
    assert!(offending.is_empty(), "Rust or internal wording in the document:\n{}", offending.join("\n"));
    for ((path, method), op) in operations(&doc) {
        let summary = op["summary"].as_str().unwrap_or_default();
        assert!(
            !summary.is_empty() && summary.len() <= 60 && !summary.contains('\n') && !summary.ends_with('.'),
            "{method} {path}: a one-line summary of at most 60 characters: {summary:?}"
        );
        assert!(op["description"].as_str().is_some_and(|d| d.len() > summary.len()), "{method} {path}: a description");
        // Every operation states its security: the key, or none for a free one (`[]`).
        assert!(op["security"].is_array(), "{method} {path}: no `security` member");
    }
}
