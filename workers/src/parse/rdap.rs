//! RDAP (RFC 9083) domain answer reader.
//!
//! An RDAP lookup (`GET <base>/domain/<name>`, RFC 9082 §3.1.3) answers with HTTP 200 and a
//! domain object (RFC 9083 §5.3) when the name is registered, or HTTP 404 when the registry has
//! no such object (RFC 9083 §6, RFC 7480 §5.3); some servers send the §6 error object with
//! `errorCode` 404 under HTTP 200, which reads the same. A domain object's statuses (RFC 9083
//! §10.2.2 with RFC 8056's EPP/RGP mapping) refine "registered": pending delete / redemption,
//! a registry's `reserved` extension, or — contradicting the object — `available`, which gives
//! no verdict. Everything else — 200 with a help or other error document, search results or
//! another object class, 429 (RFC 7480 §5.5), 5xx, malformed JSON — says nothing about the name
//! and is [`RdapClass::Unknown`].

use common::record::{DomainRecord, Registrant};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

/// What an RDAP answer says about the queried domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RdapClass {
    /// HTTP 200 with a domain object (RFC 9083 §5.3): the name is registered.
    Registered,
    /// Registered, but a status says `pending delete` or `redemption period` (RFC 9083 §10.2.2,
    /// the RDAP spellings of EPP `pendingDelete` / RGP `redemptionPeriod`): it may drop soon.
    PendingDelete,
    /// A domain object whose status says the registry withholds the name (a registry
    /// extension: `reserved`, `registry reserved`; RFC 9083 §10.2.2 has no such value).
    Reserved,
    /// HTTP 404 from the registry, or an RFC 9083 §6 error object with `errorCode` 404 sent with
    /// HTTP 200: no such domain object. (Whether the server that said it is the registry's is
    /// the caller's question: `engine.rs` only takes it from the suffix's own RDAP host.)
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

/// One RDAP member read leniently (RFC 9083 members the readers use): absent, of the expected
/// JSON type, or present with another type. A member of an unexpected type never fails the
/// whole answer; the shape check decides what such a member means for the verdict.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Member<T> {
    /// The member is not in the object.
    #[default]
    Absent,
    /// The member holds a value of the expected type.
    Ok(T),
    /// The member is present (possibly `null`) with a value of another JSON type.
    Malformed,
}

impl<T> Member<T> {
    /// The value when it has the expected type.
    pub fn get(&self) -> Option<&T> {
        match self {
            Member::Ok(v) => Some(v),
            Member::Absent | Member::Malformed => None,
        }
    }

    /// Whether the member is in the object at all (`null` included).
    pub fn is_present(&self) -> bool {
        !matches!(self, Member::Absent)
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Member<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Buffer the member, then try the expected type: a mismatch is recorded, not raised.
        let v = Value::deserialize(d)?;
        Ok(T::deserialize(v).map_or(Member::Malformed, Member::Ok))
    }
}

/// A JSON object read as `T`. serde's derived structs also accept a JSON array (fields by
/// position); RDAP objects (RFC 9083 §4, §5) are JSON objects only, so anything else is refused.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Obj<T>(pub T);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = serde_json::Map::deserialize(d)?;
        T::deserialize(Value::Object(map)).map(Obj).map_err(serde::de::Error::custom)
    }
}

/// An array member whose items are each read leniently.
pub type List<T> = Member<Vec<Member<T>>>;

/// The items of a list member that have the expected type (none when the member is absent or
/// is not an array).
pub fn items<T>(list: &List<T>) -> impl Iterator<Item = &T> {
    list.get().into_iter().flatten().filter_map(Member::get)
}

