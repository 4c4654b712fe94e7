//! `GET /v1/dns` and `GET /v1/whois` end to end (spec §2.3, §2.4, §4.2, §4.3, §7, §8): a real
//! front in standalone mode over HTTP, the registry simulator as recursive resolver, RDAP and
//! WHOIS servers and simulated registrar.

use dsa_tests::harness::app::{KeyOpts, TestApp};
use dsa_tests::sim::{Fault, Faults, Knobs};
use serde_json::Value;

fn assert_error(status: u16, body: &Value, expected_status: u16) {
    assert_eq!(status, expected_status, "{body}");
    assert_eq!(body["success"], false, "{body}");
    assert!(body["error"].as_str().is_some_and(|e| !e.is_empty()), "{body}");
    assert_eq!(body.as_object().map(|o| o.len()), Some(2), "error shape is exactly success+error: {body}");
}

fn is_utc_z(v: &Value) -> bool {
    v.as_str().is_some_and(|s| {
        s.ends_with('Z') && time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).is_ok()
    })
}

#[tokio::test]
async fn dns_all_nine_types_with_presentation_fields() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let (status, _, body) =
        app.get(&format!("/v1/dns?client_key={key}&domain=Example.COM&types=a,aaaa,MX,ns,txt,soa,caa,cname,srv")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true);
    assert_eq!(body["domain"], "example.com");
    assert_eq!(
        body["types_queried"],
        serde_json::json!(["A", "AAAA", "MX", "NS", "TXT", "SOA", "CAA", "CNAME", "SRV"])
    );
    let r = &body["records"];
    assert_eq!(r.as_object().map(|o| o.len()), Some(9), "one key per queried type: {r}");
    assert_eq!(r["A"][0], serde_json::json!({"type": "A", "ttl": 300, "value": "192.0.2.10"}));
    assert_eq!(r["AAAA"][0]["value"], "2001:db8::10");
    let mx: Vec<(i64, String)> = r["MX"]
        .as_array()
        .expect("MX")
        .iter()
        .map(|m| (m["priority"].as_i64().expect("priority"), m["target"].as_str().expect("target").to_owned()))
        .collect();
    assert!(mx.contains(&(10, "mail.example.com".into())) && mx.contains(&(20, "mail2.example.com".into())), "{mx:?}");
    assert_eq!(r["MX"][0]["ttl"], 3600);
    let ns: Vec<&str> = r["NS"].as_array().expect("NS").iter().filter_map(|n| n["target"].as_str()).collect();
    assert!(ns.contains(&"ns1.example.com") && ns.contains(&"ns2.example.com"), "{ns:?}");
    let txt: Vec<&Value> = r["TXT"].as_array().expect("TXT").iter().collect();
    assert!(txt.iter().any(|t| t["value"] == "v=spf1 -all"), "{txt:?}");
    let split = txt.iter().find(|t| t["parts"].as_array().is_some_and(|p| p.len() == 2)).expect("two-part TXT");
    assert_eq!(split["value"], "part one part two");
    let soa = &r["SOA"][0];
    assert_eq!(soa["mname"], "ns1.example.com");
    assert_eq!(soa["rname"], "hostmaster.example.com");
    // The zone file says 2026112301; signing the zone (RRSIG/NSEC) bumps the serial once.
    assert_eq!(soa["serial"], 2026112302);
    assert_eq!((soa["refresh"].as_i64(), soa["retry"].as_i64()), (Some(7200), Some(3600)));
    assert_eq!((soa["expire"].as_i64(), soa["minimum"].as_i64()), (Some(1209600), Some(300)));
    assert_eq!(r["CAA"][0]["flags"], 0);
    assert_eq!(r["CAA"][0]["tag"], "issue");
    assert_eq!(r["CAA"][0]["value"], "letsencrypt.org");
    assert_eq!(r["CNAME"], serde_json::json!([]), "the apex has no CNAME");
    assert_eq!(r["SRV"], serde_json::json!([]), "SRV lives under _sip._tcp");
    assert_eq!(body["credits_cost"], 1);
    assert_eq!(body["credits_remaining"], 499);
    assert!(is_utc_z(&body["checked_at"]), "{}", body["checked_at"]);
    assert_eq!(body["lookup"]["rcode"], "NOERROR");
    assert_eq!(app.finish(Some(&key)).await, 1);
}

