//! Per-field accuracy of the `/v1/whois` object (spec §2.3) over the labelled registry answers in
//! `tests/data/whois` and `tests/data/rdap` (see `tests/data/PROVENANCE.md`): the readers'
//! record passed through the endpoint's own step (`workers::engine::registration::fields::finish`: EPP status
//! names, redaction, country codes), compared field by field with the sources' expected values.
//!
//! Fields: registrar, the three dates to the day, name servers as a set, status as a set,
//! registrant country, DNSSEC. The table is printed per group:
//! * **development**: the registries whose recorded answers the simulator replays
//!   (`tests/fixtures/registry`), which were looked at while writing the endpoint;
//! * **held out**: every other registry family, not looked at while writing the field step.
//!
//! Dates compare at day precision with one day of slack: the sources converted time zones
//! differently (PROVENANCE.md §4). Status compares case- and punctuation-insensitively, so the EPP
//! name `clientTransferProhibited` matches a source's `client transfer prohibited`.

mod samples;

use std::collections::{BTreeMap, BTreeSet};

use common::record::DomainRecord;
use serde_json::Value;
use time::{Date, OffsetDateTime};
use workers::engine::registration::fields;
use workers::parse::rdap::{RdapClass, read_rdap};
use workers::parse::whois::{WhoisClass, decode, read_whois, read_whois_generic};

/// WHOIS servers whose recorded answers the simulator replays (development families).
const DEVELOPMENT: &[&str] = &[
    "whois.verisign-grs.com",
    "whois.denic.de",
    "whois.nic.af",
    "whois.nic.io",
    "whois.pir.org",
    "whois.publicinterestregistry.org",
];

/// FNV-1a (64-bit) of the WHOIS server name: the held-out families are split by its parity into a
/// **tuning** half (even; its misses may be looked at while improving the generic field reader)
/// and a **validation** half (odd; never looked at, its figure is the generalisation measure).
/// Samples that do not record their server (most of the library-derived ones) are keyed by their
/// suffix instead, so that they spread over both halves rather than all hashing the empty string.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

fn is_tuning(server: &str) -> bool {
    fnv1a(server).is_multiple_of(2)
}

#[derive(Default, Clone, Copy)]
struct Score {
    ok: usize,
    total: usize,
}

impl Score {
    fn add(&mut self, ok: bool) {
        self.total += 1;
        self.ok += usize::from(ok);
    }
    fn pct(self) -> f64 {
        if self.total == 0 { 100.0 } else { 100.0 * self.ok as f64 / self.total as f64 }
    }
}

impl std::fmt::Display for Score {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:>4}/{:<4} {:>6.1}%", self.ok, self.total, self.pct())
    }
}

type Table = BTreeMap<&'static str, Score>;

fn day(s: &str) -> Option<Date> {
    Date::parse(s.get(..10)?, &time::macros::format_description!("[year]-[month]-[day]")).ok()
}

fn same_day(expected: &str, got: Option<OffsetDateTime>) -> bool {
    match (day(expected), got) {
        (Some(e), Some(g)) => (g.to_offset(time::UtcOffset::UTC).date() - e).whole_days().abs() <= 1,
        _ => false,
    }
}

fn norm_status(s: &str) -> String {
    let s = s.split(" http").next().unwrap_or(s);
    let s = s.split(" (").next().unwrap_or(s);
    s.chars().filter(char::is_ascii_alphanumeric).collect::<String>().to_ascii_lowercase()
}

/// Registrar names compared case-insensitively, without a trailing registry handle or URL.
fn norm_name(s: &str) -> String {
    let mut s = s.trim();
    if let Some(p) = s.find("(http").or_else(|| s.find("http")) {
        s = s[..p].trim_end();
    }
    loop {
        let before = s;
        if s.ends_with(']')
            && let Some(p) = s.rfind('[')
        {
            s = s[..p].trim_end();
        }
        if s.ends_with(')')
            && let Some(p) = s.rfind('(')
            && s[p..].contains(|c: char| c.is_ascii_digit())
        {
            s = s[..p].trim_end();
        }
        if s == before {
            break;
        }
    }
    s.trim_end_matches('.').to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ")
}

fn host_like(s: &str) -> bool {
    s.contains('.') && s.chars().all(|c| c.is_alphanumeric() || c == '.' || c == '-' || c == '_')
}

