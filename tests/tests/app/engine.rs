//! The availability engine against the registry simulator: real DNS, RDAP and WHOIS on loopback.

use std::time::{Duration, Instant};

use common::verdict::{Method, Status};
use dsa_tests::sim::{Fault, Knobs, Scenario, Simulator, Truth};
use workers::config::EngineConfig;
use workers::engine::Engine;

/// The harness's engine config for `sim`, with a longer deadline and tighter WHOIS politeness
/// (the probe and fault tests here measure against them).
fn engine_config(sim: &Simulator) -> EngineConfig {
    let mut config = dsa_tests::harness::app::engine_config(sim);
    config.check_deadline_secs = 5.0;
    config.limits.whois.per_second = 50.0;
    config.limits.whois.burst = 50;
    config.limits.whois.concurrency = 8;
    config
}

/// The demo scenario with the given knobs (default: no latency, no limits, no faults).
async fn start(knobs: Knobs) -> (Simulator, Engine) {
    let sim = Simulator::start(Scenario::demo()).await.expect("simulator starts");
    sim.set_knobs(knobs);
    let engine = Engine::new(engine_config(&sim)).expect("engine builds");
    (sim, engine)
}

async fn check(engine: &Engine, name: &str) -> workers::engine::Report {
    let domain = engine.parse(name).expect("valid name");
    engine.check_uncached(&domain).await.expect("supported TLD")
}

fn expected(truth: Truth) -> Status {
    match truth {
        Truth::Registered | Truth::Held => Status::Taken,
        Truth::Available => Status::Available,
        Truth::PendingDelete => Status::PendingDelete,
        Truth::Reserved => Status::Reserved,
    }
}

#[tokio::test]
async fn every_demo_name_gets_its_truth() {
    let (sim, engine) = start(Knobs::default()).await;
    let names: Vec<(String, Truth)> = sim.scenario().domains().map(|(n, t)| (n.to_owned(), t)).collect();
    assert!(names.len() >= 20);
    for (name, truth) in names {
        let report = check(&engine, &name).await;
        assert_eq!(report.verdict.status, expected(truth), "{name}: {:#?}", report);
        assert!(report.verdict.authoritative, "{name}");
    }
}

#[tokio::test]
async fn each_method_proves_what_it_can() {
    let (_sim, engine) = start(Knobs::default()).await;
    // Delegated in DNS → taken without asking the registry.
    let r = check(&engine, "example.com").await;
    assert_eq!((r.verdict.status, r.verdict.method), (Status::Taken, Method::Dns));
    // Held: no delegation, RDAP 200 → taken.
    let r = check(&engine, "suspended-shop.com").await;
    assert_eq!((r.verdict.status, r.verdict.method), (Status::Taken, Method::Rdap));
    assert!(r.steps.iter().any(|s| s.outcome.contains("not delegated")), "{r:#?}");
    // Pending delete via RDAP status.
    let r = check(&engine, "lapsed-brand.com").await;
    assert_eq!((r.verdict.status, r.verdict.method), (Status::PendingDelete, Method::Rdap));
    // Available: RDAP 404 from the registry's server.
    let r = check(&engine, "dsa-demo-available.com").await;
    assert_eq!((r.verdict.status, r.verdict.method), (Status::Available, Method::Rdap));
    // .af and .com.af: WHOIS only.
    for (name, status) in [
        ("dsa-demo-available.af", Status::Available),
        ("dsa-demo-available.com.af", Status::Available),
        ("google.com.af", Status::Taken),
    ] {
        let r = check(&engine, name).await;
        assert_eq!(r.verdict.status, status, "{name}: {r:#?}");
        if status == Status::Available {
            assert_eq!(r.verdict.method, Method::Whois, "{name}");
        }
    }
    // Restricted zone: answered by policy, no query.
    let r = check(&engine, "ministry.gov.af").await;
    assert_eq!((r.verdict.status, r.verdict.method), (Status::Restricted, Method::Policy));
    // Reserved via WHOIS text.
    let r = check(&engine, "registry.io").await;
    assert_eq!(r.verdict.status, Status::Reserved, "{r:#?}");
}