#[tokio::test]
async fn dns_default_types_subdomains_underscores_and_cname_chain() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let (status, _, body) = app.get(&format!("/v1/dns?client_key={key}&domain=google.com")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["types_queried"], serde_json::json!(["A", "MX", "NS", "TXT"]));

    let (status, _, body) = app.get(&format!("/v1/dns?client_key={key}&domain=_sip._tcp.google.com&types=SRV")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["records"]["SRV"][0],
        serde_json::json!({"type": "SRV", "ttl": 300, "priority": 10, "weight": 60, "port": 5060, "target": "sip.google.com"})
    );

    let (status, _, body) = app.get(&format!("/v1/dns?client_key={key}&domain=www.google.com&types=A,A,a")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["types_queried"], serde_json::json!(["A"]), "duplicates dropped");
    assert_eq!(body["records"]["A"][0]["value"], "192.0.2.80", "the chain's final address: {body}");
    assert_eq!(
        body["lookup"]["cname_chain"],
        serde_json::json!(["www.google.com -> alias.google.com", "alias.google.com -> web.google.com"])
    );
    assert_eq!(app.finish(Some(&key)).await, 3);
}

#[tokio::test]
async fn dns_nxdomain_is_charged_servfail_is_502_and_free() {
    let app = TestApp::spawn_with(|s| {
        s.engine.records.timeout_secs = 0.5;
        s.engine.records.attempts = 1;
    })
    .await;
    let key = app.key(KeyOpts::default()).await;
    let (status, _, body) = app.get(&format!("/v1/dns?client_key={key}&domain=nothing-here.google.com")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["lookup"]["rcode"], "NXDOMAIN");
    for t in ["A", "MX", "NS", "TXT"] {
        assert_eq!(body["records"][t], serde_json::json!([]), "{t}");
    }
    assert_eq!(body["credits_cost"], 1);

    let (status, _, body) = app.get(&format!("/v1/dns?client_key={key}&domain=servfail.google.com&types=A,MX")).await;
    assert_error(status, &body, 502);

    // A slow type among fast ones: the answer names the failed type and keeps the others.
    let (status, _, body) = app.get(&format!("/v1/dns?client_key={key}&domain=slow.google.com&types=A,TXT")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["records"]["A"][0]["value"], "192.0.2.90");
    assert_eq!(body["records"]["TXT"], serde_json::json!([]));
    assert!(body["lookup"]["failed"]["TXT"].is_string(), "{body}");
    assert_eq!(body["credits_remaining"], 498, "NXDOMAIN and the partial answer charged, SERVFAIL not");
    assert_eq!(app.finish(Some(&key)).await, 2);
}

#[tokio::test]
async fn dns_types_run_in_parallel() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let mut latency = Knobs::default().latency_ms;
    latency.dns = 300;
    app.sim.set_knobs(Knobs { latency_ms: latency, ..Knobs::default() });
    let started = std::time::Instant::now();
    let (status, _, body) = app.get(&format!("/v1/dns?client_key={key}&domain=wikipedia.com&types=A,AAAA,MX,NS")).await;
    let took = started.elapsed();
    assert_eq!(status, 200, "{body}");
    assert!(took < std::time::Duration::from_millis(900), "four types at 300 ms each took {took:?}: not parallel");
    app.finish(Some(&key)).await;
}

#[tokio::test]
async fn dns_bad_input_is_400_and_free() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    for (query, needle) in [
        ("domain=example.com&types=A,PTR", "PTR"),
        ("domain=1.2.3.4", "IP address"),
        ("domain=exa%20mple.com", "Invalid domain"),
        ("domain=com", "Invalid domain"),
        (&format!("domain={}.com", "a".repeat(64)) as &str, "63"),
        ("types=A", "domain"),
    ] {
        let (status, _, body) = app.get(&format!("/v1/dns?client_key={key}&{query}")).await;
        assert_error(status, &body, 400);
        assert!(body["error"].as_str().is_some_and(|e| e.contains(needle)), "{query}: {body}");
    }
    let (status, _, body) = app.get("/v1/dns?domain=example.com").await;
    assert_error(status, &body, 400);
    let (status, _, body) = app.get("/v1/dns?client_key=nope&domain=example.com").await;
    assert_error(status, &body, 403);
    assert_eq!(app.finish(Some(&key)).await, 0);
}

