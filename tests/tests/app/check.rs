//! `GET /v1/domains/check` end to end (spec §2.2, §4.1, §5, §7, §8): a real front in standalone
//! mode over HTTP, in front of the registry simulator.

use api::keys::{KeyKind, KeyState, Plan};
use dsa_tests::harness::app::{KeyOpts, TestApp};
use dsa_tests::sim::{Fault, Faults, Knobs};
use serde_json::Value;

fn check_path(key: &str, domain: &str, extra: &str) -> String {
    format!("/v1/domains/check?client_key={key}&domain={domain}{extra}")
}

fn assert_error(status: u16, body: &Value, expected_status: u16) {
    assert_eq!(status, expected_status, "{body}");
    assert_eq!(body["success"], false, "{body}");
    assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()), "{body}");
    assert_eq!(body.as_object().map(|o| o.len()), Some(2), "error shape is exactly success+error: {body}");
}

#[tokio::test]
async fn available_with_commission() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let (status, _, body) = app.get(&check_path(&key, "dsa-demo-available.com", "&commission_percent=10")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true);
    assert_eq!(body["domain"], "dsa-demo-available.com");
    assert_eq!(body["available"], true);
    assert_eq!(body["message"], "Available");
    let p = &body["pricing"];
    assert_eq!(p["currency"], "USD");
    assert_eq!(p["base_register"], 11.06);
    assert_eq!(p["display_register"], 12.17, "11.06 × 1.10 = 12.166 → 12.17");
    assert_eq!(p["pricing_mode"], "with_commission");
    assert_eq!(p["commission_percent"], 10.0);
    assert_eq!(body["purchase"]["show_button"], true);
    assert_eq!(body["purchase"]["source"], "url");
    let url = body["purchase"]["url"].as_str().expect("url");
    assert!(url.starts_with("https://shop.example/checkout?ref=dsa&"), "{url}");
    assert!(
        url.contains("domain=dsa-demo-available.com")
            && url.contains("sld=dsa-demo-available")
            && url.contains("tld=.com"),
        "{url}"
    );
    assert_eq!(body["credits_cost"], 1);
    assert_eq!(body["credits_remaining"], 499);
    assert_eq!(body["verdict"]["status"], "available");
    assert_eq!(body["verdict"]["method"], "rdap");
    assert_eq!(body["verdict"]["authoritative"], true);
    assert_eq!(app.finish(Some(&key)).await, 1, "one ledger entry for one successful check");
}

#[tokio::test]
async fn available_at_base_price_and_key_default_commission() {
    let app = TestApp::spawn().await;
    let base_key = app.key(KeyOpts::default()).await;
    let (_, _, body) = app.get(&check_path(&base_key, "dsa-demo-available.org", "")).await;
    assert_eq!(body["pricing"]["pricing_mode"], "base", "{body}");
    assert_eq!(body["pricing"]["commission_percent"], 0.0);
    assert_eq!(body["pricing"]["display_register"], body["pricing"]["base_register"]);
    // commission_percent=0 in the request → base as well.
    let (_, _, body) = app.get(&check_path(&base_key, "dsa-demo-available.org", "&commission_percent=0")).await;
    assert_eq!(body["pricing"]["pricing_mode"], "base", "{body}");
    // The key's admin default applies when the request names none, and the request overrides it.
    let key = app.key(KeyOpts { default_commission_percent: Some(20.0), ..KeyOpts::default() }).await;
    let (_, _, body) = app.get(&check_path(&key, "dsa-demo-available.org", "")).await;
    assert_eq!(body["pricing"]["commission_percent"], 20.0, "{body}");
    assert_eq!(body["pricing"]["display_register"], 8.23, "6.86 × 1.2 = 8.232");
    let (_, _, body) = app.get(&check_path(&key, "dsa-demo-available.org", "&commission_percent=5")).await;
    assert_eq!(body["pricing"]["commission_percent"], 5.0, "{body}");
    app.finish(None).await;
}

