//! `GET /v1/tlds`, `GET /v1/tlds/{tld}` (the catalogue and its live health) and serve-stale on
//! `GET /v1/domains/check` and bulk: a real front in standalone mode over HTTP, in front of the
//! registry simulator.

use dsa_tests::harness::app::{KeyOpts, TestApp};
use dsa_tests::sim::{Fault, Faults, Knobs};
use serde_json::Value;

fn assert_error(status: u16, body: &Value, expected_status: u16) {
    assert_eq!(status, expected_status, "{body}");
    assert_eq!(body["success"], false, "{body}");
    assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()), "{body}");
    assert_eq!(body.as_object().map(|o| o.len()), Some(2), "error shape is exactly success+error: {body}");
}

fn entry<'a>(list: &'a Value, tld: &str) -> &'a Value {
    list["tlds"]
        .as_array()
        .expect("tlds")
        .iter()
        .find(|e| e["tld"] == tld)
        .unwrap_or_else(|| panic!("{tld} not listed"))
}

fn method<'a>(detail: &'a Value, name: &str) -> &'a Value {
    detail["health"]["methods"]
        .as_array()
        .expect("methods")
        .iter()
        .find(|m| m["method"] == name)
        .unwrap_or_else(|| panic!("{name} not in {detail}"))
}

#[tokio::test]
async fn the_listing_is_free_cached_and_describes_every_supported_suffix() {
    let app = TestApp::spawn().await;
    let response = app.http.get(app.url("/v1/tlds")).send().await.expect("request");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "public, max-age=3600");
    assert!(response.headers()["content-type"].to_str().expect("ascii").starts_with("application/json"));
    let first = response.bytes().await.expect("body");
    let again = app.http.get(app.url("/v1/tlds")).send().await.expect("request").bytes().await.expect("body");
    assert_eq!(first, again, "the body is computed once and reused");
    let list: Value = serde_json::from_slice(&first).expect("JSON");
    assert_eq!(list["success"], true);
    let tlds = list["tlds"].as_array().expect("tlds");
    assert_eq!(list["count"].as_u64(), Some(tlds.len() as u64));
    assert!(tlds.len() > 1000, "every supported suffix of the catalogue: {}", tlds.len());
    let mut sorted: Vec<&str> = tlds.iter().map(|t| t["tld"].as_str().expect("tld")).collect();
    assert!(sorted.iter().all(|t| t.starts_with('.')));
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), tlds.len(), "no duplicates");

    // .com: the chain as this server runs it (the simulator stands in for every upstream).
    let com = entry(&list, ".com");
    assert_eq!(com["methods"], serde_json::json!(["dns", "rdap", "whois"]), "{com}");
    assert_eq!(com["rdap"], serde_json::json!(["https://rdap.verisign.com/com/v1/"]));
    assert_eq!(com["whois"], "whois.verisign-grs.com");
    assert_eq!(com["definitive_available"], true);
    assert_eq!(com["restricted"], false);
    assert!(com.get("restricted_reason").is_none());
    assert_eq!(com["price_known"], true);
    assert_eq!(com["tags"], serde_json::json!(["generic"]));
    // A second-level registry zone, WHOIS only (plus the DNS pre-check).
    let com_af = entry(&list, ".com.af");
    assert_eq!(com_af["methods"], serde_json::json!(["dns", "whois"]), "{com_af}");
    assert_eq!(com_af["definitive_available"], true);
    // A restricted zone: answered by policy, never available.
    let gov_af = entry(&list, ".gov.af");
    assert_eq!(gov_af["restricted"], true);
    assert_eq!(gov_af["definitive_available"], false);
    assert_eq!(gov_af["methods"], serde_json::json!([]));
    assert!(gov_af["restricted_reason"].as_str().is_some_and(|r| r.contains("government")), "{gov_af}");
    // A TLD without a registry method dsa can use (DNS only) is not listed.
    assert!(tlds.iter().all(|t| t["tld"] != ".al"), ".al has DNS only");
    // A key is not needed, and none is charged.
    app.finish(None).await;
}

