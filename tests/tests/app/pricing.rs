//! Price data, commission maths and purchase URLs (spec §2.2 `pricing` and `purchase`, §4.1).

use std::path::PathBuf;

use rust_decimal::Decimal;

use api::pricing::{CommissionPercent, PRICES_FORMAT, Price, PriceTable, PricingError, PricingMode, quote};
use api::purchase::{CheckoutUrl, Purchase, PurchaseInputs, PurchaseSource, checkout_url, resolve_purchase};

/// `tests/data` of the repository (`DSA_TEST_DATA`), where the recorded real data lives.
fn test_data() -> PathBuf {
    let dir = PathBuf::from(env!("DSA_TEST_DATA"));
    assert!(dir.is_dir(), "test data not found at {} (DSA_TEST_DATA)", dir.display());
    dir
}

fn porkbun_snapshot() -> String {
    let path = test_data().join("pricing/porkbun-pricing-2025-03-22.json");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read the Porkbun snapshot {}: {e}", path.display()))
}

/// An exact decimal literal.
fn d(text: &str) -> Decimal {
    Decimal::from_str_exact(text).expect("decimal literal")
}

fn price(register: f64, currency: &str) -> Price {
    Price::new(register, register, currency).expect("valid price")
}

fn pct(text: &str) -> Option<CommissionPercent> {
    Some(CommissionPercent::parse(text).expect("valid commission"))
}

fn error_text<T: std::fmt::Debug>(result: Result<T, PricingError>) -> String {
    result.expect_err("expected an error").to_string()
}

// --- commission maths -------------------------------------------------------------------------

#[test]
fn ten_percent_of_9_68_is_10_65() {
    let p = quote(&price(9.68, "USD"), pct("10"));
    assert_eq!(p.currency, "USD");
    assert_eq!(p.base_register, d("9.68"));
    assert_eq!(p.display_register, d("10.65")); // 10.648
    assert_eq!(p.pricing_mode, PricingMode::WithCommission);
    assert_eq!(p.commission_percent, 10.0);
}

#[test]
fn pricing_serializes_with_the_spec_field_names() {
    let json = serde_json::to_value(quote(&price(9.68, "USD"), pct("10"))).expect("serializes");
    assert_eq!(
        json,
        serde_json::json!({
            "currency": "USD",
            "base_register": 9.68,
            "display_register": 10.65,
            "pricing_mode": "with_commission",
            "commission_percent": 10.0
        })
    );
    let json = serde_json::to_string(&quote(&price(9.68, "USD"), None)).expect("serializes");
    assert_eq!(
        json,
        r#"{"currency":"USD","base_register":9.68,"display_register":9.68,"pricing_mode":"base","commission_percent":0.0}"#
    );
}

#[test]
fn no_or_zero_commission_is_base_mode() {
    for commission in [None, pct("0"), pct("0.0"), pct("-0")] {
        let p = quote(&price(11.06, "USD"), commission);
        assert_eq!(p.pricing_mode, PricingMode::Base, "{commission:?}");
        assert_eq!(p.display_register, p.base_register);
        assert_eq!(p.base_register, d("11.06"));
        assert_eq!(p.commission_percent, 0.0);
        assert!(p.commission_percent.is_sign_positive());
    }
}

#[test]
fn halves_round_away_from_zero_without_float_artefacts() {
    // 1.15 × 1.10 = 1.265 exactly; naive f64 arithmetic gives 1.2649999… → 1.26.
    assert_eq!(quote(&price(1.15, "USD"), pct("10")).display_register, d("1.27"));
    // 1.00 × 1.025 = 1.025 → 1.03 (naive: 1.02).
    assert_eq!(quote(&price(1.0, "USD"), pct("2.5")).display_register, d("1.03"));
    // 0.1 + 0.2 is 0.30000000000000004 in binary: still 0.30, and 0.33 with 10 %.
    let p = quote(&price(0.1 + 0.2, "USD"), pct("10"));
    assert_eq!((p.base_register, p.display_register), (d("0.3"), d("0.33")));
    // The base itself is rounded to cents, half away from zero: 1.005 → 1.01 (naive: 1.00).
    assert_eq!(quote(&price(1.005, "USD"), None).base_register, d("1.01"));
}

