//! `GET /v1/domains/suggest?verify=N` end to end in standalone mode (issue 27): a real front
//! whose engine asks the registry simulator, playing a scenario where the best candidates for the
//! keyword are registered, on hold (not delegated, yet taken), or pending delete.

use std::time::{Duration, Instant};

use api::keys::Plan;
use api::routes::suggest::{VERIFY_POOL, VERIFY_PRICE};
use api::suggest::{Keyword, Words, suggest};
use common::catalogue::Catalogue;
use dsa_tests::harness::app::{KeyOpts, TestApp};
use dsa_tests::sim::{DomainSpec, Fault, Faults, Knobs, Scenario, Truth};
use serde_json::Value;

const KEYWORD: &str = "kabul bakery";
const TLDS: &[&str] = &["com", "net", "org", "io", "af", "com.af", "dev"];

/// The demo registries, with the first `taken` candidates of [`KEYWORD`]'s verification pool
/// made not available, in turn: on hold (the trap: no delegation, yet taken), registered, pending
/// delete. Returns the scenario and the names made not available.
fn scenario(taken: usize) -> (Scenario, Vec<String>) {
    let words = Words::shipped();
    let catalogue = Catalogue::embedded().expect("catalogue");
    let keyword = Keyword::parse(KEYWORD, words).expect("keyword");
    let tlds: Vec<String> = TLDS.iter().map(|t| (*t).to_owned()).collect();
    let pool = suggest(words, &catalogue, &keyword, &tlds, VERIFY_POOL);
    let truths = [Truth::Held, Truth::Registered, Truth::PendingDelete];
    let domains: Vec<DomainSpec> = pool
        .items
        .iter()
        .take(taken)
        .enumerate()
        .map(|(i, s)| DomainSpec { name: s.domain.as_str().to_owned(), truth: truths[i % truths.len()] })
        .collect();
    let names = domains.iter().map(|d| d.name.clone()).collect();
    let demo = Scenario::demo();
    (Scenario::new(demo.tlds().to_vec(), domains, Knobs::default()).expect("scenario"), names)
}

async fn spawn(taken: usize) -> (TestApp, Vec<String>) {
    let (scenario, names) = scenario(taken);
    let app = TestApp::spawn_scenario(scenario, |_| {}, api::state::system_clock()).await;
    app.sim.set_knobs(Knobs::default());
    (app, names)
}

fn path(key: &str, extra: &str) -> String {
    let tlds: Vec<String> = TLDS.iter().map(|t| format!(".{t}")).collect();
    format!("/v1/domains/suggest?client_key={key}&keyword=kabul%20bakery&tlds={}&{extra}", tlds.join(","))
}

fn items(body: &Value) -> &Vec<Value> {
    body["suggestions"].as_array().expect("suggestions")
}

fn registry_queries(app: &TestApp) -> u64 {
    let stats = app.sim.stats();
    stats.rdap.queries + stats.whois.queries
}

/// The confirmed names lead the list, each free in the simulator's registry and marked with its
/// registry verdict; no name on hold (not delegated, yet taken) is ever called available; the
/// charge is 5 + 1 per confirmed name; the same request again confirms from the cache.
#[tokio::test]
async fn verified_names_are_free_in_the_registry_charged_per_name_and_cached() {
    let (app, taken) = spawn(12).await;
    let key = app.key(KeyOpts::default()).await;
    let before = registry_queries(&app);
    let (status, _, body) = app.get(&path(&key, "limit=10&verify=5")).await;
    assert_eq!(status, 200, "{body}");
    let spent = registry_queries(&app) - before;
    let v = &body["verification"];
    assert_eq!(v["requested"], 5, "{body}");
    assert_eq!(v["confirmed"], 5, "{body}");
    assert_eq!(v["timed_out"], false, "{body}");
    assert_eq!(v["credits_cost"], 5 * VERIFY_PRICE, "{body}");
    assert_eq!(body["credits_cost"], 5 + 5 * VERIFY_PRICE, "{body}");
    assert_eq!(body["credits_remaining"], 500 - 5 - 5 * VERIFY_PRICE, "{body}");
    assert_eq!(body["total"], 10, "{body}");
    let list = items(&body);
    for (i, s) in list.iter().enumerate() {
        let domain = s["domain"].as_str().expect("domain");
        let truth = app.sim.scenario().truth(domain);
        if i < 5 {
            assert_eq!(s["available"], true, "confirmed names first: {s}");
            assert_eq!(s["checked_by"], "registry", "{s}");
            assert_eq!(s["verdict"]["status"], "available", "{s}");
            assert!(["rdap", "whois"].contains(&s["verdict"]["method"].as_str().expect("method")), "{s}");
            assert_eq!(s["verdict"]["authoritative"], true, "a fresh registry answer: {s}");
        }
        if s["available"] == true {
            assert_eq!(truth, Truth::Available, "{domain} called available but the registry holds it as {truth}");
            assert!(!taken.contains(&domain.to_owned()), "{domain}");
        } else {
            assert!(i >= 5, "{s}");
        }
        if truth == Truth::Held {
            assert_ne!(s["available"], true, "not delegated is not available: {s}");
        }
    }
    // The exact names lead the pool and are all taken; those on hold are not delegated, so only
    // the registry can refuse them: it was asked, and its answer is on the list.
    let held: Vec<&Value> =
        list.iter().filter(|s| app.sim.scenario().truth(s["domain"].as_str().unwrap_or("")) == Truth::Held).collect();
    assert!(!held.is_empty(), "a name on hold is on the list: {body}");
    assert!(
        held.iter().any(|s| s["available"] == false && s["checked_by"] == "registry"),
        "a name on hold was refused by the registry, not guessed free from DNS: {body}"
    );
    let reported = v["registry_queries"].as_u64().expect("registry_queries");
    assert!(reported >= 5, "at least one query per confirmed name: {body}");
    assert!(reported <= api::routes::suggest::max_lookups(5) as u64, "{body}");
    assert!(spent >= reported, "the simulator saw the registry queries reported ({spent} ≥ {reported})");
    assert!(v["tried"].as_u64().expect("tried") >= reported, "{body}");

    // Again: the five confirmed names come from the verdict cache, no registry query spent.
    let before = registry_queries(&app);
    let (status, _, again) = app.get(&path(&key, "limit=10&verify=5")).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["verification"]["confirmed"], 5, "{again}");
    let second = again["verification"]["registry_queries"].as_u64().expect("registry_queries");
    assert!(second < reported, "the cache is reused: {second} < {reported}");
    assert_eq!(registry_queries(&app) - before, second, "the simulator agrees");
    for s in items(&again).iter().take(5) {
        assert_eq!(s["available"], true, "{s}");
        assert_eq!(s["verdict"]["cached"], true, "{s}");
        assert_eq!(app.sim.scenario().truth(s["domain"].as_str().expect("domain")), Truth::Available, "{s}");
    }
    assert_eq!(again["credits_cost"], 10, "{again}");
    assert_eq!(again["credits_remaining"], 480, "{again}");
    assert_eq!(app.finish(Some(&key)).await, 2, "one charge per request");
}

