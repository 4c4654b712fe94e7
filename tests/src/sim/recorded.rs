//! Recorded real registry answers, embedded from `tests/fixtures/registry/`, and the templating
//! that makes them speak about the queried name.
//!
//! Every file is a byte-for-byte copy of a response recorded from a live registry by an open
//! source project; `tests/fixtures/PROVENANCE.md` names the repository, commit, path and licence
//! of each. Templating replaces only the sample's own domain name (case-insensitive, keeping
//! the sample's letter case), so name servers such as `NS1.GOOGLE.COM` and e-mail addresses keep
//! their recorded values.

use super::scenario::{RdapFamily, Truth, WhoisFamily};

/// A recorded answer and the domain name it was recorded for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Recorded {
    /// The answer, exactly as recorded.
    pub(crate) text: &'static str,
    /// The name the sample is about (`""` when the text does not mention it).
    pub(crate) domain: &'static str,
}

impl Recorded {
    /// The answer with the sample's domain replaced by `name`.
    pub(crate) fn render(&self, name: &str) -> String {
        rewrite_domain(self.text, self.domain, name)
    }
}

macro_rules! fixture {
    ($path:literal, $domain:literal) => {
        Recorded { text: include_str!(concat!("../../fixtures/registry/", $path)), domain: $domain }
    };
}

// --- WHOIS (RFC 3912) ---

const VERISIGN_REGISTERED: Recorded = fixture!("whois/verisign/status_registered.txt", "google.com");
const VERISIGN_AVAILABLE: Recorded = fixture!("whois/verisign/status_available.txt", "u34jedzcq.com");
const VERISIGN_PENDING_DELETE: Recorded =
    fixture!("whois/verisign/property_status_pendingdelete.txt", "killianestates.com");
const NIC_AF_REGISTERED: Recorded = fixture!("whois/nic_af/google.com.af.txt", "google.com.af");
const NIC_AF_AVAILABLE: Recorded = fixture!("whois/nic_af/status_available.txt", "u34jedzcq.af");
const DENIC_REGISTERED: Recorded = fixture!("whois/denic/status_registered.txt", "google.de");
const DENIC_AVAILABLE: Recorded = fixture!("whois/denic/status_available.txt", "u34jedzcq.de");
const DENIC_THROTTLED: Recorded = fixture!("whois/denic/response_throttled.txt", "");
const NIC_IO_REGISTERED: Recorded = fixture!("whois/nic_io/status_registered.txt", "redis.io");
const NIC_IO_AVAILABLE: Recorded = fixture!("whois/nic_io/status_available.txt", "");
const NIC_IO_RESERVED: Recorded = fixture!("whois/nic_io/status_reserved.txt", "");
/// PIR's `WHOIS LIMIT EXCEEDED` line: the "limit exceeded" answer of families that have no
/// recorded throttling text of their own.
const PIR_THROTTLED: Recorded = fixture!("whois/pir/response_throttled.txt", "");

/// The WHOIS text a registry of `family` sends for a name whose truth is `truth`.
///
/// Families without a recording for a state fall back to their *registered* text: a held,
/// pending-delete or reserved name is never offered for registration, so "taken" is the safe
/// stand-in (documented in `tests/fixtures/scenarios/README.md`).
pub(crate) fn whois_answer(family: WhoisFamily, truth: Truth) -> Recorded {
    match (family, truth) {
        (WhoisFamily::Verisign, Truth::Available) => VERISIGN_AVAILABLE,
        (WhoisFamily::Verisign, Truth::PendingDelete) => VERISIGN_PENDING_DELETE,
        (WhoisFamily::Verisign, _) => VERISIGN_REGISTERED,
        (WhoisFamily::NicAf, Truth::Available) => NIC_AF_AVAILABLE,
        (WhoisFamily::NicAf, _) => NIC_AF_REGISTERED,
        (WhoisFamily::Denic, Truth::Available) => DENIC_AVAILABLE,
        (WhoisFamily::Denic, _) => DENIC_REGISTERED,
        (WhoisFamily::NicIo, Truth::Available) => NIC_IO_AVAILABLE,
        (WhoisFamily::NicIo, Truth::Reserved) => NIC_IO_RESERVED,
        (WhoisFamily::NicIo, _) => NIC_IO_REGISTERED,
    }
}

