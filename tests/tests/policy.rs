//! The policy layer (spec §3, §5, §7, §8): per-minute limits with Retry-After, the monthly reset,
//! origins, server keys in browsers, and the demo mode.

mod support;

use api::keys::{KeyKind, Plan};
use support::{KeyOpts, TestApp, TestClock};
use time::macros::datetime;

fn path(key: &str, domain: &str) -> String {
    format!("/v1/domains/check?client_key={key}&domain={domain}")
}

#[tokio::test]
async fn per_minute_limit_with_retry_after_and_ratelimit_headers() {
    let clock = TestClock::at(datetime!(2026-11-22 10:00:45 UTC));
    let app = TestApp::spawn_full(
        |s| s.policy.per_minute = api::policy::PlanRates { free: 3, starter: 10, pro: 10, reseller: 10 },
        clock.clock(),
    )
    .await;
    let key = app.key(KeyOpts::default()).await;
    for remaining in [2, 1, 0] {
        let (status, headers, body) = app.get(&path(&key, "example.com")).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(headers["ratelimit-policy"], "\"per-minute\";q=3;w=60");
        assert_eq!(headers["ratelimit"].to_str().expect("ascii"), format!("\"per-minute\";r={remaining};t=15"));
    }
    let (status, headers, body) = app.get(&path(&key, "example.com")).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["success"], false);
    assert!(body["error"].as_str().expect("text").contains("next minute window"));
    assert_eq!(headers["retry-after"], "15", "seconds to the next minute window");
    // A failed (429) call costs nothing: 3 charges so far.
    clock.set(datetime!(2026-11-22 10:01:00 UTC));
    let (status, headers, _) = app.get(&path(&key, "example.com")).await;
    assert_eq!(status, 200);
    assert_eq!(headers["ratelimit"].to_str().expect("ascii"), "\"per-minute\";r=2;t=60");
    assert_eq!(app.finish(Some(&key)).await, 4);
}

#[tokio::test]
async fn allowance_resets_on_the_first_of_the_month() {
    let clock = TestClock::at(datetime!(2026-11-30 23:59:30 UTC));
    let app = TestApp::spawn_full(|_| {}, clock.clock()).await;
    let key = app.key(KeyOpts { plan: Plan::Free, ..KeyOpts::default() }).await;
    let key_id = app.key_id(&key).await;
    let events = (0..499)
        .map(|_| common::messages::LedgerEvent {
            event_id: uuid::Uuid::now_v7(),
            key_id: key_id.clone(),
            period: "2026-11".into(),
            endpoint: "check".into(),
            credits: 1,
            charged_at: datetime!(2026-11-15 12:00:00 UTC),
            front: "test".into(),
        })
        .collect();
    app.store.apply_ledger(events).await.expect("ledger");
    assert_eq!(app.get(&path(&key, "example.com")).await.2["credits_remaining"], 0);
    let (status, _, body) = app.get(&path(&key, "example.com")).await;
    assert_eq!((status, body["error"].as_str()), (429, Some("Monthly credit limit reached")));
    clock.set(datetime!(2026-12-01 00:00:00 UTC));
    let (status, _, body) = app.get(&path(&key, "example.com")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["credits_remaining"], 499, "a new month, a new allowance");
    app.finish(None).await;
}

