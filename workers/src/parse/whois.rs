//! WHOIS (RFC 3912) answer reader: decode the bytes, classify the answer, read the fields.
//!
//! RFC 3912 defines only the transport (a query line over TCP port 43, free text back); every
//! registry words its answer differently. So classification is driven by *markers* kept as data
//! in `workers/data/whois-markers.json` (see `workers/data/PROVENANCE.md`), grouped in
//! *families* keyed by the WHOIS host that prints them, with a generic set for hosts we do not
//! know (a host we do not know falls back to the family of the registry suffix). The rules,
//! in order:
//!
//! 1. a rate-limit marker (e.g. "request limit exceeded") → [`WhoisClass::RateLimited`];
//! 2. a reserved marker (e.g. "Reserved by Registry") → [`WhoisClass::Reserved`];
//! 3. an "unknown" marker (text that is not about a domain registration, e.g. IANA's record for
//!    a TLD) → [`WhoisClass::Unknown`], unless a registered marker follows it;
//! 4. a host that is `exclusive` to other suffixes (Verisign's "No match" about a .et name) →
//!    [`WhoisClass::Unknown`] unless the answer shows a registration;
//! 5. an "available" marker (e.g. `No match for "X".`) with no sign of a registration →
//!    [`WhoisClass::Available`]; when the family is known only *its* available markers count
//!    (a phrase from another registry's vocabulary must not decide availability);
//! 6. a registered marker, or registration facts read from the answer (creation/expiry date,
//!    registrar, name servers) → [`WhoisClass::Registered`], with `pending_delete` set when a
//!    status says redemption / pending delete / quarantine;
//! 7. an empty answer → available only for families that declare `empty_means_available`;
//! 8. anything else → [`WhoisClass::Unknown`]. Text we cannot place is never "available": a
//!    false "available" is the worst answer this service can give.
//!
//! Markers read each line as a statement: anchored rules skip the tail of a wrapped sentence and
//! loose rules skip long disclaimer paragraphs, which mention "not found" or "available for
//! registration" in passing.
//!
//! The field reader understands `Key: value` lines (with dot leaders, `[Key] value` as at JPRS,
//! bilingual `Nome / Name:` keys) and indentation blocks (`Registrar:` followed by indented lines,
//! as printed by Nominet, SIDN, DNS Belgium, EURid, registrars of the "Domain servers in listed
//! order" era).

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use common::record::DomainRecord;
use serde::{Deserialize, Serialize};

use super::lexicon::field_lexicon;
use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time, UtcOffset};

/// The marker data, compiled into the binary so a deployment cannot run without it.
const MARKERS_JSON: &str = include_str!("../../data/whois-markers.json");

/// What a WHOIS answer says about the queried name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WhoisClass {
    /// The registry says no such name is registered (e.g. `No match for "X".`, `Status: free`).
    Available,
    /// The name is registered (also while in redemption / pending delete, see
    /// [`WhoisReading::pending_delete`]).
    Registered,
    /// The registry withholds the name: reserved, restricted, blocked or premium-blocked.
    Reserved,
    /// The registry refused to answer because of a query quota or rate limit; ask again later.
    RateLimited,
    /// Nothing we recognise: an error, a help text, a wrong server, an unknown wording. Never to
    /// be read as available.
    Unknown,
}

/// The reading of one WHOIS answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WhoisReading {
    /// The class decided by the markers (see the module documentation for the order of rules).
    pub class: WhoisClass,
    /// `true` when the name is registered but on its way out: redemption grace period, pending
    /// delete, quarantine (EPP `redemptionPeriod`/`pendingDelete`, RFC 3915).
    pub pending_delete: bool,
    /// The marker (rule text from the data file, or `field:<name>` when the decision came from
    /// registration facts read from the answer) that decided the class, kept as evidence.
    pub marker: Option<String>,
    /// The registration facts read from the answer. Filled for registered answers; for other
    /// classes it holds whatever the answer echoed (often just the domain).
    pub record: DomainRecord,
}

/// Error in the WHOIS marker data file (`workers/data/whois-markers.json`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MarkerDataError {
    /// The file is not the JSON shape the reader expects.
    #[error("whois-markers.json does not parse: {0}")]
    Json(String),
    /// The file parses but breaks a rule (empty marker, duplicate host or suffix, ...).
    #[error("whois-markers.json is invalid: {0}")]
    Invalid(String),
}

/// Checks the compiled-in marker data and returns the number of registry families it defines.
///
/// Call it once at start-up to fail fast: [`read_whois`] itself never panics on bad data, it
/// classifies everything as [`WhoisClass::Unknown`] instead (the safe direction).
pub fn validate_marker_data() -> Result<usize, MarkerDataError> {
    match markers() {
        Ok(m) => Ok(m.families.len()),
        Err(e) => Err(e.clone()),
    }
}

/// Decodes a WHOIS answer to text.
///
/// `charset` is a WHATWG encoding label (e.g. `"iso-8859-1"`, `"koi8-r"`, as listed per server
/// in the `whois` client's `servers_charset_list`); when given and known it is used as is.
/// Otherwise the bytes are read as UTF-8 (a UTF-8 BOM is dropped) and, if they are not valid
/// UTF-8, as windows-1252 — the superset of Latin-1 that most legacy registries actually send.
pub fn decode(raw: &[u8], charset: Option<&str>) -> String {
    if let Some(enc) = charset.and_then(|label| encoding_rs::Encoding::for_label(label.trim().as_bytes())) {
        let (text, _, _) = enc.decode(raw);
        return text.into_owned();
    }
    let raw = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
    match std::str::from_utf8(raw) {
        Ok(text) => text.to_owned(),
        Err(_) => encoding_rs::WINDOWS_1252.decode_without_bom_handling(raw).0.into_owned(),
    }
}

/// Reads one WHOIS answer.
///
/// - `raw`: the bytes the server sent (RFC 3912: free text, no charset given by the protocol);
/// - `server`: the WHOIS host that produced them, which selects the marker family (when `None`
///   or not a known host, the family is chosen by `suffix`; failing both, generic markers apply);
/// - `suffix`: the registry suffix without a leading dot (`"com"`, `"com.af"`, `"co.uk"`);
/// - `charset`: a WHATWG encoding label when the server is known to answer in one, see [`decode`].
pub fn read_whois(raw: &[u8], server: Option<&str>, suffix: &str, charset: Option<&str>) -> WhoisReading {
    read_whois_with(raw, server, suffix, charset, true)
}

/// [`read_whois`] with the registry family's own wording rules switched off: only which
/// suffixes the server is authoritative for is kept, and the generic layer (cross-registry
/// markers, the multilingual lexicon, registration evidence) decides. Used to measure how the
/// reader does on registries it has no rules for (leave-one-registry-out).
pub fn read_whois_generic(raw: &[u8], server: Option<&str>, suffix: &str, charset: Option<&str>) -> WhoisReading {
    read_whois_with(raw, server, suffix, charset, false)
}

fn read_whois_with(
    raw: &[u8],
    server: Option<&str>,
    suffix: &str,
    charset: Option<&str>,
    family_rules: bool,
) -> WhoisReading {
    let text = decode(raw, charset);
    let lines = prepare_lines(&text);
    let data = match markers() {
        Ok(m) => m,
        Err(e) => {
            tracing::error!(error = %e, "WHOIS marker data unusable; answer left unclassified");
            return WhoisReading {
                class: WhoisClass::Unknown,
                pending_delete: false,
                marker: Some(format!("marker data invalid: {e}")),
                record: DomainRecord::default(),
            };
        }
    };
    let suffix = suffix.trim().trim_start_matches('.').to_ascii_lowercase();
    let mut selected = data.select(server, &suffix);
    if !family_rules {
        selected.family = None;
    }
    let date_order = selected.family.map_or(DateOrder::Dmy, |f| f.date_order);
    let record = read_fields(&lines, date_order);
    let (class, marker) = classify(data, &selected, &lines, &record);
    let pending_delete = class == WhoisClass::Registered
        && (is_pending_delete(data, selected.family, &record)
            || marker.as_deref().is_some_and(|m| m.starts_with("lexicon:pending_delete")));
    WhoisReading { class, pending_delete, marker, record }
}

// ---------------------------------------------------------------------------------------------
// Marker data
// ---------------------------------------------------------------------------------------------

/// Order of day and month in all-numeric dates such as `01/02/2019`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum DateOrder {
    /// Day first (most registries outside the USA).
    #[default]
    Dmy,
    /// Month first (US registrars).
    Mdy,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MarkerFileDef {
    #[serde(rename = "$comment", default)]
    _comment: Option<serde_json::Value>,
    version: u32,
    generic: ListsDef,
    families: BTreeMap<String, FamilyDef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListsDef {
    #[serde(default)]
    available: Option<Vec<String>>,
    #[serde(default)]
    unknown: Vec<String>,
    #[serde(default)]
    reserved: Vec<String>,
    #[serde(default)]
    rate_limited: Vec<String>,
    #[serde(default)]
    registered: Vec<String>,
    #[serde(default)]
    pending_delete: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FamilyDef {
    #[serde(default)]
    about: String,
    #[serde(default)]
    hosts: Vec<String>,
    #[serde(default)]
    suffixes: Vec<String>,
    #[serde(default)]
    exclusive: bool,
    #[serde(default)]
    empty_means_available: bool,
    #[serde(default)]
    date_order: DateOrder,
    #[serde(default)]
    available: Option<Vec<String>>,
    #[serde(default)]
    unknown: Vec<String>,
    #[serde(default)]
    reserved: Vec<String>,
    #[serde(default)]
    rate_limited: Vec<String>,
    #[serde(default)]
    registered: Vec<String>,
    #[serde(default)]
    pending_delete: Vec<String>,
}

/// Where in a line a marker must sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Anchor {
    /// Anywhere in the line.
    Contains,
    /// At the start of the line (`^text`).
    Prefix,
    /// The whole line (`=text`).
    Whole,
}

/// One compiled marker: the rule text as written, its anchor and its `*`-separated parts.
#[derive(Debug, Clone)]
struct Marker {
    rule: String,
    anchor: Anchor,
    parts: Vec<String>,
    /// The rule ends in `:` or `]` — a key whose value must not be empty.
    needs_value: bool,
}

#[derive(Debug, Default)]
struct Lists {
    available: Option<Vec<Marker>>,
    unknown: Vec<Marker>,
    reserved: Vec<Marker>,
    rate_limited: Vec<Marker>,
    registered: Vec<Marker>,
    pending_delete: Vec<String>,
}

#[derive(Debug)]
struct Family {
    name: String,
    suffixes: Vec<String>,
    exclusive: bool,
    empty_means_available: bool,
    date_order: DateOrder,
    lists: Lists,
}

#[derive(Debug)]
struct Markers {
    generic: Lists,
    families: Vec<Family>,
    by_host: HashMap<String, usize>,
    by_suffix: HashMap<String, usize>,
}

/// The family chosen for one answer and how it was chosen.
struct Selected<'a> {
    family: Option<&'a Family>,
    /// The family was chosen by the server host (not merely by the suffix).
    by_host: bool,
    /// The host's family is exclusive to some suffixes and the queried suffix is not one of
    /// them: its "no match" says nothing about this name.
    wrong_server: bool,
}

fn markers() -> &'static Result<Markers, MarkerDataError> {
    static MARKERS: OnceLock<Result<Markers, MarkerDataError>> = OnceLock::new();
    MARKERS.get_or_init(|| load_markers(MARKERS_JSON))
}