#[tokio::test]
async fn one_suffix_in_any_spelling_or_a_404_naming_it() {
    let app = TestApp::spawn().await;
    for spelling in ["com", ".com", "COM", ".Com."] {
        let (status, headers, body) = app.get(&format!("/v1/tlds/{spelling}")).await;
        assert_eq!(status, 200, "{spelling}: {body}");
        assert_eq!(headers["cache-control"], "no-store");
        assert_eq!(body["success"], true);
        assert_eq!(body["tld"], ".com", "{spelling}");
        assert_eq!(body["registry_suffix"], ".com");
        assert_eq!(body["methods"], serde_json::json!(["dns", "rdap", "whois"]));
        assert_eq!(body["health"]["window_secs"], 3600);
        assert_eq!(body["health"]["probes_in_process"], true);
    }
    let (status, _, body) = app.get("/v1/tlds/com.af").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!((body["tld"].as_str(), body["registry_suffix"].as_str()), (Some(".com.af"), Some(".com.af")));
    // U-label TLD (.рф), percent-encoded in the path by the client.
    let (status, _, body) = app.get("/v1/tlds/%D1%80%D1%84").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["tld"], ".xn--p1ai");
    // An unlisted second-level zone its ccTLD's registry sells is answered by the TLD's registry.
    let (status, _, body) = app.get("/v1/tlds/co.uk").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!((body["tld"].as_str(), body["registry_suffix"].as_str()), (Some(".co.uk"), Some(".uk")));
    // Unknown and unsupported suffixes: 404 in the spec's shape, naming the suffix.
    for (path, named) in [("not-a-tld", ".not-a-tld"), ("al", ".al"), (".ai.bd", ".ai.bd")] {
        let (status, _, body) = app.get(&format!("/v1/tlds/{path}")).await;
        assert_error(status, &body, 404);
        assert!(body["error"].as_str().is_some_and(|e| e.contains(named)), "{path}: {body}");
    }
    // Not a suffix at all: 400.
    let (status, _, body) = app.get("/v1/tlds/a..b").await;
    assert_error(status, &body, 400);
    app.finish(None).await;
}

#[tokio::test]
async fn health_counts_what_the_engine_saw_in_the_last_hour() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let (_, _, before) = app.get("/v1/tlds/org").await;
    let rdap = method(&before, "rdap");
    assert_eq!(rdap["attempts"], 0, "{before}");
    assert!(rdap.get("success_rate").is_none() && rdap.get("p50_ms").is_none());
    assert!(before["health"].get("last_definitive_at").is_none());
    // The budget of the upstream host, from the engine's limits (RDAP defaults: 10/s, burst 10, 8).
    let budget = &rdap["budget"];
    assert_eq!((budget["per_second"].as_f64(), budget["burst"].as_u64()), (Some(10.0), Some(10)), "{rdap}");
    assert_eq!((budget["concurrency"].as_u64(), budget["in_flight"].as_u64()), (Some(8), Some(0)));
    assert!(rdap["upstream"].as_str().is_some_and(|u| !u.is_empty()));

    // Two checks under .org: not delegated in DNS, so RDAP answers both.
    for name in ["dsa-demo-available.org", "another-free-name.org"] {
        let (status, _, body) = app.get(&format!("/v1/domains/check?client_key={key}&domain={name}")).await;
        assert_eq!(status, 200, "{body}");
    }
    let (_, _, after) = app.get("/v1/tlds/org").await;
    let rdap = method(&after, "rdap");
    assert_eq!((rdap["attempts"].as_u64(), rdap["successes"].as_u64()), (Some(2), Some(2)), "{after}");
    assert_eq!(rdap["success_rate"], 1.0);
    assert!(rdap["p50_ms"].as_u64().is_some(), "{rdap}");
    let dns = method(&after, "dns");
    assert!(dns["attempts"].as_u64().is_some_and(|n| n >= 2), "{dns}");
    let last = after["health"]["last_definitive_at"].as_str().expect("a definitive verdict was seen");
    assert!(time::OffsetDateTime::parse(last, &time::format_description::well_known::Rfc3339).is_ok(), "{last}");

    // The registry resets every connection: a failure, counted against RDAP.
    app.sim.set_knobs(Knobs { faults: Faults { rdap: Fault::Reset, whois: Fault::Reset }, ..Knobs::default() });
    let (status, _, body) = app.get(&format!("/v1/domains/check?client_key={key}&domain=third-name.org")).await;
    assert_error(status, &body, 502);
    let (_, _, failing) = app.get("/v1/tlds/org").await;
    let rdap = method(&failing, "rdap");
    assert_eq!((rdap["attempts"].as_u64(), rdap["successes"].as_u64()), (Some(3), Some(2)), "{failing}");
    assert!(rdap["success_rate"].as_f64().is_some_and(|r| (r - 2.0 / 3.0).abs() < 1e-9));
    // Another suffix is unaffected.
    assert_eq!(method(&app.get("/v1/tlds/net").await.2, "rdap")["attempts"], 0);
    assert_eq!(app.finish(Some(&key)).await, 2, "the 502 is not charged, the free routes never are");
}