#[tokio::test]
async fn whois_thin_registry_completed_from_the_registrar() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let (status, _, body) = app.get(&format!("/v1/whois?client_key={key}&domain=google.com")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["success"], true);
    assert_eq!(body["domain"], "google.com");
    assert_eq!(body["credits_cost"], 2);
    assert_eq!(body["credits_remaining"], 498);
    assert!(is_utc_z(&body["checked_at"]));
    let w = &body["whois"];
    assert_eq!(w["domain"], "google.com");
    assert_eq!(w["source"], "dsa_domain_whois");
    assert_eq!(w["registrar"], "MarkMonitor Inc.", "the registry's registrar entity: {w}");
    let status_set: Vec<&str> = w["status"].as_array().expect("status").iter().filter_map(Value::as_str).collect();
    assert!(status_set.contains(&"clientTransferProhibited"), "EPP spelling: {status_set:?}");
    assert!(status_set.iter().all(|s| !s.contains(' ')), "no RDAP spellings left: {status_set:?}");
    assert_eq!(w["nameservers"].as_array().map(Vec::len), Some(4), "{w}");
    for field in ["created_at", "updated_at", "expires_at"] {
        assert!(is_utc_z(&w[field]), "{field}: {}", w[field]);
    }
    assert_eq!(w["created_at"], "1997-09-15T04:00:00Z");
    assert_eq!(w["dnssec"], true, "the recorded answer says delegationSigned");
    // The registrar filled in what the thin registry lacks.
    assert_eq!(w["registrant"], serde_json::json!({"org": "Dsa Sim Holdings Ltd", "country": "GB"}));
    let l = &body["lookup"];
    assert_eq!(l["registered"], true);
    assert_eq!(l["protocol"], "rdap");
    assert_eq!(l["authority"], "registrar");
    assert!(l["referral"].as_str().is_some_and(|r| r.contains("registrar.dsa-sim.test")), "{l}");
    assert!(l["registry_status"].as_array().is_some_and(|s| s.iter().any(|s| s == "client transfer prohibited")));
    assert_eq!(app.finish(Some(&key)).await, 1);
}

#[tokio::test]
async fn whois_redacted_registrant_is_null_and_listed() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let (status, _, body) = app.get(&format!("/v1/whois?client_key={key}&domain=private-shop.com")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["whois"]["registrant"], serde_json::json!({"org": null, "country": null}));
    let redacted: Vec<&str> =
        body["lookup"]["redacted"].as_array().expect("redacted").iter().filter_map(Value::as_str).collect();
    assert!(redacted.contains(&"registrant.org") && redacted.contains(&"registrant.country"), "{redacted:?}");
    app.finish(Some(&key)).await;
}

#[tokio::test]
async fn whois_hostile_registrar_link_is_not_followed() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let before = app.sim.stats();
    let (status, _, body) = app.get(&format!("/v1/whois?client_key={key}&domain=hostile-link.com")).await;
    assert_eq!(status, 200, "{body}");
    let l = &body["lookup"];
    assert_eq!(l["authority"], "registry", "{l}");
    assert_eq!(l["referral"], Value::Null);
    assert!(l["referral_skipped"].as_str().is_some_and(|s| s.contains("not a public unicast")), "{l}");
    assert_eq!(body["whois"]["registrant"], serde_json::json!({"org": null, "country": null}));
    let after = app.sim.stats();
    assert_eq!(after.rdap.queries - before.rdap.queries, 1, "only the registry was asked");
    app.finish(Some(&key)).await;
}

#[tokio::test]
async fn whois_from_port_43_when_there_is_no_rdap() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let (status, _, body) = app.get(&format!("/v1/whois?client_key={key}&domain=heise.de")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["lookup"]["protocol"], "whois", "{body}");
    assert_eq!(body["lookup"]["server"], "whois.denic.de");
    assert_eq!(body["whois"]["source"], "dsa_domain_whois");
    app.finish(Some(&key)).await;
}

#[tokio::test]
async fn whois_not_registered_is_200_with_null_and_charged() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let (status, _, body) = app.get(&format!("/v1/whois?client_key={key}&domain=cheap-domains-for-sale.com")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["whois"], Value::Null);
    assert_eq!(body["lookup"]["registered"], false);
    assert_eq!(body["credits_cost"], 2);
    assert_eq!(app.finish(Some(&key)).await, 1);
}

#[tokio::test]
async fn whois_upstream_trouble_is_502_and_free() {
    let app = TestApp::spawn_with(|s| s.engine.records.whois_deadline_secs = 2.0).await;
    let key = app.key(KeyOpts::default()).await;
    app.sim.set_knobs(Knobs { faults: Faults { rdap: Fault::Reset, whois: Fault::Reset }, ..Knobs::default() });
    let (status, _, body) = app.get(&format!("/v1/whois?client_key={key}&domain=wikipedia.com")).await;
    assert_error(status, &body, 502);
    let (status, _, body) = app.get(&format!("/v1/whois?client_key={key}&domain=nope.invalidtld")).await;
    assert_error(status, &body, 400);
    assert_eq!(app.finish(Some(&key)).await, 0, "nothing charged");
}

