//! RDAP (RFC 9083) domain answer reader.
//!
//! An RDAP lookup (`GET <base>/domain/<name>`, RFC 9082 §3.1.3) answers with HTTP 200 and a
//! domain object (RFC 9083 §5.3) when the name is registered, or HTTP 404 when the registry has
//! no such object (RFC 9083 §6, RFC 7480 §5.3). Everything else — 200 with a help or error
//! document, search results or another object class, 429 (RFC 7480 §5.5), 5xx, malformed JSON —
//! says nothing about the name and is [`RdapClass::Unknown`].

use common::record::{DomainRecord, Registrant};
use serde::Serialize;
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::whois::{DateOrder, parse_date};

/// What an RDAP answer says about the queried domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RdapClass {
    /// HTTP 200 with a domain object (RFC 9083 §5.3): the name is registered.
    Registered,
    /// Registered, but a status says `pending delete` or `redemption period` (RFC 9083 §10.2.2,
    /// the RDAP spellings of EPP `pendingDelete` / RGP `redemptionPeriod`): it may drop soon.
    PendingDelete,
    /// HTTP 404 from the registry: no such domain object.
    NotFound,
    /// Anything else; `detail` says what (429, 5xx, error object, help, bad JSON, ...).
    Unknown,
}

/// The reading of one RDAP answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RdapReading {
    /// The class decided from the HTTP status and the body.
    pub class: RdapClass,
    /// Registration facts read from the domain object (empty unless a domain object was read).
    pub record: DomainRecord,
    /// Human-readable evidence: what was seen (`"HTTP 200 domain object"`, `"HTTP 429"`, the
    /// error object's title, ...). For logs and verdict evidence, not for parsing.
    pub detail: String,
}

/// Reads one RDAP answer given its HTTP status and body bytes.
///
/// Status values are compared case-insensitively against the RFC 9083 §10.2.2 registry
/// (`"pending delete"`, `"redemption period"`); events map `registration` → `created_at`,
/// `last changed` → `updated_at`, `expiration` → `expires_at` (RFC 9083 §4.5, §10.2.3).
pub fn read_rdap(http_status: u16, body: &[u8]) -> RdapReading {
    let unknown = |detail: String| RdapReading { class: RdapClass::Unknown, record: DomainRecord::default(), detail };
    match http_status {
        200 => {}
        404 => {
            // A bootstrap redirector's 404 ("not found in IANA bootstrap file") means we asked
            // the wrong place, not that the registry lacks the name.
            let title = serde_json::from_slice::<Value>(body).ok().map(|v| error_text(&v)).unwrap_or_default();
            let lower = title.to_ascii_lowercase();
            if lower.contains("bootstrap") || lower.contains("boostrap") {
                return unknown(format!("HTTP 404 from a bootstrap service: {title}"));
            }
            let detail = if title.is_empty() { "HTTP 404".to_owned() } else { format!("HTTP 404: {title}") };
            return RdapReading { class: RdapClass::NotFound, record: DomainRecord::default(), detail };
        }
        429 => return unknown("HTTP 429: rate limited by the RDAP server".into()),
        500..=599 => return unknown(format!("HTTP {http_status}: server error")),
        other => return unknown(format!("HTTP {other}: not an answer about the domain")),
    }
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return unknown(format!("HTTP 200 with invalid JSON: {e}")),
    };
    let Some(obj) = value.as_object() else {
        return unknown("HTTP 200 with a JSON body that is not an object".into());
    };
    if obj.contains_key("errorCode") {
        return unknown(format!("HTTP 200 with an error object: {}", error_text(&value)));
    }
    match obj.get("objectClassName").and_then(Value::as_str) {
        Some(c) if c.eq_ignore_ascii_case("domain") => {}
        Some(other) => return unknown(format!("HTTP 200 with a {other} object, not a domain")),
        None if obj.contains_key("domainSearchResults") => {
            return unknown("HTTP 200 with domain search results".into());
        }
        None => {
            return unknown("HTTP 200 without a domain object (help or notice document)".into());
        }
    }
    if let Err(why) = check_shape(&value) {
        return unknown(format!("HTTP 200 with a malformed domain object: {why}"));
    }
    let record = read_domain(&value);
    let pending = record.status.iter().any(|s| {
        let s = s.to_ascii_lowercase();
        s.contains("pending delete") || s.contains("redemption period")
    });
    let name = record.domain.clone().unwrap_or_else(|| "?".into());
    if pending {
        RdapReading {
            class: RdapClass::PendingDelete,
            record,
            detail: format!("HTTP 200 domain object {name}, pending delete"),
        }
    } else {
        RdapReading { class: RdapClass::Registered, record, detail: format!("HTTP 200 domain object {name}") }
    }
}