#[tokio::test]
async fn a_stale_verdict_stands_in_when_the_registry_fails_within_its_bound() {
    let app = TestApp::spawn_with(|s| {
        // Taken names go to the registry too (no DNS pre-check), and nothing stays fresh: the
        // second check of a name must ask the registry again.
        s.engine.dns.enabled = false;
        s.engine.cache.taken_ttl_secs = 0;
        s.engine.cache.available_ttl_secs = 0;
        s.engine.stale.max_age_secs = 86_400;
        s.engine.stale.available_max_age_secs = 3;
        // Every failure below hits the same simulator host: no cooldown in the way.
        s.engine.limits.failures_before_cooldown = 1_000;
    })
    .await;
    let key = app.key(KeyOpts::default()).await;
    let check = |domain: &str| format!("/v1/domains/check?client_key={key}&domain={domain}");
    for (domain, available) in [("example.com", false), ("dsa-demo-available.com", true)] {
        let (status, _, body) = app.get(&check(domain)).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["available"], available);
        assert_eq!(
            (body["verdict"]["cached"].as_bool(), body["verdict"]["stale"].as_bool()),
            (Some(false), Some(false))
        );
        assert!(body["verdict"].get("age_secs").is_none(), "{body}");
    }

    app.sim.set_knobs(Knobs { faults: Faults { rdap: Fault::Reset, whois: Fault::Reset }, ..Knobs::default() });
    // Taken, seen a moment ago: served stale, flagged, charged like a cache hit.
    let (status, _, body) = app.get(&check("example.com")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["available"], false);
    assert_eq!(body["message"], "Taken");
    let v = &body["verdict"];
    assert_eq!((v["cached"].as_bool(), v["stale"].as_bool()), (Some(true), Some(true)), "{body}");
    assert_eq!(v["method"], "cache");
    assert_eq!(v["authoritative"], false);
    assert!(v["age_secs"].as_u64().is_some_and(|a| a < 60), "{body}");
    assert_eq!(body["credits_cost"], 1);
    // Available, younger than its 3 s bound: served stale too.
    let (status, _, body) = app.get(&check("dsa-demo-available.com")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!((body["available"].as_bool(), body["verdict"]["stale"].as_bool()), (Some(true), Some(true)));
    // Bulk shares the check's path.
    let (status, _, body) = app.get(&format!("/v1/domains/bulk?client_key={key}&domains=example.com")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["domains"][0]["verdict"]["stale"], true, "{body}");
    // A name never seen: nothing to stand in, 502.
    let (status, _, body) = app.get(&check("never-seen-before.com")).await;
    assert_error(status, &body, 502);

    // Past the available bound: never a stale "available"; taken is still served.
    tokio::time::sleep(std::time::Duration::from_millis(3_500)).await;
    let (status, _, body) = app.get(&check("dsa-demo-available.com")).await;
    assert_error(status, &body, 502);
    let (status, _, body) = app.get(&check("example.com")).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["verdict"]["age_secs"].as_u64().is_some_and(|a| a >= 3), "{body}");

    // The registry is back: fresh answers again.
    app.sim.set_knobs(Knobs::default());
    let (status, _, body) = app.get(&check("dsa-demo-available.com")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["verdict"]["stale"], false);
    // 2 fresh + 2 stale + 1 bulk entry + 1 stale taken + 1 fresh; the two 502s are not charged.
    assert_eq!(app.finish(Some(&key)).await, 7);
}