#[tokio::test]
async fn custom_redirect_url_and_platform_checkout() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let redirect = "https%3A%2F%2Freseller.example%2Fbuy%3Fcampaign%3Dx";
    let (_, _, body) = app.get(&check_path(&key, "dsa-demo-available.dev", &format!("&redirect_url={redirect}"))).await;
    assert_eq!(body["purchase"]["source"], "client_url", "{body}");
    let url = body["purchase"]["url"].as_str().expect("url");
    assert!(url.starts_with("https://reseller.example/buy?campaign=x&domain=dsa-demo-available.dev"), "{url}");
    let (_, _, body) = app.get(&check_path(&key, "dsa-demo-available.dev", "&redirect_checkout=1")).await;
    assert_eq!(body["purchase"]["source"], "url", "{body}");
    assert!(body["purchase"]["url"].as_str().expect("url").starts_with("https://platform.example/checkout?domain="));
    // redirect_checkout=1 forces the platform URL, over a redirect_url too.
    let (_, _, body) = app
        .get(&check_path(&key, "dsa-demo-available.dev", &format!("&redirect_checkout=1&redirect_url={redirect}")))
        .await;
    assert!(
        body["purchase"]["url"].as_str().expect("url").starts_with("https://platform.example/checkout?domain="),
        "{body}"
    );
    for bad in ["javascript%3Aalert(1)", "%2F%2Fevil.example", "ftp%3A%2F%2Fx.example", "not%20a%20url"] {
        let (status, _, body) =
            app.get(&check_path(&key, "dsa-demo-available.dev", &format!("&redirect_url={bad}"))).await;
        assert_error(status, &body, 400);
    }
    app.finish(None).await;
}

#[tokio::test]
async fn taken_has_no_pricing_and_no_purchase() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    for name in ["example.com", "suspended-shop.com", "lapsed-brand.com", "google.com.af", "registry.io"] {
        let (status, _, body) = app.get(&check_path(&key, name, "&commission_percent=10")).await;
        assert_eq!(status, 200, "{name}: {body}");
        assert_eq!(body["available"], false, "{name}");
        assert_eq!(body["message"], "Taken", "{name}");
        assert!(body.get("pricing").is_none() && body.get("purchase").is_none(), "{name}: {body}");
    }
    let (_, _, body) = app.get(&check_path(&key, "lapsed-brand.com", "")).await;
    assert_eq!(body["verdict"]["status"], "pending_delete");
    let (_, _, body) = app.get(&check_path(&key, "registry.io", "")).await;
    assert_eq!(body["verdict"]["status"], "reserved");
    let (_, _, body) = app.get(&check_path(&key, "moe.gov.af", "")).await;
    assert_eq!(
        (body["available"].clone(), body["verdict"]["status"].clone()),
        (Value::Bool(false), Value::from("restricted"))
    );
    app.finish(None).await;
}

#[tokio::test]
async fn pricing_disabled_no_price_and_no_button() {
    let app = TestApp::spawn().await;
    let no_pricing =
        app.key(KeyOpts { pricing_enabled: false, show_purchase_button: false, ..KeyOpts::default() }).await;
    let (_, _, body) = app.get(&check_path(&no_pricing, "dsa-demo-available.com", "&commission_percent=10")).await;
    assert_eq!(body["available"], true, "{body}");
    assert!(body.get("pricing").is_none() && body.get("purchase").is_none(), "{body}");
    // Pricing off but the purchase button on: still neither object (spec §4.1 variant
    // "pricing disabled for the key (no pricing, no purchase)").
    let pricing_off_button_on =
        app.key(KeyOpts { pricing_enabled: false, show_purchase_button: true, ..KeyOpts::default() }).await;
    let (_, _, body) = app.get(&check_path(&pricing_off_button_on, "dsa-demo-available.com", "")).await;
    assert_eq!(body["available"], true, "{body}");
    assert!(body.get("pricing").is_none() && body.get("purchase").is_none(), "{body}");
    // No price data for .af: no pricing object, the purchase button still shows.
    let key = app.key(KeyOpts::default()).await;
    let (_, _, body) = app.get(&check_path(&key, "dsa-demo-available.af", "")).await;
    assert_eq!(body["available"], true, "{body}");
    assert!(body.get("pricing").is_none(), "{body}");
    assert_eq!(body["purchase"]["source"], "url");
    assert!(body["purchase"]["url"].as_str().expect("url").contains("tld=.af"));
    // show_purchase_button off: pricing, no purchase.
    let no_button = app.key(KeyOpts { show_purchase_button: false, ..KeyOpts::default() }).await;
    let (_, _, body) = app.get(&check_path(&no_button, "dsa-demo-available.com", "")).await;
    assert!(body.get("pricing").is_some() && body.get("purchase").is_none(), "{body}");
    app.finish(None).await;
}