/// Scores one finished record against expected values (`created`/`updated`/`expires` dates,
/// `nameservers`, `status`, `registrar` name, `country`, `dnssec`), each optional.
fn score(table: &mut Table, misses: &mut Vec<String>, id: &str, rec: &DomainRecord, exp: &Expected) {
    let mut check = |name: &'static str, ok: bool, note: String| {
        table.entry(name).or_default().add(ok);
        if !ok {
            misses.push(format!("{id}: {name}: {note}"));
        }
    };
    if let Some(name) = &exp.registrar {
        let got = rec.registrar.as_deref().map(norm_name);
        check(
            "registrar",
            got.as_deref() == Some(norm_name(name).as_str()),
            format!("want {name:?} got {:?}", rec.registrar),
        );
    }
    for (key, want, got) in [
        ("created_at", &exp.created, rec.created_at),
        ("updated_at", &exp.updated, rec.updated_at),
        ("expires_at", &exp.expires, rec.expires_at),
    ] {
        if let Some(want) = want {
            check(key, same_day(want, got), format!("want {want} got {got:?}"));
        }
    }
    if !exp.nameservers.is_empty() {
        let got: BTreeSet<String> = rec.nameservers.iter().cloned().collect();
        check("nameservers", exp.nameservers == got, format!("want {:?} got {got:?}", exp.nameservers));
    }
    if !exp.status.is_empty() {
        let got: BTreeSet<String> = rec.status.iter().map(|s| norm_status(s)).filter(|s| !s.is_empty()).collect();
        check("status", exp.status == got, format!("want {:?} got {got:?}", exp.status));
    }
    if let Some(cc) = &exp.country {
        check(
            "registrant.country",
            rec.registrant.country.as_deref() == Some(cc.as_str()),
            format!("want {cc} got {:?}", rec.registrant.country),
        );
    }
    if let Some(signed) = exp.dnssec {
        check("dnssec", rec.dnssec == Some(signed), format!("want {signed} got {:?}", rec.dnssec));
    }
}

#[derive(Default)]
struct Expected {
    registrar: Option<String>,
    created: Option<String>,
    updated: Option<String>,
    expires: Option<String>,
    nameservers: BTreeSet<String>,
    status: BTreeSet<String>,
    country: Option<String>,
    dnssec: Option<bool>,
}

fn strings(v: &Value) -> impl Iterator<Item = &str> {
    v.as_array().into_iter().flatten().filter_map(Value::as_str)
}

fn whois_expected(n: &Value) -> Expected {
    let date = |k: &str| n.get(k).and_then(Value::as_str).filter(|s| day(s).is_some()).map(str::to_owned);
    Expected {
        registrar: n.get("registrar").and_then(|r| r.get("name")).and_then(Value::as_str).map(str::to_owned),
        created: date("created"),
        updated: date("updated"),
        expires: date("expires"),
        nameservers: strings(&n["nameservers"])
            .map(|s| s.trim().trim_end_matches('.').to_lowercase())
            .filter(|s| host_like(s))
            .collect(),
        status: strings(&n["status"]).map(norm_status).filter(|s| !s.is_empty()).collect(),
        country: n
            .get("registrant")
            .and_then(|r| r.get("country_code"))
            .and_then(Value::as_str)
            .filter(|c| c.len() == 2)
            .map(str::to_ascii_uppercase),
        dnssec: n.get("dnssec").and_then(Value::as_bool),
    }
}

fn print(title: &str, table: &Table) -> Score {
    println!("\n{title}");
    let mut all = Score::default();
    for (name, s) in table {
        println!("  {name:<20} {s}");
        all.ok += s.ok;
        all.total += s.total;
    }
    println!("  {:<20} {all}", "all fields");
    all
}

/// The reader's record passed through the endpoint's field step, and the expected values (only
/// published DNSSEC scored: some sources default `dnssec` to false when the answer says nothing,
/// the spec wants `null` for what the registry does not publish).
fn finished(raw: &[u8], mut record: DomainRecord, normalized: &Value) -> (DomainRecord, Expected) {
    let text = decode(raw, None);
    if record.dnssec.is_none() {
        record.dnssec = fields::whois_dnssec(&text);
    }
    let mut redacted = fields::whois_redactions(&text);
    fields::finish(&mut record, &mut redacted, false);
    let mut expected = whois_expected(normalized);
    if !text.to_ascii_lowercase().contains("dnssec") {
        expected.dnssec = None;
    }
    (record, expected)
}