fn load_markers(json: &str) -> Result<Markers, MarkerDataError> {
    let def: MarkerFileDef = serde_json::from_str(json).map_err(|e| MarkerDataError::Json(e.to_string()))?;
    if def.version != 1 {
        return Err(MarkerDataError::Invalid(format!("unsupported version {}", def.version)));
    }
    let g = def.generic;
    let generic =
        compile_lists("generic", g.available, g.unknown, g.reserved, g.rate_limited, g.registered, g.pending_delete)?;
    if generic.available.is_none() {
        return Err(MarkerDataError::Invalid("generic.available is required".into()));
    }
    let mut families = Vec::with_capacity(def.families.len());
    let mut by_host = HashMap::new();
    let mut by_suffix = HashMap::new();
    for (name, f) in def.families {
        let idx = families.len();
        let name_lc = name.to_ascii_lowercase();
        if name_lc != name || name.is_empty() || name.contains(char::is_whitespace) {
            return Err(MarkerDataError::Invalid(format!("family key {name:?} must be a lower-case host name")));
        }
        if f.about.trim().is_empty() {
            return Err(MarkerDataError::Invalid(format!("family {name}: `about` must say who prints this text")));
        }
        for host in std::iter::once(&name).chain(f.hosts.iter()) {
            let host = host.to_ascii_lowercase();
            if by_host.insert(host.clone(), idx).is_some() {
                return Err(MarkerDataError::Invalid(format!("host {host} appears in two families")));
            }
        }
        let mut suffixes = Vec::with_capacity(f.suffixes.len());
        for s in &f.suffixes {
            let s = s.trim_start_matches('.').to_ascii_lowercase();
            let bare = s.strip_prefix("*.").unwrap_or(&s);
            if bare.is_empty() || bare.contains('*') {
                return Err(MarkerDataError::Invalid(format!("family {name}: empty suffix")));
            }
            if by_suffix.insert(s.clone(), idx).is_some() {
                return Err(MarkerDataError::Invalid(format!("suffix {s} appears in two families")));
            }
            suffixes.push(s);
        }
        if f.exclusive && suffixes.is_empty() {
            return Err(MarkerDataError::Invalid(format!("family {name}: `exclusive` needs `suffixes`")));
        }
        let lists =
            compile_lists(&name, f.available, f.unknown, f.reserved, f.rate_limited, f.registered, f.pending_delete)?;
        families.push(Family {
            name,
            suffixes,
            exclusive: f.exclusive,
            empty_means_available: f.empty_means_available,
            date_order: f.date_order,
            lists,
        });
    }
    Ok(Markers { generic, families, by_host, by_suffix })
}

fn compile_lists(
    owner: &str,
    available: Option<Vec<String>>,
    unknown: Vec<String>,
    reserved: Vec<String>,
    rate_limited: Vec<String>,
    registered: Vec<String>,
    pending_delete: Vec<String>,
) -> Result<Lists, MarkerDataError> {
    let compile_all = |what: &str, rules: Vec<String>| -> Result<Vec<Marker>, MarkerDataError> {
        rules
            .into_iter()
            .map(|r| compile_marker(&r).map_err(|e| MarkerDataError::Invalid(format!("{owner}.{what}: {e}"))))
            .collect()
    };
    let available = match available {
        Some(rules) => Some(compile_all("available", rules)?),
        None => None,
    };
    for p in &pending_delete {
        if p.is_empty() || !p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()) {
            return Err(MarkerDataError::Invalid(format!(
                "{owner}.pending_delete: {p:?} must be lower-case letters/digits (matched against status values with separators removed)"
            )));
        }
    }
    Ok(Lists {
        available,
        unknown: compile_all("unknown", unknown)?,
        reserved: compile_all("reserved", reserved)?,
        rate_limited: compile_all("rate_limited", rate_limited)?,
        registered: compile_all("registered", registered)?,
        pending_delete,
    })
}

fn compile_marker(rule: &str) -> Result<Marker, String> {
    let (anchor, body) = if let Some(b) = rule.strip_prefix('=') {
        (Anchor::Whole, b)
    } else if let Some(b) = rule.strip_prefix('^') {
        (Anchor::Prefix, b)
    } else {
        (Anchor::Contains, rule)
    };
    if body.trim().is_empty() || body.trim() != body {
        return Err(format!("{rule:?}: empty or padded marker"));
    }
    if body.chars().any(char::is_uppercase) {
        return Err(format!("{rule:?}: markers are matched against lower-cased text; write them in lower case"));
    }
    if body.contains("  ") {
        return Err(format!("{rule:?}: runs of spaces are collapsed in the text; use one space"));
    }
    let parts: Vec<String> = body.split('*').map(str::to_owned).collect();
    if parts.iter().skip(1).take(parts.len().saturating_sub(2)).any(String::is_empty) {
        return Err(format!("{rule:?}: `**` is not allowed"));
    }
    Ok(Marker { rule: rule.to_owned(), anchor, needs_value: body.ends_with([':', ']']), parts })
}

impl Markers {
    fn select(&self, server: Option<&str>, suffix: &str) -> Selected<'_> {
        let host = server.map(|s| s.trim().trim_end_matches('.').to_ascii_lowercase());
        if let Some(idx) = host.as_deref().and_then(|h| self.by_host.get(h)) {
            let family = &self.families[*idx];
            let wrong_server = family.exclusive && !suffix.is_empty() && !family.covers(suffix);
            return Selected { family: Some(family), by_host: true, wrong_server };
        }
        // Unknown (or no) host: the registry suffix names the family — an exact entry ("com.af"),
        // else a wildcard entry of a parent ("*.af" covers every second level under .af).
        let by_suffix = self.by_suffix.get(suffix).or_else(|| {
            let mut rest = suffix;
            while let Some((_, parent)) = rest.split_once('.') {
                if let Some(idx) = self.by_suffix.get(&format!("*.{parent}")) {
                    return Some(idx);
                }
                rest = parent;
            }
            None
        });
        let family = by_suffix.map(|idx| &self.families[*idx]);
        Selected { family, by_host: false, wrong_server: false }
    }
}

impl Family {
    /// Is `suffix` one of this family's suffixes (exactly, or under a `*.parent` entry)?
    fn covers(&self, suffix: &str) -> bool {
        self.suffixes.iter().any(|s| match s.strip_prefix("*.") {
            Some(parent) => suffix.len() > parent.len() + 1 && suffix.ends_with(&format!(".{parent}")),
            None => s == suffix,
        })
    }
}

impl Marker {
    /// Does this marker match the normalised line?
    fn matches(&self, line: &str) -> bool {
        let first = &self.parts[0];
        let mut pos = match self.anchor {
            Anchor::Contains => match line.find(first.as_str()) {
                Some(p) => p + first.len(),
                None => return false,
            },
            Anchor::Prefix | Anchor::Whole => {
                if !line.starts_with(first.as_str()) {
                    return false;
                }
                first.len()
            }
        };
        let n = self.parts.len();
        for (i, part) in self.parts.iter().enumerate().skip(1) {
            if self.anchor == Anchor::Whole && i == n - 1 {
                return line.len() >= pos + part.len() && line.ends_with(part.as_str());
            }
            match line[pos..].find(part.as_str()) {
                Some(p) => pos += p + part.len(),
                None => return false,
            }
        }
        match self.anchor {
            Anchor::Whole => pos == line.len(),
            _ if self.needs_value => !line[pos..].trim().is_empty(),
            _ => true,
        }
    }
}

/// The matching marker on the latest line, with that line's index.
fn last_hit<'m>(markers: &'m [Marker], lines: &[Line<'_>]) -> Option<(&'m Marker, usize)> {
    lines.iter().enumerate().rev().find_map(|(i, l)| markers.iter().find(|m| line_matches(m, l)).map(|m| (m, i)))
}

/// Unanchored and `*` rules only read lines up to this many characters: a registry's verdict
/// is a short statement, while disclaimers come as long paragraphs that mention "not found" or
/// "available for registration" in passing ("the lack of a whois record ... does not indicate
/// that the name is available for registration").
const MAX_LOOSE_LINE: usize = 160;

fn first_match<'m>(markers: &'m [Marker], lines: &[Line<'_>]) -> Option<&'m Marker> {
    markers.iter().find(|m| lines.iter().any(|l| line_matches(m, l)))
}

fn line_matches(m: &Marker, l: &Line<'_>) -> bool {
    // An anchored rule reads a line as a statement of its own; the tail of a wrapped sentence
    // ("All rights\nreserved.") is not one.
    !(l.continuation && m.anchor != Anchor::Contains)
        && !((m.anchor == Anchor::Contains || m.parts.len() > 1) && l.norm.chars().count() > MAX_LOOSE_LINE)
        && m.matches(&l.norm)
}

// ---------------------------------------------------------------------------------------------
// Lines
// ---------------------------------------------------------------------------------------------

/// One line of the answer: the raw text, its indentation and its normalised form.
struct Line<'a> {
    raw: &'a str,
    indent: usize,
    /// Lower case, comment/quote marks stripped from the start, whitespace collapsed, dot
    /// leaders turned into `": "`, trailing `. ! < >` removed — the form markers match against.
    norm: String,
    comment: bool,
    /// The line continues the previous line's sentence (previous line ends mid-sentence and
    /// this one starts in lower case).
    continuation: bool,
}

fn prepare_lines(text: &str) -> Vec<Line<'_>> {
    let content = |raw: &str| raw.trim().trim_start_matches(['%', '#', ' ', '\t']).to_owned();
    let mut prev: Option<String> = None;
    text.lines()
        .map(|raw| raw.trim_end_matches(['\r', '\u{feff}']))
        .filter(|raw| !is_client_artifact(raw.trim()))
        .map(|raw| {
            let trimmed = raw.trim_start();
            let indent = raw[..raw.len() - trimmed.len()].chars().map(|c| if c == '\t' { 8 } else { 1 }).sum();
            let here = content(raw);
            // Lower-case "key: value" lines (RIPE style) are statements, not wrapped text.
            let key_like = here.find(':').is_some_and(|i| i < 40);
            let continuation = prev.as_deref().is_some_and(|p| p.ends_with(|c: char| c.is_alphanumeric() || c == ','))
                && here.starts_with(|c: char| c.is_lowercase())
                && !key_like;
            prev = Some(here).filter(|h| !h.is_empty());
            Line { raw, indent, norm: normalise(raw), comment: trimmed.starts_with(['%', '#']), continuation }
        })
        .collect()
}

/// Lines a command-line whois client adds around the server's answer (`[Querying host]`,
/// `[Redirected to host]`, `[host]`): not registry text.
fn is_client_artifact(t: &str) -> bool {
    let Some(inner) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) else {
        return false;
    };
    inner.starts_with("Querying ")
        || inner.starts_with("Redirected to ")
        || (!inner.is_empty()
            && inner.contains('.')
            && inner.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-'))
}

fn normalise(raw: &str) -> String {
    let t = raw.trim().trim_start_matches(|c: char| matches!(c, '%' | '#' | '>' | '*' | ';') || c.is_whitespace());
    let chars: Vec<char> = t.chars().collect();
    let mut out = String::with_capacity(t.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '.' {
            // A dot leader: three or more dots, possibly spaced (". . . ."), as in
            // "Domain Name.........: x" or "object:. . . . . .x".
            let mut j = i;
            let mut dots = 0;
            while j < chars.len() && (chars[j] == '.' || (chars[j] == ' ' && chars.get(j + 1) == Some(&'.'))) {
                if chars[j] == '.' {
                    dots += 1;
                }
                j += 1;
            }
            if dots >= 3 {
                let mut k = j;
                while k < chars.len() && (chars[k] == ':' || chars[k].is_whitespace()) {
                    k += 1;
                }
                if k < chars.len() {
                    while out.ends_with([' ', ':']) {
                        out.pop();
                    }
                    out.push_str(": ");
                }
                i = k;
                continue;
            }
        }
        if c.is_whitespace() {
            if !out.is_empty() && !out.ends_with(' ') {
                out.push(' ');
            }
        } else if c == ':' && out.ends_with(' ') {
            // "Domain Name   : x" → "domain name: x"
            out.pop();
            out.push(':');
        } else {
            out.extend(c.to_lowercase());
        }
        i += 1;
    }
    let end = out.trim_end_matches(['.', '!', '<', '>', ' ']).len();
    out.truncate(end);
    out
}

