//! `GET /v1/domains/suggest` end to end (spec §2.6, §4.5, §7, §8): a real front in standalone
//! mode over HTTP, with the registry simulator as recursive resolver for the `check=1` pre-check.

use std::collections::HashSet;

use api::keys::Plan;
use dsa_tests::harness::app::{KeyOpts, TestApp};
use serde_json::Value;

fn assert_error(status: u16, body: &Value, expected_status: u16) {
    assert_eq!(status, expected_status, "{body}");
    assert_eq!(body["success"], false, "{body}");
    assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()), "{body}");
    assert_eq!(body.as_object().map(|o| o.len()), Some(2), "error shape is exactly success+error: {body}");
}

fn domains(body: &Value) -> Vec<String> {
    body["suggestions"]
        .as_array()
        .expect("suggestions")
        .iter()
        .map(|s| s["domain"].as_str().expect("domain").to_owned())
        .collect()
}

#[tokio::test]
async fn run_together_keyword_is_segmented_and_spread_across_variants() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let (status, _, body) = app.get(&format!("/v1/domains/suggest?client_key={key}&keyword=bestpizzaplace")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true);
    assert_eq!(body["keyword"], "bestpizzaplace");
    assert_eq!(body["base"], "bestpizzaplace");
    assert_eq!(body["words"], serde_json::json!(["best", "pizza", "place"]));
    assert_eq!(body["total"], 20);
    assert_eq!(body["credits_cost"], 5);
    assert_eq!(body["credits_remaining"], 495);
    let list = domains(&body);
    assert_eq!(list.len(), 20);
    assert_eq!(list[0], "bestpizzaplace.com", "exact first");
    assert_eq!(list.iter().collect::<HashSet<_>>().len(), 20, "no duplicates: {list:?}");
    // The .af zones of the default list, and no zone the request did not ask for (issue 30).
    for form in ["bestpizzaplace.af", "bestpizzaplace.com.af"] {
        assert!(list.iter().any(|d| d == form), "{form} missing: {list:?}");
    }
    assert!(!list.iter().any(|d| d.ends_with(".org.af") || d.ends_with(".net.af")), "{list:?}");
    assert_eq!(
        body["tlds_used"],
        serde_json::json!([".com", ".net", ".org", ".io", ".co", ".ai", ".dev", ".app", ".af", ".com.af"]),
        "every requested TLD used, nothing else"
    );
    assert!(list.iter().any(|d| d.starts_with("best-pizza-place.")), "{list:?}");
    assert!(list.iter().any(|d| d.starts_with("pizzaplace.") || d.starts_with("bestpizza.")), "{list:?}");
    let variants: HashSet<&str> =
        body["suggestions"].as_array().expect("items").iter().filter_map(|s| s["variant"].as_str()).collect();
    assert_eq!(variants, HashSet::from(["exact", "prefix", "suffix", "split", "af_cctld"]), "{body}");
    for s in body["suggestions"].as_array().expect("items") {
        let (domain, sld, tld) =
            (s["domain"].as_str().expect("d"), s["sld"].as_str().expect("s"), s["tld"].as_str().expect("t"));
        assert_eq!(domain, format!("{sld}{tld}"), "{s}");
        assert!(tld.starts_with('.'));
        assert!(s.get("available").is_none(), "no availability without check=1: {s}");
    }
    let used: Vec<&str> = body["tlds_used"].as_array().expect("tlds_used").iter().filter_map(Value::as_str).collect();
    assert!(used.contains(&".com") && used.contains(&".af") && !used.contains(&".org.af"), "{used:?}");
    assert!(used.iter().all(|t| t.starts_with('.')));
    assert!(body["generated_at"].as_str().is_some_and(|t| t.ends_with('Z')));
    // Same request, same list (deterministic ranking).
    let (_, _, again) = app.get(&format!("/v1/domains/suggest?client_key={key}&keyword=bestpizzaplace")).await;
    assert_eq!(domains(&again), list);
    assert_eq!(again["credits_remaining"], 490);
    assert_eq!(app.finish(Some(&key)).await, 2, "one ledger entry per request");
}

