//! WHOIS keys: the key → field and key → block tables of `workers/data/whois-fields.json`
//! (loaded and validated like the markers), the lexicon's synonyms, and how one printed line
//! splits into a key and a value.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;

use super::MarkerDataError;
use super::dates::parse_date;
use super::fields::is_host_name;
use super::lines::Line;
use super::markers::DateOrder;
use crate::parse::lexicon::field_lexicon;
use crate::parse::lowered::Lowered;

/// A registration fact a key can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    Domain,
    /// The ASCII (A-label) form of an IDN, printed next to the Unicode form.
    DomainAce,
    Status,
    Registrar,
    RegistrarWhois,
    RegistrantOrg,
    /// A value that is the holder's organisation or personal name ("Registrant: X").
    RegistrantNameOrOrg,
    RegistrantCountry,
    Nameserver,
    /// Creation date; the number is the priority (0 = registry's own key, higher = weaker).
    Created(u8),
    Updated(u8),
    Expires(u8),
    Dnssec,
}

/// What kind of block an empty-valued key (`Registrar:` + indented lines) opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Block {
    Domain,
    Registrant,
    Registrar,
    Nameservers,
    Status,
    /// A contact other than the registrant: its lines describe someone else.
    OtherContact,
    /// Anything else ("Relevant dates:"): its lines are read as top-level keys.
    Plain,
}
pub(super) fn normalise_key(key: &str) -> String {
    let key = camel_words(key.trim());
    let mut k: String = key
        .trim()
        .trim_end_matches(['.', ':', ' ', '#'])
        .chars()
        .map(|c| if c == '_' || c == '-' || c == '\t' { ' ' } else { c })
        .collect::<String>()
        .to_lowercase();
    while k.contains("  ") {
        k = k.replace("  ", " ");
    }
    k.trim().to_owned()
}

/// A key printed in camel case as words ("CreationDate" → "Creation Date", "RegistrarName" →
/// "Registrar Name"): only a single token whose humps are words of two or more letters
/// ("nServer", "eMail" stay as they are).
fn camel_words(key: &str) -> std::borrow::Cow<'_, str> {
    let chars: Vec<char> = key.chars().collect();
    if key.contains([' ', '_', '-']) || !chars.iter().all(|c| c.is_alphabetic()) {
        return key.into();
    }
    let mut out = String::new();
    let mut word_len = 0;
    for (i, &c) in chars.iter().enumerate() {
        if i > 0 && c.is_uppercase() && chars[i - 1].is_lowercase() {
            if word_len < 2 {
                return key.into();
            }
            out.push(' ');
            word_len = 0;
        }
        out.push(c);
        word_len += 1;
    }
    if out.len() == key.len() { key.into() } else { out.into() }
}

/// Key candidates for one printed key: the key itself, the parts of a bilingual key
/// (`Nome de domínio / Domain Name`), each without a trailing parenthesis (`(dd/mm/yyyy)`).
pub(super) fn key_candidates(key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut push = |k: &str| {
        let k = k.trim();
        if !k.is_empty() {
            out.push(k.to_owned());
            if let Some((head, _)) = k.rsplit_once(" (").filter(|_| k.ends_with(')')) {
                out.push(head.trim().to_owned());
            }
        }
    };
    push(key);
    if key.contains(" / ") {
        for part in key.split(" / ") {
            push(part);
        }
    }
    out
}

pub(super) fn field_for(key: &str) -> Option<Field> {
    let tables = key_tables().as_ref().ok()?;
    let find = |k: &str| tables.fields.get(k).copied().or_else(|| lexicon_field(k));
    key_candidates(key).iter().find_map(|k| find(k)).or_else(|| {
        // Numbered keys: "Name Server 1", "ns1_hostname", "ns_name_01".
        let bare = without_numbers(key);
        (bare != key).then(|| find(&bare)).flatten().filter(|f| matches!(f, Field::Nameserver))
    })
}

/// A key wording from the lexicon's field tables (`workers/data/whois-lexicon.json`, `fields`):
/// synonyms by field, and a registrant role followed by a country key (`owner-country`).
pub(super) fn lexicon_field(key: &str) -> Option<Field> {
    let lex = field_lexicon();
    let field = match lex.field_of(key) {
        Some("registrar") => Field::Registrar,
        Some("status") => Field::Status,
        Some("created") => Field::Created(2),
        Some("updated") => Field::Updated(2),
        Some("expires") => Field::Expires(2),
        Some("registrant_country") => Field::RegistrantCountry,
        Some("nameserver") => Field::Nameserver,
        Some("dnssec") => Field::Dnssec,
        Some("domain") => Field::Domain,
        _ => return lex.is_registrant_country_key(key).then_some(Field::RegistrantCountry),
    };
    Some(field)
}