#[tokio::test]
async fn serve_stale_can_be_turned_off() {
    let app = TestApp::spawn_with(|s| {
        s.engine.dns.enabled = false;
        s.engine.cache.taken_ttl_secs = 0;
        s.engine.stale.enabled = false;
    })
    .await;
    let key = app.key(KeyOpts::default()).await;
    let path = format!("/v1/domains/check?client_key={key}&domain=example.com");
    assert_eq!(app.get(&path).await.0, 200);
    app.sim.set_knobs(Knobs { faults: Faults { rdap: Fault::Reset, whois: Fault::Reset }, ..Knobs::default() });
    let (status, _, body) = app.get(&path).await;
    assert_error(status, &body, 502);
    assert_eq!(app.finish(Some(&key)).await, 1);
}

#[tokio::test]
async fn a_suffix_whose_rdap_keeps_failing_asks_whois_first_for_a_while() {
    let app = TestApp::spawn_with(|s| {
        s.engine.dns.enabled = false;
        s.engine.routing.rdap_failures = 3;
        s.engine.routing.prefer_whois_secs = 300;
    })
    .await;
    let key = app.key(KeyOpts::default()).await;
    let check = |domain: &str| format!("/v1/domains/check?client_key={key}&domain={domain}");
    // RDAP resets every connection; WHOIS answers.
    app.sim.set_knobs(Knobs { faults: Faults { rdap: Fault::Reset, ..Faults::default() }, ..Knobs::default() });
    for i in 1..=3 {
        let (status, _, body) = app.get(&check(&format!("reroute-{i}.com"))).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["verdict"]["method"], "whois", "{body}");
    }
    let (_, _, detail) = app.get("/v1/tlds/com").await;
    assert!(detail["health"]["whois_first_until"].is_string(), "three RDAP failures, then WHOIS: {detail}");
    assert_eq!(method(&detail, "rdap")["attempts"], 3);
    assert_eq!(detail["methods"], serde_json::json!(["rdap", "whois"]), "the catalogue's order is shown");
    // Now WHOIS answers first: RDAP is not asked at all.
    for i in 4..=5 {
        let (status, _, body) = app.get(&check(&format!("reroute-{i}.com"))).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["verdict"]["method"], "whois");
    }
    let (_, _, detail) = app.get("/v1/tlds/com").await;
    assert_eq!(method(&detail, "rdap")["attempts"], 3, "{detail}");
    assert_eq!(method(&detail, "whois")["attempts"], 5);
    // Per suffix: .net still asks RDAP first (and fails over to WHOIS).
    let (_, _, net) = app.get("/v1/tlds/net").await;
    assert!(net["health"].get("whois_first_until").is_none(), "{net}");
    // RDAP recovers while WHOIS breaks: WHOIS (asked first) fails, RDAP answers, and RDAP is
    // promoted back at once.
    app.sim.set_knobs(Knobs { faults: Faults { whois: Fault::Reset, ..Faults::default() }, ..Knobs::default() });
    let (status, _, body) = app.get(&check("reroute-6.com")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["verdict"]["method"], "rdap", "{body}");
    let (_, _, detail) = app.get("/v1/tlds/com").await;
    assert!(detail["health"].get("whois_first_until").is_none(), "promoted back: {detail}");
    let metrics = app.http.get(app.url("/metrics")).send().await.expect("metrics").text().await.expect("text");
    assert!(metrics.contains("dsa_route_whois_first_total{suffix=\"com\"}"), "exported as a metric");
    assert!(metrics.contains("dsa_route_rdap_first_total{suffix=\"com\"}"), "the promotion too");
    assert_eq!(app.finish(Some(&key)).await, 6);
}
