//! Consensus before "available" (issue 28) against a lying registry: the simulator's `.com` and
//! `.net` RDAP servers answer 404 for registered names that are not delegated (held, pending
//! delete), as `rdap.nic.io` and `rdap.nic.co` did on 2026-09-14; their WHOIS and DNS stay
//! truthful. The engine directly (query counts from the simulator) and a standalone front over
//! HTTP (502 not charged, `GET /v1/tlds/{tld}`).

use std::time::Duration;

use common::verdict::{Method, Status};
use dsa_tests::harness::app::{KeyOpts, TestApp};
use dsa_tests::sim::{Scenario, SimStats, Simulator};
use workers::config::EngineConfig;
use workers::engine::Engine;

/// Held and pending-delete names under the lying registries (registered, not delegated).
const LIES: &[&str] = &[
    "held-one.com",
    "held-two.com",
    "held-three.com",
    "redeeming-one.com",
    "redeeming-two.com",
    "held-one.net",
    "held-two.net",
    "held-three.net",
];

/// Free names (not listed: available everywhere).
const FREE: &[&str] = &["free-one.com", "free-two.com", "free-three.com", "free-one.net", "free-two.net"];

/// The lying-registry scenario (`tests/fixtures/scenarios/lying-registry.toml`): `.com` and
/// `.net` lie in RDAP; `.org` is RDAP only and honest; `.io` is WHOIS only and honest.
pub(crate) fn lying_scenario() -> Scenario {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/scenarios/lying-registry.toml");
    let scenario = Scenario::load(std::path::Path::new(path)).expect("scenario parses");
    let lies: Vec<&str> = scenario.domains().filter(|(_, t)| t.is_registered_undelegated()).map(|(n, _)| n).collect();
    let mut expected: Vec<&str> = LIES.iter().copied().chain(["held-one.io"]).collect();
    expected.sort_unstable();
    assert_eq!(lies, expected, "the fixture lists the names these tests use");
    scenario
}

/// The harness's engine settings for `sim`, with consensus set by `consensus`.
fn config(sim: &Simulator, consensus: impl FnOnce(&mut workers::config::ConsensusConfig)) -> EngineConfig {
    let mut config = dsa_tests::harness::app::engine_config(sim);
    config.check_deadline_secs = 5.0;
    consensus(&mut config.consensus);
    config
}

async fn check(engine: &Engine, name: &str) -> workers::engine::Report {
    let domain = engine.parse(name).expect("valid name");
    engine.check_uncached(&domain).await.expect("supported TLD")
}

/// Queries the simulator received between two snapshots: (dns, rdap, whois).
fn spent(before: SimStats, after: SimStats) -> (u64, u64, u64) {
    (
        after.dns.queries - before.dns.queries,
        after.rdap.queries - before.rdap.queries,
        after.whois.queries - before.whois.queries,
    )
}

#[tokio::test]
async fn the_registry_really_lies_without_consensus() {
    // The control: without a second signal the lying registry's 404 is a false "available", so
    // the tests below measure something that can fail.
    let sim = Simulator::start(lying_scenario()).await.expect("simulator");
    let engine = Engine::new(config(&sim, |c| {
        c.suffixes.insert("*".into(), false);
    }))
    .expect("engine");
    for name in LIES {
        let r = check(&engine, name).await;
        assert_eq!((r.verdict.status, r.verdict.method), (Status::Available, Method::Rdap), "{name}: {r:#?}");
        assert_eq!(r.verdict.confirmed_by, None);
    }
}

#[tokio::test]
async fn with_consensus_a_lying_registry_gives_no_false_available() {
    let sim = Simulator::start(lying_scenario()).await.expect("simulator");
    let engine = Engine::new(config(&sim, |c| {
        c.suffixes.insert("com".into(), true);
        c.suffixes.insert("net".into(), true);
        c.audit_one_in = 0;
    }))
    .expect("engine");
    let mut false_available = 0;
    for name in LIES {
        let r = check(&engine, name).await;
        if r.verdict.status == Status::Available {
            false_available += 1;
        }
        assert_eq!(r.verdict.status, Status::Unknown, "{name}: {r:#?}");
        assert!(r.verdict.evidence.contains("disagree"), "{name}: {}", r.verdict.evidence);
        assert!(!r.retryable, "the same signals would disagree again: {name}");
    }
    assert_eq!(false_available, 0);
    // Free names are still available, confirmed by the registry's WHOIS.
    for name in FREE {
        let r = check(&engine, name).await;
        assert_eq!(r.verdict.status, Status::Available, "{name}: {r:#?}");
        assert_eq!((r.verdict.method, r.verdict.confirmed_by), (Method::Rdap, Some(Method::Whois)), "{name}");
    }
    // Counted per suffix in the route book (what GET /v1/tlds/{tld} shows).
    let com = engine.catalogue().get("com").expect("com").clone();
    let state = engine.book().consensus(&com, true).await;
    let hold = state.hold.expect("a record of the disagreements");
    assert_eq!(hold.disagreements, 5, "five lies under .com: {hold:?}");
    assert!(LIES.contains(&hold.last.domain.as_str()));
    assert!(hold.last.second.contains("registered"), "{hold:?}");
    // Nothing false is kept to be served later, fresh or stale.
    let domain = engine.parse("held-one.com").expect("valid");
    assert_eq!(engine.cached(&domain).await, None);
    assert!(engine.stale(&domain).await.is_none());
}