/// The members of an RDAP answer the readers use: a domain object (RFC 9083 §5.3), an error
/// object (§6) or a help/search answer (§7, §8). Unknown members are ignored.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RdapObject {
    /// `objectClassName` (RFC 9083 §4.7): `"domain"` for a domain object.
    pub object_class_name: Member<String>,
    /// `ldhName` (§3, §5.3): the name in LDH (A-label) form.
    pub ldh_name: Member<String>,
    /// `unicodeName` (§3, §5.3): the name with U-labels.
    pub unicode_name: Member<String>,
    /// `status` (§4.6): RFC 9083 §10.2.2 status values.
    pub status: List<String>,
    /// `events` (§4.5).
    pub events: List<Obj<Event>>,
    /// `entities` (§5.1): registrar, registrant and other contacts.
    pub entities: List<Obj<Entity>>,
    /// `nameservers` (§5.2 objects inside §5.3).
    pub nameservers: List<Obj<Nameserver>>,
    /// `secureDNS` (§5.3).
    #[serde(rename = "secureDNS")]
    pub secure_dns: Member<Obj<SecureDns>>,
    /// `links` (§4.2).
    pub links: List<Obj<Link>>,
    /// `redacted` (RFC 9537 §4.2).
    pub redacted: List<Obj<Redacted>>,
    /// `notices` (§4.3), read only for their presence.
    pub notices: Member<IgnoredAny>,
    /// `remarks` (§4.3), read only for their presence.
    pub remarks: Member<IgnoredAny>,
    /// `errorCode` (§6): present (any type) in an error object; the HTTP status it stands for.
    pub error_code: Member<Value>,
    /// `title` (§6) of an error object.
    pub title: Member<String>,
    /// `description` (§6) of an error object.
    pub description: List<String>,
    /// `domainSearchResults` (§8): present in a search answer.
    pub domain_search_results: Member<IgnoredAny>,
}

impl RdapObject {
    /// Reads an RDAP JSON body. `Ok(None)` when the JSON is valid but not an object.
    ///
    /// # Errors
    /// The JSON syntax error when the body is not JSON.
    pub fn parse(body: &[u8]) -> Result<Option<Self>, serde_json::Error> {
        // Through `Value` so that a repeated member keeps its last value, as a JSON object
        // read as a map does, instead of failing the answer.
        let value: Value = serde_json::from_slice(body)?;
        Ok(Obj::<Self>::deserialize(value).ok().map(|o| o.0))
    }
}

/// An event (RFC 9083 §4.5).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Event {
    /// `eventAction` (§10.2.3 values: `registration`, `expiration`, `last changed`, ...).
    pub event_action: Member<String>,
    /// `eventDate`, an RFC 3339 timestamp (§4.5); see [`rdap_date`].
    pub event_date: Member<String>,
}

/// An entity (RFC 9083 §5.1).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Entity {
    /// `roles` (§10.2.4: `registrar`, `registrant`, ...).
    pub roles: List<String>,
    /// `vcardArray`: a jCard (RFC 7095). Kept as JSON: it is a heterogeneous array
    /// (`["vcard", [[name, params, type, value...], ...]]`) read by [`vcard`].
    pub vcard_array: Member<Value>,
    /// `port43` (§4.7): the entity's WHOIS server.
    pub port43: Member<String>,
    /// `publicIds` (§4.8), read only for their presence.
    pub public_ids: Member<IgnoredAny>,
    /// Nested `entities` (§5.1).
    pub entities: List<Obj<Entity>>,
    /// `links` (§4.2).
    pub links: List<Obj<Link>>,
    /// `remarks` (§4.3), read only for their presence.
    pub remarks: Member<IgnoredAny>,
}

/// A nameserver object (RFC 9083 §5.2), as listed in a domain object.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Nameserver {
    /// `ldhName` of the host.
    pub ldh_name: Member<String>,
}

/// `secureDNS` (RFC 9083 §5.3).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SecureDns {
    /// `delegationSigned`: whether the delegation carries DS records.
    pub delegation_signed: Member<bool>,
}