#[tokio::test]
async fn rate_limited_registry_gives_unknown_never_available() {
    let (sim, engine) = start(Knobs {
        rate_limit: dsa_tests::sim::RateLimit { rdap_per_second: Some(1), whois_per_second: Some(1) },
        ..Knobs::default()
    })
    .await;
    let mut unknown = 0;
    for i in 0..6 {
        let r = check(&engine, &format!("burst-{i}.dsa-demo-available.af")).await;
        // A throttled answer is never read as "not found".
        assert_ne!(r.verdict.status, Status::Taken, "{r:#?}");
        if r.verdict.status == Status::Unknown {
            unknown += 1;
            assert!(r.verdict.evidence.contains("rate limited"), "{r:#?}");
            // .af is WHOIS-only: the unknown verdict names the method actually tried.
            assert_eq!(r.verdict.method, Method::Whois, "{r:#?}");
            assert!(r.retryable, "throttling may pass: worth a retry");
        }
    }
    // All six names are the same registrable domain, so ask distinct ones too.
    for i in 0..6 {
        let r = check(&engine, &format!("free-{i}.af")).await;
        if r.verdict.status == Status::Unknown {
            unknown += 1;
        } else {
            assert_eq!(r.verdict.status, Status::Available);
        }
    }
    assert!(unknown > 0, "1 query/s must throttle a burst of 12");
    assert!(sim.stats().whois.rate_limit_violations > 0);
}

#[tokio::test]
async fn stalled_registry_gives_unknown_within_its_deadline() {
    let (_sim, engine) =
        start(Knobs { faults: dsa_tests::sim::Faults { rdap: Fault::Stall, whois: Fault::Stall }, ..Knobs::default() })
            .await;
    for name in ["dsa-demo-available.com", "dsa-demo-available.af"] {
        let started = Instant::now();
        let r = check(&engine, name).await;
        let took = started.elapsed();
        assert_eq!(r.verdict.status, Status::Unknown, "{name}: {r:#?}");
        assert!(took < Duration::from_secs(5), "{name} took {took:?}");
        assert!(r.verdict.evidence.contains("timed out"), "{r:#?}");
        assert!(r.retryable, "{r:#?}");
    }
}

#[tokio::test]
async fn oversize_answers_are_refused() {
    let (_sim, engine) = start(Knobs {
        faults: dsa_tests::sim::Faults { rdap: Fault::Oversize, whois: Fault::Oversize },
        ..Knobs::default()
    })
    .await;
    for name in ["dsa-demo-available.com", "dsa-demo-available.af"] {
        let r = check(&engine, name).await;
        assert_eq!(r.verdict.status, Status::Unknown, "{name}: {r:#?}");
        assert!(r.verdict.evidence.contains("larger than"), "{r:#?}");
        assert!(!r.retryable, "an oversized answer will not shrink on a retry: {r:#?}");
    }
}

#[tokio::test]
async fn reset_connections_give_unknown() {
    let (_sim, engine) =
        start(Knobs { faults: dsa_tests::sim::Faults { rdap: Fault::Reset, whois: Fault::Reset }, ..Knobs::default() })
            .await;
    let r = check(&engine, "dsa-demo-available.de").await;
    assert_eq!(r.verdict.status, Status::Unknown, "{r:#?}");
}

#[tokio::test]
async fn cache_serves_definitive_verdicts_only() {
    let (sim, engine) = start(Knobs::default()).await;
    let domain = engine.parse("dsa-demo-available.org").expect("valid");
    assert!(engine.cached(&domain).await.is_none());
    let v = engine.check(&domain).await.expect("supported");
    assert_eq!(v.status, Status::Available);
    let before = sim.stats().rdap.queries;
    let again = engine.check(&domain).await.expect("supported");
    assert_eq!((again.status, again.method), (Status::Available, Method::Cache));
    assert_eq!(sim.stats().rdap.queries, before, "a cache hit asks nobody");
}