#[test]
fn zero_decimal_currencies_round_to_whole_units() {
    assert_eq!(quote(&price(1000.0, "JPY"), pct("12.5")).display_register, d("1125.0"));
    assert_eq!(quote(&price(1234.0, "JPY"), pct("12.5")).display_register, d("1388.0")); // 1388.25
    assert_eq!(quote(&price(1236.0, "JPY"), pct("12.5")).display_register, d("1391.0")); // 1390.5
    assert_eq!(quote(&price(980.4, "JPY"), None).base_register, d("980.0"));
    assert_eq!(quote(&price(15_000.0, "KRW"), pct("12.5")).display_register, d("16875.0"));
    let json = serde_json::to_value(quote(&price(1236.0, "jpy"), pct("12.5"))).expect("serializes");
    assert_eq!(json["currency"], "JPY");
    assert_eq!(json["display_register"], 1391.0);
}

#[test]
fn three_decimal_currencies_round_to_thousandths() {
    assert_eq!(quote(&price(3.25, "KWD"), pct("10")).display_register, d("3.575"));
    assert_eq!(quote(&price(1.234, "BHD"), pct("1.5")).display_register, d("1.253")); // 1.25251
    assert_eq!(quote(&price(2.0005, "OMR"), None).base_register, d("2.001"));
    assert_eq!(quote(&price(7.0, "TND"), pct("0.01")).display_register, d("7.001")); // 7.0007
}

#[test]
fn largest_commission_is_eleven_times_the_base() {
    assert_eq!(quote(&price(9.68, "USD"), pct("1000")).display_register, d("106.48"));
}

// --- commission parsing ---------------------------------------------------------------------

#[test]
fn commission_accepts_numbers_from_0_to_1000() {
    for (text, value) in
        [("0", 0.0), ("10", 10.0), ("12.5", 12.5), (" 7.25 ", 7.25), ("1000", 1000.0), ("1e2", 100.0), ("+5", 5.0)]
    {
        let c = CommissionPercent::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert_eq!(c.value(), value, "{text:?}");
    }
    assert!(CommissionPercent::new(1000.0).is_ok());
}

#[test]
fn bad_commissions_are_refused_with_a_400_message() {
    for text in
        ["-1", "-0.01", "1000.01", "1e4", "abc", "10%", "", " ", "NaN", "nan", "inf", "-inf", "infinity", "0x10", "1,5"]
    {
        assert_eq!(
            error_text(CommissionPercent::parse(text)),
            "commission_percent must be a number from 0 to 1000",
            "{text:?}"
        );
    }
    for value in [f64::NAN, f64::INFINITY, -1.0, 1000.5] {
        assert!(CommissionPercent::new(value).is_err(), "{value}");
    }
}

#[test]
fn commission_deserializes_with_the_same_checks() {
    let c: CommissionPercent = serde_json::from_str("12.5").expect("valid");
    assert_eq!(c.value(), 12.5);
    assert!(serde_json::from_str::<CommissionPercent>("-3").is_err());
    assert!(serde_json::from_str::<CommissionPercent>("5000").is_err());
}

// --- CSV ------------------------------------------------------------------------------------

#[test]
fn csv_loads_with_comments_dots_case_bom_and_crlf() {
    let csv = "\u{feff}# sample prices\r\n\r\nSuffix, Register, Renew, Currency\r\ncom,11.06,11.06,USD\r\n\
               .com.af, 25 , 30 ,usd\r\n# trailing comment\r\nJP,3000,3000,JPY\r\n";
    let table = PriceTable::from_csv(csv).expect("valid CSV");
    assert_eq!(table.len(), 3);
    let com_af = table.get("com.af").expect("com.af");
    assert_eq!((com_af.register(), com_af.renew(), com_af.currency()), (d("25"), d("30"), "USD"));
    assert_eq!(table.get(".COM.AF"), Some(com_af));
    assert_eq!(table.get("jp").map(Price::currency), Some("JPY"));
    assert_eq!(table.get("net"), None);
}