/// The "limit exceeded" text a registry of `family` sends to a client over its rate limit.
/// (`None`: the name is outside every WHOIS registry of the scenario).
pub(crate) fn whois_throttled(family: Option<WhoisFamily>) -> Recorded {
    match family {
        Some(WhoisFamily::Denic) => DENIC_THROTTLED,
        Some(WhoisFamily::Verisign | WhoisFamily::NicAf | WhoisFamily::NicIo) | None => PIR_THROTTLED,
    }
}

// --- RDAP (RFC 9083) ---

const RDAP_VERISIGN_DOMAIN: Recorded = fixture!("rdap/verisign/google.com.json", "google.com");
const RDAP_CENTRALNIC_DOMAIN: Recorded = fixture!("rdap/centralnic/nic.xyz.json", "nic.xyz");
const RDAP_CENTRALNIC_NOT_FOUND: Recorded = fixture!("rdap/centralnic/not-found.json", "jsiqpmcurt.design");

/// The recorded domain object a registry of `family` answers with (status 200).
pub(crate) fn rdap_domain(family: RdapFamily) -> Recorded {
    match family {
        RdapFamily::Verisign => RDAP_VERISIGN_DOMAIN,
        RdapFamily::Centralnic => RDAP_CENTRALNIC_DOMAIN,
    }
}

/// The recorded 404 body of `family`; `None` means an empty body (Verisign answers 404 with
/// no content, tests/data PROVENANCE §5).
pub(crate) fn rdap_not_found(family: RdapFamily) -> Option<Recorded> {
    match family {
        RdapFamily::Verisign => None,
        RdapFamily::Centralnic => Some(RDAP_CENTRALNIC_NOT_FOUND),
    }
}

/// Replaces every stand-alone occurrence of `sample` in `text` by `name`, case-insensitively.
///
/// An occurrence is stand-alone when it is not part of a longer host name or address: the byte
/// before it is not a letter, digit, `-`, `.` or `@`, and the byte after it is not a letter,
/// digit or `-`, nor a `.` that starts another label. An upper-case occurrence gets the
/// upper-case name (Verisign writes `GOOGLE.COM`).
pub(crate) fn rewrite_domain(text: &str, sample: &str, name: &str) -> String {
    if sample.is_empty() {
        return text.to_owned();
    }
    let lower = text.to_ascii_lowercase();
    let needle = sample.to_ascii_lowercase();
    let bytes = text.as_bytes();
    let is_label = |b: u8| b.is_ascii_alphanumeric() || b == b'-';
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut from = 0;
    while let Some(pos) = lower[from..].find(&needle).map(|p| p + from) {
        let end = pos + needle.len();
        let before_ok = pos == 0 || !(is_label(bytes[pos - 1]) || matches!(bytes[pos - 1], b'.' | b'@'));
        let after_ok = match bytes.get(end) {
            None => true,
            Some(&b) if is_label(b) => false,
            Some(b'.') => !bytes.get(end + 1).is_some_and(|&b| is_label(b)),
            Some(_) => true,
        };
        if before_ok && after_ok {
            let found = &text[pos..end];
            out.push_str(&text[copied..pos]);
            if found.bytes().any(|b| b.is_ascii_uppercase()) && !found.bytes().any(|b| b.is_ascii_lowercase()) {
                out.push_str(&name.to_ascii_uppercase());
            } else {
                out.push_str(name);
            }
            copied = end;
        }
        from = end;
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrite_keeps_case_and_neighbours() {
        let text = "Domain Name: GOOGLE.COM\r\nName Server: NS1.GOOGLE.COM\r\n\
                    mail dns-admin@google.com; see google.com.\nnot google.com.af";
        let out = rewrite_domain(text, "google.com", "example.net");
        assert_eq!(
            out,
            "Domain Name: EXAMPLE.NET\r\nName Server: NS1.GOOGLE.COM\r\n\
             mail dns-admin@google.com; see example.net.\nnot google.com.af"
        );
    }

    #[test]
    fn every_sample_mentions_its_domain() {
        for family in [WhoisFamily::Verisign, WhoisFamily::NicAf, WhoisFamily::Denic, WhoisFamily::NicIo] {
            for truth in [Truth::Registered, Truth::Available, Truth::Reserved, Truth::PendingDelete] {
                let rec = whois_answer(family, truth);
                let rendered = rec.render("zz-probe.test");
                assert_eq!(
                    rendered.contains("zz-probe.test") || rendered.contains("ZZ-PROBE.TEST"),
                    !rec.domain.is_empty(),
                    "{family:?}/{truth:?}"
                );
            }
        }
    }
}