/// A link (RFC 9083 §4.2, RFC 8288).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Link {
    /// `rel`: the relation (`self`, `related`, ...).
    pub rel: Member<String>,
    /// `href`: the target URL.
    pub href: Member<String>,
    /// `type`: the target's media type (`application/rdap+json`).
    #[serde(rename = "type")]
    pub type_: Member<String>,
}

/// A redaction notice (RFC 9537 §4.2).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Redacted {
    /// `name`: the redacted field's registered `type` or free `description`.
    pub name: Member<Obj<RedactedName>>,
    /// `prePath` (JSONPath, deprecated by RFC 9537 but published).
    pub pre_path: Member<String>,
    /// `path`.
    pub path: Member<String>,
    /// `postPath`.
    pub post_path: Member<String>,
}

/// The `name` of a redaction (RFC 9537 §4.2).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RedactedName {
    /// `type`: a registered redacted-field name (`Registrant Organization`, ...).
    #[serde(rename = "type")]
    pub type_: Member<String>,
    /// `description`: free text naming the field.
    pub description: Member<String>,
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
            let title = RdapObject::parse(body).ok().flatten().map(|o| error_text(&o)).unwrap_or_default();
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
    let obj = match RdapObject::parse(body) {
        Ok(Some(o)) => o,
        Ok(None) => return unknown("HTTP 200 with a JSON body that is not an object".into()),
        Err(e) => return unknown(format!("HTTP 200 with invalid JSON: {e}")),
    };
    if obj.error_code.is_present() {
        // RFC 9083 §6: the error object's `errorCode` is the HTTP status it stands for. Some
        // servers send it with HTTP 200; an `errorCode` 404 is then the same "no such object"
        // as an HTTP 404 (with the same bootstrap-service exception).
        let text = error_text(&obj);
        if error_code(&obj) == Some(404) {
            let lower = text.to_ascii_lowercase();
            if lower.contains("bootstrap") || lower.contains("boostrap") {
                return unknown(format!("HTTP 200, error 404 from a bootstrap service: {text}"));
            }
            return RdapReading {
                class: RdapClass::NotFound,
                record: DomainRecord::default(),
                detail: format!("HTTP 200 with an error object, errorCode 404: {text}"),
            };
        }
        let code = error_code(&obj).map_or_else(|| "?".to_owned(), |c| c.to_string());
        return unknown(format!("HTTP 200 with an error object (errorCode {code}): {text}"));
    }
    match obj.object_class_name.get() {
        Some(c) if c.eq_ignore_ascii_case("domain") => {}
        Some(other) => return unknown(format!("HTTP 200 with a {other} object, not a domain")),
        None if obj.domain_search_results.is_present() => {
            return unknown("HTTP 200 with domain search results".into());
        }
        None => {
            return unknown("HTTP 200 without a domain object (help or notice document)".into());
        }
    }
    if let Err(why) = check_shape(&obj) {
        return unknown(format!("HTTP 200 with a malformed domain object: {why}"));
    }
    let record = read_domain(&obj);
    let name = record.domain.clone().unwrap_or_else(|| "?".into());
    let (class, detail) = match status_meaning(&record.status) {
        StatusMeaning::Denied(s) => {
            // A domain object that says it is not registered contradicts itself: no verdict.
            return unknown(format!("HTTP 200 domain object {name} with status {s:?}, which denies a registration"));
        }
        StatusMeaning::Reserved(s) => (RdapClass::Reserved, format!("HTTP 200 domain object {name}, status {s:?}")),
        StatusMeaning::PendingDelete(s) => {
            (RdapClass::PendingDelete, format!("HTTP 200 domain object {name}, pending delete (status {s:?})"))
        }
        StatusMeaning::Registered => (RdapClass::Registered, format!("HTTP 200 domain object {name}")),
    };
    RdapReading { class, record, detail }
}

