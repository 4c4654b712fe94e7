//! Runs the RDAP reader over every labelled sample in `tests/data/rdap/` (see
//! `tests/data/PROVENANCE.md` §5) and checks the class of each and the fields the collector
//! derived from each domain object (`ldhName`, status, events, name servers, registrar).

mod samples;

use std::collections::BTreeSet;

use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use workers::parse::rdap::{RdapClass, read_rdap};

/// Expected event dates are compared at the second, whatever zone notation the server used.
fn same_instant(expected: &str, got: Option<OffsetDateTime>) -> bool {
    let parsed = OffsetDateTime::parse(expected, &Rfc3339)
        .ok()
        .or_else(|| OffsetDateTime::parse(&format!("{expected}Z"), &Rfc3339).ok())
        .or_else(|| {
            // "2028-09-13T07:00:00.000+0000": RFC 3339 wants a colon in the offset.
            let (head, off) = expected.split_at(expected.len().checked_sub(5)?);
            OffsetDateTime::parse(&format!("{head}{}:{}", &off[..3], &off[3..]), &Rfc3339).ok()
        });
    match (parsed, got) {
        (Some(e), Some(g)) => (e - g).whole_seconds().abs() < 1,
        _ => false,
    }
}

#[test]
fn every_labelled_rdap_sample() {
    let mut total = 0;
    let mut failures = Vec::new();
    let mut fields_checked = 0;
    for sample in samples::rdap_samples(&samples::data_dir()) {
        let id = &sample.id;
        let reading = read_rdap(sample.http_status, &sample.body);
        total += 1;

        let want = samples::rdap_expected(&sample.label);
        if !samples::rdap_right(&sample.label, reading.class) {
            failures.push(format!("{id}: want {want:?} got {:?} ({})", reading.class, reading.detail));
            continue;
        }
        if want != RdapClass::Registered {
            continue;
        }
        let expected_file = sample.expected_file.as_ref().expect("a registered sample has expected fields");
        let exp: Value = serde_json::from_str(&std::fs::read_to_string(expected_file).expect("read expected"))
            .expect("expected is JSON");
        let d = &exp["derived"];
        let rec = &reading.record;
        let mut check = |what: &str, ok: bool, note: String| {
            fields_checked += 1;
            if !ok {
                failures.push(format!("{id}: {what}: {note}"));
            }
        };
        if let Some(name) = d["ldhName"].as_str() {
            let want = name.trim_end_matches('.').to_ascii_lowercase();
            check("ldhName", rec.domain.as_deref() == Some(want.as_str()), format!("want {want} got {:?}", rec.domain));
        }
        let want_status: Vec<String> = d["status"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        check("status", rec.status == want_status, format!("want {want_status:?} got {:?}", rec.status));
        for (action, got) in
            [("registration", rec.created_at), ("last changed", rec.updated_at), ("expiration", rec.expires_at)]
        {
            match d["events"][action].as_str() {
                Some(e) => check(action, same_instant(e, got), format!("want {e} got {got:?}")),
                None => check(action, got.is_none(), format!("want none got {got:?}")),
            }
        }
        let want_ns: BTreeSet<String> = d["nameservers"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).map(|n| n.trim_end_matches('.').to_ascii_lowercase()).collect())
            .unwrap_or_default();
        let got_ns: BTreeSet<String> = rec.nameservers.iter().cloned().collect();
        check("nameservers", want_ns == got_ns, format!("want {want_ns:?} got {got_ns:?}"));
        if let Some(name) = d["registrar"]["name"].as_str() {
            check(
                "registrar",
                rec.registrar.as_deref() == Some(name),
                format!("want {name:?} got {:?}", rec.registrar),
            );
        }
        if let Some(signed) = d["delegationSigned"].as_bool() {
            check("delegationSigned", rec.dnssec == Some(signed), format!("want {signed} got {:?}", rec.dnssec));
        }
    }
    println!("\nRDAP: {total} samples, {fields_checked} field checks, {} failures", failures.len());
    for f in &failures {
        println!("  {f}");
    }
    assert!(total >= 26, "expected the full labelled RDAP set, got {total}");
    assert!(failures.is_empty(), "RDAP sample failures:\n{}", failures.join("\n"));
}
