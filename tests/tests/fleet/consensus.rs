//! Consensus before "available" in a fleet (issue 28): the simulator's `.com` and `.net` RDAP
//! servers lie (404 for held and pending-delete names; `tests/fixtures/scenarios/
//! lying-registry.toml`). A disagreement one worker sees switches consensus on for every worker
//! through the routing bucket, and every front shows it.

use std::sync::Arc;

use api::keys::Plan;
use dsa_tests::harness::fleet::{Fleet, PoolStats, settled};
use dsa_tests::sim::Scenario;

use super::get;

fn lying_scenario() -> Scenario {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/scenarios/lying-registry.toml");
    Scenario::load(std::path::Path::new(path)).expect("scenario parses")
}

/// With consensus on for `.com` (configuration), every lie is a 502 without charge and free
/// names are confirmed by WHOIS: 0 false "available" through JetStream.
#[tokio::test]
async fn a_lying_registry_gives_no_false_available_in_a_fleet() {
    let fleet = Fleet::builder("consensus_lies")
        .scenario(lying_scenario())
        .workers(2)
        .configure(|s| {
            s.engine.consensus.suffixes.insert("com".into(), true);
            s.engine.consensus.audit_one_in = 0;
        })
        .start()
        .await;
    let (key, key_id) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();
    let front = fleet.url("");
    let check = |name: &str| format!("{front}/v1/domains/check?client_key={key}&domain={name}");
    let lies: Vec<String> = fleet
        .sim()
        .scenario()
        .domains()
        .filter(|(n, t)| n.ends_with(".com") && t.is_registered_undelegated())
        .map(|(n, _)| n.to_owned())
        .collect();
    assert_eq!(lies.len(), 5);
    let mut false_available = 0;
    for name in &lies {
        let (status, body) = get(&http, check(name)).await;
        if body["available"] == true {
            false_available += 1;
        }
        assert_eq!(status, 502, "{name}: {body}");
        assert_eq!(body["success"], false, "{body}");
    }
    assert_eq!(false_available, 0);
    let (status, body) = get(&http, check("free-one.com")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["available"], true, "{body}");
    assert_eq!(body["verdict"]["confirmed_by"], "whois", "{body}");
    settled(fleet.store(), &key_id, 1).await;
    let (_, com) = get(&http, format!("{front}/v1/tlds/com")).await;
    assert_eq!(com["consensus"]["disagreements"], 5, "counted fleet-wide: {com}");
    fleet.stop().await;
}

/// Worker A (auditing every "available") sees `.net`'s RDAP and WHOIS disagree and switches
/// consensus on in the routing bucket; worker B, which audits nothing and never saw a
/// disagreement itself, then requires a second signal for `.net` too, and the front shows the
/// fleet's count.
#[tokio::test]
async fn a_disagreement_seen_by_one_worker_switches_consensus_on_for_every_worker() {
    let mut fleet = Fleet::builder("consensus_switch")
        .scenario(lying_scenario())
        .workers(0)
        .configure(|s| {
            s.engine.consensus.audit_one_in = 0;
            s.engine.consensus.hold_secs = 600;
        })
        .start()
        .await;
    let (key, _) = fleet.key(Plan::Free).await;
    let http = reqwest::Client::new();
    let front = fleet.url("");
    let check = |name: &str| format!("{front}/v1/domains/check?client_key={key}&domain={name}");
    let (_, net) = get(&http, format!("{front}/v1/tlds/net")).await;
    assert_eq!(net["consensus"]["required"], false, "{net}");

    let mut auditing = fleet.settings().clone();
    auditing.engine.consensus.audit_one_in = 1;
    let worker_a = fleet.add_worker_with(&auditing, Arc::new(PoolStats::default()));
    let (status, body) = get(&http, check("held-one.net")).await;
    assert_eq!(status, 502, "worker A's audit caught the lie: {body}");
    fleet.stop_worker(worker_a).await;

    let (_, net) = get(&http, format!("{front}/v1/tlds/net")).await;
    assert_eq!(net["consensus"]["required"], true, "the front reads the fleet's state: {net}");
    assert_eq!(net["consensus"]["source"], "disagreement", "{net}");
    assert_eq!(net["consensus"]["disagreements"], 1, "{net}");
    assert_eq!(net["consensus"]["last_disagreement"]["domain"], "held-one.net", "{net}");
    let (_, com) = get(&http, format!("{front}/v1/tlds/com")).await;
    assert_eq!(com["consensus"]["required"], false, "per suffix: {com}");

    // Worker B: no audit, no disagreement of its own; the bucket's hold makes it ask WHOIS.
    fleet.add_worker(Arc::new(PoolStats::default()));
    let (status, body) = get(&http, check("held-two.net")).await;
    assert_eq!(status, 502, "worker B requires consensus from the bucket: {body}");
    let (status, body) = get(&http, check("free-one.net")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["verdict"]["confirmed_by"], "whois", "{body}");
    let (_, net) = get(&http, format!("{front}/v1/tlds/net")).await;
    assert_eq!(net["consensus"]["disagreements"], 2, "counted across workers: {net}");
    assert_eq!(net["consensus"]["last_disagreement"]["domain"], "held-two.net", "{net}");
    // .com was never switched: one registry answer there (and the registry's lie believed,
    // which is what the audit and the catalogue exist for).
    let (status, body) = get(&http, check("held-one.com")).await;
    assert_eq!((status, body["verdict"].get("confirmed_by")), (200, None), "{body}");
    fleet.stop().await;
}
