//! `GET /domain-check` (spec §4.7), the front page `GET /` and `GET /widget.js` (spec §4.6) end to
//! end: a real front in standalone mode over HTTP, in front of the registry simulator. The widget's
//! behaviour in a browser is tested by `tests/browser/widget.test.mjs` (real Chromium).

use api::keys::KeyKind;
use dsa_tests::harness::app::{KeyOpts, TestApp};
use serde_json::Value;

fn short(key: &str, domain: &str, extra: &str) -> String {
    format!("/domain-check?client_key={key}&domain={domain}{extra}")
}

fn assert_error(status: u16, body: &Value, expected_status: u16) {
    assert_eq!(status, expected_status, "{body}");
    assert_eq!(body["success"], false, "{body}");
    assert_eq!(body.as_object().map(|o| o.len()), Some(2), "error shape is exactly success+error: {body}");
}

#[tokio::test]
async fn short_form_has_the_spec_shape_with_commission_on_register_and_renew() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    // .org in the shipped sample table: register 6.86, renew 10.72 USD.
    let (status, _, body) =
        app.get(&short(&key, "dsa-demo-available.org", "&include_price=1&commission_percent=10")).await;
    assert_eq!(status, 200, "{body}");
    let mut fields: Vec<&str> = body.as_object().expect("object").keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(fields, ["available", "checked_at", "domain", "price", "purchase_url", "tld"], "exactly §4.7's fields");
    assert_eq!(body["domain"], "dsa-demo-available.org");
    assert_eq!(body["available"], true);
    assert_eq!(body["tld"], ".org");
    assert_eq!(body["price"]["register"], 7.55, "6.86 × 1.10 = 7.546 → 7.55");
    assert_eq!(body["price"]["renew"], 11.79, "10.72 × 1.10 = 11.792 → 11.79");
    assert_eq!(body["price"]["currency"], "USD");
    let url = body["purchase_url"].as_str().expect("purchase_url");
    assert!(url.starts_with("https://shop.example/checkout?ref=dsa&"), "{url}");
    assert!(
        url.contains("domain=dsa-demo-available.org")
            && url.contains("sld=dsa-demo-available")
            && url.contains("tld=.org")
    );
    let checked_at = body["checked_at"].as_str().expect("checked_at");
    assert!(time::OffsetDateTime::parse(checked_at, &time::format_description::well_known::Rfc3339).is_ok());

    // The same check as §4.1: the key's default commission, redirect_url and credits apply.
    let (_, _, long) = app.get(&format!("/v1/domains/check?client_key={key}&domain=dsa-demo-available.org")).await;
    assert_eq!(long["credits_remaining"], 498, "one credit per short-form check too");
    assert_eq!(app.finish(Some(&key)).await, 2);
}

#[tokio::test]
async fn price_is_null_without_include_price_taken_or_pricing_off() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts { default_commission_percent: Some(20.0), ..KeyOpts::default() }).await;
    let (_, _, body) = app.get(&short(&key, "dsa-demo-available.com", "&include_price=1")).await;
    assert_eq!(body["price"]["register"], 13.27, "key default 20 %: 11.06 × 1.2 = 13.272");
    let (_, _, body) = app.get(&short(&key, "dsa-demo-available.com", "")).await;
    assert_eq!(body["price"], Value::Null, "no include_price: null");
    assert!(body["purchase_url"].is_string());
    let (_, _, body) = app.get(&short(&key, "google.com", "&include_price=1")).await;
    assert_eq!(body["available"], false);
    assert_eq!(body["price"], Value::Null);
    assert_eq!(body["purchase_url"], Value::Null);
    assert_eq!(body["tld"], ".com");
    // .af has no price in the table: null, the purchase URL still resolves.
    let (_, _, body) = app.get(&short(&key, "dsa-demo-available.af", "&include_price=1")).await;
    assert_eq!(body["price"], Value::Null);
    assert!(body["purchase_url"].as_str().is_some_and(|u| u.contains("tld=.af")));
    let off = app.key(KeyOpts { pricing_enabled: false, show_purchase_button: false, ..KeyOpts::default() }).await;
    let (_, _, body) = app.get(&short(&off, "dsa-demo-available.com", "&include_price=1")).await;
    assert_eq!(body["price"], Value::Null);
    assert_eq!(body["purchase_url"], Value::Null);
    let (_, _, body) =
        app.get(&short(&key, "dsa-demo-available.com", "&redirect_url=https%3A%2F%2Fr.example%2Fgo")).await;
    assert!(body["purchase_url"].as_str().is_some_and(|u| u.starts_with("https://r.example/go?domain=")));
    app.finish(None).await;
}