#[tokio::test]
async fn origin_matrix() {
    let app = TestApp::spawn().await;
    let embed = app
        .key(KeyOpts {
            kind: KeyKind::Embed,
            allowed_origins: vec!["https://shop.example".into(), "https://*.example.com".into()],
            ..KeyOpts::default()
        })
        .await;
    let cases = [
        (Some("https://shop.example"), 200),
        (Some("https://a.example.com"), 200),
        (Some("https://deep.a.example.com"), 200),
        (None, 200), // a server-side call with an embed key: no Origin, nothing to check
        (Some("https://other.example"), 403),
        (Some("null"), 403),
        (Some("http://shop.example"), 403),
        (Some("https://shop.example:8443"), 403),
        (Some("https://example.com"), 403),
        (Some("https://evilexample.com"), 403),
    ];
    for (origin, expected) in cases {
        let headers: Vec<(&str, &str)> = origin.map(|o| vec![("Origin", o)]).unwrap_or_default();
        let (status, _, body) = app.get_with(&path(&embed, "example.com"), &headers).await;
        assert_eq!(status, expected, "{origin:?}: {body}");
    }
    // An embed key with no list: refused from browsers in the default (production) config.
    let open = app.key(KeyOpts { kind: KeyKind::Embed, ..KeyOpts::default() }).await;
    assert_eq!(app.get_with(&path(&open, "example.com"), &[("Origin", "https://any.example")]).await.0, 403);
    // A server key from a browser: 403 saying why.
    let server = app.key(KeyOpts::default()).await;
    let (status, _, body) = app.get_with(&path(&server, "example.com"), &[("Origin", "https://shop.example")]).await;
    assert_eq!(status, 403);
    assert!(body["error"].as_str().expect("text").contains("front-end"), "{body}");
    app.finish(None).await;
}

#[tokio::test]
async fn empty_origin_list_allows_all_in_development_config() {
    let app = TestApp::spawn_with(|s| s.policy.empty_origins_allow_all = true).await;
    let open = app.key(KeyOpts { kind: KeyKind::Embed, ..KeyOpts::default() }).await;
    assert_eq!(app.get_with(&path(&open, "example.com"), &[("Origin", "https://any.example")]).await.0, 200);
    app.finish(None).await;
}

#[tokio::test]
async fn demo_mode_two_checks_then_429_and_a_per_ip_cap() {
    let app = TestApp::spawn_with(|s| s.policy.demo.checks_per_ip_per_day = 3).await;
    let first = app.http.get(app.url("/v1/domains/check?domain=example.com")).send().await.expect("get");
    assert_eq!(first.status().as_u16(), 200);
    let cookie = first.headers()["set-cookie"].to_str().expect("ascii").to_owned();
    assert!(cookie.contains("HttpOnly") && cookie.starts_with("dsa_demo="), "{cookie}");
    let body: serde_json::Value = first.json().await.expect("json");
    assert_eq!((body["demo"].clone(), body["credits_cost"].clone()), (true.into(), 0.into()));
    assert!(body.get("pricing").is_none());
    let session = cookie.split(';').next().expect("pair").to_owned();
    let (status, _, body) =
        app.get_with("/v1/domains/check?domain=dsa-demo-available.com", &[("Cookie", &session)]).await;
    assert_eq!((status, body["available"].clone()), (200, true.into()));
    let (status, _, body) = app.get_with("/v1/domains/check?domain=example.com", &[("Cookie", &session)]).await;
    assert_eq!(status, 429, "{body}");
    assert!(body["error"].as_str().expect("text").contains("client key"));
    // A forged cookie is a new session, but the per-IP cap (3 a day here) still holds.
    let (status, _, _) =
        app.get_with("/v1/domains/check?domain=example.com", &[("Cookie", "dsa_demo=forged.00")]).await;
    assert_eq!(status, 200, "third check from this IP");
    let (status, _, _) = app.get("/v1/domains/check?domain=example.com").await;
    assert_eq!(status, 429, "cookies cleared: the per-IP cap applies");
    // Other endpoints and bad input without a key stay 400.
    assert_eq!(app.get("/v1/domains/check").await.0, 400);
    app.finish(None).await;
}

#[tokio::test]
async fn demo_mode_off_means_400() {
    let app = TestApp::spawn_with(|s| s.policy.demo.enabled = false).await;
    let (status, _, body) = app.get("/v1/domains/check?domain=example.com").await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().expect("text").contains("client_key"));
    app.finish(None).await;
}
