//! One test case per labelled sample in `tests/data/whois/` and `tests/data/rdap/`, named after
//! its file (`whois::samples/weppos/whois.registre.ma/ma/status_available.txt`), so that one
//! regression shows as one failed case and never hides the others. The accuracy tables and
//! floors stay in `whois_samples.rs`, `rdap_samples.rs` and `whois_generic.rs`.
//!
//! A case passes when the reader's class is the right one for the sample's label, or one that
//! gives no verdict (`Unknown`, which the leave-one-registry-out test accepts, or `RateLimited`,
//! which the engine answers as unknown and retries: `engine.rs`, `definitive`); a wrong
//! definitive class (available, registered, reserved) fails. RDAP cases ask for the right class
//! outright, as `rdap_samples.rs` does.
//!
//! [`KNOWN_MISSES`] lists the samples the WHOIS reader reads wrongly today (within the floors of
//! `whois_samples.rs`): they are reported as ignored, by name, and run with `-- --include-ignored`.
//! Remove an entry once the reader gets it right.
//!
//! Run one family: `cargo test -p dsa-workers --test sample_cases -- whois.denic.de`.

mod samples;

use std::process::ExitCode;

use libtest_mimic::{Arguments, Failed, Trial};
use samples::{RdapSample, WhoisSample};
use workers::parse::rdap::read_rdap;
use workers::parse::whois::{WhoisClass, read_whois};

/// Samples (file under `whois/`) the WHOIS reader reads as a wrong definitive class today, with
/// why. Several labels are themselves debatable (`example.com` is IANA-reserved; `.name` answers
/// "not available for registration").
const KNOWN_MISSES: &[(&str, &str)] = &[
    (
        "samples/weppos/whois.nic.uk/uk/property_status_no_status_listed.txt",
        "label: text says registered directly with Nominet",
    ),
    ("samples/weppos/whois.nic.uk/uk/status_reserved.txt", "label: text says registered directly with Nominet"),
    ("samples/weppos/whois.verisign-grs.com/com/property_nameserver_no_nameserver.txt", "IANA-reserved registrar"),
    ("samples/weppos/whois.cctld.uz/uz/property_expires_on_dash.txt", "`status: reserved` on a registered name"),
    ("samples/likexian/notfound/name_login.name.txt", "`.name` 'not available for registration' read as reserved"),
    ("samples/likexian/notfound/name_science.name.txt", "`.name` second-level text read as reserved"),
    ("samples/phpwhois/am/google.com.am.txt", "'reserved name:' field on a registered name"),
    ("samples/phpwhois/qa/free.txt", "'reserved by' text on a free name"),
    ("samples/pythonwhois/example.com.txt", "IANA-reserved registrar on example.com"),
];

fn whois_case(s: &WhoisSample) -> Result<(), Failed> {
    let reading = read_whois(&s.raw, s.server.as_deref(), &s.suffix, None);
    let no_verdict = matches!(reading.class, WhoisClass::Unknown | WhoisClass::RateLimited);
    if samples::whois_right(&s.label, s.detail.as_deref(), reading.class) || no_verdict {
        return Ok(());
    }
    Err(format!(
        "{}: label {} (detail {:?}) read as {:?} (marker {:?}, server {:?}, suffix {:?})",
        s.id, s.label, s.detail, reading.class, reading.marker, s.server, s.suffix
    )
    .into())
}

fn rdap_case(s: &RdapSample) -> Result<(), Failed> {
    let reading = read_rdap(s.http_status, &s.body);
    if samples::rdap_right(&s.label, reading.class) {
        return Ok(());
    }
    Err(format!(
        "{}: label {} (HTTP {}) read as {:?} ({}); want {:?}",
        s.id,
        s.label,
        s.http_status,
        reading.class,
        reading.detail,
        samples::rdap_expected(&s.label)
    )
    .into())
}

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let dir = samples::data_dir();
    let mut trials = Vec::new();
    let whois = samples::whois_samples(&dir);
    let unmatched: Vec<&str> =
        KNOWN_MISSES.iter().map(|(f, _)| *f).filter(|f| !whois.iter().any(|s| s.file == *f)).collect();
    assert!(unmatched.is_empty(), "KNOWN_MISSES names no sample: {unmatched:?}");
    for s in whois {
        let known_miss = KNOWN_MISSES.iter().any(|(f, _)| *f == s.file);
        let name = format!("whois::{}", s.file);
        trials.push(Trial::test(name, move || whois_case(&s)).with_kind("whois").with_ignored_flag(known_miss));
    }
    for s in samples::rdap_samples(&dir) {
        trials.push(Trial::test(format!("rdap::{}", s.file), move || rdap_case(&s)).with_kind("rdap"));
    }
    libtest_mimic::run(&args, trials).exit_code()
}