/// [`read_rdap`] for a lookup of `asked` (A-label) / `asked_unicode` (U-label): a domain object
/// whose `ldhName` (or, failing that, `unicodeName`) names another domain is not evidence about
/// the name asked — a registry answering for the wrong object proves nothing — so it reads as
/// [`RdapClass::Unknown`], never as taken. An object without either name is taken as the answer
/// to the query (RFC 9082 §3.1.3 looks the object up by that name).
pub fn read_rdap_for(asked: &str, asked_unicode: &str, http_status: u16, body: &[u8]) -> RdapReading {
    let reading = read_rdap(http_status, body);
    if !matches!(reading.class, RdapClass::Registered | RdapClass::PendingDelete) {
        return reading;
    }
    let norm = |s: &str| s.trim().trim_end_matches('.').to_lowercase();
    let unicode =
        serde_json::from_slice::<Value>(body).ok().and_then(|v| v.get("unicodeName").and_then(Value::as_str).map(norm));
    let matches = match (&reading.record.domain, &unicode) {
        (Some(ldh), _) => norm(ldh) == norm(asked),
        (None, Some(u)) => *u == norm(asked_unicode) || *u == norm(asked),
        (None, None) => true,
    };
    if matches {
        reading
    } else {
        let named = reading.record.domain.clone().or(unicode).unwrap_or_default();
        RdapReading {
            class: RdapClass::Unknown,
            record: DomainRecord::default(),
            detail: format!("HTTP 200 domain object for {named}, not for {asked}"),
        }
    }
}

/// The title and description of an RDAP error or notice object (RFC 9083 §6).
fn error_text(v: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(t) = v.get("title").and_then(Value::as_str) {
        parts.push(t.to_owned());
    }
    if let Some(d) = v.get("description").and_then(Value::as_array) {
        parts.extend(d.iter().filter_map(Value::as_str).map(str::to_owned));
    }
    parts.join(" ")
}

/// Checks the JSON types of the members we rely on (RFC 9083 §5.3, jCard RFC 7095 §3.2). A
/// server that breaks them is not trusted with a verdict.
fn check_shape(domain: &Value) -> Result<(), String> {
    if let Some(ns) = domain.get("nameservers") {
        let list = ns.as_array().ok_or("`nameservers` is not an array")?;
        if list.iter().any(|n| !n.is_object()) {
            return Err("`nameservers` holds a non-object".into());
        }
    }
    if let Some(st) = domain.get("status") {
        let list = st.as_array().ok_or("`status` is not an array")?;
        if list.iter().any(|s| !s.is_string()) {
            return Err("`status` holds a non-string".into());
        }
    }
    if let Some(ev) = domain.get("events") {
        ev.as_array().ok_or("`events` is not an array")?;
    }
    check_entities(domain, 0)
}

fn check_entities(owner: &Value, depth: usize) -> Result<(), String> {
    let Some(ents) = owner.get("entities") else {
        return Ok(());
    };
    let list = ents.as_array().ok_or("`entities` is not an array")?;
    for e in list {
        if !e.is_object() {
            return Err("`entities` holds a non-object".into());
        }
        if let Some(vc) = e.get("vcardArray") {
            let arr = vc.as_array().ok_or("`vcardArray` is not an array")?;
            let well_formed = arr.len() == 2 && arr[0].as_str() == Some("vcard") && arr[1].is_array();
            if !well_formed {
                return Err("`vcardArray` is not a jCard [\"vcard\", [...]]".into());
            }
        }
        if depth < 4 {
            check_entities(e, depth + 1)?;
        }
    }
    Ok(())
}