/// The generic path: every registered answer read as if it came with no server name and no
/// suffix (collections where the server is unknown), so no registry family's rules (date order,
/// name-server lines, own markers) apply and only the generic key tables, date formats and block
/// reader decide. Same halves as above: the tuning half's misses may be read
/// (`WHOIS_FIELDS_VERBOSE=1`), the validation half's never.
#[test]
fn whois_fields_on_the_generic_path() {
    let dir = samples::data_dir();
    let mut tuning = Table::new();
    let mut validation = Table::new();
    let mut all = Table::new();
    let mut tuning_misses = Vec::new();
    let (mut read, mut not_registered) = (0, 0);
    for sample in samples::whois_samples(&dir) {
        let (Some(normalized), "registered") = (&sample.expected, sample.label.as_str()) else { continue };
        let reading = read_whois_generic(&sample.raw, None, "", None);
        if reading.class != WhoisClass::Registered {
            // Left out as above (classification is measured elsewhere), but counted.
            not_registered += 1;
            continue;
        }
        read += 1;
        let (record, expected) = finished(&sample.raw, reading.record, normalized);
        score(&mut all, &mut Vec::new(), &sample.id, &record, &expected);
        let family = sample.server.as_deref().unwrap_or(sample.suffix.as_str());
        if is_tuning(family) {
            score(&mut tuning, &mut tuning_misses, &sample.id, &record, &expected);
        } else {
            score(&mut validation, &mut Vec::new(), &sample.id, &record, &expected);
        }
    }
    println!(
        "\nGeneric path: {read} registered answers read with no server and no suffix ({not_registered} not read as registered, left out)"
    );
    print("WHOIS fields, generic path: tuning half", &tuning);
    let validation_all = print("WHOIS fields, generic path: validation half (misses never printed)", &validation);
    let all_all = print("WHOIS fields, generic path (both halves, development families included)", &all);
    if std::env::var_os("WHOIS_FIELDS_VERBOSE").is_some() {
        println!("\nMisses (generic path, tuning half):");
        for m in &tuning_misses {
            println!("  {m}");
        }
    }
    assert!(all_all.total > 1000, "too few fields compared: {all_all}");
    // Floors at this reader's figures: they may only rise.
    assert!(all_all.pct() >= GENERIC_FLOOR, "generic path: {all_all} below the {GENERIC_FLOOR}% floor");
    assert!(validation_all.pct() >= GENERIC_FLOOR, "generic path, validation half: {validation_all} below the floor");
}

/// The generic path's field figure floor, per cent (see the test above).
const GENERIC_FLOOR: f64 = 97.2;

/// Hand-made registered answers in shapes the labelled samples lack (date formats, key
/// synonyms, registrar and name-server layouts), each with the fields it states
/// (`tests/unseen/handmade_fields_longtail.txt`, written before the field reader was changed for
/// them: a training set), read on the generic path.
const HANDMADE_FIELDS: &str = include_str!("unseen/handmade_fields_longtail.txt");

#[test]
fn handmade_field_shapes_on_the_generic_path() {
    let mut table = Table::new();
    let mut misses = Vec::new();
    let mut not_registered = Vec::new();
    let mut cases: Vec<(String, Expected, String)> = Vec::new();
    for line in HANDMADE_FIELDS.lines() {
        if let Some(id) = line.strip_prefix("==== ").and_then(|h| h.strip_suffix(" ====")) {
            cases.push((id.to_owned(), Expected::default(), String::new()));
        } else if let Some((_, exp, text)) = cases.last_mut() {
            match line.strip_prefix("#expect ").and_then(|kv| kv.split_once('=')) {
                Some(("created", v)) => exp.created = Some(v.to_owned()),
                Some(("updated", v)) => exp.updated = Some(v.to_owned()),
                Some(("expires", v)) => exp.expires = Some(v.to_owned()),
                Some(("registrar", v)) => exp.registrar = Some(v.to_owned()),
                Some(("ns", v)) => exp.nameservers = v.split(',').map(str::to_owned).collect(),
                Some((k, _)) => panic!("unknown expectation {k}"),
                None => {
                    text.push_str(line);
                    text.push('\n');
                }
            }
        }
    }
    assert!(cases.len() >= 30, "expected the full hand-made field set, got {}", cases.len());
    for (id, expected, text) in &cases {
        let reading = read_whois_generic(text.as_bytes(), None, "", None);
        if reading.class != WhoisClass::Registered {
            not_registered.push(format!("{id}: {:?} ({:?})", reading.class, reading.marker));
        }
        let mut record = reading.record;
        let mut redacted = fields::whois_redactions(text);
        fields::finish(&mut record, &mut redacted, false);
        score(&mut table, &mut misses, id, &record, expected);
    }
    let all = print("WHOIS fields, hand-made shapes, generic path", &table);
    for m in &misses {
        println!("  miss: {m}");
    }
    for n in &not_registered {
        println!("  not read registered: {n}");
    }
    assert!(not_registered.is_empty(), "registered answers not read as registered: {not_registered:#?}");
    assert!(all.pct() >= HANDMADE_FIELDS_FLOOR, "hand-made shapes: {all} below the {HANDMADE_FIELDS_FLOOR}% floor");
}

