//! The shipped TLD catalogue: it loads, covers exactly the IANA root zone list, routes the zones
//! the spec names (§1: `.af` and its second-level forms, 724+ TLDs), is what the generator
//! produces from `tests/data` today, and agrees with an independent WHOIS server table.
//!
//! The inputs are the repository's `tests/data` (`DSA_TEST_DATA`, set in `.cargo/config.toml`).
//! (These tests live with the generator, not in `common`, because they compare the shipped file
//! with a fresh generation.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use catalogue_build::{self as build, Summary};
use common::catalogue::{Catalogue, LookupMethod, RegistrationPolicy, TldEntry};

fn test_data() -> PathBuf {
    let dir = PathBuf::from(env!("DSA_TEST_DATA"));
    assert!(dir.join(build::paths::IANA_TLDS).is_file(), "test data not found at {} (DSA_TEST_DATA)", dir.display());
    dir
}

fn read_data(rel: &str) -> String {
    let path = test_data().join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn catalogue() -> Catalogue {
    Catalogue::embedded().expect("the shipped catalogue loads")
}

fn entry<'a>(cat: &'a Catalogue, suffix: &str) -> &'a TldEntry {
    cat.get(suffix).unwrap_or_else(|| panic!("no catalogue entry for {suffix}"))
}

fn is_restricted(e: &TldEntry) -> bool {
    matches!(e.policy, RegistrationPolicy::Restricted { .. })
}

fn iana_tlds() -> BTreeSet<String> {
    read_data(build::paths::IANA_TLDS)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_ascii_lowercase)
        .collect()
}

#[test]
fn embedded_catalogue_loads() {
    let cat = catalogue();
    assert!(!cat.is_empty());
    assert!(cat.meta().sources.contains_key("iana_tlds"));
    assert!(cat.meta().sources["iana_tlds"].contains("Version 2026011900"));
    assert!(cat.meta().sources["iana_rdap_bootstrap"].contains("2026-03-23T19:00:02Z"));
}

#[test]
fn exactly_the_iana_tlds_are_present() {
    let cat = catalogue();
    let iana = iana_tlds();
    assert_eq!(iana.len(), 1438, "the IANA list of version 2026011900 has 1,438 TLDs");
    let tlds: BTreeSet<String> = cat.entries().filter(|e| !e.suffix.contains('.')).map(|e| e.suffix.clone()).collect();
    let missing: Vec<_> = iana.difference(&tlds).collect();
    let extra: Vec<_> = tlds.difference(&iana).collect();
    assert!(missing.is_empty(), "IANA TLDs missing from the catalogue: {missing:?}");
    assert!(extra.is_empty(), "catalogue TLDs not in the IANA list: {extra:?}");
    // Second-level zones hang under a listed TLD.
    for e in cat.entries().filter(|e| e.suffix.contains('.')) {
        let tld = e.suffix.rsplit('.').next().unwrap_or_default();
        assert!(cat.has_tld(tld), "{} is under no catalogue TLD", e.suffix);
    }
}

#[test]
fn every_entry_is_routed_with_a_reason_and_a_coherent_chain() {
    let cat = catalogue();
    for e in cat.entries() {
        assert!(e.reason.len() > 20, "{} has no real reason: {:?}", e.suffix, e.reason);
        // Order: rdap, whois, dns; each at most once; each backed by its data.
        let rank = |m: &LookupMethod| match m {
            LookupMethod::Rdap => 0,
            LookupMethod::Whois => 1,
            LookupMethod::Dns => 2,
        };
        assert!(e.methods.windows(2).all(|w| rank(&w[0]) < rank(&w[1])), "{}", e.suffix);
        assert_eq!(e.methods.contains(&LookupMethod::Rdap), !e.rdap.is_empty(), "{}", e.suffix);
        assert_eq!(e.methods.contains(&LookupMethod::Whois), e.whois.is_some(), "{}", e.suffix);
        assert_eq!(e.methods.contains(&LookupMethod::Dns), !e.nameservers.is_empty(), "{}", e.suffix);
        if let Some(w) = &e.whois {
            assert_eq!(w.port, 43, "{}", e.suffix);
            assert!(w.query.contains("{domain}"), "{}", e.suffix);
            assert!(w.host.is_ascii() && w.host == w.host.to_ascii_lowercase(), "{}", w.host);
        }
        for ns in &e.nameservers {
            assert!(ns.is_ascii() && *ns == ns.to_ascii_lowercase(), "{}: {ns}", e.suffix);
        }
        if let Some(i) = e.rdap.iter().position(|u| u.starts_with("http://")) {
            assert!(e.rdap[i..].iter().all(|u| u.starts_with("http://")), "{}: https first", e.suffix);
        }
        if let RegistrationPolicy::Restricted { reason } = &e.policy {
            assert!(!reason.is_empty(), "{}", e.suffix);
        }
        if !e.is_supported() {
            assert!(e.reason.starts_with("Unsupported"), "{}: {}", e.suffix, e.reason);
        }
    }
}

