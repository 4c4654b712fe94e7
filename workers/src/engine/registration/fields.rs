//! The `/v1/whois` fields (spec §2.3) from a registry answer: EPP status names, registrant
//! redaction, and the clean-up that turns a reader's [`DomainRecord`] into what the endpoint shows.
//!
//! * Status: RDAP statuses (RFC 9083 §10.2.2) are mapped back to EPP names with the RFC 8056 §2
//!   table (`client transfer prohibited` → `clientTransferProhibited`, `active` → `ok`,
//!   `associated` → `linked`); WHOIS lines keep their first word when it is an EPP name
//!   (`clientTransferProhibited https://icann.org/epp#…`); anything else is kept as printed.
//! * Registrant: `null` when the registry withholds it: RFC 9537 `redacted` members naming the
//!   registrant's organisation or country, or values such as "REDACTED FOR PRIVACY", "Data
//!   Protected", "Not Disclosed". Each withheld field is listed (`registrant.org`, …).
//! * Country: two ASCII letters, upper case; anything else is not a country code and is dropped.

use common::record::DomainRecord;

use crate::parse::rdap::{Link, Member, Obj, RdapObject, items};

/// EPP status values (RFC 5731 §2.3, RFC 3915 §3.1 for the RGP ones) with their RDAP spellings
/// (RFC 8056 §2).
const EPP_RDAP: &[(&str, &str)] = &[
    ("ok", "active"),
    ("linked", "associated"),
    ("inactive", "inactive"),
    ("clientDeleteProhibited", "client delete prohibited"),
    ("clientHold", "client hold"),
    ("clientRenewProhibited", "client renew prohibited"),
    ("clientTransferProhibited", "client transfer prohibited"),
    ("clientUpdateProhibited", "client update prohibited"),
    ("pendingCreate", "pending create"),
    ("pendingDelete", "pending delete"),
    ("pendingRenew", "pending renew"),
    ("pendingTransfer", "pending transfer"),
    ("pendingUpdate", "pending update"),
    ("serverDeleteProhibited", "server delete prohibited"),
    ("serverHold", "server hold"),
    ("serverRenewProhibited", "server renew prohibited"),
    ("serverTransferProhibited", "server transfer prohibited"),
    ("serverUpdateProhibited", "server update prohibited"),
    ("addPeriod", "add period"),
    ("autoRenewPeriod", "auto renew period"),
    ("renewPeriod", "renew period"),
    ("transferPeriod", "transfer period"),
    ("redemptionPeriod", "redemption period"),
    ("pendingRestore", "pending restore"),
];

/// One status label as an EPP name where one applies, else the registry's own words. RDAP-only
/// spellings (`active` → `ok`, `associated` → `linked`, RFC 8056 §2) are mapped only when
/// `from_rdap`: in WHOIS text "active" is a registry's own word.
pub fn epp_status(label: &str, from_rdap: bool) -> String {
    let label = label.trim();
    let first = label.split_whitespace().next().unwrap_or_default();
    // WHOIS: "clientTransferProhibited https://icann.org/epp#clientTransferProhibited" or "ok".
    if let Some((epp, _)) = EPP_RDAP.iter().find(|(epp, _)| epp.eq_ignore_ascii_case(first)) {
        // `first` is the trimmed label's first word, so its length is a boundary of the label.
        let rest = label.get(first.len()..).unwrap_or_default().trim_start();
        let rest_is_link = rest.is_empty() || rest.starts_with("http") || rest.starts_with('(');
        if rest_is_link {
            return (*epp).to_owned();
        }
    }
    // RDAP spelling (case and spacing as servers print it).
    let spaced = label.to_ascii_lowercase().split_whitespace().collect::<Vec<_>>().join(" ");
    let rdap_only = |epp: &str| matches!(epp, "ok" | "linked");
    if let Some((epp, _)) = EPP_RDAP.iter().find(|(epp, rdap)| *rdap == spaced && (from_rdap || !rdap_only(epp))) {
        return (*epp).to_owned();
    }
    label.to_owned()
}

