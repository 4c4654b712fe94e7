//! Network rules: `/v1/dns` (and every endpoint that looks a name up) on public names only, RDAP
//! redirects, proxies, `/metrics`, streaming bulk deadlines, and suggestions that charge once.

use dsa_tests::harness::app::{KeyOpts, TestApp};
use serde_json::Value;

fn assert_refused(status: u16, body: &Value, asked: &str) {
    assert_eq!(status, 400, "{asked}: {body}");
    assert_eq!(body["success"], false, "{asked}: {body}");
    assert_eq!(body.as_object().map(|o| o.len()), Some(2), "the spec's error shape: {body}");
}

/// Issue 32, item 5. `/v1/dns` resolved internal names (`kubernetes.default.svc.cluster.local`,
/// `metadata.google.internal`, split-horizon zones): only the syntax was checked. Now special-use
/// and internal names are a 400 that says why, before any credit is taken, and the endpoints that
/// look up a registrable domain (check, WHOIS) refuse the same names.
#[tokio::test]
async fn dns_and_lookups_answer_public_names_only() {
    let app = TestApp::spawn().await;
    let key = app.key(KeyOpts::default()).await;
    let (status, _, body) = app.get(&format!("/v1/dns?client_key={key}&domain=example.com&types=A")).await;
    assert_eq!(status, 200, "a public name is answered: {body}");
    let cases = [
        ("kubernetes.default.svc.cluster.local", ".local"),
        ("kubernetes.default.svc", ".svc"),
        ("metadata.google.internal", ".internal"),
        ("localhost", ""),
        ("db.localhost", ".localhost"),
        ("printer.local", ".local"),
        ("x.test", ".test"),
        ("www.example", ".example"),
        ("a.invalid", ".invalid"),
        ("x.alt", ".alt"),
        ("expyuzz4wqqyqhjn.onion", ".onion"),
        ("router.home.arpa", ".home.arpa"),
        ("10.in-addr.arpa", ".arpa"),
        ("1.0.0.127.in-addr.arpa", ".arpa"),
        ("fileserver.corp", ".corp"),
        ("nas.lan", ".lan"),
        ("router.home", ".home"),
        ("wiki.intranet", ".intranet"),
    ];
    for (name, why) in cases {
        let (status, _, body) = app.get(&format!("/v1/dns?client_key={key}&domain={name}&types=A")).await;
        assert_refused(status, &body, name);
        let error = body["error"].as_str().unwrap_or_default();
        assert!(error.contains(why), "{name}: the error names why ({why}): {error}");
    }
    // The registrable-domain endpoints: internal TLDs were already refused; .arpa names were not.
    for name in ["router.home.arpa", "10.in-addr.arpa", "metadata.google.internal", "printer.local"] {
        for path in ["/v1/domains/check", "/v1/whois"] {
            let (status, _, body) = app.get(&format!("{path}?client_key={key}&domain={name}")).await;
            assert_refused(status, &body, &format!("{path} {name}"));
        }
    }
    assert_eq!(app.finish(Some(&key)).await, 1, "only the public lookup was charged");
}