pub(super) fn block_for(key: &str) -> Option<Block> {
    let tables = key_tables().as_ref().ok()?;
    key_candidates(key).iter().find_map(|k| {
        tables.blocks.get(k.as_str()).copied().or_else(|| match field_lexicon().block_of(k) {
            Some("status") => Some(Block::Status),
            Some("nameservers") => Some(Block::Nameservers),
            Some("registrant") => Some(Block::Registrant),
            Some("registrar") => Some(Block::Registrar),
            _ => None,
        })
    })
}

/// A YAML type tag standing for the value (`registrar: !Registrar` followed by the indented
/// mapping): the key opens a block like an empty value.
pub(super) fn is_yaml_tag(v: &str) -> bool {
    v.strip_prefix('!').is_some_and(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// The country of the registrant's contact object, found by its handle: `holder-c: X` or
/// `registrant: X` with, further on, a paragraph `nic-hdl: X` / `contact: X` ... `country: FR`
/// (RIPE-style and AFNIC-style databases print contacts as separate objects).
pub(super) fn contact_country(lines: &[Line<'_>], handle: &str) -> Option<String> {
    let lex = field_lexicon();
    let any = |k: &str, list: &[String]| key_candidates(k).iter().any(|c| list.iter().any(|l| l == c));
    let mut inside = false;
    for line in lines {
        let text = line.raw.trim();
        if text.is_empty() || line.comment {
            inside = false;
            continue;
        }
        let Some((k, v)) = split_key_value(text) else { continue };
        // The object lasts to the next blank line ("contact: AFNIC" inside it is its name).
        if !inside && any(&k, &lex.contact_handle_keys) {
            inside = v.split_whitespace().next().is_some_and(|t| t.eq_ignore_ascii_case(handle));
        } else if inside && any(&k, &lex.contact_country_keys) && !v.is_empty() {
            return Some(v);
        }
    }
    None
}

/// The key with digit runs removed and spaces collapsed ("ns1 hostname" → "ns hostname").
pub(super) fn without_numbers(key: &str) -> String {
    key.chars().filter(|c| !c.is_ascii_digit()).collect::<String>().split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Keys that describe a contact (its name, address, ...; the language table's `contact_subkeys`):
/// inside a contact block they belong to that contact even when printed without indentation.
pub(super) fn is_contact_subkey(key: &str) -> bool {
    let subkeys = crate::parse::lexicon::contact_subkeys();
    key_candidates(key).iter().any(|k| subkeys.contains(k))
}

/// Finds a dot leader (three or more dots, possibly spaced) and returns its byte range.
pub(super) fn find_leader(t: &str) -> Option<(usize, usize)> {
    let b = t.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'.' {
            let start = i;
            let mut j = i;
            let mut dots = 0;
            while j < b.len() && (b[j] == b'.' || (b[j] == b' ' && b.get(j + 1) == Some(&b'.'))) {
                if b[j] == b'.' {
                    dots += 1;
                }
                j += 1;
            }
            if dots >= 3 {
                return Some((start, j));
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    None
}

/// Splits one trimmed line into key and value, or returns `None` for a plain line.
pub(super) fn split_key_value(text: &str) -> Option<(String, String)> {
    // "** Domain Servers:" (TRABIS) — list bullets before the key.
    let t = strip_enumeration(text.trim_start_matches(['*', ' ']));
    // "[Domain Name]   GOOGLE.JP" (JPRS, MYNIC).
    if let Some(rest) = t.strip_prefix('[')
        && let Some((key, value)) = rest.split_once(']')
    {
        let key = normalise_key(key);
        if !key.is_empty() && key.len() <= 60 {
            return Some((key, value.trim().to_owned()));
        }
    }
    if let Some((k, v)) = t.split_once(':') {
        let k = strip_dot_leader(k);
        // "Record created on 2000-08-29 10:22:50": the colon of a time, not of a key.
        let time_colon = k.ends_with(|c: char| c.is_ascii_digit()) && v.starts_with(|c: char| c.is_ascii_digit());
        if key_is_plausible(k) && !v.starts_with("//") && !time_colon {
            // rwhois "domain:Created:20090324" (class:attribute:value).
            if let Some((attr, value)) = rwhois_attribute(k, v) {
                return Some((attr, value));
            }
            let v = v.trim().trim_start_matches(['.', ' ']).trim();
            return Some((normalise_key(k), v.to_owned()));
        }
    }
    // "Domain Name........ x" or "Nom de domaine#. . . . .x" without a colon.
    if let Some((start, end)) = find_leader(t)
        && let (Some(k), Some(v)) = (t.get(..start), t.get(end..))
        && key_is_plausible(k)
    {
        return Some((normalise_key(k), v.trim().to_owned()));
    }
    // "Record created on 2005-04-15 21:43:27", "Registered on 30th April 2003": a date key
    // without a colon, recognised by a date following it.
    // Matched in a lower-cased copy, the value read from the line itself: through `Lowered`,
    // since lower-casing may change lengths (U+0130, U+212A KELVIN SIGN) and every offset after.
    let lowered = Lowered::new(t);
    let lower = lowered.as_str();
    let ordered = key_tables().as_ref().map(|t| t.ordered.as_slice()).unwrap_or_default();
    for (name, field) in ordered {
        if matches!(field, Field::Created(_) | Field::Updated(_) | Field::Expires(_))
            && lower.as_bytes().first() == name.as_bytes().first()
            && let Some(rest) = lower.strip_prefix(name).and_then(|r| r.strip_prefix(' '))
        {
            let value = lowered.original_from(lower.len() - rest.len()).unwrap_or_default().trim();
            if parse_date(value, DateOrder::Dmy).is_some() {
                return Some(((*name).to_owned(), value.to_owned()));
            }
        }
    }
    // The same with the lexicon's date keys ("Record changed on 28-May-2010").
    let lex = field_lexicon();
    for (field, keys) in &lex.keys {
        if !matches!(field.as_str(), "created" | "updated" | "expires") {
            continue;
        }
        for name in keys {
            // The first byte before `memcmp`: most keys start otherwise.
            if lower.as_bytes().first() != name.as_bytes().first() {
                continue;
            }
            if let Some(rest) = lower.strip_prefix(name.as_str()).and_then(|r| r.strip_prefix(' ')) {
                let value = lowered.original_from(lower.len() - rest.len()).unwrap_or_default().trim();
                if parse_date(value, DateOrder::Dmy).is_some() {
                    return Some((name.clone(), value.to_owned()));
                }
            }
        }
    }
    // "Domain GOOGLE.KG (ACTIVE)"
    if let Some(rest) = lower.strip_prefix("domain ") {
        let first = rest.split_whitespace().next().unwrap_or_default();
        if first.contains('.') && is_host_name(first.trim_end_matches('.')) {
            return Some(("domain".to_owned(), first.to_owned()));
        }
    }
    // "Domain-status       DOM_HELD": key, a tab or two spaces, value.
    let split = t.find('\t').or_else(|| t.find("  "))?;
    let (k, v) = t.split_at_checked(split)?;
    let v = v.trim();
    if !v.is_empty() && k.chars().all(|c| c.is_alphabetic() || c == ' ' || c == '-' || c == '_') && key_is_plausible(k)
    {
        return Some((normalise_key(k), v.to_owned()));
    }
    None
}

pub(super) fn rwhois_attribute(class: &str, rest: &str) -> Option<(String, String)> {
    if class.contains(' ') || class.is_empty() || rest.starts_with(' ') {
        return None;
    }
    let (attr, value) = rest.split_once(':')?;
    let attr = attr.split(';').next().unwrap_or(attr);
    if attr.is_empty() || !attr.chars().all(|c| c.is_ascii_alphabetic() || c == '-') {
        return None;
    }
    Some((normalise_key(attr), value.trim().to_owned()))
}

/// Drops list enumerations: "a. [Domain Name]" (JPRS), "a [Domain Name]" (MYNIC),
/// "1a.        Domain Name : x" (.gov.za).
pub(super) fn strip_enumeration(t: &str) -> &str {
    let Some((head, rest)) = t.split_once(char::is_whitespace) else {
        return t;
    };
    let rest = rest.trim_start();
    let core = head.trim_end_matches(['.', ')']);
    let short = !core.is_empty()
        && core.len() <= 2
        && core.chars().all(|c| c.is_ascii_alphanumeric())
        && head.len() - core.len() <= 1;
    if !short {
        return t;
    }
    if rest.starts_with('[') {
        return rest;
    }
    let dotted = head.len() > core.len();
    if dotted && core.starts_with(|c: char| c.is_ascii_digit()) {
        return rest;
    }
    t
}

pub(super) fn strip_dot_leader(k: &str) -> &str {
    k.trim_end().trim_end_matches(['.', ' ']).trim_end()
}

pub(super) fn key_is_plausible(k: &str) -> bool {
    let k = k.trim();
    if k.is_empty() || k.chars().count() > 60 {
        return false;
    }
    // A dot followed by a letter or digit means a host name or an address, not a key.
    let b: Vec<char> = k.chars().collect();
    // Three digits in a row are a year, a phone or an address — not part of a key.
    let long_number = b.windows(3).any(|w| w.iter().all(char::is_ascii_digit));
    !b.windows(2).any(|w| w[0] == '.' && w[1].is_alphanumeric())
        && !k.contains("http")
        && !k.contains('@')
        && !long_number
}

/// The key tables, compiled into the binary so a deployment cannot run without them.
pub(super) const FIELDS_JSON: &str = include_str!("../../../data/whois-fields.json");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct KeyTablesDef {
    #[serde(rename = "$comment", default)]
    pub(super) _comment: Option<serde_json::Value>,
    pub(super) version: u32,
    pub(super) fields: Vec<(String, String)>,
    pub(super) blocks: Vec<(String, String)>,
}

/// `workers/data/whois-fields.json` compiled: printed key (normalised) → field / block.
#[derive(Debug)]
pub(super) struct KeyTables {
    pub(super) fields: HashMap<String, Field>,
    /// The field keys in the file's order (tried in turn for a date key without a colon).
    pub(super) ordered: Vec<(String, Field)>,
    pub(super) blocks: HashMap<String, Block>,
}

pub(super) fn field_named(name: &str) -> Option<Field> {
    let (base, priority) = match name.rsplit_once('_') {
        Some((base, p)) if p.len() == 1 && p.as_bytes()[0].is_ascii_digit() => (base, p.parse::<u8>().ok()),
        _ => (name, None),
    };
    Some(match (base, priority) {
        ("domain", None) => Field::Domain,
        ("domain_ace", None) => Field::DomainAce,
        ("status", None) => Field::Status,
        ("registrar", None) => Field::Registrar,
        ("registrar_whois", None) => Field::RegistrarWhois,
        ("registrant_org", None) => Field::RegistrantOrg,
        ("registrant_name_or_org", None) => Field::RegistrantNameOrOrg,
        ("registrant_country", None) => Field::RegistrantCountry,
        ("nameserver", None) => Field::Nameserver,
        ("dnssec", None) => Field::Dnssec,
        ("created", Some(p)) => Field::Created(p),
        ("updated", Some(p)) => Field::Updated(p),
        ("expires", Some(p)) => Field::Expires(p),
        _ => return None,
    })
}

pub(super) fn block_named(name: &str) -> Option<Block> {
    Some(match name {
        "domain" => Block::Domain,
        "registrant" => Block::Registrant,
        "registrar" => Block::Registrar,
        "nameservers" => Block::Nameservers,
        "status" => Block::Status,
        "other_contact" => Block::OtherContact,
        "plain" => Block::Plain,
        _ => return None,
    })
}

pub(super) fn load_key_tables(json: &str) -> Result<KeyTables, MarkerDataError> {
    let def: KeyTablesDef =
        serde_json::from_str(json).map_err(|e| MarkerDataError::Json(format!("whois-fields.json: {e}")))?;
    let invalid = |m: String| MarkerDataError::Invalid(format!("whois-fields.json: {m}"));
    if def.version != 1 {
        return Err(invalid(format!("unsupported version {}", def.version)));
    }
    let mut fields = HashMap::new();
    let mut ordered = Vec::new();
    for (key, name) in def.fields {
        let field = field_named(&name).ok_or_else(|| invalid(format!("unknown field {name:?}")))?;
        if key.is_empty() || key.trim() != key || key.chars().any(char::is_uppercase) {
            return Err(invalid(format!("key {key:?} is not written lower case and trimmed")));
        }
        if fields.insert(key.clone(), field).is_some() {
            return Err(invalid(format!("key {key:?} is listed twice")));
        }
        ordered.push((key, field));
    }
    let mut blocks = HashMap::new();
    for (key, name) in def.blocks {
        let block = block_named(&name).ok_or_else(|| invalid(format!("unknown block {name:?}")))?;
        if blocks.insert(key.clone(), block).is_some() {
            return Err(invalid(format!("block key {key:?} is listed twice")));
        }
    }
    Ok(KeyTables { fields, ordered, blocks })
}

pub(super) fn key_tables() -> &'static Result<KeyTables, MarkerDataError> {
    static TABLES: OnceLock<Result<KeyTables, MarkerDataError>> = OnceLock::new();
    TABLES.get_or_init(|| load_key_tables(FIELDS_JSON))
}

/// Checks the compiled-in key tables (see [`super::validate_marker_data`]).
pub(super) fn validate_key_tables() -> Result<(), MarkerDataError> {
    key_tables().as_ref().map(|_| ()).map_err(Clone::clone)
}