/// The statuses mapped with [`epp_status`], duplicates dropped, order kept.
pub fn epp_statuses(labels: &[String], from_rdap: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in labels {
        let s = epp_status(l, from_rdap);
        if !s.is_empty() && !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// Whether a published value is a privacy placeholder rather than data.
pub fn is_redaction_wording(value: &str) -> bool {
    let v = value.trim().to_ascii_lowercase();
    if v.is_empty() {
        return false;
    }
    const WORDS: &[&str] = &[
        "redacted",
        "data protected",
        "not disclosed",
        "non-public data",
        "withheld",
        "privacy",
        "gdpr",
        "statutory masking",
        "data restricted",
        "hidden upon user request",
        "not available from registry",
        "contact privacy",
    ];
    WORDS.iter().any(|w| v.contains(w))
}

/// Fields withheld according to an RDAP answer's RFC 9537 `redacted` array, as response paths.
pub fn rdap_redactions(body: &[u8]) -> Vec<String> {
    let Ok(Some(v)) = RdapObject::parse(body) else { return Vec::new() };
    let mut out = Vec::new();
    for Obj(item) in items(&v.redacted) {
        // `name.type` when present (of any type), else `name.description` (RFC 9537 §4.2).
        let name = item
            .name
            .get()
            .and_then(|Obj(n)| if n.type_.is_present() { n.type_.get() } else { n.description.get() })
            .map(|n| n.to_ascii_lowercase())
            .unwrap_or_default();
        let path = [&item.pre_path, &item.path, &item.post_path]
            .into_iter()
            .filter_map(Member::get)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" ")
            .to_ascii_lowercase();
        let registrant = name.contains("registrant") || path.contains("registrant");
        if !registrant {
            continue;
        }
        if name.contains("organi") || path.contains("'org'") {
            push(&mut out, "registrant.org");
        }
        if name.contains("country") || (path.contains("'adr'") && name.is_empty()) {
            push(&mut out, "registrant.country");
        }
    }
    out
}

/// Fields withheld according to WHOIS text: `Registrant Organization:` / `Registrant Country:`
/// lines whose value is a privacy placeholder.
pub fn whois_redactions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else { continue };
        let key = key.trim().to_ascii_lowercase();
        if !key.starts_with("registrant") || !is_redaction_wording(value) {
            continue;
        }
        if key.contains("organi") {
            push(&mut out, "registrant.org");
        } else if key.contains("country") {
            push(&mut out, "registrant.country");
        }
    }
    out
}

/// DNSSEC as a WHOIS answer publishes it (`DNSSEC: unsigned`, `dnssec: signed delegation`,
/// `DNSSEC: yes`); `None` when no line says.
pub fn whois_dnssec(text: &str) -> Option<bool> {
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else { continue };
        if !key.trim().to_ascii_lowercase().ends_with("dnssec") {
            continue;
        }
        let v = value.trim().to_ascii_lowercase();
        let negative = ["unsigned", "not signed", "inactive", "no", "false", "none", "disabled"];
        if negative.iter().any(|n| v == *n || v.starts_with(&format!("{n} ")) || v.starts_with("unsigned")) {
            return Some(false);
        }
        let positive = ["signed", "signeddelegation", "signed delegation", "yes", "true", "active", "enabled"];
        if positive.iter().any(|p| v == *p || v.starts_with(&format!("{p} ")) || v.starts_with("signed")) {
            return Some(true);
        }
        // Other wordings and languages (the lexicon's `dnssec_values`).
        if let Some(signed) = crate::parse::lexicon::field_lexicon().dnssec(&v) {
            return Some(signed);
        }
    }
    None
}

fn push(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|i| i == item) {
        list.push(item.to_owned());
    }
}

/// Turns a reader's record into the endpoint's: EPP statuses, registrant withheld values nulled
/// (and added to `redacted`), a country that is not two letters dropped, an empty registrar
/// `None`. `from_rdap` says whether the statuses are RDAP spellings. Returns the registry's own
/// status labels, as printed.
pub fn finish(record: &mut DomainRecord, redacted: &mut Vec<String>, from_rdap: bool) -> Vec<String> {
    let raw = std::mem::take(&mut record.status);
    record.status = epp_statuses(&raw, from_rdap);
    if record.registrant.org.as_deref().is_some_and(is_redaction_wording) {
        push(redacted, "registrant.org");
    }
    if record.registrant.country.as_deref().is_some_and(is_redaction_wording) {
        push(redacted, "registrant.country");
    }
    if redacted.iter().any(|r| r == "registrant.org") {
        record.registrant.org = None;
    }
    if redacted.iter().any(|r| r == "registrant.country") {
        record.registrant.country = None;
    }
    record.registrant.country = record
        .registrant
        .country
        .take()
        .map(|c| c.trim().to_ascii_uppercase())
        .filter(|c| c.len() == 2 && c.chars().all(|ch| ch.is_ascii_alphabetic()));
    record.registrant.org = record.registrant.org.take().map(|o| o.trim().to_owned()).filter(|o| !o.is_empty());
    record.registrar = record.registrar.take().map(|r| r.trim().to_owned()).filter(|r| !r.is_empty());
    raw
}