#[tokio::test]
async fn the_catalogue_requires_consensus_for_io_and_co_and_dns_confirms_at_no_cost() {
    let catalogue = common::catalogue::Catalogue::embedded().expect("catalogue");
    for suffix in ["io", "co"] {
        let reason = catalogue.get(suffix).and_then(|e| e.consensus.clone()).unwrap_or_default();
        assert!(reason.contains("browser-use/browser-harness#723"), ".{suffix}: {reason:?}");
        assert!(reason.contains("2026-09-14"), ".{suffix}: {reason:?}");
    }
    assert!(catalogue.get("com").is_some_and(|e| e.consensus.is_none()), ".com has no record of false 404s");

    let sim = Simulator::start(lying_scenario()).await.expect("simulator");
    let engine = Engine::new(config(&sim, |c| c.audit_one_in = 0)).expect("engine");
    // .io is WHOIS-only in the catalogue: the second signal is the authoritative name servers,
    // whose "not delegated" the pre-check of the same check already heard (no extra query).
    let before = sim.stats();
    let r = check(&engine, "free-name.io").await;
    assert_eq!(r.verdict.status, Status::Available, "{r:#?}");
    assert_eq!((r.verdict.method, r.verdict.confirmed_by), (Method::Whois, Some(Method::Dns)));
    assert_eq!(spent(before, sim.stats()), (1, 0, 1), "one DNS and one WHOIS query, nothing more");
    // A held .io name is taken by WHOIS (the registry's own word), consensus or not.
    let r = check(&engine, "held-one.io").await;
    assert_eq!(r.verdict.status, Status::Taken, "{r:#?}");
    // With the catalogue overridden off, the confirmation is not asked for.
    let engine = Engine::new(config(&sim, |c| {
        c.suffixes.insert("io".into(), false);
    }))
    .expect("engine");
    let r = check(&engine, "free-name-two.io").await;
    assert_eq!((r.verdict.status, r.verdict.confirmed_by), (Status::Available, None), "{r:#?}");
}

#[tokio::test]
async fn a_suffix_without_consensus_answers_with_one_registry_query() {
    let sim = Simulator::start(lying_scenario()).await.expect("simulator");
    let engine = Engine::new(config(&sim, |c| c.audit_one_in = 0)).expect("engine");
    for name in ["free-one.org", "free-four.com"] {
        let before = sim.stats();
        let r = check(&engine, name).await;
        assert_eq!((r.verdict.status, r.verdict.method), (Status::Available, Method::Rdap), "{name}: {r:#?}");
        assert_eq!(r.verdict.confirmed_by, None, "{name}");
        assert_eq!(spent(before, sim.stats()), (1, 1, 0), "{name}: the DNS pre-check and one RDAP query");
    }
}

