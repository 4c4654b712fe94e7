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
use serde_json::{Value, json};
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

/// A router over a standalone state, for reading its routes, and the directory of the state's
/// database (its own: removed whole, no task still holding the store can make the file again).
async fn standalone_router() -> (axum::Router, api::Standalone, std::path::PathBuf) {
    let mut settings = api::config::Settings::default();
    let dir = std::env::temp_dir().join(format!("dsa-contract-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&dir).expect("database directory");
    settings.database.url = format!("sqlite://{}?mode=rwc", dir.join("dsa.db").display()).into();
    let app = api::standalone(&settings).await.expect("standalone starts");
    (api::router(app.state.clone(), None), app, dir)
}

#[tokio::test]
async fn every_route_is_described_and_every_described_operation_is_served() {
    let (router, standalone, dir) = standalone_router().await;
    let served = router_paths(&router);
    drop(router);
    let api::Standalone { state, ledger, store } = standalone;
    drop((state, store));
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), ledger).await;
    let _ = std::fs::remove_dir_all(&dir);
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
            // 200, or 201 for a webhook or a watch created, 202 for a delivery scheduled or a bulk
            // job submitted.
            for status in ["400", "403", "429"] {
                assert!(responses.contains_key(status), "{name}: a metered operation documents {status}");
            }
            assert!(
                ["200", "201", "202"].iter().any(|s| responses.contains_key(*s)),
                "{name}: a metered operation documents its success"
            );
            let webhooks = op["tags"].as_array().is_some_and(|t| t.iter().any(|t| t == "webhooks"));
            // Every metered operation but the suggestions (pure computation; its optional DNS
            // pre-check degrades to `checked_by: none`) waits on an upstream: 502 when it fails.
            // The MCP endpoint answers a tool's upstream failure inside its JSON-RPC result
            // (`isError`), never as an HTTP 502. Webhook management, the watches and bulk jobs are
            // read and written in the store (re-checks, deliveries and a job's checks run in the
            // background).
            let own = [
                "suggestDomains",
                "mcp",
                "createWatch",
                "listWatches",
                "getWatch",
                "deleteWatch",
                "listWatchEvents",
                "submitBulkJob",
                "listBulkJobs",
                "getBulkJob",
                "cancelBulkJob",
                "getBulkJobResults",
            ];
            if !own.iter().any(|id| op["operationId"] == *id) && !webhooks {
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
        // The stream is described as a stream (issue 30): text of its media type, the line schema
        // beside it, so generators keep the JSON form typed and never parse the stream as one value.
        let stream = &ok["application/x-ndjson"];
        assert_eq!(stream["schema"]["type"], "string", "{op}");
        assert_eq!(stream["schema"]["contentMediaType"], "application/x-ndjson", "{op}");
        assert!(stream["x-itemSchema"]["$ref"].as_str().is_some_and(|r| r.ends_with("/BulkStreamLine")), "{op}");
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

/// Every schema object in `value` (anything with a `$ref`, `type`, `oneOf`…), with where it is.
fn walk<'a>(value: &'a Value, at: &str, out: &mut Vec<(String, &'a serde_json::Map<String, Value>)>) {
    match value {
        Value::Object(map) => {
            out.push((at.to_owned(), map));
            for (k, v) in map {
                walk(v, &format!("{at}/{k}"), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(v, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Issue 30, items 3 and 4: what client generators read is typed and complete — no description
/// they drop, parameter descriptions in the schema they read, closed sets as enums, defaults as
/// `default`, `Status` without the value never sent, the SOA serial unsigned 32-bit, the `Flag`
/// values the server parses, `required`/`null` as the server sends (the live check,
/// `.ci/contract_live.py`, compares real answers with the closed schemas).
#[test]
fn the_document_types_what_generated_clients_read() {
    let doc = document();
    let schemas = &doc["components"]["schemas"];
    let mut all = Vec::new();
    walk(&doc, "", &mut all);
    for (at, map) in &all {
        for keyword in ["oneOf", "anyOf"] {
            for item in map.get(keyword).and_then(Value::as_array).into_iter().flatten() {
                assert!(
                    !(item.get("$ref").is_some() && item.get("description").is_some()),
                    "{at}: a description beside a $ref inside {keyword} (generators drop it): {item}"
                );
            }
        }
    }
    for ((path, method), op) in operations(&doc) {
        for param in op["parameters"].as_array().into_iter().flatten() {
            if let Some(description) = param.get("description") {
                assert_eq!(&param["schema"]["description"], description, "{method} {path} {}", param["name"]);
            }
        }
    }
    // Closed sets.
    let statuses: Vec<&str> =
        schemas["Status"]["enum"].as_array().expect("enum").iter().filter_map(Value::as_str).collect();
    assert!(!statuses.contains(&"unknown"), "`unknown` is never sent: {statuses:?}");
    use common::verdict::Status;
    for status in [Status::Available, Status::Taken, Status::PendingDelete, Status::Reserved, Status::Restricted] {
        let sent = serde_json::to_value(status).expect("serialises");
        assert!(statuses.contains(&sent.as_str().expect("a string")), "{sent} is sent but not in Status");
        let message = &schemas["CheckResponse"]["properties"]["message"]["enum"];
        assert!(message.as_array().is_some_and(|m| m.contains(&Value::from(status.message()))), "{message}");
    }
    let record = &schemas["DnsRecord"]["properties"];
    assert_eq!(record["type"]["$ref"], "#/components/schemas/DnsType");
    assert_eq!(
        (record["serial"]["format"].as_str(), record["serial"]["maximum"].as_u64()),
        (Some("uint32"), Some(4_294_967_295))
    );
    for (schema, member) in [
        ("SuggestionItem", "checked_by"),
        ("WhoisProvenance", "protocol"),
        ("WhoisProvenance", "authority"),
        ("MethodHealth", "method"),
        ("DnsLookupInfo", "rcode"),
    ] {
        assert!(schemas[schema]["properties"][member]["enum"].is_array(), "{schema}.{member} is a closed set");
    }
    let dnssec = &schemas["DnsLookupInfo"]["properties"]["dnssec"];
    assert!(dnssec["oneOf"][0]["enum"].is_array() && dnssec["oneOf"][1]["type"] == "null", "{dnssec}");
    // Required and nullable: omitted members are optional and never null; members always sent
    // are required, nullable only when sent as null.
    let check = &schemas["CheckResponse"];
    assert!(!check["required"].as_array().expect("required").contains(&"demo".into()));
    assert_eq!(check["properties"]["demo"]["type"], "boolean", "omitted when absent, never null");
    let short = &schemas["DomainCheckResponse"];
    assert_eq!(short["required"].as_array().map(Vec::len), Some(6), "every member is always sent: {short}");
    let whois = &schemas["WhoisResponse"];
    assert!(whois["required"].as_array().expect("required").contains(&"whois".into()));
    assert_eq!(whois["properties"]["whois"]["oneOf"][1]["type"], "null", "sent as null when not registered");
    // Flags: what the server parses, as numbers, strings or booleans.
    let flag = &schemas["Flag"]["oneOf"];
    for value in [json!(0), json!(1), json!("0"), json!("1"), json!("true"), json!("false")] {
        assert!(
            flag.as_array().expect("oneOf").iter().any(|s| s["enum"].as_array().is_some_and(|e| e.contains(&value))),
            "Flag refuses {value}"
        );
        let text = value.as_str().map_or_else(|| value.to_string(), str::to_owned);
        assert!(api::routes::flag(&Some(text.clone()), "check").is_ok(), "the server refuses check={text}");
    }
    assert_eq!(flag[2]["type"], "boolean");
    // Defaults as `default`, equal to the code's.
    let query = |path: &str, name: &str| {
        doc["paths"][path]["get"]["parameters"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == name))
            .map(|p| p["schema"]["default"].clone())
            .unwrap_or_default()
    };
    let tlds: Vec<String> = api::suggest::DEFAULT_TLDS.iter().map(|t| format!(".{t}")).collect();
    assert_eq!(query("/v1/domains/suggest", "tlds"), json!(tlds.join(",")));
    assert_eq!(query("/v1/domains/suggest", "limit"), json!(api::suggest::LIMIT_RANGE.end()));
    let types: Vec<&str> = common::lookup::DnsType::DEFAULT.iter().map(|t| t.as_str()).collect();
    assert_eq!(query("/v1/dns", "types"), json!(types.join(",")));
    assert_eq!(
        doc["servers"],
        json!([{"url": "/", "description": "This dsa instance: the host that serves this document."}])
    );
}

/// The example texts of one error response (`example`, or each of `examples`).
fn example_texts(response: &Value) -> Vec<String> {
    let json = &response["content"]["application/json"];
    let mut texts: Vec<String> = json["example"]["error"].as_str().map(str::to_owned).into_iter().collect();
    for example in json["examples"].as_object().into_iter().flat_map(|e| e.values()) {
        texts.extend(example["value"]["error"].as_str().map(str::to_owned));
    }
    texts
}

/// Issue 30, item 5: each error status of an operation shows its own example, and the examples are
/// what the server really answers.
#[tokio::test]
async fn every_error_status_has_its_own_example_taken_from_a_real_answer() {
    let doc = document();
    for ((path, method), op) in operations(&doc) {
        let mut seen = BTreeMap::new();
        for (status, response) in op["responses"].as_object().expect("responses") {
            if status.as_str() < "400" {
                continue;
            }
            let texts = example_texts(response);
            assert!(!texts.is_empty(), "{method} {path} {status}: no example");
            for text in texts {
                if let Some(other) = seen.insert(text.clone(), status.clone()) {
                    panic!("{method} {path}: {other} and {status} show the same example {text:?}");
                }
            }
        }
    }
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts { plan: Plan::Reseller, ..KeyOpts::default() }).await;
    let example =
        |path: &str, method: &str, status: &str| example_texts(&doc["paths"][path][method]["responses"][status]);
    for (request, path, status) in [
        ("/v1/domains/check?client_key=dsa_server_nope&domain=example.com".to_owned(), "/v1/domains/check", "403"),
        (format!("/v1/domains/check?client_key={key}"), "/v1/domains/check", "400"),
        (format!("/v1/whois?client_key={key}"), "/v1/whois", "400"),
        (format!("/v1/domains/suggest?client_key={key}"), "/v1/domains/suggest", "400"),
        (format!("/v1/dns?client_key={key}"), "/v1/dns", "400"),
    ] {
        let (got, _, body) = app.get(&request).await;
        assert_eq!(got.to_string(), status, "{request}: {body}");
        let text = body["error"].as_str().expect("error text").to_owned();
        assert!(example(path, "get", status).contains(&text), "{path} {status}: the server says {text:?}");
    }
    let response = app
        .http
        .post(app.url(&format!("/v1/domains/bulk?client_key={key}")))
        .header("content-type", "text/plain")
        .body("example.com")
        .send()
        .await
        .expect("request");
    assert_eq!(response.status().as_u16(), 415);
    let body: Value = response.json().await.expect("json");
    assert_eq!(example("/v1/domains/bulk", "post", "415"), vec![body["error"].as_str().expect("text").to_owned()]);
    // The bulk example's rejected entry reads as the server's.
    let bulk = &doc["paths"]["/v1/domains/bulk"]["get"]["responses"]["200"]["content"]["application/json"]["example"];
    let invalid = &bulk["invalid"][0];
    let input = invalid["input"].as_str().expect("input");
    let (_, _, body) = app.get(&format!("/v1/domains/bulk?client_key={key}&domains={input}")).await;
    assert_eq!(body["invalid"][0]["error"], invalid["error"], "{body}");
    app.finish(None).await;
}