/// The registrar's RDAP URL from a thin registry's answer: the registrar entity's `links` member
/// with `rel: "related"` and an RDAP media type (the gTLD RDAP profile's pointer to the registrar's
/// server), or a top-level `related` link whose href ends in `/domain/<name>`.
pub fn registrar_rdap_link(body: &[u8]) -> Option<String> {
    let v = RdapObject::parse(body).ok()??;
    let is_rdap_related = |l: &Link| {
        l.rel.get().is_some_and(|r| r.eq_ignore_ascii_case("related"))
            && l.type_.get().is_none_or(|t| t.contains("rdap"))
            && l.href.get().is_some_and(|h| h.contains("/domain/"))
    };
    let from_registrar = items(&v.entities)
        .filter(|Obj(e)| {
            e.roles.get().is_some_and(|r| r.iter().filter_map(Member::get).any(|r| r.eq_ignore_ascii_case("registrar")))
        })
        .flat_map(|Obj(e)| items(&e.links));
    items(&v.links)
        .map(|Obj(l)| l)
        .chain(from_registrar.map(|Obj(l)| l))
        .find(|l| is_rdap_related(l))
        .and_then(|l| l.href.get())
        .cloned()
}

/// Merges a registrar's fuller record into the registry's: the registry stays the authority for
/// status, name servers, dates and DNSSEC it published; the registrar fills what is missing
/// (registrant, registrar name, dates a thin registry lacks).
pub fn merge_registrar(registry: &mut DomainRecord, registrar: DomainRecord) {
    if registry.registrant.org.is_none() {
        registry.registrant.org = registrar.registrant.org;
    }
    if registry.registrant.country.is_none() {
        registry.registrant.country = registrar.registrant.country;
    }
    registry.registrar = registry.registrar.take().or(registrar.registrar);
    registry.created_at = registry.created_at.or(registrar.created_at);
    registry.updated_at = registry.updated_at.or(registrar.updated_at);
    registry.expires_at = registry.expires_at.or(registrar.expires_at);
    registry.dnssec = registry.dnssec.or(registrar.dnssec);
    if registry.nameservers.is_empty() {
        registry.nameservers = registrar.nameservers;
    }
    if registry.status.is_empty() {
        registry.status = registrar.status;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_epp() {
        assert_eq!(epp_status("client transfer prohibited", true), "clientTransferProhibited");
        assert_eq!(epp_status("Client Transfer Prohibited", true), "clientTransferProhibited");
        assert_eq!(epp_status("active", true), "ok");
        assert_eq!(epp_status("active", false), "active", "a WHOIS registry's own word");
        assert_eq!(epp_status("associated", true), "linked");
        assert_eq!(epp_status("redemption period", true), "redemptionPeriod");
        assert_eq!(
            epp_status("clientTransferProhibited https://icann.org/epp#clientTransferProhibited", false),
            "clientTransferProhibited"
        );
        assert_eq!(epp_status("ok", false), "ok");
        assert_eq!(epp_status("connect", false), "connect");
        assert_eq!(epp_status("Registered until renewal date.", false), "Registered until renewal date.");
    }

    #[test]
    fn redactions_are_found_and_values_dropped() {
        let body = br#"{"redacted":[{"name":{"type":"Registrant Organization"},"prePath":"$.entities[?(@.roles[0]=='registrant')].vcardArray[1][?(@[0]=='org')]","method":"removal"},
            {"name":{"type":"Registrant Country"},"method":"removal"},{"name":{"type":"Tech Email"},"method":"removal"}]}"#;
        assert_eq!(rdap_redactions(body), vec!["registrant.org".to_owned(), "registrant.country".to_owned()]);
        assert_eq!(whois_dnssec("Name Server: a.example\nDNSSEC: unsigned\n"), Some(false));
        assert_eq!(whois_dnssec("dnssec:       signed delegation\n"), Some(true));
        assert_eq!(whois_dnssec("DNSSEC: signedDelegation"), Some(true));
        assert_eq!(whois_dnssec("Status: ok\n"), None);
        let text = "Registrant Organization: REDACTED FOR PRIVACY\nRegistrant Country: US\n";
        assert_eq!(whois_redactions(text), vec!["registrant.org".to_owned()]);
        let mut r = DomainRecord::default();
        r.registrant.org = Some("Data Protected".into());
        r.registrant.country = Some("usa".into());
        r.status = vec!["client hold".into()];
        let mut red = Vec::new();
        let raw = finish(&mut r, &mut red, true);
        assert_eq!(r.registrant.org, None);
        assert_eq!(r.registrant.country, None, "not a two-letter code");
        assert_eq!(red, vec!["registrant.org".to_owned()]);
        assert_eq!(r.status, vec!["clientHold".to_owned()]);
        assert_eq!(raw, vec!["client hold".to_owned()]);
    }

    #[test]
    fn registrar_link_is_found() {
        let body = br#"{"entities":[{"roles":["registrar"],"links":[{"rel":"related","type":"application/rdap+json","href":"https://rdap.registrar.example/domain/example.com"}]}]}"#;
        assert_eq!(registrar_rdap_link(body).as_deref(), Some("https://rdap.registrar.example/domain/example.com"));
        assert_eq!(registrar_rdap_link(br#"{"links":[{"rel":"self","href":"https://x/domain/a"}]}"#), None);
    }
}