#[tokio::test]
async fn a_disagreement_switches_consensus_on_for_the_hold_then_off() {
    let sim = Simulator::start(lying_scenario()).await.expect("simulator");
    // .net: not in the catalogue's list; the audit confirms every second "available" that is not
    // confirmed anyway.
    let engine = Engine::new(config(&sim, |c| {
        c.audit_one_in = 2;
        c.hold_secs = 2;
    }))
    .expect("engine");
    let net = engine.catalogue().get("net").expect("net").clone();
    assert_eq!(engine.book().consensus(&net, true).await.required, None);

    // The first answer is not audited: one registry query.
    let before = sim.stats();
    let r = check(&engine, "free-zero.net").await;
    assert_eq!((r.verdict.status, r.verdict.confirmed_by), (Status::Available, None), "{r:#?}");
    assert_eq!(spent(before, sim.stats()), (1, 1, 0));
    // The second is, and catches the lie.
    let r = check(&engine, "held-one.net").await;
    assert_eq!(r.verdict.status, Status::Unknown, "{r:#?}");
    let state = engine.book().consensus(&net, true).await;
    assert_eq!(state.required, Some(workers::book::ConsensusSource::Disagreement));
    assert_eq!(state.hold.as_ref().map(|h| h.disagreements), Some(1));

    // Switched on: the next lie is caught too, and a free name costs one WHOIS query more.
    let r = check(&engine, "held-two.net").await;
    assert_eq!(r.verdict.status, Status::Unknown, "{r:#?}");
    let before = sim.stats();
    let r = check(&engine, "free-one.net").await;
    assert_eq!((r.verdict.status, r.verdict.confirmed_by), (Status::Available, Some(Method::Whois)), "{r:#?}");
    assert_eq!(spent(before, sim.stats()), (1, 1, 1));
    // Per suffix: .com saw nothing.
    let com = engine.catalogue().get("com").expect("com").clone();
    assert_eq!(engine.book().consensus(&com, true).await.required, None);

    // After the hold, one registry answer decides again (the third unconfirmed answer is not
    // audited; and the registry would be believed: which is why the catalogue and the
    // configuration can make the setting permanent).
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let state = engine.book().consensus(&net, true).await;
    assert_eq!(state.required, None, "the hold is over: {state:?}");
    assert_eq!(state.hold.map(|h| h.disagreements), Some(2), "the count stays on record");
    let before = sim.stats();
    let r = check(&engine, "free-two.net").await;
    assert_eq!((r.verdict.status, r.verdict.confirmed_by), (Status::Available, None), "{r:#?}");
    assert_eq!(spent(before, sim.stats()), (1, 1, 0), "one registry query again");
}

#[tokio::test]
async fn over_http_a_disagreement_is_a_502_not_charged_and_shown_on_the_tld() {
    let app = TestApp::spawn_scenario(
        lying_scenario(),
        |s| {
            s.engine.consensus.suffixes.insert("com".into(), true);
            s.engine.consensus.audit_one_in = 0;
        },
        api::state::system_clock(),
    )
    .await;
    let key = app.key(KeyOpts::default()).await;
    let mut charged = 0;
    for name in LIES.iter().filter(|n| n.ends_with(".com")) {
        let (status, _, body) = app.get(&format!("/v1/domains/check?client_key={key}&domain={name}")).await;
        assert_eq!(status, 502, "{name}: {body}");
        assert_eq!(body["success"], false, "{body}");
        assert_eq!(body.as_object().map(|o| o.len()), Some(2), "the spec's error shape: {body}");
        // Asked again: still no answer (nothing false was cached), still not charged.
        let (status, _, body) = app.get(&format!("/v1/domains/check?client_key={key}&domain={name}")).await;
        assert_eq!(status, 502, "{name} again: {body}");
    }
    let (status, _, body) = app.get(&format!("/v1/domains/check?client_key={key}&domain=free-one.com")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["available"], true, "{body}");
    assert_eq!(body["verdict"]["method"], "rdap", "{body}");
    assert_eq!(body["verdict"]["confirmed_by"], "whois", "{body}");
    charged += 1;
    // A suffix without consensus: no `confirmed_by`.
    let (status, _, body) = app.get(&format!("/v1/domains/check?client_key={key}&domain=free-one.org")).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["verdict"].get("confirmed_by").is_none(), "{body}");
    charged += 1;

    let (status, _, com) = app.get("/v1/tlds/com").await;
    assert_eq!(status, 200, "{com}");
    let consensus = &com["consensus"];
    assert_eq!(consensus["required"], true, "{com}");
    assert_eq!(consensus["source"], "config", "{com}");
    assert_eq!(consensus["disagreements"], 10, "five lies, each asked twice: {com}");
    assert!(consensus["until"].is_string(), "{com}");
    let last = &consensus["last_disagreement"];
    assert!(LIES.contains(&last["domain"].as_str().unwrap_or_default()), "{com}");
    assert!(last["first"].as_str().is_some_and(|s| s.contains("rdap")), "{com}");
    assert!(last["second"].as_str().is_some_and(|s| s.contains("whois")), "{com}");
    let (_, _, io) = app.get("/v1/tlds/io").await;
    assert_eq!(io["consensus"]["required"], true, "{io}");
    assert_eq!(io["consensus"]["source"], "catalogue", "{io}");
    assert!(io["consensus"]["reason"].as_str().is_some_and(|r| r.contains("#723")), "{io}");
    assert_eq!(io["consensus"]["disagreements"], 0, "{io}");
    let (_, _, org) = app.get("/v1/tlds/org").await;
    assert_eq!(org["consensus"]["required"], false, "{org}");
    assert!(org["consensus"].get("source").is_none(), "{org}");

    let entries = app.finish(Some(&key)).await;
    assert_eq!(entries, charged, "only the definitive answers are charged");
}