#[test]
fn supported_count_meets_the_spec_and_chains_are_reported() {
    let cat = catalogue();
    let all = Summary::of(cat.entries());
    let tlds = Summary::of(cat.entries().filter(|e| !e.suffix.contains('.')));
    let slds = Summary::of(cat.entries().filter(|e| e.suffix.contains('.')));
    println!("TLDs (the 1,438 IANA TLDs):\n{tlds}");
    println!("second-level zones:\n{slds}");
    println!("all entries:\n{all}");

    let mut chains: BTreeMap<String, usize> = BTreeMap::new();
    for e in cat.entries().filter(|e| !e.suffix.contains('.')) {
        let chain: Vec<String> = e.methods.iter().map(|m| format!("{m:?}").to_lowercase()).collect();
        let key = if chain.is_empty() { "(none)".to_owned() } else { chain.join("+") };
        *chains.entry(key).or_default() += 1;
    }
    println!("TLD chains including the DNS pre-check: {chains:#?}");
    let unsupported: Vec<&str> =
        cat.entries().filter(|e| !e.suffix.contains('.') && !e.is_supported()).map(|e| e.suffix.as_str()).collect();
    println!("unsupported TLDs ({}): {}", unsupported.len(), unsupported.join(" "));

    // Spec §1 and §8: "724+ top-level domains".
    assert!(tlds.supported >= 724, "only {} supported TLDs", tlds.supported);
    assert_eq!(tlds.entries, 1438);
}

#[test]
fn afghanistan_and_its_second_level_zones() {
    let cat = catalogue();
    for suffix in ["af", "com.af", "net.af", "org.af", "gov.af", "edu.af"] {
        let e = entry(&cat, suffix);
        let whois = e.whois.as_ref().unwrap_or_else(|| panic!("{suffix} has no WHOIS"));
        assert_eq!(whois.host, "whois.nic.af", "{suffix}");
        assert_eq!(whois.query, "{domain}", "{suffix}");
        assert!(e.methods.contains(&LookupMethod::Whois), "{suffix}");
        assert!(e.is_supported(), "{suffix}");
    }
    for suffix in ["af", "com.af", "net.af", "org.af"] {
        assert!(!is_restricted(entry(&cat, suffix)), "{suffix} must be open");
    }
    for suffix in ["gov.af", "edu.af"] {
        assert!(is_restricted(entry(&cat, suffix)), "{suffix} must be restricted");
    }
    assert_eq!(cat.lookup("com.af").map(|e| e.suffix.as_str()), Some("com.af"));
}

#[test]
fn com_uses_verisign_rdap_first() {
    let cat = catalogue();
    let com = entry(&cat, "com");
    assert_eq!(com.methods.first(), Some(&LookupMethod::Rdap));
    assert!(com.rdap.iter().any(|u| u == "https://rdap.verisign.com/com/v1/"), "{:?}", com.rdap);
    assert_eq!(com.whois.as_ref().map(|w| w.host.as_str()), Some("whois.verisign-grs.com"));
    assert!(!is_restricted(com));
}

#[test]
fn de_uses_denic_with_the_ace_query() {
    let cat = catalogue();
    let de = entry(&cat, "de");
    let whois = de.whois.as_ref().expect("de has WHOIS");
    assert_eq!(whois.host, "whois.denic.de");
    assert_eq!(whois.query, "-T dn,ace {domain}");
    assert!(de.methods.contains(&LookupMethod::Whois));
}

#[test]
fn lookup_falls_back_to_the_tld() {
    let cat = catalogue();
    assert_eq!(cat.lookup("co.uk").map(|e| e.suffix.as_str()), Some("uk"));
    assert_eq!(cat.lookup("com").map(|e| e.suffix.as_str()), Some("com"));
    // A closed ccTLD is restricted, but its open second-level zones are not.
    assert!(is_restricted(entry(&cat, "za")));
    assert!(!is_restricted(cat.lookup("co.za").expect("co.za")));
    assert!(is_restricted(cat.lookup("gov.za").expect("gov.za")));
}

