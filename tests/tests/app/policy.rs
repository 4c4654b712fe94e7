//! The policy layer (spec §3, §5, §7, §8): per-minute limits with Retry-After, the monthly reset,
//! origins, server keys in browsers, and the demo mode.

use api::keys::{KeyKind, Plan};
use dsa_tests::harness::app::{KeyOpts, TestApp, TestClock};
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
            period: "2026-11".into(),
            charged_at: datetime!(2026-11-15 12:00:00 UTC),
            ..dsa_tests::harness::ledger_event(&key_id, 1, "test")
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

async fn get_from(
    app: &TestApp,
    path: &str,
    forwarded_for: &str,
) -> (u16, reqwest::header::HeaderMap, serde_json::Value) {
    let response = app.http.get(app.url(path)).header("x-forwarded-for", forwarded_for).send().await.expect("request");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.json().await.expect("json"))
}

#[tokio::test]
async fn per_address_limit_comes_before_the_key_lookup_and_trusts_only_the_proxy_hops() {
    let app = TestApp::spawn_with(|s| {
        s.policy.per_ip_per_minute = 3;
        s.policy.trusted_proxy_hops = 1;
    })
    .await;
    // Made-up keys from one client address: 403 while under the limit, then 429 without a
    // lookup, whatever the client writes to the left of the proxy's entry.
    for i in 0..3 {
        let (status, _, body) = get_from(
            &app,
            &path(&format!("dsa_server_made_up_{i}"), "example.com"),
            &format!("10.0.0.{i}, 203.0.113.7"),
        )
        .await;
        assert_eq!(status, 403, "{body}");
    }
    let (status, headers, body) =
        get_from(&app, &path("dsa_server_made_up_x", "example.com"), "198.51.100.1, 203.0.113.7").await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["success"], false);
    assert!(headers["retry-after"].to_str().expect("ascii").parse::<u64>().expect("seconds") >= 1);
    // Another client address (the right-most entry) has its own allowance.
    let (status, _, _) = get_from(&app, &path("dsa_server_made_up_y", "example.com"), "203.0.113.7, 203.0.113.8").await;
    assert_eq!(status, 403);
    // IPv6 counts per /64: three addresses of one /64 share an allowance.
    for i in 1..=3 {
        let (status, _, _) = get_from(&app, &path("dsa_server_v6", "example.com"), &format!("2001:db8:1:2::{i}")).await;
        assert_eq!(status, 403);
    }
    let (status, _, _) = get_from(&app, &path("dsa_server_v6", "example.com"), "2001:db8:1:2:ffff::9").await;
    assert_eq!(status, 429, "same /64");
    let (status, _, _) = get_from(&app, &path("dsa_server_v6", "example.com"), "2001:db8:1:3::1").await;
    assert_eq!(status, 403, "another /64");
    app.finish(None).await;
}

#[tokio::test]
async fn past_max_in_flight_requests_are_shed_with_503_and_retry_after() {
    let app = TestApp::spawn_with(|s| s.policy.max_in_flight = 2).await;
    app.sim.set_knobs(dsa_tests::sim::Knobs {
        latency_ms: dsa_tests::sim::Latency { dns: 0, rdap: 400, whois: 400 },
        ..dsa_tests::sim::Knobs::default()
    });
    let key = app.key(KeyOpts::default()).await;
    let mut tasks = Vec::new();
    for i in 0..10 {
        let http = app.http.clone();
        let url = app.url(&path(&key, &format!("shed-test-{i}.com")));
        tasks.push(tokio::spawn(async move {
            let response = http.get(url).send().await.expect("request");
            let status = response.status().as_u16();
            let retry_after = response.headers().get("retry-after").map(|v| v.to_str().expect("ascii").to_owned());
            let body: serde_json::Value = response.json().await.expect("json");
            (status, retry_after, body)
        }));
    }
    let (mut ok, mut shed) = (0, 0);
    for t in tasks {
        let (status, retry_after, body) = t.await.expect("task");
        match status {
            200 => ok += 1,
            503 => {
                shed += 1;
                assert_eq!(retry_after.as_deref(), Some("1"));
                assert_eq!(body["success"], false);
                assert!(body["error"].as_str().expect("text").contains("retry"));
            }
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert!(ok >= 2 && shed >= 1, "ok {ok}, shed {shed}");
    assert_eq!(app.finish(Some(&key)).await, ok, "shed requests cost nothing");
}

/// `policy.max_in_flight` caps the whole front, not each route: with the cap taken by slow checks,
/// a request to another route is refused too (503, `Retry-After`), while `/healthz` is never
/// refused; once the checks are answered the other route is served again.
#[tokio::test]
async fn the_in_flight_cap_is_one_for_the_whole_front() {
    let app = TestApp::spawn_with(|s| s.policy.max_in_flight = 2).await;
    app.sim.set_knobs(dsa_tests::sim::Knobs {
        latency_ms: dsa_tests::sim::Latency { dns: 0, rdap: 900, whois: 900 },
        ..dsa_tests::sim::Knobs::default()
    });
    let key = app.key(KeyOpts::default()).await;
    let slow: Vec<_> = (0..2)
        .map(|i| {
            let (http, url) = (app.http.clone(), app.url(&path(&key, &format!("cap-test-{i}.com"))));
            tokio::spawn(async move { http.get(url).send().await.expect("request").status().as_u16() })
        })
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (status, headers, body) = app.get("/v1/tlds").await;
    assert_eq!(status, 503, "another route shares the cap: {}", body["error"]);
    assert_eq!(headers.get("retry-after").and_then(|v| v.to_str().ok()), Some("1"), "{headers:?}");
    let (status, _, body) = app.get("/healthz").await;
    assert_eq!(status, 200, "liveness is never refused: {body}");
    for task in slow {
        assert_eq!(task.await.expect("task"), 200, "the checks holding the cap are served");
    }
    let (status, _, body) = app.get("/v1/tlds").await;
    assert_eq!(status, 200, "served again once the cap is free: {body}");
    assert_eq!(app.finish(Some(&key)).await, 2);
}

/// A front whose runtime runs ready work late (CPU saturated) refuses new requests at once with
/// the documented 503, charges nothing for them, and serves normally as soon as it is on time.
#[tokio::test]
async fn a_front_behind_its_scheduler_sheds_with_503_and_recovers_at_once() {
    let app = TestApp::spawn_with(|s| {
        s.policy.shed_scheduling_lag_ms = 40;
        s.policy.shed_min_in_flight = 0;
    })
    .await;
    let key = app.key(KeyOpts::default()).await;
    let (status, _, _) = app.get(&path(&key, "example.com")).await;
    assert_eq!(status, 200, "on time: served");
    // The request is sent while the front's only runtime thread is busy (blocked here for
    // 200 ms), so the front reads it already 150+ ms behind its schedule.
    let url = app.url(&path(&key, "google.com"));
    let sender = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async move {
            tokio::time::sleep(std::time::Duration::from_millis(30)).await;
            let response = reqwest::get(url).await.expect("request");
            let status = response.status().as_u16();
            let retry_after = response.headers().get("retry-after").map(|v| v.to_str().expect("ascii").to_owned());
            (status, retry_after, response.json::<serde_json::Value>().await.expect("json"))
        })
    });
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (status, retry_after, body) =
        tokio::task::spawn_blocking(move || sender.join().expect("sender")).await.expect("join");
    assert_eq!(status, 503, "behind schedule: shed ({body})");
    assert_eq!(retry_after.as_deref(), Some("1"));
    assert_eq!(body["success"], false);
    // On time again within a tick or two: normal service.
    tokio::time::sleep(std::time::Duration::from_millis(30)).await;
    let (status, _, _) = app.get(&path(&key, "google.com")).await;
    assert_eq!(status, 200, "recovered");
    assert_eq!(app.finish(Some(&key)).await, 2, "the shed request cost nothing");
}