/// The `errorCode` of an RFC 9083 §6 error object, as a number (some servers send it as a
/// string).
fn error_code(o: &RdapObject) -> Option<u16> {
    o.error_code.get().and_then(|v| match v {
        Value::Number(n) => n.as_u64().and_then(|n| u16::try_from(n).ok()),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    })
}

/// What a domain object's statuses say beyond "registered".
#[derive(Debug, PartialEq, Eq)]
enum StatusMeaning {
    /// Only registered states: `active`, `inactive` (no delegation), `client hold`/`server
    /// hold`, the `… prohibited` locks, `pending create/renew/transfer/update/restore`, the RGP
    /// grace periods, `locked`, `removed`/`obscured`/`private`/`proxy` (RFC 9083 §10.2.2: parts
    /// of the *object's data* were withheld — not a removed registration), and statuses we do not
    /// know.
    Registered,
    /// EPP `pendingDelete` / RGP `redemptionPeriod` (RFC 8056 §2: `pending delete`, `redemption
    /// period`) and registry variants (`pending purge`, `quarantine`, `redemption`), in any case
    /// or spacing (`pendingDelete`, `PENDING_DELETE`): the name may drop soon.
    PendingDelete(String),
    /// A registry extension saying the name is withheld (`reserved`, `registry reserved`).
    Reserved(String),
    /// A status that denies the registration (`available`, `free`, `not registered`).
    Denied(String),
}

/// Reads a domain object's statuses (RFC 9083 §10.2.2, RFC 8056 §2 mapping of EPP RFC 5731 /
/// RGP RFC 3915 statuses). A denial wins over everything (the object contradicts itself), then
/// reserved, then pending delete.
fn status_meaning(statuses: &[String]) -> StatusMeaning {
    use crate::parse::lexicon::{free_status, reserved_status};
    const PENDING_DELETE: &[&str] = &["pendingdelete", "redemptionperiod", "redemption", "pendingpurge", "quarantine"];
    let compact = |s: &str| s.chars().filter(char::is_ascii_alphanumeric).collect::<String>().to_ascii_lowercase();
    if let Some(s) = statuses.iter().find(|s| free_status(s).is_some()) {
        return StatusMeaning::Denied(s.clone());
    }
    if let Some(s) = statuses.iter().find(|s| reserved_status(s).is_some()) {
        return StatusMeaning::Reserved(s.clone());
    }
    if let Some(s) = statuses.iter().find(|s| PENDING_DELETE.contains(&compact(s).as_str())) {
        return StatusMeaning::PendingDelete(s.clone());
    }
    StatusMeaning::Registered
}