#[test]
fn charter_and_brand_tlds_are_restricted() {
    let cat = catalogue();
    for suffix in ["gov", "mil", "edu", "int", "arpa", "google", "aaa", "bmw"] {
        assert!(is_restricted(entry(&cat, suffix)), "{suffix} must be restricted");
    }
    for suffix in ["com", "net", "org", "io", "co", "ai", "dev", "app", "xyz", "uk", "jp"] {
        let e = entry(&cat, suffix);
        assert!(!is_restricted(e), "{suffix} must be open");
        assert!(e.is_supported(), "{suffix} must be supported: {}", e.reason);
    }
}

#[test]
fn committed_file_equals_a_fresh_generation() {
    let fresh = build::generate_json(&test_data()).expect("generation succeeds");
    let committed = common::catalogue::EMBEDDED_JSON;
    if fresh != committed {
        let line = committed.lines().zip(fresh.lines()).position(|(a, b)| a != b);
        panic!(
            "common/data/tld-catalogue.json is stale (first differing line {:?}); run \
             `cargo run -p dsa-catalogue-build --bin dsa-catalogue` from the workspace root",
            line.map(|l| l + 1)
        );
    }
    // The rendering round-trips through the loader.
    let reparsed = Catalogue::from_json(&fresh).expect("fresh output loads");
    assert_eq!(reparsed.len(), catalogue().len());
}

/// The suffix → WHOIS host table of Marco d'Itri's `whois` client (GPL-2.0+). It is read here
/// only to measure agreement; the generator never reads it.
fn rfc1036_whois_hosts() -> BTreeMap<String, Option<String>> {
    let mut map = BTreeMap::new();
    for line in read_data("whois-servers/rfc1036-whois/tld_serv_list").lines() {
        let line = line.split('#').next().unwrap_or_default();
        let mut fields = line.split_whitespace();
        let (Some(suffix), Some(first)) = (fields.next(), fields.next()) else {
            continue;
        };
        let Some(suffix) = suffix.strip_prefix('.') else {
            continue;
        };
        let host = match first {
            // Thin registries and recursive servers: the host is the second field.
            "VERISIGN" | "RECURSIVE" | "AFILIAS" => fields.next().map(str::to_owned),
            // No port-43 server (web-only, none, unknown, special handling).
            _ if first.chars().all(|c| c.is_ascii_uppercase() || c == '?' || c.is_ascii_digit()) => None,
            host => Some(host.to_ascii_lowercase()),
        };
        // First match wins in that file.
        map.entry(suffix.to_ascii_lowercase()).or_insert(host);
    }
    for line in read_data("whois-servers/rfc1036-whois/new_gtlds_list").lines() {
        // One bare TLD per line: its server is `whois.nic.<tld>` (the ICANN-contract default).
        let tld = line.trim();
        if !tld.is_empty() && !tld.starts_with('#') {
            map.entry(tld.to_ascii_lowercase()).or_insert_with(|| Some(format!("whois.nic.{tld}")));
        }
    }
    map
}

#[test]
fn whois_hosts_agree_with_the_rfc1036_whois_client() {
    let cat = catalogue();
    let theirs = rfc1036_whois_hosts();
    let (mut both, mut agree) = (0usize, 0usize);
    let mut disagreements = Vec::new();
    let (mut only_ours, mut only_theirs) = (Vec::new(), Vec::new());
    for e in cat.entries() {
        let ours = e.whois.as_ref().map(|w| w.host.as_str());
        let Some(their) = theirs.get(&e.suffix) else {
            continue;
        };
        match (ours, their.as_deref()) {
            (Some(o), Some(t)) => {
                both += 1;
                if o == t {
                    agree += 1;
                } else {
                    disagreements.push(format!("{}: ours {o}, theirs {t}", e.suffix));
                }
            }
            (Some(o), None) => only_ours.push(format!("{}={o}", e.suffix)),
            (None, Some(t)) => only_theirs.push(format!("{}={t}", e.suffix)),
            (None, None) => {}
        }
    }
    let rate = agree as f64 / both.max(1) as f64;
    println!(
        "WHOIS host agreement with rfc1036/whois: {agree}/{both} = {:.1}% of the zones where both \
         name a server",
        rate * 100.0
    );
    println!("disagreements ({}):\n  {}", disagreements.len(), disagreements.join("\n  "));
    println!("server only in ours ({}): {}", only_ours.len(), only_ours.join(" "));
    // Mostly gTLDs the whois client maps to `whois.nic.<tld>` by ICANN-contract default, whose
    // registries no longer list a port-43 server with IANA: RDAP-only here, on purpose.
    let shown: Vec<&str> = only_theirs.iter().take(40).map(String::as_str).collect();
    println!("server only in theirs ({}, first {}): {}", only_theirs.len(), shown.len(), shown.join(" "));
    assert!(both >= 800, "too few zones to compare: {both}");
    // Measured on the shared data of 2026-11: 805/878 = 91.7%. The floor catches a regression
    // in host selection, not the known disagreements (zonedb, newer, names other hosts of the
    // same registry: whois.publicinterestregistry.net vs whois.pir.org, whois.ripn.net vs
    // whois.tcinet.ru, registry back-end hosts for Chinese IDN gTLDs…).
    assert!(rate >= AGREEMENT_FLOOR, "WHOIS host agreement fell to {:.1}%", rate * 100.0);
}