#[test]
fn csv_errors_name_the_line() {
    let header = "suffix,register,renew,currency\n";
    let cases = [
        ("com,-1,10,USD\n", "price table, line 2: register price -1 is negative"),
        ("com,1,NaN,USD\n", "price table, line 2: renew price is NaN"),
        ("com,1,inf,USD\n", "price table, line 2: renew price is infinite"),
        ("com,,1,USD\n", "price table, line 2: register price is empty"),
        ("com,ten,1,USD\n", "price table, line 2: register price \"ten\" is not a number"),
        ("com,1,1,US$\n", "price table, line 2: currency \"US$\" is not an ISO 4217 code (three letters, e.g. USD)"),
        ("com,1,1,USD\n# x\n.COM,2,2,USD\n", "price table, line 4: duplicate suffix \"com\" (first at line 2)"),
        (
            "dealer,257.96,2,060.23,USD\n",
            "price table, line 2: expected 4 fields (suffix,register,renew,currency), found 5; quote a field that contains a comma",
        ),
        ("com,\"1,2,3\",1,USD\n", "price table, line 2: register price \"1,2,3\" is not a number"),
        ("com,\",5\",1,USD\n", "price table, line 2: register price \",5\" is not a number"),
        (
            "com.,1,1,USD\n",
            "price table, line 2: suffix \"com.\" is not a domain suffix (labels of letters, digits and inner hyphens, separated by single dots)",
        ),
        ("рф,1,1,RUB\n", "price table, line 2: suffix \"рф\" is not ASCII: write its A-label (xn--…) form"),
    ];
    for (body, expected) in cases {
        assert_eq!(error_text(PriceTable::from_csv(&format!("{header}{body}"))), expected);
    }
    assert_eq!(
        error_text(PriceTable::from_csv("com,1,1,USD\n")),
        "price table, line 1: expected the header `suffix,register,renew,currency`"
    );
    assert_eq!(
        error_text(PriceTable::from_csv("# nothing\n")),
        "price table, CSV: missing the header `suffix,register,renew,currency`"
    );
    assert_eq!(error_text(PriceTable::from_csv(header)), "price table, CSV: contains no prices");
}

#[test]
fn csv_fields_may_be_quoted_and_contain_commas() {
    let csv = "suffix,register,renew,currency\n\"dealer\",257.96,\"2,060.23\",USD\n\
               \"com\",\"11.06\", 11.06 ,\"usd\"\n# a comment with a \"quote, and a comma\nnet,\"1,000\",1000,USD\n";
    let table = PriceTable::from_csv(csv).expect("valid CSV");
    assert_eq!(table.len(), 3);
    let dealer = table.get("dealer").expect("dealer");
    assert_eq!((dealer.register(), dealer.renew()), (d("257.96"), d("2060.23")));
    assert_eq!(table.get("com").map(|p| (p.register(), p.currency())), Some((d("11.06"), "USD")));
    assert_eq!(table.get("net").map(Price::register), Some(d("1000")));
}

// --- JSON -----------------------------------------------------------------------------------

#[test]
fn json_loads_and_round_trips() {
    let json = r#"{"source": "ops", "as_of": "2026-01-02",
        "prices": {"com": {"register": 9.68, "renew": 10.37, "currency": "USD"},
                   ".XN--P1AI": {"register": 300, "renew": 300, "currency": "rub"}}}"#;
    let table = PriceTable::from_json(json).expect("valid JSON");
    assert_eq!(table.len(), 2);
    assert_eq!(table.get("xn--p1ai").map(Price::currency), Some("RUB"));
    assert_eq!(table.provenance().source.as_deref(), Some("ops"));
    assert!(!table.provenance().sample);
    assert_eq!(table.provenance().as_of.map(|d| d.to_string()).as_deref(), Some("2026-01-02"));
    let written = table.to_json().expect("serializes");
    assert!(written.contains(&format!("\"format\": \"{PRICES_FORMAT}\"")));
    assert!(written.contains("\"as_of\": \"2026-01-02\""));
    assert_eq!(PriceTable::from_json(&written).expect("reads back"), table);
}