/// [`read_rdap`] for a lookup of `asked` (A-label) / `asked_unicode` (U-label): a domain object
/// whose `ldhName` (or, failing that, `unicodeName`) names another domain is not evidence about
/// the name asked — a registry answering for the wrong object proves nothing — so it reads as
/// [`RdapClass::Unknown`], never as taken. An object without either name is taken as the answer
/// to the query (RFC 9082 §3.1.3 looks the object up by that name).
pub fn read_rdap_for(asked: &str, asked_unicode: &str, http_status: u16, body: &[u8]) -> RdapReading {
    let reading = read_rdap(http_status, body);
    if !matches!(reading.class, RdapClass::Registered | RdapClass::PendingDelete | RdapClass::Reserved) {
        return reading;
    }
    let norm = |s: &str| s.trim().trim_end_matches('.').to_lowercase();
    let unicode = RdapObject::parse(body).ok().flatten().and_then(|o| o.unicode_name.get().map(|u| norm(u)));
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
fn error_text(o: &RdapObject) -> String {
    let mut parts = Vec::new();
    if let Some(t) = o.title.get() {
        parts.push(t.clone());
    }
    parts.extend(items(&o.description).cloned());
    parts.join(" ")
}

/// Checks the JSON types of the members we rely on (RFC 9083 §5.3, jCard RFC 7095 §3.2). A
/// server that breaks them is not trusted with a verdict.
fn check_shape(domain: &RdapObject) -> Result<(), String> {
    match &domain.nameservers {
        Member::Malformed => return Err("`nameservers` is not an array".into()),
        Member::Ok(list) if list.iter().any(|n| !matches!(n, Member::Ok(_))) => {
            return Err("`nameservers` holds a non-object".into());
        }
        _ => {}
    }
    match &domain.status {
        Member::Malformed => return Err("`status` is not an array".into()),
        Member::Ok(list) if list.iter().any(|s| !matches!(s, Member::Ok(_))) => {
            return Err("`status` holds a non-string".into());
        }
        _ => {}
    }
    if matches!(domain.events, Member::Malformed) {
        return Err("`events` is not an array".into());
    }
    check_entities(&domain.entities, 0)
}

fn check_entities(ents: &List<Obj<Entity>>, depth: usize) -> Result<(), String> {
    let list = match ents {
        Member::Absent => return Ok(()),
        Member::Malformed => return Err("`entities` is not an array".into()),
        Member::Ok(list) => list,
    };
    for e in list {
        let Member::Ok(Obj(e)) = e else {
            return Err("`entities` holds a non-object".into());
        };
        if let Member::Ok(vc) = &e.vcard_array {
            let arr = vc.as_array().ok_or("`vcardArray` is not an array")?;
            let well_formed = arr.len() == 2 && arr[0].as_str() == Some("vcard") && arr[1].is_array();
            if !well_formed {
                return Err("`vcardArray` is not a jCard [\"vcard\", [...]]".into());
            }
        }
        if depth < 4 {
            check_entities(&e.entities, depth + 1)?;
        }
    }
    Ok(())
}

fn read_domain(v: &RdapObject) -> DomainRecord {
    let mut r = DomainRecord {
        domain: v.ldh_name.get().map(|s| s.trim_end_matches('.').to_ascii_lowercase()),
        ..DomainRecord::default()
    };
    r.status = items(&v.status).cloned().collect();
    for Obj(ev) in items(&v.events) {
        let action = ev.event_action.get().map(|a| a.to_ascii_lowercase()).unwrap_or_default();
        let Some(date) = ev.event_date.get().and_then(|d| rdap_date(d)) else {
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
    for Obj(ns) in items(&v.nameservers) {
        if let Some(name) = ns.ldh_name.get() {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            if !name.is_empty() && !r.nameservers.contains(&name) {
                r.nameservers.push(name);
            }
        }
    }
    if let Some(registrar) = find_entity(&v.entities, "registrar", 0) {
        let card = vcard(registrar);
        r.registrar = card.fn_.or(card.org);
        r.registrar_whois_server = registrar.port43.get().map(|p| p.to_ascii_lowercase());
    }
    if let Some(registrant) = find_entity(&v.entities, "registrant", 0) {
        let card = vcard(registrant);
        let org = card.org.or(if card.kind_org { card.fn_ } else { None });
        r.registrant = Registrant { org, country: card.country };
    }
    r.dnssec = v.secure_dns.get().and_then(|s| s.0.delegation_signed.get().copied());
    r
}

/// An RDAP `eventDate` as an instant: an RFC 3339 timestamp (RFC 9083 §4.5), read with `time`'s
/// strict [`Rfc3339`] parser. `None` for anything else, with two narrow tolerances for what real
/// registrars publish (seen in `tests/data/rdap`); without them the registered samples of
/// bitcoin.org, deep.surf, google.com and google.pw would lose their dates:
///
/// * no zone at all (`2019-11-24T13:58:35`, rdap.namecheap.com): read as UTC;
/// * an ISO 8601 basic offset without a colon (`2028-09-13T07:00:00.000+0000`,
///   rdap.markmonitor.com): read as that offset.
///
/// The tolerated forms are returned in UTC, as the fuzzy WHOIS date reader that read them before
/// returned them; strict RFC 3339 dates keep their offset.
pub fn rdap_date(s: &str) -> Option<OffsetDateTime> {
    if let Ok(t) = OffsetDateTime::parse(s, &Rfc3339) {
        return Some(t);
    }
    let b = s.as_bytes();
    // Only a full `date-time` minus its offset is tolerated: `YYYY-MM-DDTHH:MM:SS[.frac]`.
    let local_len = |t: &[u8]| {
        if t.len() < 19 || !t[..19].iter().all(|c| c.is_ascii_digit() || b"-:Tt".contains(c)) {
            return None;
        }
        let frac = t[19..].iter().take_while(|c| c.is_ascii_digit() || **c == b'.').count();
        Some(19 + frac)
    };
    let n = local_len(b)?;
    // `n` counts ASCII bytes only, so it is a character boundary; `get` all the same.
    let (local, offset) = s.split_at_checked(n)?;
    let fixed = match offset {
        "" => format!("{s}Z"),
        off if off.len() == 5 && (off.starts_with('+') || off.starts_with('-')) => {
            let (hours, minutes) = off.split_at_checked(3)?;
            format!("{local}{hours}:{minutes}")
        }
        _ => return None,
    };
    OffsetDateTime::parse(&fixed, &Rfc3339).ok().map(|t| t.to_offset(UtcOffset::UTC))
}

/// The first entity (depth-first, nested entities included) having `role`.
fn find_entity<'a>(ents: &'a List<Obj<Entity>>, role: &str, depth: usize) -> Option<&'a Entity> {
    let ents = ents.get()?;
    let list = || ents.iter().filter_map(Member::get).map(|e| &e.0);
    if let Some(e) = list().find(|e| items(&e.roles).any(|r| r.eq_ignore_ascii_case(role))) {
        return Some(e);
    }
    if depth >= 3 {
        return None;
    }
    list().find_map(|e| find_entity(&e.entities, role, depth + 1))
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
fn vcard(entity: &Entity) -> Card {
    let mut card = Card::default();
    let Some(props) = entity.vcard_array.get().and_then(|v| v.get(1)).and_then(Value::as_array) else {
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

    #[test]
    fn an_error_object_404_under_http_200_is_not_found() {
        for body in [
            br#"{"errorCode":404,"title":"Not Found","description":["Object not found"]}"#.as_slice(),
            br#"{"rdapConformance":["rdap_level_0"],"errorCode":"404","title":"Domain not found"}"#.as_slice(),
        ] {
            let r = read_rdap(200, body);
            assert_eq!(r.class, RdapClass::NotFound, "{}", r.detail);
        }
        let boot = br#"{"errorCode":404,"title":"x.zz not found in IANA bootstrap file"}"#;
        assert_eq!(read_rdap(200, boot).class, RdapClass::Unknown);
        for other in [
            br#"{"errorCode":429,"title":"Too Many Requests"}"#.as_slice(),
            br#"{"errorCode":500}"#,
            br#"{"errorCode":null}"#,
        ] {
            assert_eq!(read_rdap(200, other).class, RdapClass::Unknown);
        }
    }

    #[test]
    fn statuses_of_rfc_8056_and_registry_variants() {
        let with = |statuses: &str| {
            let body =
                DOMAIN.replace(r#""status":["client transfer prohibited"]"#, &format!(r#""status":[{statuses}]"#));
            read_rdap(200, body.as_bytes()).class
        };
        // The RGP/EPP deletion states, in RDAP and EPP spellings and any case.
        for s in [
            r#""pending delete""#,
            r#""pendingDelete""#,
            r#""PENDING_DELETE""#,
            r#""Redemption Period""#,
            r#""redemptionPeriod""#,
            r#""pending purge""#,
            r#""quarantine""#,
        ] {
            assert_eq!(with(s), RdapClass::PendingDelete, "{s}");
        }
        // Registered states: holds, locks, grace periods, redaction markers, unknown statuses.
        for s in [
            r#""active""#,
            r#""inactive""#,
            r#""client hold""#,
            r#""server hold""#,
            r#""pending restore""#,
            r#""pending transfer""#,
            r#""pending create""#,
            r#""auto renew period""#,
            r#""add period""#,
            r#""locked""#,
            r#""removed""#,
            r#""obscured""#,
            r#""private""#,
            r#""server delete prohibited", "client update prohibited""#,
            r#""some registry status""#,
        ] {
            assert_eq!(with(s), RdapClass::Registered, "{s}");
        }
        for s in [r#""reserved""#, r#""Registry Reserved""#, r#""active", "reserved""#] {
            assert_eq!(with(s), RdapClass::Reserved, "{s}");
        }
        // A domain object that says it is not registered contradicts itself: no verdict.
        for s in [r#""available""#, r#""free""#, r#""not registered""#] {
            assert_eq!(with(s), RdapClass::Unknown, "{s}");
        }
        let reserved_other = br#"{"objectClassName":"domain","ldhName":"EXAMPLE.NET","status":["reserved"]}"#;
        assert_eq!(read_rdap_for("example.com", "example.com", 200, reserved_other).class, RdapClass::Unknown);
    }

    #[test]
    fn dates_are_rfc3339_with_two_documented_tolerances() {
        let utc = |s: &str| rdap_date(s).map(|t| t.to_offset(UtcOffset::UTC));
        let strict = OffsetDateTime::parse("2023-07-05T00:00:00Z", &Rfc3339).ok();
        assert_eq!(utc("2023-07-05T00:00:00Z"), strict);
        assert_eq!(utc("2023-07-05T02:00:00+02:00"), strict);
        // Forms published in tests/data/rdap: read exactly as the fuzzy WHOIS reader read them.
        for s in ["2023-07-05T00:00:00", "2023-07-05T00:00:00.000+0000", "2023-07-05T02:00:00+0200"] {
            assert_eq!(utc(s), strict, "{s}");
            assert_eq!(utc(s), crate::parse::whois::parse_date(s, crate::parse::whois::DateOrder::Dmy), "{s}");
        }
        for s in ["2023-07-05", "05/07/2023", "2023-07-05 00:00:00", "2023-07-05T00:00:00 UTC", "", "garbage"] {
            assert_eq!(rdap_date(s), None, "{s}");
        }
    }

    #[test]
    fn members_of_another_type_do_not_fail_the_answer() {
        // Unknown and mistyped members the readers do not need leave the reading intact.
        let body =
            DOMAIN.replace(r#""secureDNS":{"delegationSigned":true},"#, r#""secureDNS":[true],"links":7,"x":{},"#);
        let r = read_rdap(200, body.as_bytes());
        assert_eq!(r.class, RdapClass::Registered);
        assert_eq!(r.record.dnssec, None);
        assert_eq!(r.record.registrar.as_deref(), Some("Example Registrar"));
        // Members the verdict relies on keep their shape check.
        let bad = DOMAIN.replace(r#""status":["client transfer prohibited"]"#, r#""status":"active""#);
        assert_eq!(read_rdap(200, bad.as_bytes()).class, RdapClass::Unknown);
        let bad = DOMAIN.replace(r#""nameservers":[{"#, r#""nameservers":["a",{"#);
        assert_eq!(read_rdap(200, bad.as_bytes()).class, RdapClass::Unknown);
    }

    #[test]
    fn deeply_nested_entities_are_read_without_overflow() {
        // As deep as serde_json's recursion limit (128) lets a body be.
        let depth = 62;
        let body = format!(
            r#"{{"objectClassName":"domain","ldhName":"x.com",{}"roles":["registrar"]{}}}"#,
            r#""entities":[{"#.repeat(depth),
            "}]".repeat(depth)
        );
        assert_eq!(read_rdap(200, body.as_bytes()).class, RdapClass::Registered);
    }
}