fn read_domain(v: &Value) -> DomainRecord {
    let mut r = DomainRecord {
        domain: v.get("ldhName").and_then(Value::as_str).map(|s| s.trim_end_matches('.').to_ascii_lowercase()),
        ..DomainRecord::default()
    };
    if let Some(status) = v.get("status").and_then(Value::as_array) {
        r.status = status.iter().filter_map(Value::as_str).map(str::to_owned).collect();
    }
    for ev in v.get("events").and_then(Value::as_array).into_iter().flatten() {
        let action = ev.get("eventAction").and_then(Value::as_str).unwrap_or_default().to_ascii_lowercase();
        let Some(date) = ev.get("eventDate").and_then(Value::as_str).and_then(rdap_date) else {
            continue;
        };
        let slot = match action.as_str() {
            "registration" => &mut r.created_at,
            "last changed" => &mut r.updated_at,
            "expiration" => &mut r.expires_at,
            _ => continue,
        };
        slot.get_or_insert(date);
    }
    for ns in v.get("nameservers").and_then(Value::as_array).into_iter().flatten() {
        if let Some(name) = ns.get("ldhName").and_then(Value::as_str) {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            if !name.is_empty() && !r.nameservers.contains(&name) {
                r.nameservers.push(name);
            }
        }
    }
    if let Some(registrar) = find_entity(v, "registrar", 0) {
        let card = vcard(registrar);
        r.registrar = card.fn_.or(card.org);
        r.registrar_whois_server = registrar.get("port43").and_then(Value::as_str).map(str::to_ascii_lowercase);
    }
    if let Some(registrant) = find_entity(v, "registrant", 0) {
        let card = vcard(registrant);
        let org = card.org.or(if card.kind_org { card.fn_ } else { None });
        r.registrant = Registrant { org, country: card.country };
    }
    r.dnssec = v.get("secureDNS").and_then(|s| s.get("delegationSigned")).and_then(Value::as_bool);
    r
}

/// RDAP dates are RFC 3339 (RFC 9083 §4.5); some servers drop the zone, which we read as UTC.
fn rdap_date(s: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(s, &Rfc3339).ok().or_else(|| parse_date(s, DateOrder::Dmy))
}

/// The first entity (depth-first, nested entities included) having `role`.
fn find_entity<'a>(owner: &'a Value, role: &str, depth: usize) -> Option<&'a Value> {
    let ents = owner.get("entities")?.as_array()?;
    for e in ents {
        let has_role = e
            .get("roles")
            .and_then(Value::as_array)
            .is_some_and(|roles| roles.iter().filter_map(Value::as_str).any(|r| r.eq_ignore_ascii_case(role)));
        if has_role {
            return Some(e);
        }
    }
    if depth >= 3 {
        return None;
    }
    ents.iter().find_map(|e| find_entity(e, role, depth + 1))
}

#[derive(Default)]
struct Card {
    fn_: Option<String>,
    org: Option<String>,
    country: Option<String>,
    kind_org: bool,
}

/// Reads `fn`, `org`, `kind` and the country of `adr` from an entity's jCard (RFC 7095).
/// The country is the `cc` parameter (RFC 8605) or a two-letter country-name component.
fn vcard(entity: &Value) -> Card {
    let mut card = Card::default();
    let Some(props) = entity.get("vcardArray").and_then(|v| v.get(1)).and_then(Value::as_array) else {
        return card;
    };
    for p in props {
        let Some(p) = p.as_array() else { continue };
        let (Some(name), params, value) = (p.first().and_then(Value::as_str), p.get(1), p.get(3)) else {
            continue;
        };
        let text = value.and_then(jcard_text).filter(|s| !s.trim().is_empty());
        match name.to_ascii_lowercase().as_str() {
            "fn" => card.fn_ = card.fn_.take().or(text),
            "org" => card.org = card.org.take().or(text),
            "kind" => card.kind_org = text.is_some_and(|t| t.eq_ignore_ascii_case("org")),
            "adr" if card.country.is_none() => {
                let cc = params.and_then(|p| p.get("cc")).and_then(Value::as_str).map(str::to_owned);
                let from_value = value
                    .and_then(Value::as_array)
                    .and_then(|parts| parts.get(6))
                    .and_then(Value::as_str)
                    .filter(|c| c.len() == 2 && c.chars().all(|ch| ch.is_ascii_alphabetic()))
                    .map(str::to_owned);
                card.country = cc.or(from_value).map(|c| c.to_ascii_uppercase());
            }
            _ => {}
        }
    }
    card
}