#[test]
fn json_errors_name_the_suffix() {
    let entry = |suffix: &str, body: &str| format!(r#"{{"prices": {{"{suffix}": {body}}}}}"#);
    assert_eq!(
        error_text(PriceTable::from_json(&entry("com", r#"{"register": -2, "renew": 1, "currency": "USD"}"#))),
        "price table, suffix \"com\": register price -2 is negative"
    );
    assert_eq!(
        error_text(PriceTable::from_json(&entry("io", r#"{"register": 2, "renew": 1, "currency": "dollars"}"#))),
        "price table, suffix \"io\": currency \"dollars\" is not an ISO 4217 code (three letters, e.g. USD)"
    );
    let duplicate = r#"{"prices": {
        "com": {"register": 1, "renew": 1, "currency": "USD"},
        ".com": {"register": 2, "renew": 2, "currency": "USD"}}}"#;
    assert_eq!(
        error_text(PriceTable::from_json(duplicate)),
        "price table, suffix \".com\": duplicate suffix \"com\" (first at suffix \"com\")"
    );
    // A typo in a field name is an error, not a silently missing price.
    let typo = entry("com", r#"{"regsiter": 1, "renew": 1, "currency": "USD"}"#);
    assert!(error_text(PriceTable::from_json(&typo)).contains("unknown field `regsiter`"));
    let wrong_format = r#"{"format": "dsa-prices/9", "prices": {}}"#;
    assert_eq!(
        error_text(PriceTable::from_json(wrong_format)),
        "price table, header: format \"dsa-prices/9\" is not supported (expected \"dsa-prices/1\")"
    );
    assert_eq!(error_text(PriceTable::from_json(r#"{"prices": {}}"#)), "price table, JSON: contains no prices");
    assert!(error_text(PriceTable::from_json("{")).starts_with("price table: malformed JSON"));
    assert!(
        error_text(PriceTable::from_json(&porkbun_snapshot())).contains("dsa prices import --porkbun"),
        "a raw Porkbun file gets a hint"
    );
}

#[test]
fn load_picks_the_reader_by_extension() {
    let dir = std::env::temp_dir().join(format!("dsa-pricing-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let csv = dir.join("prices.CSV");
    std::fs::write(&csv, "suffix,register,renew,currency\nnet,12,13,EUR\n").expect("write");
    let json = dir.join("prices.json");
    std::fs::write(&json, r#"{"prices":{"org":{"register":1,"renew":2,"currency":"USD"}}}"#).expect("write");
    let txt = dir.join("prices.txt");
    std::fs::write(&txt, "").expect("write");

    assert_eq!(PriceTable::load(&csv).expect("csv").get("net").map(Price::currency), Some("EUR"));
    assert!(PriceTable::load(&json).expect("json").get("org").is_some());
    assert!(matches!(PriceTable::load(&txt), Err(PricingError::UnknownFormat { .. })));
    assert!(matches!(PriceTable::load(dir.join("missing.json")), Err(PricingError::Io { .. })));
    std::fs::remove_dir_all(&dir).expect("clean up");
}

// --- Porkbun and the shipped sample ------------------------------------------------------------

#[test]
fn porkbun_snapshot_imports() {
    let import = PriceTable::import_porkbun(&porkbun_snapshot()).expect("real snapshot imports");
    let table = &import.table;
    // 845 entries in the snapshot, 274 of them Handshake names (not DNS suffixes).
    assert_eq!(table.len(), 571);
    assert_eq!(import.skipped.len(), 274);
    assert!(import.skipped.iter().any(|(tld, _)| tld == "xp"));
    assert!(table.get("xp").is_none());
    let com = table.get("com").expect("com");
    assert_eq!((com.register(), com.renew(), com.currency()), (d("11.06"), d("11.06"), "USD"));
    let ws = table.get("ws").expect("ws");
    assert_eq!((ws.register(), ws.renew()), (d("5.94"), d("20.91"))); // first-year promotion
    // "2,060.23": thousands separators are understood.
    assert_eq!(table.get("dealer").map(Price::renew), Some(d("2060.23")));
    assert!(table.get("co.uk").is_some());
    // Porkbun does not sell .af: no price, hence no `pricing` object for it (spec §2.2).
    assert!(table.get("af").is_none() && table.get("com.af").is_none());
    assert!(table.provenance().source.as_deref().is_some_and(|s| s.contains("Porkbun")));
}

#[test]
fn porkbun_errors() {
    assert_eq!(
        error_text(PriceTable::from_porkbun_json(r#"{"status":"ERROR","message":"rate limited"}"#)),
        "price table, Porkbun response: status is \"ERROR\", not \"SUCCESS\": rate limited"
    );
    assert_eq!(
        error_text(PriceTable::from_porkbun_json(
            r#"{"status":"SUCCESS","pricing":{"com":{"registration":"N/A","renewal":"1"}}}"#
        )),
        "price table, Porkbun TLD \"com\": registration \"N/A\" is not an amount"
    );
}

#[test]
fn embedded_sample_loads_and_matches_the_snapshot() {
    let embedded = PriceTable::embedded().expect("the shipped prices.json is valid");
    let com = embedded.get("com").expect("com has a price");
    assert_eq!((com.register(), com.currency()), (d("11.06"), "USD"));
    let provenance = embedded.provenance();
    assert!(provenance.sample, "the shipped table is marked as sample data");
    assert_eq!(provenance.as_of.map(|d| d.to_string()).as_deref(), Some("2025-03-22"));
    assert!(provenance.note.as_deref().is_some_and(|n| n.contains("SAMPLE")));
    // Same prices as a fresh import of the recorded Porkbun response.
    let imported = PriceTable::from_porkbun_json(&porkbun_snapshot()).expect("imports");
    assert!(embedded.iter().eq(imported.iter()));
    // And the file is exactly what `to_json` writes (so `dsa prices import` reproduces it).
    assert_eq!(embedded.to_json().expect("serializes"), api::pricing::EMBEDDED_PRICES_JSON);
}

#[test]
fn table_quote_is_none_without_price_data() {
    let table = PriceTable::embedded().expect("embedded");
    assert!(table.quote("com.af", pct("10")).is_none());
    let p = table.quote(".com", pct("10")).expect("com priced");
    assert_eq!(p.display_register, d("12.17")); // 11.06 × 1.1 = 12.166
}

// --- purchase URLs --------------------------------------------------------------------------

fn url(text: &str) -> CheckoutUrl {
    CheckoutUrl::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

#[test]
fn checkout_url_appends_domain_sld_tld() {
    assert_eq!(
        checkout_url(&url("https://shop.example/cart"), "example.com.af", "example", ".com.af"),
        "https://shop.example/cart?domain=example.com.af&sld=example&tld=.com.af"
    );
    // A TLD given without its dot gets one, as the spec writes TLDs.
    assert_eq!(
        checkout_url(&url("https://shop.example/"), "a.io", "a", "io"),
        "https://shop.example/?domain=a.io&sld=a&tld=.io"
    );
}

#[test]
fn checkout_url_keeps_query_and_fragment() {
    assert_eq!(
        checkout_url(&url("https://shop.example/buy?ref=aff%2042&utm=x+y#summary"), "example.com", "example", ".com"),
        "https://shop.example/buy?ref=aff%2042&utm=x+y&domain=example.com&sld=example&tld=.com#summary"
    );
}

#[test]
fn checkout_url_replaces_existing_purchase_params() {
    assert_eq!(
        checkout_url(&url("https://shop.example/buy?domain=old.net&ref=7&tld=.net"), "new.org", "new", ".org"),
        "https://shop.example/buy?domain=new.org&ref=7&tld=.org&sld=new"
    );
}

#[test]
fn checkout_url_encodes_idn_names() {
    // A-labels pass unchanged (letters, digits, '-' and '.' need no escaping).
    assert_eq!(
        checkout_url(&url("https://shop.example/c"), "xn--bcher-kva.xn--p1ai", "xn--bcher-kva", ".xn--p1ai"),
        "https://shop.example/c?domain=xn--bcher-kva.xn--p1ai&sld=xn--bcher-kva&tld=.xn--p1ai"
    );
    // Anything else is percent-encoded as UTF-8, and '&', '=', '#' cannot inject parameters.
    assert_eq!(
        checkout_url(&url("https://shop.example/c"), "bücher.de", "a&b=c#d", ".de"),
        "https://shop.example/c?domain=b%C3%BCcher.de&sld=a%26b%3Dc%23d&tld=.de"
    );
}

#[test]
fn checkout_urls_must_be_absolute_http_or_https() {
    for ok in [
        "https://shop.example/",
        "http://shop.example:8080/buy?x=1#top",
        "HTTPS://Shop.Example/Buy",
        "https://bücher.example/",
        "https://127.0.0.1/checkout",
    ] {
        url(ok);
    }
    assert_eq!(url("HTTPS://Shop.Example/Buy").as_str(), "https://shop.example/Buy");
    assert_eq!(url("https://bücher.example/").as_str(), "https://xn--bcher-kva.example/");

    for bad in [
        "javascript:alert(1)",
        "JavaScript:alert(document.cookie)",
        "java\nscript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "ftp://shop.example/",
        "/checkout",
        "checkout?x=1",
        "//evil.example/",
        "https:evil.example",
        "https:///evil.example",
        "https://",
        " https://shop.example/",
        "https://shop.example/\n",
        "https://shop.example/a b",
        "https://shop\t.example/",
        "https://evil.example\\@shop.example/",
        "https://paypal.com@evil.example/",
        "https://user:pw@shop.example/",
        "",
    ] {
        let err = CheckoutUrl::parse(bad).expect_err(bad);
        assert!(err.to_string().starts_with("redirect_url must be an absolute http(s) URL"), "{bad:?}: {err}");
    }
    let long = format!("https://shop.example/{}", "a".repeat(2100));
    assert!(CheckoutUrl::parse(&long).is_err());
}

// --- purchase precedence ----------------------------------------------------------------------

struct Urls {
    client: CheckoutUrl,
    platform: CheckoutUrl,
    key: CheckoutUrl,
}

fn urls() -> Urls {
    Urls {
        client: url("https://client.example/buy"),
        platform: url("https://platform.example/checkout"),
        key: url("https://key.example/register"),
    }
}

fn resolve(inputs: &PurchaseInputs<'_>, available: bool) -> Option<Purchase> {
    resolve_purchase(inputs, available, "example.com.af", "example", ".com.af")
}

fn source(inputs: &PurchaseInputs<'_>) -> Option<(PurchaseSource, String)> {
    resolve(inputs, true).map(|p| {
        assert!(p.show_button);
        (p.source, p.url)
    })
}

#[test]
fn redirect_url_wins_over_the_key_url() {
    let u = urls();
    let all = PurchaseInputs {
        redirect_url: Some(&u.client),
        redirect_checkout: false,
        platform_checkout: Some(&u.platform),
        key_purchase_url: Some(&u.key),
        show_purchase_button: true,
    };
    assert_eq!(
        source(&all),
        Some((
            PurchaseSource::ClientUrl,
            "https://client.example/buy?domain=example.com.af&sld=example&tld=.com.af".to_owned()
        ))
    );
}

#[test]
fn redirect_checkout_forces_the_platform_url() {
    let u = urls();
    let inputs = PurchaseInputs {
        redirect_url: Some(&u.client),
        redirect_checkout: true,
        platform_checkout: Some(&u.platform),
        key_purchase_url: Some(&u.key),
        show_purchase_button: true,
    };
    // Forced: over the request's redirect_url and the key's URL; reported as `url` (spec §2.2
    // names only client_url and url).
    assert_eq!(
        source(&inputs),
        Some((
            PurchaseSource::Url,
            "https://platform.example/checkout?domain=example.com.af&sld=example&tld=.com.af".to_owned()
        ))
    );
    // No platform URL configured: no silent fall back to the key's URL (the front answers 400).
    let missing = PurchaseInputs { platform_checkout: None, ..inputs };
    assert_eq!(source(&missing), None);
    // Without redirect_checkout the platform URL is not used.
    let not_forced = PurchaseInputs { redirect_checkout: false, redirect_url: None, ..inputs };
    assert_eq!(source(&not_forced).map(|(_, url)| url.starts_with("https://key.example/")), Some(true));
}

#[test]
fn no_purchase_when_taken_hidden_or_unresolvable() {
    let u = urls();
    let inputs = PurchaseInputs {
        redirect_url: Some(&u.client),
        key_purchase_url: Some(&u.key),
        show_purchase_button: true,
        ..PurchaseInputs::default()
    };
    assert!(resolve(&inputs, true).is_some());
    assert_eq!(resolve(&inputs, false), None, "taken domain");
    let hidden = PurchaseInputs { show_purchase_button: false, ..inputs };
    assert_eq!(resolve(&hidden, true), None, "show_purchase_button off");
    let nothing = PurchaseInputs { redirect_checkout: true, show_purchase_button: true, ..PurchaseInputs::default() };
    assert_eq!(resolve(&nothing, true), None, "no URL resolves");
}

#[test]
fn purchase_serializes_with_the_spec_field_names() {
    let u = urls();
    let inputs =
        PurchaseInputs { key_purchase_url: Some(&u.key), show_purchase_button: true, ..PurchaseInputs::default() };
    let json = serde_json::to_value(resolve(&inputs, true)).expect("serializes");
    assert_eq!(
        json,
        serde_json::json!({
            "show_button": true,
            "url": "https://key.example/register?domain=example.com.af&sld=example&tld=.com.af",
            "source": "url"
        })
    );
}

// --- properties (issue 9) ---------------------------------------------------------------------

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// `n / d` rounded half away from zero, in exact integers: the oracle for the display price.
    fn div_half_away(n: i128, d: i128) -> i128 {
        let (q, r) = (n / d, n % d);
        if 2 * r.abs() >= d { q + n.signum() } else { q }
    }

    /// A decimal `units / 10^exp` written out, parsed as `f64` (how a price table or a query holds it).
    fn decimal(units: i128, exp: u32) -> String {
        if exp == 0 {
            return units.to_string();
        }
        let scale = 10_i128.pow(exp);
        format!("{}.{:0width$}", units / scale, units % scale, width = exp as usize)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// display price = base × (1 + c/100), rounded half away from zero to the currency's minor
        /// unit (spec §2.2; `docs/api.md`, "Pricing"), computed here in exact integers.
        #[test]
        fn display_price_is_base_times_one_plus_c_rounded_half_away_from_zero(
            (currency, exp) in prop::sample::select(vec![("USD", 2_u32), ("JPY", 0), ("BHD", 3), ("EUR", 2)]),
            base_units in 1_i128..100_000_000,
            scale in 0_u32..=3,
            mantissa_frac in 0.0_f64..=1.0,
        ) {
            let c_scale = 10_i128.pow(scale);
            // c = m / 10^scale with 0 ≤ c ≤ 1000.
            let mantissa = (mantissa_frac * (1000 * c_scale) as f64).floor() as i128;
            let c_text = decimal(mantissa, scale);
            let commission = CommissionPercent::parse(&c_text).expect("0..=1000 parses");
            let base: f64 = decimal(base_units, exp).parse().expect("decimal");
            let quoted = quote(&Price::new(base, base, currency).expect("price"), Some(commission));
            let expected_units = div_half_away(base_units * (100 * c_scale + mantissa), 100 * c_scale);
            let expected = d(&decimal(expected_units, exp));
            prop_assert_eq!(quoted.base_register, d(&decimal(base_units, exp)));
            prop_assert_eq!(quoted.display_register, expected, "{} {} + {}%", base, currency, c_text);
            // On the wire: the JSON number of the decimal, as an `f64` would print it.
            let wire = serde_json::to_value(&quoted).expect("serializes");
            let expected_f64: f64 = decimal(expected_units, exp).parse().expect("decimal");
            prop_assert_eq!(&wire["display_register"], &serde_json::json!(expected_f64));
            let mode = if mantissa == 0 { PricingMode::Base } else { PricingMode::WithCommission };
            prop_assert_eq!(quoted.pricing_mode, mode);
        }

        /// Appending `domain`, `sld` and `tld` to any accepted redirect URL gives a valid URL on the
        /// same origin, carrying each of the three exactly once with the right value (spec §4.1).
        #[test]
        fn appending_the_name_to_an_accepted_redirect_url_keeps_it_valid_and_on_its_origin(
            scheme in prop::sample::select(vec!["http", "https", "HTTPS"]),
            host in "[a-zA-Z0-9-]{1,12}(\\.[a-z0-9-]{1,8}){0,2}\\.(com|example|shop)",
            port in prop::option::of(1_u16..),
            path in "(/[^?#\\s]{0,12}){0,3}",
            query in prop::option::of("[^#\\s]{0,40}"),
            fragment in prop::option::of("[^\\s]{0,12}"),
            sld in "[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?",
            suffix in prop::sample::select(vec!["com", "com.af", "co.uk", "xn--p1ai", "de"]),
        ) {
            let mut text = format!("{scheme}://{host}");
            if let Some(port) = port {
                text.push_str(&format!(":{port}"));
            }
            text.push_str(&path);
            if let Some(q) = &query {
                text.push('?');
                text.push_str(q);
            }
            if let Some(f) = &fragment {
                text.push('#');
                text.push_str(f);
            }
            let Ok(base) = CheckoutUrl::parse(&text) else { return Ok(()) };
            let domain = format!("{sld}.{suffix}");
            let tld = format!(".{suffix}");
            let out = checkout_url(&base, &domain, &sld, &tld);
            let url = url::Url::parse(&out).map_err(|e| TestCaseError::fail(format!("{out}: {e}")))?;
            prop_assert_eq!(url.origin(), base.as_url().origin(), "{} → {}", text, out);
            for (name, value) in [("domain", domain.as_str()), ("sld", sld.as_str()), ("tld", tld.as_str())] {
                let values: Vec<String> =
                    url.query_pairs().filter(|(k, _)| k == name).map(|(_, v)| v.into_owned()).collect();
                prop_assert_eq!(values, vec![value.to_owned()], "{} in {}", name, out);
            }
        }

        /// Whatever text is offered as a redirect URL, it is refused with a reason or accepted as an
        /// absolute http(s) URL; appending the name never panics and stays on its origin.
        #[test]
        fn any_redirect_url_text_is_refused_or_stays_on_its_origin(text in "\\PC{0,120}") {
            if let Ok(base) = CheckoutUrl::parse(&text) {
                prop_assert!(matches!(base.as_url().scheme(), "http" | "https"));
                let out = checkout_url(&base, "example.com", "example", ".com");
                let url = url::Url::parse(&out).map_err(|e| TestCaseError::fail(format!("{out}: {e}")))?;
                prop_assert_eq!(url.origin(), base.as_url().origin());
            }
        }
    }
}