#[tokio::test]
async fn errors_keys_origins_and_demo_follow_the_check() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let (status, _, body) = app.get(&short(&key, "not..valid", "")).await;
    assert_error(status, &body, 400);
    let (status, _, body) = app.get(&short(&key, "x.com", "&include_price=yes")).await;
    assert_error(status, &body, 400);
    let (status, _, body) = app.get(&format!("/domain-check?client_key={key}")).await;
    assert_error(status, &body, 400);
    let (status, _, body) = app.get(&short("dsa_embed_nope", "x.com", "")).await;
    assert_error(status, &body, 403);
    let embed = app
        .key(KeyOpts {
            kind: KeyKind::Embed,
            allowed_origins: vec!["https://shop.example".into()],
            ..KeyOpts::default()
        })
        .await;
    let (status, _, body) =
        app.get_with(&short(&embed, "dsa-demo-available.com", ""), &[("origin", "https://evil.example")]).await;
    assert_error(status, &body, 403);
    let (status, headers, body) =
        app.get_with(&short(&embed, "dsa-demo-available.com", ""), &[("origin", "https://shop.example")]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(headers.get("access-control-allow-origin").and_then(|v| v.to_str().ok()), Some("https://shop.example"));
    assert!(headers.contains_key("ratelimit"), "the keyed prelude's headers");
    // No registry for .xyz in the simulator: 502, nothing charged.
    let (status, _, body) = app.get(&short(&key, "dsa-demo-nowhere.xyz", "")).await;
    assert_error(status, &body, 502);

    // Demo: no key, 2 per session (cookie), no price, then 429 saying to use a key.
    let (status, headers, body) = app.get("/domain-check?domain=dsa-demo-available.com&include_price=1").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["price"], Value::Null);
    assert_eq!(body["purchase_url"], Value::Null);
    let cookie = headers
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .expect("demo cookie")
        .to_owned();
    let demo = |d: &str| format!("/domain-check?domain={d}");
    let (status, _, _) = app.get_with(&demo("google.com"), &[("cookie", cookie.as_str())]).await;
    assert_eq!(status, 200);
    let (status, _, body) = app.get_with(&demo("google.net"), &[("cookie", cookie.as_str())]).await;
    assert_error(status, &body, 429);
    assert!(body["error"].as_str().is_some_and(|e| e.contains("client key")), "{body}");
    assert_eq!(app.finish(Some(&key)).await, 0, "errors and 502 cost nothing");
}

#[tokio::test]
async fn front_page_widget_and_document() {
    let app = TestApp::spawn().await;
    let response = app.http.get(app.url("/")).send().await.expect("front page");
    assert_eq!(response.status(), 200);
    let csp = response.headers()["content-security-policy"].to_str().expect("csp").to_owned();
    assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'") && !csp.contains("unsafe"));
    assert!(response.headers()["content-type"].to_str().expect("type").starts_with("text/html"));
    let html = response.text().await.expect("html");
    for text in ["Free Developer", "5,000", "25,000", "50,000", "/domain-check", "href=\"/docs/\"", "data-dsa-widget"] {
        assert!(html.contains(text), "front page shows {text}");
    }
    assert!(!html.contains("style=") && !html.contains("<style"), "no inline style under the CSP");

    let widget = api::routes::front::widget();
    let js = app.http.get(app.url(&format!("/widget.js?v={}", widget.version))).send().await.expect("widget");
    assert_eq!(js.headers()["content-type"], "text/javascript; charset=utf-8");
    assert_eq!(js.headers()["cache-control"], "public, max-age=31536000, immutable");
    let etag = js.headers()["etag"].to_str().expect("etag").to_owned();
    assert_eq!(js.text().await.expect("body"), widget.body);
    let again =
        app.http.get(app.url("/widget.js")).header("if-none-match", &etag).send().await.expect("conditional request");
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["cache-control"], "public, max-age=300");
    // minijinja's HTML escaping writes `/` as `&#x2f;` (a browser reads both the same).
    assert!(html.replace("&#x2f;", "/").contains(&widget.integrity), "the page's snippet carries the SRI hash");

    let (status, _, doc) = app.get("/v1/openapi.json").await;
    assert_eq!(status, 200);
    for path in ["/domain-check", "/widget.js", "/"] {
        assert!(doc["paths"][path]["get"].is_object(), "{path} is in the OpenAPI document");
    }
    let schema = &doc["components"]["schemas"]["DomainCheckResponse"]["properties"];
    for field in ["domain", "available", "tld", "price", "purchase_url", "checked_at"] {
        assert!(schema[field].is_object(), "DomainCheckResponse.{field} is documented");
    }
    app.finish(None).await;
}