#[tokio::test]
async fn single_words_digits_idn_and_bounds() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let get = |q: String| {
        let path = format!("/v1/domains/suggest?client_key={key}&{q}");
        let app = &app;
        async move { app.get(&path).await }
    };
    // A single word: exact, prefix and suffix forms; limit and tlds honoured.
    let (status, _, body) = get("keyword=Pizza&tlds=.com,.io&limit=5".into()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["base"], "pizza");
    assert_eq!(body["total"], 5);
    let list = domains(&body);
    assert_eq!(list[0], "pizza.com");
    // Only the requested TLDs: no .af form unless asked for (issue 30).
    assert!(list.iter().all(|d| d.ends_with(".com") || d.ends_with(".io")), "{list:?}");
    assert_eq!(body["tlds_used"], serde_json::json!([".com", ".io"]));
    // Digits and spaces.
    let (status, _, body) = get("keyword=24%207%20pizza".into()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["base"], "247pizza");
    assert!(domains(&body).iter().any(|d| d == "24-7-pizza.com" || d.starts_with("24-7-pizza.")), "{body}");
    // IDN: the A-label form, no English affixes.
    let (status, _, body) = get("keyword=B%C3%BCcher&tlds=.com,.de&limit=5".into()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["base"], "bücher");
    let list = domains(&body);
    assert_eq!(list[0], "xn--bcher-kva.com");
    assert!(list.contains(&"xn--bcher-kva.de".to_owned()), "{list:?}");
    assert_eq!(body["suggestions"][0]["unicode"], "bücher.com");
    // Bounds.
    for (q, why) in [
        ("keyword=a", "keyword too short"),
        (&format!("keyword={}", "a".repeat(64)), "keyword too long"),
        ("keyword=pizza.com", "a dot"),
        ("keyword=piz%3Cza", "markup"),
        ("keyword=pizza&limit=4", "limit below 5"),
        ("keyword=pizza&limit=21", "limit above 20"),
        ("keyword=pizza&limit=ten", "limit not an integer"),
        ("keyword=pizza&tlds=.nosuchtld", "unknown TLD"),
        ("keyword=pizza&tlds=com", "no leading dot"),
        ("keyword=pizza&tlds=.gov.af", "restricted zone"),
        ("keyword=pizza&check=2", "bad flag"),
        ("tlds=.com", "no keyword"),
    ] {
        let (status, _, body) = get(q.to_owned()).await;
        assert_error(status, &body, 400);
        assert!(!why.is_empty());
    }
    let (status, _, body) = get("keyword=pizza&tlds=.nosuchtld".into()).await;
    assert_error(status, &body, 400);
    assert!(body["error"].as_str().is_some_and(|e| e.contains("nosuchtld")), "names the TLD: {body}");
    // Only the three successful requests were charged.
    let (_, _, body) = get("keyword=pizza&limit=5".into()).await;
    assert_eq!(body["credits_remaining"], 480, "{body}");
    assert_eq!(app.finish(Some(&key)).await, 4);
}

#[tokio::test]
async fn precheck_marks_delegated_names_taken_and_others_only_likely() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let (status, _, body) =
        app.get(&format!("/v1/domains/suggest?client_key={key}&keyword=example&tlds=.com&limit=5&check=1")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["credits_cost"], 10, "{body}");
    let items = body["suggestions"].as_array().expect("items");
    let example = items.iter().find(|s| s["domain"] == "example.com").expect("example.com");
    assert_eq!(example["available"], false, "delegated in DNS means registered: {example}");
    assert_eq!(example["checked_by"], "dns");
    for s in items {
        assert!(s.get("checked_by").is_some(), "{s}");
        if s["available"] == true {
            panic!("never available on DNS alone: {s}");
        }
        if s["likely_available"] == true {
            assert!(s["available"].is_null(), "{s}");
        }
    }
    assert!(items.iter().any(|s| s["likely_available"] == true), "some names are not delegated: {body}");
    assert_eq!(body["credits_remaining"], 490);
    // One ledger entry of 10: the suggestions and their pre-check are committed together, so a
    // refused commit never leaves the first 5 charged (issue 32).
    assert_eq!(app.finish(Some(&key)).await, 1, "the suggestions and the pre-check, one charge");
}

#[tokio::test]
async fn suggestions_need_a_key_and_credits() {
    let app = TestApp::spawn().await;
    let (status, _, body) = app.get("/v1/domains/suggest?keyword=pizza").await;
    assert_error(status, &body, 400);
    let key = app.key(KeyOpts { plan: Plan::Free, ..KeyOpts::default() }).await;
    app.spend(&key, 497).await;
    let (status, _, body) = app.get(&format!("/v1/domains/suggest?client_key={key}&keyword=pizza")).await;
    assert_error(status, &body, 429);
    assert_eq!(body["error"], "Monthly credit limit reached");
    assert_eq!(app.finish(Some(&key)).await, 497, "nothing charged");
}