/// Floor for [`whois_hosts_agree_with_the_rfc1036_whois_client`], a little under the measured
/// 91.7%.
const AGREEMENT_FLOOR: f64 = 0.90;

/// Issue: `x.sp.gov.br` was asked of the `.br` registry (skipping the restricted `gov.br`) and
/// `example.k12.ak.us` of `.us` WHOIS, so their "not found" read as available. Over the whole ICANN
/// section of the Public Suffix List: no suffix routes to a registry that does not sell it.
#[test]
fn no_public_suffix_routes_to_a_registry_that_does_not_sell_it() {
    use common::catalogue::Resolution;
    let cat = catalogue();
    let psl = read_data("psl/public_suffix_list.dat");
    let icann = psl
        .split("// ===BEGIN ICANN DOMAINS===")
        .nth(1)
        .and_then(|rest| rest.split("// ===END ICANN DOMAINS===").next())
        .expect("ICANN section");
    let sold: Vec<String> =
        serde_json::from_str::<serde_json::Value>(include_str!("../../common/data/second-level-labels.json"))
            .expect("labels")["sold"]
            .as_array()
            .expect("sold")
            .iter()
            .map(|v| v.as_str().expect("label").to_owned())
            .collect();
    let (mut listed, mut restricted, mut via_tld, mut unsupported) = (0, 0, 0, 0);
    for line in icann.lines().map(str::trim) {
        if line.is_empty() || line.starts_with("//") || line.starts_with('!') || line.starts_with('*') {
            continue;
        }
        let suffix = idna::domain_to_ascii(line).expect("PSL entries are valid IDNs");
        match cat.resolve(&suffix) {
            Ok(Resolution::Listed(e)) => {
                assert_eq!(e.suffix, suffix);
                listed += 1;
            }
            Ok(Resolution::RestrictedAncestor(e)) => {
                assert!(is_restricted(e), "{suffix} via {}", e.suffix);
                restricted += 1;
            }
            Ok(Resolution::SoldByTld(e)) => {
                let labels: Vec<&str> = suffix.split('.').collect();
                assert_eq!(labels.len(), 2, "{suffix}: only second-level zones are asked of the TLD's registry");
                assert_eq!(e.suffix, labels[1], "{suffix}");
                assert!(sold.iter().any(|l| l == labels[0]), "{suffix}");
                assert!(!is_restricted(e), "{suffix}");
                via_tld += 1;
            }
            Err(reason) => {
                assert!(!reason.is_empty());
                unsupported += 1;
            }
        }
    }
    println!(
        "PSL ICANN suffixes: {listed} listed, {restricted} under a restricted zone, {via_tld} sold by their ccTLD's registry, {unsupported} unsupported"
    );
    assert!(listed > 1_000 && via_tld > 100, "{listed} {via_tld}");
    // The cases the issue names.
    assert!(matches!(cat.resolve("sp.gov.br"), Ok(Resolution::RestrictedAncestor(e)) if e.suffix == "gov.br"));
    assert!(cat.resolve("k12.ak.us").is_err(), "k12.ak.us is not sold by the .us registry");
    assert!(cat.resolve("ak.us").is_err());
    assert!(matches!(cat.resolve("co.uk"), Ok(Resolution::SoldByTld(e)) if e.suffix == "uk"));
    assert!(matches!(cat.resolve("com.af"), Ok(Resolution::Listed(e)) if e.suffix == "com.af"));
    assert!(cat.resolve("notazone.za").is_err(), "an unlisted zone of a closed ccTLD is not that ccTLD's");
}