#[tokio::test]
async fn whois_thin_port_43_answer_follows_the_registrar_referral_once() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    // RDAP fails, so .com is read from the thin port-43 answer, which refers to the registrar.
    app.sim.set_knobs(Knobs { faults: Faults { rdap: Fault::Reset, ..Faults::default() }, ..Knobs::default() });
    let before = app.sim.stats();
    let (status, _, body) = app.get(&format!("/v1/whois?client_key={key}&domain=wikipedia.com")).await;
    assert_eq!(status, 200, "{body}");
    let l = &body["lookup"];
    assert_eq!(l["protocol"], "whois", "{l}");
    assert_eq!(l["server"], "whois.verisign-grs.com");
    assert_eq!(l["authority"], "registrar", "{l}");
    assert_eq!(l["referral"], "whois://whois.registrar.dsa-sim.test");
    let w = &body["whois"];
    assert_eq!(w["registrant"], serde_json::json!({"org": "Dsa Sim Holdings Ltd", "country": "GB"}));
    assert!(w["status"].as_array().is_some_and(|s| s.iter().any(|s| s == "clientTransferProhibited")), "{w}");
    assert!(is_utc_z(&w["created_at"]) && is_utc_z(&w["expires_at"]), "{w}");
    let after = app.sim.stats();
    assert_eq!(after.whois.queries - before.whois.queries, 2, "the registry, then the registrar once");

    let (status, _, body) = app.get(&format!("/v1/whois?client_key={key}&domain=private-shop.com")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["whois"]["registrant"], serde_json::json!({"org": null, "country": null}));
    let redacted = body["lookup"]["redacted"].as_array().expect("redacted").clone();
    assert!(redacted.contains(&Value::from("registrant.org")) && redacted.contains(&Value::from("registrant.country")));
    app.finish(Some(&key)).await;
}

#[tokio::test]
async fn dns_dnssec_validation_proves_signed_zones_and_refuses_bogus_ones() {
    // Validation off (the default): no proof reported.
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let (status, _, body) = app.get(&format!("/v1/dns?client_key={key}&domain=example.com&types=A,MX")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["lookup"]["dnssec"], Value::Null, "{body}");
    assert_eq!(app.finish(Some(&key)).await, 1);

    // Validation on, the simulator's key as trust anchor: every record zone is signed, so the
    // answers are proven secure, CNAME chain and NXDOMAIN included.
    let app = TestApp::spawn_with(|s| s.engine.records.dnssec_validation = true).await;
    let key = app.key(KeyOpts::default()).await;
    let (status, _, body) = app.get(&format!("/v1/dns?client_key={key}&domain=example.com&types=A,MX,TXT")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["lookup"]["dnssec"], "secure", "{body}");
    assert_eq!(body["records"]["A"][0]["value"], "192.0.2.10", "{body}");
    assert_eq!(body["records"]["MX"].as_array().map(Vec::len), Some(2), "{body}");
    assert_eq!(body["lookup"]["failed"], serde_json::json!({}), "{body}");
    let (status, _, body) = app.get(&format!("/v1/dns?client_key={key}&domain=www.example.com&types=A")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["records"]["A"][0]["value"], "192.0.2.80", "{body}");
    assert_eq!(body["lookup"]["dnssec"], "secure", "{body}");
    assert_eq!(app.finish(Some(&key)).await, 2);

    // Validation on with only the IANA root keys: the simulator's zones chain to nothing the
    // resolver trusts, their signatures prove nothing, and no record is returned as if it had been
    // validated: every type is bogus, so the answer is a 502, not charged.
    let app = TestApp::spawn_with(|s| {
        s.engine.records.dnssec_validation = true;
        s.engine.records.trust_anchor = None;
        s.engine.records.timeout_secs = 0.5;
        s.engine.records.attempts = 1;
    })
    .await;
    let key = app.key(KeyOpts::default()).await;
    let (status, _, body) = app.get(&format!("/v1/dns?client_key={key}&domain=example.com&types=A,MX")).await;
    assert_error(status, &body, 502);
    assert_eq!(app.finish(Some(&key)).await, 0, "a bogus answer is not charged");
}