/// The hand-made shapes' field figure floor, per cent (see the test above).
const HANDMADE_FIELDS_FLOOR: f64 = 99.0;

#[test]
fn whois_object_fields_on_labelled_samples() {
    let dir = samples::data_dir();
    let mut dev = Table::new();
    let mut held = Table::new();
    let mut tuning = Table::new();
    let mut validation = Table::new();
    let mut misses = Vec::new();
    let mut tuning_misses = Vec::new();
    for sample in samples::whois_samples(&dir) {
        let (Some(normalized), "registered") = (&sample.expected, sample.label.as_str()) else { continue };
        let (server, suffix, raw, id) = (&sample.server, &sample.suffix, &sample.raw, &sample.id);
        let reading = read_whois(raw, server.as_deref(), suffix, None);
        if reading.class != WhoisClass::Registered {
            continue; // classification is the availability reader's test (whois_samples.rs)
        }
        let (record, expected) = finished(raw, reading.record, normalized);
        let in_dev = server.as_deref().is_some_and(|sv| DEVELOPMENT.contains(&sv));
        if in_dev {
            score(&mut dev, &mut misses, id, &record, &expected);
        } else {
            score(&mut held, &mut Vec::new(), id, &record, &expected);
            let family = server.as_deref().unwrap_or(suffix.as_str());
            if is_tuning(family) {
                score(&mut tuning, &mut tuning_misses, id, &record, &expected);
            } else {
                // Validation misses are deliberately not collected: they are not to be looked at.
                score(&mut validation, &mut Vec::new(), id, &record, &expected);
            }
        }
    }

    // RDAP: every family is held out (only the simulator's Verisign and CentralNic fixtures were
    // looked at, and those are not in this set's expected files).
    let mut rdap = Table::new();
    for sample in samples::rdap_samples(&dir) {
        let Some(expected_file) = sample.expected_file.as_ref().filter(|_| sample.label == "registered") else {
            continue;
        };
        let body = &sample.body;
        let reading = read_rdap(sample.http_status, body);
        if !matches!(reading.class, RdapClass::Registered | RdapClass::PendingDelete) {
            continue;
        }
        let exp: Value =
            serde_json::from_str(&std::fs::read_to_string(expected_file).expect("expected")).expect("expected JSON");
        let d = &exp["derived"];
        let mut record = reading.record;
        let mut redacted = fields::rdap_redactions(body);
        fields::finish(&mut record, &mut redacted, true);
        let expected = Expected {
            registrar: d["registrar"]["name"].as_str().map(str::to_owned),
            created: d["events"]["registration"].as_str().map(str::to_owned),
            updated: d["events"]["last changed"].as_str().map(str::to_owned),
            expires: d["events"]["expiration"].as_str().map(str::to_owned),
            nameservers: strings(&d["nameservers"]).map(|n| n.trim_end_matches('.').to_ascii_lowercase()).collect(),
            // The expected RDAP spellings go through the RFC 8056 table like ours.
            status: strings(&d["status"]).map(|st| norm_status(&fields::epp_status(st, true))).collect(),
            country: None,
            dnssec: d["delegationSigned"].as_bool(),
        };
        score(&mut rdap, &mut misses, &sample.id, &record, &expected);
    }

    let dev_all = print("WHOIS fields, development families (simulator fixtures)", &dev);
    print("WHOIS fields, held-out families: tuning half (FNV-1a of the server even)", &tuning);
    print("WHOIS fields, held-out families: validation half (odd; misses never printed)", &validation);
    let held_all = print("WHOIS fields, held-out families (both halves)", &held);
    let rdap_all = print("RDAP fields (held out)", &rdap);
    if std::env::var_os("WHOIS_FIELDS_VERBOSE").is_some() {
        println!("\nMisses (development families, RDAP, held-out tuning half):");
        for m in misses.iter().chain(&tuning_misses) {
            println!("  {m}");
        }
    }
    assert!(held_all.total > 1000 && rdap_all.total > 50, "too few fields compared: {held_all} / {rdap_all}");
    // Floors just below what the readers reach today: held out 97.3% (tuning half 97.4%,
    // validation half 97.2%). Most remaining tuning-half misses are the sources' own labels
    // (registrar taken from a contact, status sets joined into one word), see
    // WHOIS_FIELDS_VERBOSE=1.
    assert!(dev_all.pct() >= 96.0, "development families: {dev_all} below the 96% floor");
    assert!(held_all.pct() >= 97.0, "held-out families: {held_all} below the 97% floor");
    assert!(rdap_all.pct() >= 97.0, "RDAP: {rdap_all} below 97%");
}