#[tokio::test]
async fn sub_suffixes_follow_the_registry_that_sells_them() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    // Under the restricted gov.br: restricted (read as Taken), asked of nobody.
    let before = app.sim.stats();
    let (status, _, body) = app.get(&check_path(&key, "x.sp.gov.br", "")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["available"], false, "{body}");
    assert_eq!(body["verdict"]["status"], "restricted", "{body}");
    assert_eq!(app.sim.stats().rdap.queries, before.rdap.queries);
    // Not sold by the .us registry: a 400 naming why, never the .us registry's "not found".
    let (status, _, body) = app.get(&check_path(&key, "example.k12.ak.us", "")).await;
    assert_error(status, &body, 400);
    assert!(body["error"].as_str().expect("text").contains("not known to sell names under .k12.ak.us"), "{body}");
    // No platform checkout URL configured: redirect_checkout=1 is a 400, not a silent fallback.
    app.finish(None).await;
    let app = TestApp::spawn_with(|s| s.pricing.platform_checkout_url = None).await;
    let key = app.key(KeyOpts::default()).await;
    let (status, _, body) = app.get(&check_path(&key, "dsa-demo-available.com", "&redirect_checkout=1")).await;
    assert_error(status, &body, 400);
    assert!(body["error"].as_str().expect("text").contains("platform checkout URL"), "{body}");
    assert_eq!(app.finish(Some(&key)).await, 0, "not charged");
}

#[tokio::test]
async fn bad_input_is_400_in_the_spec_shape() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let cases = [
        // (A missing client_key is a demo check while demo mode is on: see tests/policy.rs.)
        format!("/v1/domains/check?client_key={key}"),
        format!("/v1/domains/check?client_key={key}&domain="),
        check_path(&key, "exa_mple.com", ""),
        check_path(&key, "com.af", ""),
        check_path(&key, "example.notatld", ""),
        check_path(&key, "192.168.1.1", ""),
        check_path(&key, "example.es", ""), // in the root zone, but no registry method: unsupported
        check_path(&key, "example.com", "&commission_percent=-5"),
        check_path(&key, "example.com", "&commission_percent=abc"),
        check_path(&key, "example.com", "&commission_percent=1001"),
        check_path(&key, "example.com", "&redirect_checkout=yes"),
    ];
    for path in cases {
        let (status, headers, body) = app.get(&path).await;
        assert_error(status, &body, 400);
        assert!(
            headers.get("content-type").is_some_and(|v| v.to_str().is_ok_and(|s| s.starts_with("application/json")))
        );
    }
    assert_eq!(app.finish(Some(&key)).await, 0, "errors cost nothing");
}

#[tokio::test]
async fn unusable_keys_are_403() {
    let app = TestApp::spawn().await;
    let (status, _, body) = app.get(&check_path("dsa_server_nosuchkey", "example.com", "")).await;
    assert_error(status, &body, 403);
    assert_eq!(body["error"], "Invalid or disabled client key.");
    for state in [KeyState::Disabled, KeyState::Suspended] {
        let key = app.key(KeyOpts::default()).await;
        app.set_state(&key, state).await;
        let (status, _, body) = app.get(&check_path(&key, "example.com", "")).await;
        assert_error(status, &body, 403);
        assert_eq!(body["error"], "Invalid or disabled client key.");
    }
    app.finish(None).await;
}

#[tokio::test]
async fn exhausted_allowance_is_429_and_unknown_is_502_without_charge() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts { plan: Plan::Free, ..KeyOpts::default() }).await;
    // Spend 499 of 500 credits through the ledger (as if earlier this month).
    app.spend(&key, 499).await;
    // Upstream down: 502, nothing charged.
    app.sim.set_knobs(Knobs { faults: Faults { rdap: Fault::Reset, whois: Fault::Reset }, ..Knobs::default() });
    let (status, _, body) = app.get(&check_path(&key, "dsa-demo-available.org", "")).await;
    assert_error(status, &body, 502);
    app.sim.set_knobs(Knobs::default());
    let (status, _, body) = app.get(&check_path(&key, "dsa-demo-available.org", "")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["credits_remaining"], 0);
    let (status, _, body) = app.get(&check_path(&key, "dsa-demo-available.org", "")).await;
    assert_error(status, &body, 429);
    assert_eq!(body["error"], "Monthly credit limit reached");
    assert_eq!(app.finish(Some(&key)).await, 500);
}

#[tokio::test]
async fn concurrent_checks_never_overspend() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    // Warm the cache so the 1,000 requests race on credits, not on the simulator.
    let (status, _, _) = app.get(&check_path(&key, "example.com", "")).await;
    assert_eq!(status, 200);
    let mut tasks = Vec::new();
    for _ in 0..1000 {
        let http = app.http.clone();
        let url = app.url(&check_path(&key, "example.com", ""));
        tasks.push(tokio::spawn(async move { http.get(url).send().await.map(|r| r.status().as_u16()).unwrap_or(0) }));
    }
    let mut ok = 0;
    let mut limited = 0;
    for t in tasks {
        match t.await.expect("task") {
            200 => ok += 1,
            429 => limited += 1,
            other => panic!("unexpected status {other}"),
        }
    }
    assert_eq!((ok, limited), (499, 501), "500 credits: 1 warm-up + 499 of the 1,000");
    assert_eq!(app.finish(Some(&key)).await, 500, "ledger entries = successful responses");
}