#[tokio::test]
async fn demo_checks_have_a_global_cap_and_a_secure_cookie_behind_a_tls_proxy() {
    let app = TestApp::spawn_with(|s| {
        s.policy.demo.global_per_minute = 2;
        s.policy.demo.checks_per_ip_per_day = 100;
        s.policy.demo.cookie_secure = true;
    })
    .await;
    // Two fresh sessions (no cookie) from one address: both admitted, cookies Secure.
    for _ in 0..2 {
        let response = app.http.get(app.url("/v1/domains/check?domain=example.com")).send().await.expect("demo");
        assert_eq!(response.status().as_u16(), 200);
        let cookie = response.headers()["set-cookie"].to_str().expect("ascii").to_owned();
        assert!(cookie.contains("; Secure") && cookie.contains("HttpOnly"), "{cookie}");
    }
    // A third session is over the global cap, whatever its cookie.
    let response = app.http.get(app.url("/v1/domains/check?domain=example.com")).send().await.expect("demo");
    assert_eq!(response.status().as_u16(), 429);
    assert!(response.headers().get("retry-after").is_some());
    let body: serde_json::Value = response.json().await.expect("json");
    assert!(body["error"].as_str().expect("text").contains("client key"), "{body}");
    app.finish(None).await;
}

#[tokio::test]
async fn a_request_past_the_request_timeout_is_a_500_in_the_spec_shape() {
    let app = TestApp::spawn_with(|s| s.server.request_timeout_secs = 0.3).await;
    app.sim.set_knobs(dsa_tests::sim::Knobs {
        latency_ms: dsa_tests::sim::Latency { dns: 0, rdap: 1_500, whois: 1_500 },
        ..dsa_tests::sim::Knobs::default()
    });
    let key = app.key(KeyOpts::default()).await;
    let started = std::time::Instant::now();
    let (status, _, body) = app.get(&path(&key, "slow-name-dsa.com")).await;
    assert_eq!(status, 500, "{body}");
    assert_eq!(body["success"], false);
    assert!(body["error"].as_str().expect("text").contains("took too long"), "{body}");
    assert!(started.elapsed() < std::time::Duration::from_secs(1), "{:?}", started.elapsed());
    assert_eq!(app.finish(Some(&key)).await, 0, "nothing charged");
}

#[tokio::test]
async fn credits_held_by_requests_in_flight_are_not_called_exhausted() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    app.spend(&key, 499).await;
    app.sim.set_knobs(dsa_tests::sim::Knobs {
        latency_ms: dsa_tests::sim::Latency { dns: 0, rdap: 800, whois: 800 },
        ..dsa_tests::sim::Knobs::default()
    });
    // The last credit is held by a slow request…
    let slow = {
        let (http, url) = (app.http.clone(), app.url(&path(&key, "held-credit-dsa.com")));
        tokio::spawn(async move { http.get(url).send().await.expect("slow").status().as_u16() })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    // …so another request is told to retry shortly, not that the month is spent.
    let (status, headers, body) = app.get(&path(&key, "other-name-dsa.com")).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(headers["retry-after"], "1");
    assert!(body["error"].as_str().expect("text").contains("held"), "{body}");
    assert_eq!(slow.await.expect("slow"), 200);
    // Now it is spent.
    let (status, _, body) = app.get(&path(&key, "other-name-dsa.com")).await;
    assert_eq!(status, 429);
    assert_eq!(body["error"], "Monthly credit limit reached");
    assert_eq!(app.finish(Some(&key)).await, 500);
}