/// Issue 14: an RDAP 404 is "not found" only from the suffix's own registry server. A redirect
/// that ends at another server's 404 (another registry, a registrar) gives `unknown`, never
/// `available`; the same 404 straight from the registry's server is `available`.
#[tokio::test]
async fn a_404_reached_by_redirect_is_not_the_registrys_answer() {
    redirected_not_found(axum::http::StatusCode::NOT_FOUND).await;
}

/// The same rule for an RFC 9083 §6 error object with `errorCode` 404 sent under HTTP 200, which
/// the RDAP reader takes for "not found" too.
#[tokio::test]
async fn an_error_object_404_under_200_follows_the_same_authority_rule() {
    redirected_not_found(axum::http::StatusCode::OK).await;
}

async fn redirected_not_found(status: axum::http::StatusCode) {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    let not_found = move || async move {
        (
            status,
            [(header::CONTENT_TYPE, "application/rdap+json")],
            r#"{"errorCode":404,"title":"Not Found","description":["The object was not found."]}"#,
        )
    };
    // The other server, reached as `localhost`.
    let other = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let other_port = other.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let app = axum::Router::new().fallback(not_found);
        let _ = axum::serve(other, app).await;
    });
    // The registry's server, reached as `127.0.0.1`, redirects every query to the other one.
    let registry = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let registry_port = registry.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let app = axum::Router::new().fallback(move |uri: axum::http::Uri| async move {
            let location = format!("http://localhost:{other_port}{}", uri.path());
            (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
        });
        let _ = axum::serve(registry, app).await;
    });
    let sim = Simulator::start(Scenario::demo()).await.expect("simulator starts");
    let mut config = engine_config(&sim);
    config.dns.enabled = false;
    config.whois.enabled = false;
    // Loopback servers: plain http on other ports (the https/443 rule has its own test, abuse `bus`).
    config.rdap.test_only_any_redirect = true;
    config.rdap.base_overrides = [
        ("com".to_owned(), format!("http://127.0.0.1:{registry_port}/")),
        ("net".to_owned(), format!("http://localhost:{other_port}/")),
    ]
    .into_iter()
    .collect();
    let engine = Engine::new(config).expect("engine builds");
    let r = check(&engine, "dsa-redirected-404.com").await;
    assert_eq!(r.verdict.status, Status::Unknown, "{r:#?}");
    assert!(r.verdict.evidence.contains("reached by redirect"), "{r:#?}");
    let r = check(&engine, "dsa-direct-404.net").await;
    assert_eq!(r.verdict.status, Status::Available, "the registry's own 404: {r:#?}");
}

/// Issue 17: the DNS pre-check has its own sub-budget (a quarter of the deadline, at most 2 s),
/// so a slow zone name server cannot eat the time the registry methods need.
#[tokio::test]
async fn a_slow_dns_precheck_leaves_the_registry_its_time() {
    let sim = Simulator::start(Scenario::demo()).await.expect("simulator starts");
    sim.set_knobs(Knobs {
        latency_ms: dsa_tests::sim::Latency { dns: 3000, ..Default::default() },
        ..Knobs::default()
    });
    let mut config = engine_config(&sim);
    config.dns.timeout_secs = 5.0;
    config.check_deadline_secs = 4.0;
    let engine = Engine::new(config).expect("engine builds");
    let started = Instant::now();
    let r = check(&engine, "dsa-demo-available.com").await;
    let took = started.elapsed();
    assert_eq!(r.verdict.status, Status::Available, "{r:#?}");
    assert!(took < Duration::from_millis(2500), "the pre-check stopped at its 1 s budget: took {took:?}");
    assert!(r.steps.iter().any(|s| s.outcome.contains("over its 1.00 s budget")), "{r:#?}");
}