/// The key needs the most the request may cost; bad `verify` values are 400s; a request is
/// never charged for more names than were confirmed.
#[tokio::test]
async fn verify_bounds_and_credits() {
    let (app, _) = spawn(6).await;
    let key = app.key(KeyOpts { plan: Plan::Free, ..KeyOpts::default() }).await;
    for bad in ["verify=0", "verify=11", "verify=ten", "verify=-1", "limit=5&verify=6"] {
        let q = if bad.starts_with("limit") { bad.to_owned() } else { format!("limit=10&{bad}") };
        let (status, _, body) = app.get(&path(&key, &q)).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body["error"].as_str().is_some_and(|e| e.contains("verify")), "{body}");
    }
    // 8 credits left: verify=5 may cost 10 → 429 with the spec's text, nothing charged.
    app.spend(&key, 492).await;
    let (status, _, body) = app.get(&path(&key, "limit=5&verify=5")).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"], "Monthly credit limit reached");
    // verify=3 may cost 8: allowed, charged 5 + the confirmed names.
    let (status, _, body) = app.get(&path(&key, "limit=5&verify=3")).await;
    assert_eq!(status, 200, "{body}");
    let confirmed = body["verification"]["confirmed"].as_i64().expect("confirmed");
    assert_eq!(confirmed, 3, "{body}");
    assert_eq!(body["credits_cost"], 5 + VERIFY_PRICE * confirmed);
    assert_eq!(body["credits_remaining"], 8 - 5 - VERIFY_PRICE * confirmed);
    // The OpenAPI document describes the parameter and the new members.
    let (status, _, doc) = app.get("/v1/openapi.json").await;
    assert_eq!(status, 200);
    let params = doc["paths"]["/v1/domains/suggest"]["get"]["parameters"].as_array().expect("parameters");
    let verify = params.iter().find(|p| p["name"] == "verify").expect("verify is documented");
    assert_eq!(verify["schema"]["minimum"], 1, "{verify}");
    assert_eq!(verify["schema"]["maximum"], 20, "{verify}");
    assert!(verify["description"].as_str().is_some_and(|d| d.contains("1 credit")), "the price is said: {verify}");
    let schemas = &doc["components"]["schemas"];
    assert!(schemas["Verification"]["properties"]["registry_queries"].is_object(), "{}", schemas["Verification"]);
    assert!(schemas["SuggestResponse"]["properties"]["verification"].is_object());
    assert!(schemas["SuggestionItem"]["properties"]["verdict"].is_object());
    assert_eq!(app.finish(Some(&key)).await, 492 + 1);
}

/// A registry that never answers: verification ends at its deadline with nothing confirmed and
/// nothing charged beyond the 5 credits, and the ordinary list is still returned.
#[tokio::test]
async fn a_stalling_registry_ends_at_the_deadline_uncharged() {
    let (app, _) = spawn(0).await;
    let key = app.key(KeyOpts::default()).await;
    app.sim.set_knobs(Knobs { faults: Faults { rdap: Fault::Stall, whois: Fault::Stall }, ..Knobs::default() });
    let started = Instant::now();
    let (status, _, body) = app.get(&path(&key, "limit=10&verify=5")).await;
    let took = started.elapsed();
    assert_eq!(status, 200, "{body}");
    let v = &body["verification"];
    let deadline = Duration::from_millis(v["deadline_ms"].as_u64().expect("deadline_ms"));
    assert!(deadline <= api::routes::suggest::VERIFY_DEADLINE_MAX, "{body}");
    assert!(took < deadline + Duration::from_millis(1500), "answered {took:?} after a {deadline:?} deadline");
    assert_eq!(v["timed_out"], true, "{body}");
    assert_eq!(v["confirmed"], 0, "{body}");
    assert!(v["registry_queries"].as_u64().expect("queries") >= 1, "{body}");
    assert_eq!(body["credits_cost"], 5, "{body}");
    assert_eq!(body["credits_remaining"], 495, "{body}");
    assert_eq!(body["total"], 10, "{body}");
    assert!(items(&body).iter().all(|s| s["available"] != true), "{body}");
    app.sim.set_knobs(Knobs::default());
    assert_eq!(app.finish(Some(&key)).await, 1);
}