// ---------------------------------------------------------------------------------------------
// Classification
// ---------------------------------------------------------------------------------------------

fn classify(
    data: &Markers,
    sel: &Selected<'_>,
    lines: &[Line<'_>],
    record: &DomainRecord,
) -> (WhoisClass, Option<String>) {
    let fam = sel.family.map(|f| &f.lists);
    let family_then_generic = |pick: fn(&Lists) -> &Vec<Marker>| -> Option<String> {
        fam.and_then(|l| first_match(pick(l), lines))
            .or_else(|| first_match(pick(&data.generic), lines))
            .map(|m| m.rule.clone())
    };

    if let Some(rule) = family_then_generic(|l| &l.rate_limited) {
        return (WhoisClass::RateLimited, Some(rule));
    }
    if let Some(rule) = family_then_generic(|l| &l.reserved) {
        return (WhoisClass::Reserved, Some(rule));
    }
    let registered_marker = family_then_generic(|l| &l.registered);
    // A text that is not about a domain registration at all (an IANA TLD record, a help page)
    // stays unknown even if it carries dates, statuses or name servers — unless a registered
    // marker *follows* it, as when a client prints IANA's referral and then the registry's answer.
    let unknown_hit = fam
        .and_then(|l| last_hit(&l.unknown, lines))
        .into_iter()
        .chain(last_hit(&data.generic.unknown, lines))
        .max_by_key(|(_, at)| *at);
    if let Some((rule, at)) = unknown_hit {
        let registered_after = fam
            .and_then(|l| last_hit(&l.registered, lines))
            .into_iter()
            .chain(last_hit(&data.generic.registered, lines))
            .any(|(_, reg_at)| reg_at > at);
        if !registered_after {
            return (WhoisClass::Unknown, Some(rule.rule.clone()));
        }
    }
    let registered = registered_marker.or_else(|| field_evidence(record));

    if sel.wrong_server {
        // E.g. Verisign's "No match for" about a .et name: that server does not hold .et.
        let name = sel.family.map_or("", |f| f.name.as_str());
        return match registered {
            Some(rule) => (WhoisClass::Registered, Some(rule)),
            None => (WhoisClass::Unknown, Some(format!("server {name} is not authoritative for this suffix"))),
        };
    }

    // Only the family's own "available" wording counts when the family is known.
    let available_rules =
        sel.family.and_then(|f| f.lists.available.as_deref()).or(data.generic.available.as_deref()).unwrap_or(&[]);
    let available = first_match(available_rules, lines).map(|m| m.rule.clone());

    let result = match (available, registered) {
        // Both: the registration facts win — a stray phrase must not free a registered name.
        (_, Some(rule)) => (WhoisClass::Registered, Some(rule)),
        (Some(rule), None) => (WhoisClass::Available, Some(rule)),
        (None, None) => {
            let empty = lines.iter().all(|l| l.comment || l.norm.is_empty());
            match sel.family {
                Some(f) if empty && f.empty_means_available => {
                    (WhoisClass::Available, Some(format!("empty answer ({} answers not-found with nothing)", f.name)))
                }
                // Neither the family nor the generic markers know this wording, and no
                // registration evidence was read: the multilingual lexicon decides. Comment lines
                // count here (some registries wrap their whole answer in them).
                _ => match generic_lexicon(lines) {
                    Some(reading) => reading,
                    None if empty => (WhoisClass::Unknown, Some("empty answer".into())),
                    None => (WhoisClass::Unknown, None),
                },
            }
        }
    };
    tracing::trace!(
        by_host = sel.by_host,
        family = sel.family.map(|f| f.name.as_str()),
        class = ?result.0,
        marker = result.1.as_deref(),
        "whois answer classified"
    );
    result
}

/// The lexicon layer (see [`super::lexicon`]) over the answer's lines, comment lines included,
/// wrapped sentence tails left out.
fn generic_lexicon(lines: &[Line<'_>]) -> Option<(WhoisClass, Option<String>)> {
    use super::lexicon::{LexiconClass, classify};
    let norms: Vec<&str> = lines.iter().filter(|l| !l.continuation).map(|l| l.norm.as_str()).collect();
    Some(match classify(&norms)? {
        LexiconClass::Quota(m) => (WhoisClass::RateLimited, Some(m)),
        LexiconClass::Reserved(m) => (WhoisClass::Reserved, Some(m)),
        LexiconClass::PendingDelete(m) => (WhoisClass::Registered, Some(m)),
        LexiconClass::NotFound(m) => (WhoisClass::Available, Some(m)),
        LexiconClass::Conflict(m) => (WhoisClass::Unknown, Some(m)),
    })
}

/// Registration facts that only a registered answer carries.
fn field_evidence(record: &DomainRecord) -> Option<String> {
    if record.created_at.is_some() {
        Some("field:created".into())
    } else if record.expires_at.is_some() {
        Some("field:expires".into())
    } else if record.registrar.is_some() {
        Some("field:registrar".into())
    } else if !record.nameservers.is_empty() {
        Some("field:nameservers".into())
    } else {
        None
    }
}

fn is_pending_delete(data: &Markers, family: Option<&Family>, record: &DomainRecord) -> bool {
    let rules = family
        .map(|f| f.lists.pending_delete.as_slice())
        .unwrap_or(&[])
        .iter()
        .chain(data.generic.pending_delete.iter());
    let compact: Vec<String> = record
        .status
        .iter()
        .map(|s| s.chars().filter(char::is_ascii_alphanumeric).collect::<String>().to_ascii_lowercase())
        .collect();
    rules.into_iter().any(|rule| compact.iter().any(|s| s.contains(rule.as_str())))
}

// ---------------------------------------------------------------------------------------------
// Field reader
// ---------------------------------------------------------------------------------------------

/// A registration fact a key can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
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
enum Block {
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

/// Keys → fields. Keys are compared lower case with `-`/`_` turned into spaces, runs of spaces
/// collapsed and a trailing parenthesis removed. Sources: ICANN RAA 2013 RDDS spec (gTLDs),
/// RIPE-style ccTLD servers (`nserver`, `paid-till`, `changed`), and the registries' own labels.
const KEY_FIELDS: &[(&str, Field)] = &[
    ("domain name", Field::Domain),
    ("domain", Field::Domain),
    ("domainname", Field::Domain),
    ("domain name (ascii)", Field::Domain),
    ("complete domain name", Field::Domain),
    ("nom de domaine", Field::Domain),
    ("domain ace", Field::DomainAce),
    ("domain name ace", Field::DomainAce),
    ("ace", Field::DomainAce),
    ("query", Field::Domain),
    ("nome de domínio", Field::Domain),
    ("nombre de dominio", Field::Domain),
    ("dominio", Field::Domain),
    ("ドメイン名", Field::Domain),
    ("도메인이름", Field::Domain),
    ("domain status", Field::Status),
    ("status", Field::Status),
    ("domain state", Field::Status),
    ("state", Field::Status),
    ("registration status", Field::Status),
    ("registry status", Field::Status),
    ("epp status", Field::Status),
    ("eppstatus", Field::Status),
    ("estado", Field::Status),
    ("estatus", Field::Status),
    ("estatus del dominio", Field::Status),
    ("query status", Field::Status),
    ("statut", Field::Status),
    ("状態", Field::Status),
    ("registrar", Field::Registrar),
    ("sponsoring registrar", Field::Registrar),
    ("registrar name", Field::Registrar),
    ("current registrar", Field::Registrar),
    ("current registar", Field::Registrar),
    ("registration service provider", Field::Registrar),
    ("registration service provided by", Field::Registrar),
    ("authorized agency", Field::Registrar),
    ("registrar organization", Field::Registrar),
    ("registrador", Field::Registrar),
    ("registrar whois server", Field::RegistrarWhois),
    ("whois server", Field::RegistrarWhois),
    ("registrar whois", Field::RegistrarWhois),
    ("registrant organization", Field::RegistrantOrg),
    ("registrant organisation", Field::RegistrantOrg),
    ("registrant org", Field::RegistrantOrg),
    ("registrant company", Field::RegistrantOrg),
    ("registrant company name", Field::RegistrantOrg),
    ("org", Field::RegistrantOrg),
    ("registrant", Field::RegistrantNameOrOrg),
    ("holder", Field::RegistrantNameOrOrg),
    ("domain holder", Field::RegistrantNameOrOrg),
    ("owner", Field::RegistrantNameOrOrg),
    ("titular", Field::RegistrantNameOrOrg),
    ("등록인", Field::RegistrantNameOrOrg),
    ("登録者名", Field::RegistrantNameOrOrg),
    ("registered for", Field::RegistrantNameOrOrg),
    ("domain registrant", Field::RegistrantNameOrOrg),
    ("domain owner", Field::RegistrantNameOrOrg),
    ("registrant country", Field::RegistrantCountry),
    ("registrant country code", Field::RegistrantCountry),
    ("registrant country/economy", Field::RegistrantCountry),
    ("registrant countrycode", Field::RegistrantCountry),
    ("name server", Field::Nameserver),
    ("name servers", Field::Nameserver),
    ("nameserver", Field::Nameserver),
    ("nameservers", Field::Nameserver),
    ("nserver", Field::Nameserver),
    ("ns", Field::Nameserver),
    ("dns server", Field::Nameserver),
    ("dns servers", Field::Nameserver),
    ("host name", Field::Nameserver),
    ("hostname", Field::Nameserver),
    ("primary server", Field::Nameserver),
    ("secondary server", Field::Nameserver),
    ("domain nameservers", Field::Nameserver),
    ("domain name servers", Field::Nameserver),
    ("name server information", Field::Nameserver),
    ("dns name", Field::Nameserver),
    ("primary name server", Field::Nameserver),
    ("secondary name server", Field::Nameserver),
    ("primary ns", Field::Nameserver),
    ("secondary ns", Field::Nameserver),
    ("primary server hostname", Field::Nameserver),
    ("secondary server hostname", Field::Nameserver),
    ("servers", Field::Nameserver),
    ("dns", Field::Nameserver),
    ("ns name", Field::Nameserver),
    ("ns hostname", Field::Nameserver),
    ("ネームサーバ", Field::Nameserver),
    ("호스트이름", Field::Nameserver),
    ("creation date", Field::Created(0)),
    ("created", Field::Created(1)),
    ("created on", Field::Created(1)),
    ("created date", Field::Created(1)),
    ("domain created", Field::Created(1)),
    ("domain create date", Field::Created(1)),
    ("registered", Field::Created(1)),
    ("registered on", Field::Created(1)),
    ("registered date", Field::Created(1)),
    ("date registered", Field::Created(1)),
    ("registration date", Field::Created(1)),
    ("registration time", Field::Created(1)),
    ("domain registration date", Field::Created(1)),
    ("domain record activated", Field::Created(1)),
    ("record created", Field::Created(1)),
    ("record created on", Field::Created(1)),
    ("entry created", Field::Created(1)),
    ("activated on", Field::Created(1)),
    ("date de creation", Field::Created(1)),
    ("date de création", Field::Created(1)),
    ("domain registered", Field::Created(1)),
    ("first registration date", Field::Created(1)),
    ("registration", Field::Created(1)),
    ("domain dateregistered", Field::Created(1)),
    ("date approved", Field::Created(1)),
    ("activated", Field::Created(1)),
    ("domain name commencement date", Field::Created(1)),
    ("commencement date", Field::Created(1)),
    ("fecha de creacion", Field::Created(1)),
    ("fecha de creación", Field::Created(1)),
    ("fecha de registro", Field::Created(1)),
    ("data de registo", Field::Created(1)),
    ("登録年月日", Field::Created(1)),
    ("등록일", Field::Created(1)),
    ("updated date", Field::Updated(0)),
    ("updated", Field::Updated(1)),
    ("last updated", Field::Updated(1)),
    ("last updated on", Field::Updated(1)),
    ("last updated date", Field::Updated(1)),
    ("last update", Field::Updated(1)),
    ("last modified", Field::Updated(1)),
    ("modified", Field::Updated(1)),
    ("modification date", Field::Updated(1)),
    ("modified date", Field::Updated(1)),
    ("updated on", Field::Updated(1)),
    ("update date", Field::Updated(1)),
    ("changed", Field::Updated(2)),
    ("domain record last updated", Field::Updated(1)),
    ("domain last updated date", Field::Updated(1)),
    ("record last updated", Field::Updated(1)),
    ("record last updated on", Field::Updated(1)),
    ("record last modified", Field::Updated(1)),
    ("entry updated", Field::Updated(1)),
    ("domain datelastmodified", Field::Updated(1)),
    ("ultima actualizacion", Field::Updated(1)),
    ("última actualización", Field::Updated(1)),
    ("最終更新", Field::Updated(1)),
    ("최근 정보 변경일", Field::Updated(1)),
    ("registry expiry date", Field::Expires(0)),
    ("expiration date", Field::Expires(1)),
    ("expiry date", Field::Expires(1)),
    ("expiry", Field::Expires(1)),
    ("expires", Field::Expires(1)),
    ("expires on", Field::Expires(1)),
    ("expire", Field::Expires(1)),
    ("expire date", Field::Expires(1)),
    ("exp date", Field::Expires(1)),
    ("expiration time", Field::Expires(1)),
    ("paid till", Field::Expires(1)),
    ("valid until", Field::Expires(1)),
    ("domain expiration date", Field::Expires(1)),
    ("domain expires", Field::Expires(1)),
    ("record will expire on", Field::Expires(1)),
    ("record expires on", Field::Expires(1)),
    ("record expired", Field::Expires(1)),
    ("expires at", Field::Expires(1)),
    ("valid date", Field::Expires(1)),
    ("expiration", Field::Expires(1)),
    ("renewal", Field::Expires(1)),
    ("date renewal", Field::Expires(1)),
    ("domain datebilleduntil", Field::Expires(1)),
    ("renewal date", Field::Expires(1)),
    ("fecha de vencimiento", Field::Expires(1)),
    ("fecha de expiracion", Field::Expires(1)),
    ("fecha de expiración", Field::Expires(1)),
    ("有効期限", Field::Expires(1)),
    ("사용 종료일", Field::Expires(1)),
    ("registrar registration expiration date", Field::Expires(2)),
    ("dnssec", Field::Dnssec),
    ("dnssec status", Field::Dnssec),
    ("domain signed", Field::Dnssec),
    ("signed", Field::Dnssec),
];

/// Keys that open a block of the given kind when their value is empty.
const BLOCK_KEYS: &[(&str, Block)] = &[
    ("domain name", Block::Domain),
    ("domain", Block::Domain),
    ("registrant", Block::Registrant),
    ("registrant contact", Block::Registrant),
    ("registrant contact information", Block::Registrant),
    ("holder", Block::Registrant),
    ("domain holder", Block::Registrant),
    ("owner", Block::Registrant),
    ("titular", Block::Registrant),
    ("owner contact", Block::Registrant),
    ("organization using domain name", Block::Registrant),
    ("registrar", Block::Registrar),
    ("sponsoring registrar", Block::Registrar),
    ("registrar information", Block::Registrar),
    ("name servers", Block::Nameservers),
    ("nameservers", Block::Nameservers),
    ("name server", Block::Nameservers),
    ("nameserver", Block::Nameservers),
    ("domain nameservers", Block::Nameservers),
    ("domain servers", Block::Nameservers),
    ("domain servers in listed order", Block::Nameservers),
    ("dns servers", Block::Nameservers),
    ("name servers information", Block::Nameservers),
    ("servidores de nombre", Block::Nameservers),
    ("servidor(es) de nombres de dominio", Block::Nameservers),
    ("servers", Block::Nameservers),
    ("name server information", Block::Nameservers),
    ("domain name servers", Block::Nameservers),
    ("domain name servers listed in order", Block::Nameservers),
    ("nameserver information", Block::Nameservers),
    ("name servers in the listed order", Block::Nameservers),
    ("registration status", Block::Status),
    ("status", Block::Status),
    ("domain status", Block::Status),
    ("administrative contact", Block::OtherContact),
    ("administrative contact(s)", Block::OtherContact),
    ("admin contact", Block::OtherContact),
    ("technical contact", Block::OtherContact),
    ("technical contact(s)", Block::OtherContact),
    ("technical contacts", Block::OtherContact),
    ("tech c", Block::OtherContact),
    ("zone c", Block::OtherContact),
    ("admin c", Block::OtherContact),
    ("tech contact", Block::OtherContact),
    ("billing contact", Block::OtherContact),
    ("admin contact(s)", Block::OtherContact),
    ("billing contact(s)", Block::OtherContact),
    ("administrative contact code", Block::OtherContact),
    ("technical contact code", Block::OtherContact),
    ("billing contact code", Block::OtherContact),
    ("registrar technical contacts", Block::OtherContact),
    ("onsite contacts", Block::OtherContact),
    ("zone contact", Block::OtherContact),
    ("contact information", Block::OtherContact),
    ("domicile", Block::OtherContact),
    ("registrant's address", Block::OtherContact),
];

fn normalise_key(key: &str) -> String {
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

/// Key candidates for one printed key: the key itself, the parts of a bilingual key
/// (`Nome de domínio / Domain Name`), each without a trailing parenthesis (`(dd/mm/yyyy)`).
fn key_candidates(key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut push = |k: &str| {
        let k = k.trim();
        if !k.is_empty() {
            out.push(k.to_owned());
            if let Some(open) = k.rfind(" (").filter(|_| k.ends_with(')')) {
                out.push(k[..open].trim().to_owned());
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

fn field_for(key: &str) -> Option<Field> {
    let find = |k: &str| KEY_FIELDS.iter().find(|(name, _)| *name == k).map(|(_, f)| *f).or_else(|| lexicon_field(k));
    key_candidates(key).iter().find_map(|k| find(k)).or_else(|| {
        // Numbered keys: "Name Server 1", "ns1_hostname", "ns_name_01".
        let bare = without_numbers(key);
        (bare != key).then(|| find(&bare)).flatten().filter(|f| matches!(f, Field::Nameserver))
    })
}

/// A key wording from the lexicon's field tables (`workers/data/whois-lexicon.json`, `fields`):
/// synonyms by field, and a registrant role followed by a country key (`owner-country`).
fn lexicon_field(key: &str) -> Option<Field> {
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
        _ => return lex.is_registrant_country_key(key).then_some(Field::RegistrantCountry),
    };
    Some(field)
}

fn block_for(key: &str) -> Option<Block> {
    key_candidates(key).iter().find_map(|k| {
        BLOCK_KEYS.iter().find(|(name, _)| name == k).map(|(_, b)| *b).or_else(|| match field_lexicon().block_of(k) {
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
fn is_yaml_tag(v: &str) -> bool {
    v.strip_prefix('!').is_some_and(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// The country of the registrant's contact object, found by its handle: `holder-c: X` or
/// `registrant: X` with, further on, a paragraph `nic-hdl: X` / `contact: X` ... `country: FR`
/// (RIPE-style and AFNIC-style databases print contacts as separate objects).
fn contact_country(lines: &[Line<'_>], handle: &str) -> Option<String> {
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
fn without_numbers(key: &str) -> String {
    key.chars().filter(|c| !c.is_ascii_digit()).collect::<String>().split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Keys that describe a contact (its name, address, ...): inside a contact block they belong to
/// that contact even when printed without indentation.
fn is_contact_subkey(key: &str) -> bool {
    const SUBKEYS: &[&str] = &[
        "name",
        "org",
        "organization",
        "organisation",
        "company",
        "address",
        "street",
        "city",
        "state",
        "state or province",
        "province",
        "postal code",
        "zip",
        "country",
        "country code",
        "region",
        "phone",
        "fax",
        "fax no",
        "e mail",
        "email",
        "handle",
        "id",
        "contact id",
        "nic handle",
        "type",
        "url",
        "web",
        "postalcode",
        "countrycode",
        "remarks",
        "organization name",
        "organisation name",
        "organization id",
        "street address",
    ];
    key_candidates(key).iter().any(|k| SUBKEYS.contains(&k.as_str()))
}

/// Finds a dot leader (three or more dots, possibly spaced) and returns its byte range.
fn find_leader(t: &str) -> Option<(usize, usize)> {
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
fn split_key_value(text: &str) -> Option<(String, String)> {
    // "** Domain Servers:" (TRABIS) — list bullets before the key.
    let t = strip_enumeration(text.trim_start_matches(['*', ' ']));
    // "[Domain Name]   GOOGLE.JP" (JPRS, MYNIC).
    if let Some(rest) = t.strip_prefix('[')
        && let Some(close) = rest.find(']')
    {
        let key = normalise_key(&rest[..close]);
        if !key.is_empty() && key.len() <= 60 {
            return Some((key, rest[close + 1..].trim().to_owned()));
        }
    }
    if let Some(colon) = t.find(':') {
        let (k, v) = (&t[..colon], &t[colon + 1..]);
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
    if let Some((start, end)) = find_leader(t) {
        let k = &t[..start];
        if key_is_plausible(k) {
            return Some((normalise_key(k), t[end..].trim().to_owned()));
        }
    }
    // "Record created on 2005-04-15 21:43:27", "Registered on 30th April 2003": a date key
    // without a colon, recognised by a date following it.
    let lower = t.to_lowercase();
    if lower.len() == t.len() {
        for (name, field) in KEY_FIELDS {
            if matches!(field, Field::Created(_) | Field::Updated(_) | Field::Expires(_))
                && let Some(rest) = lower.strip_prefix(name).and_then(|r| r.strip_prefix(' '))
            {
                // `get`: lower-casing may shift char boundaries in exotic scripts.
                let value = t.get(t.len() - rest.len()..).unwrap_or_default().trim();
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
                if let Some(rest) = lower.strip_prefix(name.as_str()).and_then(|r| r.strip_prefix(' ')) {
                    let value = t.get(t.len() - rest.len()..).unwrap_or_default().trim();
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
    }
    // "Domain-status       DOM_HELD": key, a tab or two spaces, value.
    let split = t.find('\t').or_else(|| t.find("  "))?;
    let (k, v) = (&t[..split], t[split..].trim());
    if !v.is_empty() && k.chars().all(|c| c.is_alphabetic() || c == ' ' || c == '-' || c == '_') && key_is_plausible(k)
    {
        return Some((normalise_key(k), v.to_owned()));
    }
    None
}

fn rwhois_attribute(class: &str, rest: &str) -> Option<(String, String)> {
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
fn strip_enumeration(t: &str) -> &str {
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

fn strip_dot_leader(k: &str) -> &str {
    k.trim_end().trim_end_matches(['.', ' ']).trim_end()
}

fn key_is_plausible(k: &str) -> bool {
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

#[derive(Default)]
struct FieldState {
    record: DomainRecord,
    created: Option<(u8, OffsetDateTime)>,
    updated: Option<(u8, OffsetDateTime)>,
    expires: Option<(u8, OffsetDateTime)>,
    name_or_org: Option<String>,
    domain_ace: Option<String>,
    /// A registrar given only by its registry handle, used when no name follows.
    registrar_handle: Option<String>,
    /// The registrant contact's handle, for finding its country in a separate contact object.
    registrant_handle: Option<String>,
    /// The registrant's multi-line address: its last line, the number of lines, and whether
    /// lines without a key still continue it.
    registrant_address: Option<(String, usize, bool)>,
}

/// A block opened by an empty-valued key, waiting for its indented lines.
struct OpenBlock {
    kind: Block,
    key: String,
    indent: usize,
    children: usize,
    /// Some children were indented: the block's extent is then given by indentation alone.
    indented: bool,
}

/// Lines made only of rule characters ("-----", "=====") carry nothing.
fn is_decoration(t: &str) -> bool {
    t.chars().all(|c| matches!(c, '-' | '=' | '_' | '*' | '+' | '~' | ' '))
}

fn read_fields(lines: &[Line<'_>], order: DateOrder) -> DomainRecord {
    let mut st = FieldState::default();
    let mut stack: Vec<OpenBlock> = Vec::new();
    let mut prev_blank = false;
    // The key of the previous top-level line, for runs of repeated keys ("changed:" lines).
    let mut prev_top_key: Option<String> = None;
    for line in lines {
        let text = line.raw.trim();
        if text.is_empty() {
            prev_blank = true;
            continue;
        }
        if line.comment {
            stack.clear();
            prev_blank = false;
            continue;
        }
        if is_decoration(text) {
            continue;
        }
        let kv = split_key_value(text).map(|(k, v)| if is_yaml_tag(&v) { (k, String::new()) } else { (k, v) });
        let this_top_key = kv.as_ref().map(|(k, _)| k.clone()).filter(|_| stack.is_empty() || line.indent == 0);
        let repeated_key = this_top_key.is_some() && this_top_key == prev_top_key;
        prev_top_key = this_top_key;
        // Close the blocks this line is not part of.
        while let Some(top) = stack.last_mut() {
            if line.indent > top.indent {
                top.indented = true;
                break;
            }
            if line.indent == top.indent && accepts_unindented(top, kv.as_ref(), text, prev_blank) {
                break;
            }
            stack.pop();
        }
        prev_blank = false;
        let ignored = stack.iter().any(|b| b.kind == Block::OtherContact);
        if let Some((key, _)) = kv.as_ref().filter(|(_, v)| v.is_empty()) {
            // A nested or top-level block header.
            let kind = if ignored { Block::OtherContact } else { block_for(key).unwrap_or(Block::Plain) };
            if let Some(top) = stack.last_mut() {
                top.children += 1;
            }
            stack.push(OpenBlock { kind, key: key.clone(), indent: line.indent, children: 0, indented: false });
            continue;
        }
        if ignored {
            if let Some(top) = stack.last_mut() {
                top.children += 1;
            }
            continue;
        }
        match stack.last_mut() {
            Some(top) => {
                let index = top.children;
                top.children += 1;
                let (kind, key) = (top.kind, top.key.clone());
                apply_child(&mut st, kind, &key, index, kv, text, order);
            }
            None => match kv {
                Some((key, value)) => {
                    // "Registrar: ACTI-0024" followed by "Name: ACTIVE 24, s.r.o." (SK-NIC, CZ.NIC
                    // style): a handle opens the contact whose details follow unindented.
                    let handle_of = match field_for(&key) {
                        Some(Field::Registrar) => Some(Block::Registrar),
                        Some(Field::RegistrantNameOrOrg) => Some(Block::Registrant),
                        _ => None,
                    };
                    if let Some(kind) = handle_of.filter(|_| is_handle(&value)) {
                        if kind == Block::Registrar && st.registrar_handle.is_none() {
                            st.registrar_handle = Some(value.clone());
                        }
                        if kind == Block::Registrant && st.registrant_handle.is_none() {
                            st.registrant_handle = Some(value.clone());
                        }
                        stack.push(OpenBlock { kind, key, indent: line.indent, children: 1, indented: false });
                    } else if let Some(f) = field_for(&key) {
                        match f {
                            // "changed: ... 19960111" ... "changed: ... 20140116": a run of change
                            // lines is a history; the record was last updated at the latest.
                            Field::Updated(p) if repeated_key => keep_latest(&mut st.updated, p, &value, order),
                            _ => apply(&mut st, f, &value, order),
                        }
                        // "nameservers: ns2.google.com.\n             ns1.google.com." (NASK):
                        // more-indented lines continue a list value.
                        if matches!(f, Field::Nameserver | Field::Status) {
                            stack.push(OpenBlock {
                                kind: Block::Plain,
                                key,
                                indent: line.indent,
                                children: 1,
                                indented: false,
                            });
                        }
                    } else if st.registrant_handle.is_none()
                        && !value.contains(char::is_whitespace)
                        && key_candidates(&key).iter().any(|k| field_lexicon().registrant_handle_keys.contains(k))
                    {
                        // "holder-c: A1967-FRNIC": the registrant's contact object, by handle.
                        st.registrant_handle = Some(value.clone());
                    }
                }
                None => {
                    // "Nameservers", "Registrar" (.it, DK Hostmaster, .ai) without a colon open
                    // a block too.
                    let key = normalise_key(text);
                    let header_like = text.chars().all(|c| c.is_alphabetic() || matches!(c, ' ' | '(' | ')' | '-'));
                    let kind = block_for(&key).filter(|k| {
                        header_like
                            && matches!(
                                k,
                                Block::Registrant | Block::Registrar | Block::Nameservers | Block::OtherContact
                            )
                    });
                    if let Some(kind) = kind {
                        stack.push(OpenBlock { kind, key, indent: line.indent, children: 0, indented: false });
                    }
                }
            },
        }
    }
    // A multi-line registrant address whose last line is a country ("IT", "FRANCE").
    if st.record.registrant.country.is_none()
        && let Some((tail, n, _)) = st.registrant_address.take()
        && n >= 2
    {
        st.record.registrant.country = field_lexicon().country_code(&tail);
    }
    if st.record.registrant.country.is_none()
        && let Some(handle) = st.registrant_handle.clone()
        && let Some(country) = contact_country(lines, &handle)
    {
        apply(&mut st, Field::RegistrantCountry, &country, order);
    }
    finish(st)
}

/// A key naming a name server inside a name-server block ("Name", "Hostname", "DNS",
/// "Primary Server Hostname"), not its address.
fn is_nameserver_key(k: &str) -> bool {
    matches!(field_for(k), Some(Field::Nameserver))
        || k == "dns"
        || ((k.contains("name") || k.contains("server") || k.contains("host"))
            && !k.contains("address")
            && !k.contains("ip"))
}

/// May a line printed at the same indentation as the open block's key still belong to it?
fn accepts_unindented(top: &OpenBlock, kv: Option<&(String, String)>, text: &str, prev_blank: bool) -> bool {
    if top.indented {
        return false;
    }
    match kv {
        // "REGISTRANT:\nGoogle Inc.\n" — but a blank line after some children ends the block,
        // and so does a line that is itself a block header ("Technical Contact").
        None => !(prev_blank && top.children > 0) && block_for(&normalise_key(text)).is_none(),
        // "Registrant:\n----\nOrg: X\nName: Y" — contact details without indentation.
        Some((k, v)) => {
            let belongs = match top.kind {
                Block::Registrant | Block::Registrar | Block::OtherContact | Block::Domain => is_contact_subkey(k),
                // ".tn": "DNS servers" / "Name....: ns4.ati.tn." / "IP n° 1 : ..." unindented.
                Block::Nameservers => is_nameserver_key(k) || k.contains("ip"),
                _ => false,
            };
            !v.is_empty() && !prev_blank && belongs
        }
    }
}

fn apply_child(
    st: &mut FieldState,
    block: Block,
    block_key: &str,
    index: usize,
    kv: Option<(String, String)>,
    text: &str,
    order: DateOrder,
) {
    let top_level = |st: &mut FieldState, k: &str, v: &str| {
        if let Some(f) = field_for(k) {
            apply(st, f, v, order);
        }
    };
    match (block, kv) {
        (Block::OtherContact, _) => {}
        (Block::Domain, None) if index == 0 => apply(st, Field::Domain, text, order),
        // "Domain:\nname: git.ee" (.ee)
        (Block::Domain, Some((k, v))) if k == "name" => apply(st, Field::Domain, &v, order),
        (Block::Registrant, None) if index == 0 => apply(st, Field::RegistrantNameOrOrg, text, order),
        (Block::Registrant, None) => {
            // "Address: Viale Alessandrino, 595\n    Roma\n    00172\n    RM\n    IT"
            if let Some((tail, n, true)) = st.registrant_address.as_mut() {
                *tail = text.to_owned();
                *n += 1;
            }
        }
        (Block::Registrant, Some((k, v))) => {
            let cands = key_candidates(&k);
            if cands.iter().any(|c| matches!(c.as_str(), "address" | "street" | "street address")) {
                if st.registrant_address.is_none() {
                    st.registrant_address = Some((v.clone(), 1, true));
                }
            } else if let Some(address) = st.registrant_address.as_mut() {
                address.2 = false;
            }
            let has = |names: &[&str]| cands.iter().any(|c| names.contains(&c.as_str()));
            if has(&["organization", "organisation", "org", "company", "company name", "organization name"]) {
                apply(st, Field::RegistrantOrg, &v, order);
            } else if has(&["name"]) {
                apply(st, Field::RegistrantNameOrOrg, &v, order);
            } else if has(&["country", "country code", "countrycode"])
                || cands.iter().any(|c| field_lexicon().is_country_key(c))
            {
                apply(st, Field::RegistrantCountry, &v, order);
            } else if !is_contact_subkey(&k) {
                // GoDaddy prints the whole record indented under "Registrant:"; dates there may
                // also be the contact's own, so they rank below the record's.
                match field_for(&k) {
                    Some(Field::Created(p)) => apply(st, Field::Created(p + 3), &v, order),
                    Some(Field::Updated(p)) => apply(st, Field::Updated(p + 3), &v, order),
                    Some(Field::Expires(p)) => apply(st, Field::Expires(p + 3), &v, order),
                    _ => top_level(st, &k, &v),
                }
            }
        }
        (Block::Registrar, None) if index == 0 => apply(st, Field::Registrar, text, order),
        (Block::Registrar, Some((k, v))) => match k.as_str() {
            "name" | "organization" | "organisation" | "registrar name" | "organization name" | "organisation name" => {
                apply(st, Field::Registrar, &v, order);
            }
            "whois" | "whois server" => apply(st, Field::RegistrarWhois, &v, order),
            _ if !is_contact_subkey(&k) => top_level(st, &k, &v),
            _ => {}
        },
        (Block::Nameservers, None) => apply(st, Field::Nameserver, text.trim_start_matches(['-', '*', ' ']), order),
        (Block::Nameservers, Some((k, v))) => {
            if is_nameserver_key(&k) {
                apply(st, Field::Nameserver, &v, order);
            } else {
                top_level(st, &k, &v);
            }
        }
        (Block::Status, None) => apply(st, Field::Status, text, order),
        (Block::Plain, None) => {
            if let Some(f) = field_for(block_key) {
                apply(st, f, text, order);
            }
        }
        (_, Some((k, v))) => top_level(st, &k, &v),
        _ => {}
    }
}

fn apply(st: &mut FieldState, field: Field, value: &str, order: DateOrder) {
    let value = value.trim();
    if value.is_empty() {
        return;
    }
    let r = &mut st.record;
    match field {
        Field::Domain | Field::DomainAce => {
            let Some(d) = value.split_whitespace().next().map(|t| t.trim_end_matches('.').to_lowercase()) else {
                return;
            };
            if !d.contains('.') || !d.chars().all(|c| c.is_alphanumeric() || c == '.' || c == '-') {
                return;
            }
            if field == Field::DomainAce || (r.domain.as_deref().is_some_and(|cur| !cur.is_ascii()) && d.is_ascii()) {
                // The record is documented as an A-label: an ASCII form printed later wins.
                if d.is_ascii() && st.domain_ace.is_none() {
                    st.domain_ace = Some(d);
                }
            } else if r.domain.is_none() {
                r.domain = Some(d);
            }
        }
        Field::Status => {
            if let Some(date) = status_until(value) {
                keep_date(&mut st.expires, 3, date, order);
            }
            for part in value.split(',') {
                let s = clean_status(part);
                // A wrapped explanation ("This feature is provided to protect against ...") or a
                // number is not a status word.
                let sentence = s.split(" (").next().unwrap_or_default().split_whitespace().count() >= 6;
                let number = s.chars().all(|c| c.is_ascii_digit() || c.is_whitespace());
                if !s.is_empty() && !sentence && !number && !r.status.contains(&s) {
                    r.status.push(s);
                }
            }
        }
        Field::Registrar => {
            if r.registrar.is_none() {
                let v = strip_registrar_id(&cut_url(value));
                if !v.is_empty() && !is_placeholder(&v) {
                    r.registrar = Some(v);
                }
            }
        }
        Field::RegistrarWhois => {
            if r.registrar_whois_server.is_none()
                && let Some(tok) = value.split_whitespace().next()
            {
                let host = tok.trim_start_matches("whois://").trim_end_matches(['.', '/']).to_ascii_lowercase();
                if is_host_name(&host) {
                    r.registrar_whois_server = Some(host);
                }
            }
        }
        Field::RegistrantOrg => {
            if r.registrant.org.is_none() && !is_placeholder(value) {
                r.registrant.org = Some(value.to_owned());
            }
        }
        Field::RegistrantNameOrOrg => {
            if st.name_or_org.is_none() && !is_placeholder(value) {
                st.name_or_org = Some(value.to_owned());
            }
        }
        Field::RegistrantCountry => {
            if r.registrant.country.is_none() {
                // "FR", "France", "France (FR)": names through the lexicon's country table.
                r.registrant.country = field_lexicon().country_code(value);
            }
        }
        Field::Nameserver => {
            for tok in value.split(|c: char| c.is_whitespace() || c == ',' || c == ';') {
                let host = tok
                    .trim_matches(|c: char| matches!(c, '(' | ')' | '[' | ']' | '"'))
                    .trim_end_matches('.')
                    .to_ascii_lowercase();
                // "ns1.example.com 192.0.2.1", "google.pt NS ns1.google.com." — names only; the
                // domain itself is dropped when the record is finished.
                if is_host_name(&host) && !r.nameservers.contains(&host) {
                    r.nameservers.push(host);
                }
            }
        }
        Field::Created(p) => keep_date(&mut st.created, p, value, order),
        Field::Updated(p) => keep_date(&mut st.updated, p, value, order),
        Field::Expires(p) => keep_date(&mut st.expires, p, value, order),
        Field::Dnssec => {
            if r.dnssec.is_none() {
                r.dnssec = parse_dnssec(value);
            }
        }
    }
}

/// The date in a status value that carries the expiry ("OK-UNTIL 20131218000000").
fn status_until(value: &str) -> Option<&str> {
    let lower = value.to_lowercase();
    if lower.len() != value.len() {
        return None;
    }
    field_lexicon().status_until_words.iter().find_map(|w| {
        let mut from = 0;
        while let Some(rel) = lower[from..].find(w.as_str()) {
            let start = from + rel;
            let end = start + w.len();
            let before_ok = lower[..start].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
            let rest = value[end..].trim_start();
            if before_ok && value[end..].starts_with([' ', ':']) && parse_date(rest, DateOrder::Dmy).is_some() {
                return Some(rest);
            }
            from = end;
        }
        None
    })
}

/// A registry handle rather than a name: one token with a digit or a hyphen ("ACTI-0024").
fn is_handle(v: &str) -> bool {
    !v.is_empty()
        && !v.contains(char::is_whitespace)
        && v.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && v.contains(|c: char| c.is_ascii_digit() || c == '-')
}

fn finish(mut st: FieldState) -> DomainRecord {
    if st.record.registrar.is_none() {
        st.record.registrar = st.registrar_handle.take();
    }
    if let Some(ace) = st.domain_ace.take()
        && st.record.domain.as_deref().is_none_or(|d| !d.is_ascii())
    {
        st.record.domain = Some(ace);
    }
    // DK Hostmaster's "DNS:" line names the domain itself, not a name server.
    if let Some(d) = st.record.domain.clone() {
        st.record.nameservers.retain(|n| *n != d);
    }
    st.record.created_at = st.created.map(|(_, d)| d);
    st.record.updated_at = st.updated.map(|(_, d)| d);
    st.record.expires_at = st.expires.map(|(_, d)| d);
    if st.record.registrant.org.is_none() {
        st.record.registrant.org = st.name_or_org;
    }
    st.record
}

fn keep_date(slot: &mut Option<(u8, OffsetDateTime)>, priority: u8, value: &str, order: DateOrder) {
    if slot.is_some_and(|(p, _)| p <= priority) {
        return;
    }
    if let Some(d) = parse_date(value, order) {
        *slot = Some((priority, d));
    }
}

/// Like [`keep_date`], but at equal priority a later date replaces an earlier one.
fn keep_latest(slot: &mut Option<(u8, OffsetDateTime)>, priority: u8, value: &str, order: DateOrder) {
    match *slot {
        Some((p, current)) if p == priority => {
            if let Some(d) = parse_date(value, order).filter(|d| *d > current) {
                *slot = Some((priority, d));
            }
        }
        _ => keep_date(slot, priority, value, order),
    }
}

fn clean_status(s: &str) -> String {
    // "ok - Normal state." / "clientDeleteProhibited - status prevent domain deletion ...":
    // the label, without the registry's explanation.
    let s = cut_url(s);
    let s = s.split(" - ").next().unwrap_or(&s);
    s.trim_end_matches(['.', ';']).trim().to_owned()
}

/// Drops a trailing URL: `clientTransferProhibited https://icann.org/epp#...` → the label.
fn cut_url(s: &str) -> String {
    let s = s.trim();
    let cut = ["(http", "http://", "https://"].iter().filter_map(|p| s.find(p)).min().unwrap_or(s.len());
    s[..cut].trim().to_owned()
}

/// Drops a registry's handle after a registrar name: "MarkMonitor Inc. (R22-LRCC)", "(292)",
/// "NetNames Limited [Tag = NETNAMES]".
fn strip_registrar_id(v: &str) -> String {
    let mut v = v.trim();
    loop {
        let before = v;
        if v.ends_with(']')
            && let Some(open) = v.rfind('[')
        {
            v = v[..open].trim_end();
        }
        if v.ends_with(')')
            && let Some(open) = v.rfind('(')
        {
            let inner = &v[open..];
            if !inner.contains(char::is_whitespace) && inner.contains(|c: char| c.is_ascii_digit()) && open > 0 {
                v = v[..open].trim_end();
            }
        }
        if v == before {
            break;
        }
    }
    v.to_owned()
}

fn is_placeholder(v: &str) -> bool {
    let l = v.trim().to_ascii_lowercase();
    l.is_empty() || matches!(l.as_str(), "-" | "n/a" | "na" | "none" | "not defined" | "not.defined" | "null")
}

fn is_host_name(s: &str) -> bool {
    s.len() >= 3
        && s.contains('.')
        && !s.starts_with(['.', '-'])
        && s.chars().all(|c| c.is_alphanumeric() || c == '.' || c == '-' || c == '_')
        && s.chars().any(char::is_alphabetic)
        && !looks_like_address(s)
}

fn looks_like_address(s: &str) -> bool {
    s.contains(':') || (!s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// DNSSEC state as printed: `signedDelegation` / `unsignedDelegation` (ICANN RDDS),
/// `yes`/`no`, `Active`/`Inactive`, KISA's `서명` / `미서명`.
fn parse_dnssec(v: &str) -> Option<bool> {
    let l = v.trim().to_lowercase();
    let first = l.split(|c: char| c.is_whitespace() || c == ',' || c == '(').next().unwrap_or_default();
    match first {
        "unsigned" | "unsigneddelegation" | "no" | "inactive" | "false" | "off" | "none" | "미서명" => Some(false),
        "not" if l.starts_with("not signed") => Some(false),
        "signed" | "signeddelegation" | "yes" | "active" | "true" | "on" | "서명" => Some(true),
        _ => field_lexicon().dnssec(&l),
    }
}

// ---------------------------------------------------------------------------------------------
// Dates
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(u64, usize),
    Word(String),
    Sep(char),
}

fn tokenize(s: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_ascii_digit() {
            let mut n: u64 = 0;
            let mut len = 0;
            while let Some(&d) = chars.peek() {
                let Some(v) = d.to_digit(10) else { break };
                n = n.saturating_mul(10).saturating_add(u64::from(v));
                len += 1;
                chars.next();
            }
            out.push(Tok::Num(n, len));
        } else if c.is_alphabetic() {
            let mut w = String::new();
            while let Some(&d) = chars.peek() {
                if !d.is_alphabetic() {
                    break;
                }
                w.extend(d.to_lowercase());
                chars.next();
            }
            out.push(Tok::Word(w));
        } else {
            if !c.is_whitespace() {
                out.push(Tok::Sep(c));
            }
            chars.next();
        }
    }
    out
}

fn month_from_word(w: &str) -> Option<Month> {
    const NAMES: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
    if w.len() < 3 {
        return None;
    }
    let idx = NAMES.iter().position(|n| w.starts_with(n))?;
    // Reject words that merely start like a month ("marketing", "decision").
    const FULL: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    if !(w.len() == 3 || FULL[idx].starts_with(w) || w == "sept") {
        return None;
    }
    Month::try_from(u8::try_from(idx + 1).ok()?).ok()
}

fn make_date(y: u32, m: u32, d: u32) -> Option<Date> {
    if !(1980..=2200).contains(&y) {
        return None;
    }
    let month = Month::try_from(u8::try_from(m).ok()?).ok()?;
    Date::from_calendar_date(i32::try_from(y).ok()?, month, u8::try_from(d).ok()?).ok()
}

/// Parses the date formats registries print, returning UTC.
///
/// ISO 8601 with or without time, fraction, `Z` or offset (`2019-01-01T10:00:00+02:00`,
/// `2019-01-01 10:00:00`, `2019-01-01`), `2019.01.01`, `2019/01/01`, `20190101`, `2012. 05. 19.`,
/// `01-Jan-2019`, `01 January 2019`, `Jan 01 2019`, `Tue Dec 12 2000`, `01.02.2019`, and
/// `01/02/2019` (day first unless `order` says month first or the numbers decide). Times
/// without a zone are taken as UTC; a few zone abbreviations (JST, CET, ...) are understood.
pub(crate) fn parse_date(s: &str, order: DateOrder) -> Option<OffsetDateTime> {
    let toks = tokenize(s);
    for start in 0..toks.len() {
        if let Some((date, next)) = date_at(&toks, start, order) {
            let (time, offset) = time_at(&toks, next);
            let dt = PrimitiveDateTime::new(date, time).assume_offset(offset).to_offset(UtcOffset::UTC);
            return Some(dt);
        }
    }
    None
}

fn num(t: Option<&Tok>) -> Option<(u32, usize)> {
    match t {
        Some(Tok::Num(n, l)) => Some((u32::try_from(*n).ok()?, *l)),
        _ => None,
    }
}

fn is_date_sep(t: Option<&Tok>) -> bool {
    matches!(t, Some(Tok::Sep('-' | '.' | '/' | ',')))
}

/// Tries to read a date starting at token `i`; returns it and the index after it.
fn date_at(t: &[Tok], i: usize, order: DateOrder) -> Option<(Date, usize)> {
    let at = |k: usize| t.get(k);
    // Skip a separator run between fields (e.g. "2012. 05. 19." or "01-Jan-2019").
    let skip = |mut k: usize| {
        while is_date_sep(at(k)) {
            k += 1;
        }
        k
    };
    match at(i) {
        Some(Tok::Num(y, 4)) => {
            let y = &u32::try_from(*y).ok()?;
            let j = skip(i + 1);
            if j == i + 1 {
                return None;
            }
            // YYYY-MM-DD, YYYY.MM.DD, YYYY/MM/DD, YYYY. MM. DD.
            if let Some((m, _)) = num(at(j)).filter(|(_, l)| *l <= 2) {
                let k = skip(j + 1);
                let (d, _) = num(at(k)).filter(|(_, l)| *l <= 2)?;
                return make_date(*y, m, d).map(|date| (date, k + 1));
            }
            // YYYY-Mon-DD
            if let Some(Tok::Word(w)) = at(j) {
                let m = month_from_word(w)?;
                let k = skip(j + 1);
                let (d, _) = num(at(k)).filter(|(_, l)| *l <= 2)?;
                return make_date(*y, u32::from(u8::from(m)), d).map(|date| (date, k + 1));
            }
            None
        }
        // 20100101 (.il, .hr) and 20121216134104 (.ua, date and time run together).
        Some(Tok::Num(n, 8)) => {
            let n = u32::try_from(*n).ok()?;
            make_date(n / 10000, (n / 100) % 100, n % 100).map(|date| (date, i + 1))
        }
        Some(Tok::Num(n, 14)) => {
            let d = u32::try_from(n / 1_000_000).ok()?;
            make_date(d / 10000, (d / 100) % 100, d % 100).map(|date| (date, i + 1))
        }
        Some(Tok::Num(a, l)) if *l <= 2 => {
            let a = &u32::try_from(*a).ok()?;
            let mut j = skip(i + 1);
            // Ordinal suffix: "9th November 2009".
            if let Some(Tok::Word(w)) = at(j)
                && matches!(w.as_str(), "st" | "nd" | "rd" | "th")
            {
                j = skip(j + 1);
            }
            match at(j) {
                // DD-Mon-YYYY, DD Mon YYYY
                Some(Tok::Word(w)) => {
                    let m = month_from_word(w)?;
                    let k = skip(j + 1);
                    // Four-digit year, or two digits as in GoDaddy's "13-Apr-10".
                    let (y, yl) = num(at(k))?;
                    let y = match yl {
                        4 => y,
                        2 if y < 70 => 2000 + y,
                        2 => 1900 + y,
                        _ => return None,
                    };
                    make_date(y, u32::from(u8::from(m)), *a).map(|date| (date, k + 1))
                }
                // DD.MM.YYYY, DD/MM/YYYY, MM/DD/YYYY
                Some(Tok::Num(b, bl)) if *bl <= 2 && j > i + 1 => {
                    let b = &u32::try_from(*b).ok()?;
                    let k = skip(j + 1);
                    if k == j + 1 {
                        return None;
                    }
                    // Four-digit year, or two digits as in Red.es's "16/09/03".
                    let (y, yl) = num(at(k))?;
                    let y = match yl {
                        4 => y,
                        2 if matches!(at(k + 1), None | Some(Tok::Sep(_))) && y < 70 => 2000 + y,
                        2 if matches!(at(k + 1), None | Some(Tok::Sep(_))) => 1900 + y,
                        _ => return None,
                    };
                    let (d, m) = if *a > 12 {
                        (*a, *b)
                    } else if *b > 12 {
                        (*b, *a)
                    } else {
                        match order {
                            DateOrder::Dmy => (*a, *b),
                            DateOrder::Mdy => (*b, *a),
                        }
                    };
                    make_date(y, m, d).map(|date| (date, k + 1))
                }
                _ => None,
            }
        }
        // Mon DD YYYY, Mon DD HH:MM:SS ZZZ YYYY, "September 9 2009".
        Some(Tok::Word(w)) => {
            let m = month_from_word(w)?;
            let j = skip(i + 1);
            let (d, dl) = num(at(j))?;
            if dl > 2 {
                return None;
            }
            let k = skip(j + 1);
            // A time and zone may sit between the day and the year (C `asctime` style).
            (k..t.len().min(k + 8)).find_map(|scan| match num(at(scan)) {
                Some((y, 4)) if !matches!(at(scan + 1), Some(Tok::Sep(':'))) => {
                    make_date(y, u32::from(u8::from(m)), d).map(|date| (date, scan + 1))
                }
                _ => None,
            })
        }
        _ => None,
    }
}

/// Reads an optional `HH:MM[:SS[.fff]]` and zone after a date.
fn time_at(t: &[Tok], mut i: usize) -> (Time, UtcOffset) {
    let at = |k: usize| t.get(k);
    if matches!(at(i), Some(Tok::Word(w)) if w == "t") || matches!(at(i), Some(Tok::Sep('/'))) {
        i += 1;
    }
    let mut time = Time::MIDNIGHT;
    if let (Some((h, hl)), Some(Tok::Sep(':')), Some((m, 2))) = (num(at(i)), at(i + 1), num(at(i + 2)))
        && hl <= 2
    {
        let mut s = 0;
        let mut next = i + 3;
        if let (Some(Tok::Sep(':')), Some((sec, 2))) = (at(next), num(at(next + 1))) {
            s = sec;
            next += 2;
            if let (Some(Tok::Sep('.' | ',')), Some(_)) = (at(next), num(at(next + 1))) {
                next += 2;
            }
        }
        // Leap seconds ("23:59:60") are clamped; impossible values leave the time at midnight.
        if let Ok(parsed) = Time::from_hms(
            u8::try_from(h).unwrap_or(99),
            u8::try_from(m).unwrap_or(99),
            u8::try_from(s.min(59)).unwrap_or(99),
        ) {
            time = parsed;
            i = next;
        }
    }
    (time, zone_at(t, i))
}

fn zone_at(t: &[Tok], mut i: usize) -> UtcOffset {
    let at = |k: usize| t.get(k);
    if matches!(at(i), Some(Tok::Sep('('))) {
        i += 1;
    }
    let mut base = 0i32;
    if let Some(Tok::Word(w)) = at(i) {
        base = match w.as_str() {
            "z" | "utc" | "gmt" | "ut" => 0,
            "jst" | "kst" => 9 * 60,
            "cet" | "met" => 60,
            "cest" | "mest" | "eet" | "sast" => 120,
            "eest" | "msk" | "eat" | "ast" => 180,
            "brt" | "clst" => -180,
            "brst" => -120,
            "clt" | "edt" => -240,
            "est" | "cdt" => -300,
            "pdt" | "mst" => -420,
            "pst" => -480,
            _ => return UtcOffset::UTC,
        };
        i += 1;
    }
    // "+02:00", "+0200", "+02", "GMT+9:00"
    let sign = match at(i) {
        Some(Tok::Sep('+')) => 1,
        Some(Tok::Sep('-')) => -1,
        _ => return offset_minutes(base),
    };
    let Some((a, al)) = num(at(i + 1)) else {
        return offset_minutes(base);
    };
    let minutes = match al {
        4 => (a / 100) * 60 + a % 100,
        1 | 2 => match (at(i + 2), num(at(i + 3))) {
            (Some(Tok::Sep(':')), Some((mm, 2))) => a * 60 + mm,
            _ => a * 60,
        },
        _ => return offset_minutes(base),
    };
    let minutes = i32::try_from(minutes).unwrap_or(0);
    if minutes > 14 * 60 {
        return offset_minutes(base);
    }
    offset_minutes(base + sign * minutes)
}

fn offset_minutes(m: i32) -> UtcOffset {
    UtcOffset::from_whole_seconds(m * 60).unwrap_or(UtcOffset::UTC)
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn read(text: &str, server: Option<&str>, suffix: &str) -> WhoisReading {
        read_whois(text.as_bytes(), server, suffix, None)
    }

    #[test]
    fn marker_data_loads_and_validates() {
        let n = validate_marker_data().expect("the shipped marker data is valid");
        assert!(n > 10, "expected a good number of families, got {n}");
    }

    #[test]
    fn marker_syntax() {
        let m = compile_marker("^domain * not found").expect("valid");
        assert!(m.matches("domain foo.tn not found"));
        assert!(!m.matches("the domain foo.tn not found"));
        let m = compile_marker("=not found").expect("valid");
        assert!(m.matches("not found"));
        assert!(!m.matches("not found: x"));
        let m = compile_marker("^registrar:").expect("valid");
        assert!(m.matches("registrar: x"));
        assert!(!m.matches("registrar:"));
        assert!(compile_marker("Upper").is_err());
        assert!(compile_marker("").is_err());
    }

    #[test]
    fn bad_marker_data_is_rejected() {
        assert!(matches!(load_markers("{}"), Err(MarkerDataError::Json(_))));
        let dup = r#"{"version":1,"generic":{"available":["=x"]},"families":{
            "a.example":{"about":"a","suffixes":["x"]},"b.example":{"about":"b","suffixes":["x"]}}}"#;
        assert!(matches!(load_markers(dup), Err(MarkerDataError::Invalid(_))));
    }

    #[test]
    fn normalising_lines() {
        assert_eq!(normalise("%% No entries found in the AFNIC Database."), "no entries found in the afnic database");
        assert_eq!(normalise("Status:             AVAILABLE"), "status: available");
        assert_eq!(normalise("object:. . . . . . .x.dz"), "object: x.dz");
        assert_eq!(normalise("Domain Name      : x.kr"), "domain name: x.kr");
        assert_eq!(
            normalise(">>> Domain x.love is available for registration"),
            "domain x.love is available for registration"
        );
    }

    #[test]
    fn af_no_object_found_is_available() {
        let text = "Domain Name: u34jedzcq.af\nDomain Status: No Object Found\n";
        let r = read(text, Some("whois.nic.af"), "af");
        assert_eq!(r.class, WhoisClass::Available);
        assert_eq!(r.record.domain.as_deref(), Some("u34jedzcq.af"));
    }

    #[test]
    fn com_af_registered() {
        let text = "Domain Name: google.com.af\nRegistry Domain ID: D1-AF\nRegistrar WHOIS Server: whois.markmonitor.com\n\
            Updated Date: 2023-04-01T10:00:00.0Z\nCreation Date: 2009-02-02T00:00:00.0Z\n\
            Registry Expiry Date: 2025-02-02T00:00:00.0Z\nRegistrar: MarkMonitor Inc.\n\
            Domain Status: clientTransferProhibited https://icann.org/epp#clientTransferProhibited\n\
            Name Server: NS1.GOOGLE.COM\nName Server: ns2.google.com.\nDNSSEC: unsigned\n";
        let r = read(text, None, "com.af");
        assert_eq!(r.class, WhoisClass::Registered);
        assert!(!r.pending_delete);
        assert_eq!(r.record.domain.as_deref(), Some("google.com.af"));
        assert_eq!(r.record.registrar.as_deref(), Some("MarkMonitor Inc."));
        assert_eq!(r.record.status, vec!["clientTransferProhibited".to_owned()]);
        assert_eq!(r.record.nameservers, vec!["ns1.google.com".to_owned(), "ns2.google.com".to_owned()]);
        assert_eq!(r.record.created_at, Some(datetime!(2009-02-02 0:00 UTC)));
        assert_eq!(r.record.expires_at, Some(datetime!(2025-02-02 0:00 UTC)));
        assert_eq!(r.record.dnssec, Some(false));
        assert_eq!(r.record.registrar_whois_server.as_deref(), Some("whois.markmonitor.com"));
    }

    #[test]
    fn redemption_is_registered_pending_delete() {
        let text = "Domain Name: EXAMPLE.COM\nRegistrar: Some Registrar, Inc.\nCreation Date: 2001-01-01T00:00:00Z\n\
            Domain Status: redemptionPeriod https://icann.org/epp#redemptionPeriod\n\
            Domain Status: pendingDelete https://icann.org/epp#pendingDelete\n";
        let r = read(text, Some("whois.verisign-grs.com"), "com");
        assert_eq!(r.class, WhoisClass::Registered);
        assert!(r.pending_delete);
    }

    #[test]
    fn throttled_answers_are_rate_limited() {
        for (text, server, suffix) in [
            ("WHOIS LIMIT EXCEEDED - SEE WWW.PIR.ORG/WHOIS FOR DETAILS\n", Some("whois.pir.org"), "org"),
            ("%% Too many requests...\n%% No entries found in the AFNIC Database.\n", Some("whois.nic.fr"), "fr"),
            ("request limit exceeded for 127.0.0.1\n", None, "pl"),
            ("The WHOIS query quota for 127.0.0.1 has been exceeded\n", Some("whois.nic.uk"), "uk"),
        ] {
            assert_eq!(read(text, server, suffix).class, WhoisClass::RateLimited, "{text}");
        }
    }

    #[test]
    fn empty_answer_is_unknown() {
        assert_eq!(read("", Some("whois.verisign-grs.com"), "com").class, WhoisClass::Unknown);
        assert_eq!(read("\n% comment only\n", None, "zz").class, WhoisClass::Unknown);
        assert_eq!(read("", None, "").class, WhoisClass::Unknown);
    }

    #[test]
    fn unrecognised_text_is_never_available() {
        for text in ["Service temporarily unavailable.", "Invalid input", "hello", "Domain Name: x.com"] {
            assert_ne!(read(text, None, "com").class, WhoisClass::Available, "{text}");
        }
    }

    #[test]
    fn wrong_server_no_match_is_unknown() {
        let r = read("No match for domain \"GOOGLE.COM.ET\".\n", Some("whois.verisign-grs.com"), "com.et");
        assert_eq!(r.class, WhoisClass::Unknown);
        let r = read("No match for domain \"NOPE.COM\".\n", Some("whois.verisign-grs.com"), "com");
        assert_eq!(r.class, WhoisClass::Available);
    }

    #[test]
    fn latin1_bytes_decode() {
        // "Nincs találat / No match" in ISO-8859-1 (0xE1 = á): not valid UTF-8.
        let raw = b"Nincs tal\xe1lat / No match\n";
        assert_eq!(decode(raw, None), "Nincs találat / No match\n");
        assert_eq!(decode(raw, Some("iso-8859-1")), "Nincs találat / No match\n");
        assert_eq!(decode("día".as_bytes(), None), "día");
        assert_eq!(read_whois(raw, Some("whois.nic.hu"), "hu", None).class, WhoisClass::Available);
        // KOI8-R given by label.
        assert_eq!(decode(b"\xf0\xd2\xc9\xd7\xc5\xd4", Some("koi8-r")), "Привет");
    }

    #[test]
    fn odd_input_never_panics() {
        let odd = [
            "İstanbul: İİİ\nDomain Name: x.com.tr\nCreated on 2001-Aug-23.",
            "Registrar:\n\n\n   \t\n:::\n[\n[]\n[ ]: x\n. . . . .\n....: ....",
            "domain:Class-Name:\nRecord created on İ 2005",
            "ÿ\u{feff}\r\n%%\n##\n>>> <<<\n*** ***",
            "Name Server 1: 1.2.3.4\nExpiration Date: 99/99/9999 99:99:99 +99:99",
            "nserver: ns1.example.com. 2001:db8::1\nstatus: ok - Normal state.",
        ];
        for text in odd {
            for (i, _) in text.char_indices() {
                let _ = read(&text[..i], None, "com");
                let _ = read(&text[i..], Some("whois.nic.uk"), "co.uk");
            }
        }
        for b in 0..=255u8 {
            let _ = read_whois(&[b, b':', b' ', 0xc3, b'\n', b'x'], None, "x", None);
        }
    }

    #[test]
    fn reserved_answers() {
        assert_eq!(read("Reserved by Registry\n", Some("whois.nic.io"), "io").class, WhoisClass::Reserved);
        assert_eq!(read("Name is restricted from registration\n", None, "aero").class, WhoisClass::Reserved);
    }

    #[test]
    fn nominet_blocks() {
        let text = "    Domain name:\n        google.co.uk\n\n    Registrant:\n        Google Inc.\n\n\
            Registrar:\n        Markmonitor Inc. t/a MarkMonitor Inc. [Tag = MARKMONITOR]\n        URL: http://www.markmonitor.com\n\n\
            Relevant dates:\n        Registered on: 14-Feb-1999\n        Expiry date:  14-Feb-2026\n        Last updated:  10-Jan-2025\n\n\
            Registration status:\n        Registered until expiry date.\n\n    Name servers:\n        ns1.google.com\n        ns2.google.com    192.0.2.1\n";
        let r = read(text, Some("whois.nic.uk"), "co.uk");
        assert_eq!(r.class, WhoisClass::Registered);
        assert_eq!(r.record.domain.as_deref(), Some("google.co.uk"));
        assert_eq!(r.record.registrant.org.as_deref(), Some("Google Inc."));
        assert_eq!(r.record.nameservers, vec!["ns1.google.com".to_owned(), "ns2.google.com".to_owned()]);
        assert_eq!(r.record.created_at, Some(datetime!(1999-02-14 0:00 UTC)));
        assert_eq!(r.record.expires_at, Some(datetime!(2026-02-14 0:00 UTC)));
        assert_eq!(r.record.status, vec!["Registered until expiry date".to_owned()]);
    }

    /// The lexicon-driven rules of the generic field reader, on made-up answers of a server no
    /// family describes.
    #[test]
    fn generic_field_rules() {
        let zz = |text: &str| read(text, Some("whois.nic.zz"), "zz").record;
        // Registrant contact object found by its handle; a run of "changed:" lines; "expired:".
        let r = zz("domain:   example.zz\nholder-c: AB12-ZZ\nstatus:   ACTIVE\nnserver:  ns1.example.net\n\
            created:  2001-02-03\nexpired:  2030-02-03\nchanged:  2005-01-01\nchanged:  2020-06-07\n\n\
            nic-hdl:  XY9-ZZ\ncountry:  DE\n\nnic-hdl:  AB12-ZZ\ncontact:  Example Org\ncountry:  FR\n");
        assert_eq!(r.registrant.country.as_deref(), Some("FR"));
        assert_eq!(r.updated_at, Some(datetime!(2020-06-07 0:00 UTC)));
        assert_eq!(r.expires_at, Some(datetime!(2030-02-03 0:00 UTC)));
        // Role-prefixed country keys, country names, DNSSEC in another language.
        let r = zz("Domain Name: example.zz\nowner-country: Deutschland\nadmin-country: US\nDNSSEC: nein\n");
        assert_eq!(r.registrant.country.as_deref(), Some("DE"));
        assert_eq!(r.dnssec, Some(false));
        // YAML tags open a block; wrapped explanations are not statuses; expiry in a status.
        let r = zz("name: example.zz\nstatus: OK-UNTIL 20300203000000\n\
            Status: LOCKED\n\tThis feature is provided to protect against fraudulent acquisition of the name.\n\
            registrar: !Registrar\n  name: Example Registrar\n  web: http://registrar.example\n");
        assert_eq!(r.registrar.as_deref(), Some("Example Registrar"));
        assert_eq!(r.status, vec!["OK-UNTIL 20300203000000".to_owned(), "LOCKED".to_owned()]);
        assert_eq!(r.expires_at, Some(datetime!(2030-02-03 0:00 UTC)));
        // A registrant address whose last line is the country.
        let r = zz(
            "Domain: example.zz\n\nRegistrant\n  Name: Example\n  Address: Via Roma 1\n           Roma\n           IT\n  Created: 2001-01-01\n",
        );
        assert_eq!(r.registrant.country.as_deref(), Some("IT"));
    }

    #[test]
    fn date_formats() {
        let d = |s: &str| parse_date(s, DateOrder::Dmy);
        assert_eq!(d("2019-01-01T10:00:00Z"), Some(datetime!(2019-01-01 10:00 UTC)));
        assert_eq!(d("2019-01-01T10:00:00.123Z"), Some(datetime!(2019-01-01 10:00 UTC)));
        assert_eq!(d("2019-01-01T10:00:00+02:00"), Some(datetime!(2019-01-01 8:00 UTC)));
        assert_eq!(d("2019-01-01T10:00:00-0700"), Some(datetime!(2019-01-01 17:00 UTC)));
        assert_eq!(d("2019-01-01 10:00:00"), Some(datetime!(2019-01-01 10:00 UTC)));
        assert_eq!(d("2019-01-01"), Some(datetime!(2019-01-01 0:00 UTC)));
        assert_eq!(d("2019.01.02"), Some(datetime!(2019-01-02 0:00 UTC)));
        assert_eq!(d("2012. 05. 19."), Some(datetime!(2012-05-19 0:00 UTC)));
        assert_eq!(d("01-Jan-2019"), Some(datetime!(2019-01-01 0:00 UTC)));
        assert_eq!(d("14-feb-2009 10:00:00 UTC"), Some(datetime!(2009-02-14 10:00 UTC)));
        assert_eq!(d("01/02/2019"), Some(datetime!(2019-02-01 0:00 UTC)));
        assert_eq!(parse_date("01/02/2019", DateOrder::Mdy), Some(datetime!(2019-01-02 0:00 UTC)));
        assert_eq!(d("12/31/2019"), Some(datetime!(2019-12-31 0:00 UTC)));
        assert_eq!(d("31.12.2019 10:11:12"), Some(datetime!(2019-12-31 10:11:12 UTC)));
        assert_eq!(d("Tue Dec 12 2000"), Some(datetime!(2000-12-12 0:00 UTC)));
        assert_eq!(d("Wed Jan 22 22:06:14 GMT 2014"), Some(datetime!(2014-01-22 0:00 UTC)));
        assert_eq!(d("September 9 2009"), Some(datetime!(2009-09-09 0:00 UTC)));
        assert_eq!(d("2017/06/01 01:05:09 (JST)"), Some(datetime!(2017-05-31 16:05:09 UTC)));
        assert_eq!(d("20100101"), Some(datetime!(2010-01-01 0:00 UTC)));
        assert_eq!(d("2012-Aug-01"), Some(datetime!(2012-08-01 0:00 UTC)));
        assert_eq!(d("before Aug-1996"), None);
        assert_eq!(d("1 year"), None);
        assert_eq!(d("-"), None);
    }
}