#[tokio::test]
async fn concurrent_checks_of_one_uncached_name_share_one_registry_query() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let before = app.sim.stats();
    let mut tasks = Vec::new();
    for _ in 0..300 {
        let http = app.http.clone();
        let url = app.url(&check_path(&key, "coalesced-name-dsa.com", ""));
        tasks.push(tokio::spawn(async move {
            let response = http.get(url).send().await.expect("request");
            let status = response.status().as_u16();
            let body: Value = response.json().await.expect("json");
            (status, body)
        }));
    }
    for t in tasks {
        let (status, body) = t.await.expect("task");
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["available"], true, "{body}");
    }
    let after = app.sim.stats();
    let registry_queries = (after.rdap.queries + after.whois.queries) - (before.rdap.queries + before.whois.queries);
    assert_eq!(registry_queries, 1, "300 concurrent checks of one name → one registry query");
    assert_eq!(app.finish(Some(&key)).await, 300, "each waiter is charged for its own answer");
}

#[tokio::test]
async fn methods_paths_cors_and_panics_keep_the_shape() {
    let app = TestApp::spawn().await;
    let key = app
        .key(KeyOpts {
            kind: KeyKind::Embed,
            allowed_origins: vec!["https://shop.example".into()],
            ..KeyOpts::default()
        })
        .await;
    let response = app.http.post(app.url(&check_path(&key, "example.com", ""))).send().await.expect("post");
    let status = response.status().as_u16();
    let body: Value = response.json().await.expect("json");
    assert_error(status, &body, 405);
    let (status, _, body) = app.get("/v1/nope").await;
    assert_error(status, &body, 404);
    // CORS on success and on errors, origin echoed with Vary.
    for path in [check_path(&key, "example.com", ""), "/v1/domains/check?domain=x".to_owned()] {
        let r = app.http.get(app.url(&path)).header("Origin", "https://shop.example").send().await.expect("get");
        assert_eq!(
            r.headers().get("access-control-allow-origin").and_then(|v| v.to_str().ok()),
            Some("https://shop.example"),
            "{path}"
        );
        assert!(
            r.headers()
                .get_all("vary")
                .iter()
                .any(|v| v.to_str().is_ok_and(|s| s.to_ascii_lowercase().contains("origin")))
        );
        assert!(r.headers().get("access-control-allow-credentials").is_none());
    }
    // Preflight.
    let r = app
        .http
        .request(reqwest::Method::OPTIONS, app.url("/v1/domains/check"))
        .header("Origin", "https://shop.example")
        .header("Access-Control-Request-Method", "GET")
        .send()
        .await
        .expect("options");
    assert!(r.status().is_success());
    assert!(r.headers().get("access-control-allow-methods").is_some());
    // An origin outside the embed key's list: 403, still with CORS headers so the page can read it.
    let r = app
        .http
        .get(app.url(&check_path(&key, "example.com", "")))
        .header("Origin", "https://evil.example")
        .send()
        .await
        .expect("get");
    assert_eq!(r.status().as_u16(), 403);
    assert!(r.headers().get("access-control-allow-origin").is_some());
    // Request ids and health.
    let r = app.http.get(app.url("/healthz")).send().await.expect("healthz");
    assert!(r.headers().get("x-request-id").is_some());
    // A well-formed client id is kept and echoed; a hostile one (too long, control bytes) is
    // replaced by a new id, so it never reaches a log line.
    let id_of =
        |r: &reqwest::Response| r.headers().get("x-request-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let r = app.http.get(app.url("/healthz")).header("x-request-id", "support-ticket-42").send().await.expect("get");
    assert_eq!(id_of(&r).as_deref(), Some("support-ticket-42"));
    for hostile in ["a".repeat(65), "a b".to_owned(), "id\";drop".to_owned()] {
        let r = app.http.get(app.url("/healthz")).header("x-request-id", hostile.as_str()).send().await.expect("get");
        let given = id_of(&r).expect("an id");
        assert_ne!(given, hostile);
        assert_eq!(given.len(), 32, "a new UUID v7: {given}");
    }
    assert_eq!(app.get("/readyz").await.0, 200);
    let metrics = app.http.get(app.url("/metrics")).send().await.expect("metrics").text().await.expect("text");
    assert!(metrics.contains("dsa_verdicts_total"), "{metrics}");
    assert!(metrics.contains("dsa_http_requests_total{route=\"/v1/domains/check\",status=\"200\"}"), "{metrics}");
    assert!(metrics.contains("dsa_upstream_seconds"), "{metrics}");
    assert!(!metrics.contains("dsa_server_"), "no key in metrics");
    app.finish(None).await;
}