/// A jCard value as text: a string, or the first non-empty string of a structured value.
fn jcard_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.trim().to_owned()),
        Value::Array(parts) => parts.iter().find_map(jcard_text).filter(|s| !s.is_empty()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOMAIN: &str = r#"{"objectClassName":"domain","ldhName":"EXAMPLE.COM","status":["client transfer prohibited"],
      "events":[{"eventAction":"registration","eventDate":"1995-08-14T04:00:00Z"},
                {"eventAction":"expiration","eventDate":"2030-08-13T04:00:00Z"},
                {"eventAction":"last changed","eventDate":"2024-08-14T07:01:34Z"}],
      "nameservers":[{"objectClassName":"nameserver","ldhName":"A.IANA-SERVERS.NET."}],
      "secureDNS":{"delegationSigned":true},
      "entities":[{"objectClassName":"entity","roles":["registrar"],
                   "vcardArray":["vcard",[["version",{},"text","4.0"],["fn",{},"text","Example Registrar"]]]},
                  {"objectClassName":"entity","roles":["registrant"],
                   "vcardArray":["vcard",[["version",{},"text","4.0"],["org",{},"text","Example Org"],
                   ["adr",{"cc":"us"},"text",["","","","","","",""]]]]}]}"#;

    #[test]
    fn domain_object_is_registered_with_fields() {
        let r = read_rdap(200, DOMAIN.as_bytes());
        assert_eq!(r.class, RdapClass::Registered);
        assert_eq!(r.record.domain.as_deref(), Some("example.com"));
        assert_eq!(r.record.nameservers, vec!["a.iana-servers.net".to_owned()]);
        assert_eq!(r.record.registrar.as_deref(), Some("Example Registrar"));
        assert_eq!(r.record.registrant.org.as_deref(), Some("Example Org"));
        assert_eq!(r.record.registrant.country.as_deref(), Some("US"));
        assert_eq!(r.record.dnssec, Some(true));
        assert!(r.record.created_at.is_some() && r.record.expires_at.is_some() && r.record.updated_at.is_some());
    }

    #[test]
    fn redemption_is_pending_delete() {
        let body = DOMAIN.replace("\"client transfer prohibited\"", "\"Redemption Period\", \"pending delete\"");
        assert_eq!(read_rdap(200, body.as_bytes()).class, RdapClass::PendingDelete);
    }

    #[test]
    fn statuses_and_bodies_that_say_nothing() {
        assert_eq!(read_rdap(404, b"").class, RdapClass::NotFound);
        assert_eq!(read_rdap(404, br#"{"errorCode":404,"title":"Object not found"}"#).class, RdapClass::NotFound);
        let boot = br#"{"errorCode":404,"title":"domain test.fr not found in IANA boostrap file"}"#;
        assert_eq!(read_rdap(404, boot).class, RdapClass::Unknown);
        assert_eq!(read_rdap(429, b"").class, RdapClass::Unknown);
        assert_eq!(read_rdap(503, b"").class, RdapClass::Unknown);
        assert_eq!(read_rdap(400, b"").class, RdapClass::Unknown);
        assert_eq!(read_rdap(200, b"not json").class, RdapClass::Unknown);
        assert_eq!(read_rdap(200, br#"{"errorCode":500,"title":"x"}"#).class, RdapClass::Unknown);
        assert_eq!(
            read_rdap(200, br#"{"objectClassName":"nameserver","ldhName":"ns1.example"}"#).class,
            RdapClass::Unknown
        );
        assert_eq!(read_rdap(200, br#"{"domainSearchResults":[]}"#).class, RdapClass::Unknown);
        assert_eq!(read_rdap(200, br#"{"rdapConformance":["rdap_level_0"],"notices":[]}"#).class, RdapClass::Unknown);
        let other = br#"{"objectClassName":"domain","ldhName":"EXAMPLE.NET","status":["active"]}"#;
        assert_eq!(read_rdap_for("example.com", "example.com", 200, other).class, RdapClass::Unknown);
        let same = br#"{"objectClassName":"domain","ldhName":"EXAMPLE.COM.","status":["active"]}"#;
        assert_eq!(read_rdap_for("example.com", "example.com", 200, same).class, RdapClass::Registered);
        let idn = r#"{"objectClassName":"domain","unicodeName":"bücher.de","status":["active"]}"#;
        assert_eq!(read_rdap_for("xn--bcher-kva.de", "bücher.de", 200, idn.as_bytes()).class, RdapClass::Registered);
        let other_idn = r#"{"objectClassName":"domain","unicodeName":"bucher.de","status":["active"]}"#;
        assert_eq!(read_rdap_for("xn--bcher-kva.de", "bücher.de", 200, other_idn.as_bytes()).class, RdapClass::Unknown);
        let broken = br#"{"objectClassName":"domain","ldhName":"x.com","entities":[{"vcardArray":{}}]}"#;
        assert_eq!(read_rdap(200, broken).class, RdapClass::Unknown);
    }
}
