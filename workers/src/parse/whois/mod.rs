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
//! 2. a reserved marker (e.g. "Reserved by Registry"), or a status value that alone says so
//!    under any status key ("Estado / Status: RESERVED") → [`WhoisClass::Reserved`];
//! 3. an "unknown" marker (text that is not about a domain registration, e.g. IANA's record for
//!    a TLD) → [`WhoisClass::Unknown`]; a generic one yields to a registered marker that
//!    follows it, the family's own ones do not (NIC-Uruguay's record of the zone `com.uy`, `ACTIVO`
//!    and all, shown in place of a com.uy name it does not hold);
//! 4. a host that is `exclusive` to other suffixes (Verisign's "No match" about a .et name) →
//!    [`WhoisClass::Unknown`] unless the answer shows a registration;
//! 5. an "available" marker (e.g. `No match for "X".`) with no sign of a registration →
//!    [`WhoisClass::Available`]; when the family is known only *its* available markers count
//!    (a phrase from another registry's vocabulary must not decide availability); the generic
//!    ones count only on lines that state something about the name (not another field's value,
//!    not a hypothetical sentence, not next to an error wording), and a status value that alone
//!    says free counts like them;
//! 6. a registered marker, or registration facts read from the answer (creation/expiry date,
//!    registrar, name servers, a holder, a RIPE object's contact handles, an EPP status) →
//!    [`WhoisClass::Registered`], with `pending_delete` set when a status says redemption /
//!    pending delete / quarantine (or the lexicon's wording for it);
//! 7. an empty answer → available only for families that declare `empty_means_available`;
//! 8. anything else → [`WhoisClass::Unknown`]. Text we cannot place is never "available": a
//!    false "available" is the worst answer this service can give.
//!
//! Markers read each line as a statement: anchored rules skip the tail of a wrapped sentence and
//! loose rules skip long disclaimer paragraphs, which mention "not found" or "available for
//! registration" in passing. Lines are folded before matching (case, diacritics, Arabic/Persian
//! letter forms, full-width forms: `lexicon::fold`); comment marks are `%`, `#`, `;`, `//`,
//! `--`, `>>>`, and an answer printed entirely as comments is read as content.
//!
//! [`read_whois_for`] adds the asked name: an answer whose `Domain Name` echo names another
//! domain gives no verdict.
//!
//! The field reader understands `Key: value` lines (with dot leaders, `[Key] value` as at JPRS,
//! bilingual `Nome / Name:` keys) and indentation blocks (`Registrar:` followed by indented lines,
//! as printed by Nominet, SIDN, DNS Belgium, EURid, registrars of the "Domain servers in listed
//! order" era).

//!
//! The reader is split by concern: [`markers`] compiles the marker data, [`lines`] prepares the
//! answer's lines, [`classify`] decides the class, [`keys`] (with the key tables of
//! `workers/data/whois-fields.json`) and [`fields`] read the registration facts, [`dates`]
//! parses the dates registries print.

mod classify;
mod dates;
mod fields;
mod glued;
mod keys;
mod lines;
mod markers;
#[cfg(test)]
mod tests;

use common::record::DomainRecord;
use serde::Serialize;

use classify::{classify, is_pending_delete};
// Only the RDAP reader's test cross-checks its date tolerances against the WHOIS reader.
#[cfg(test)]
pub(crate) use dates::parse_date;
use fields::read_fields;
use lines::prepare_lines;
#[cfg(test)]
pub(crate) use markers::DateOrder;
use markers::markers;

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

/// Error in the WHOIS data files (`workers/data/whois-markers.json`, `whois-fields.json`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MarkerDataError {
    /// The file is not the JSON shape the reader expects.
    #[error("whois-markers.json does not parse: {0}")]
    Json(String),
    /// The file parses but breaks a rule (empty marker, duplicate host or suffix, ...).
    #[error("whois-markers.json is invalid: {0}")]
    Invalid(String),
}

/// Checks the compiled-in marker data and key tables and returns the number of registry families
/// the markers define.
///
/// Call it once at start-up to fail fast: [`read_whois`] itself never panics on bad data, it
/// classifies everything as [`WhoisClass::Unknown`] instead (the safe direction).
pub fn validate_marker_data() -> Result<usize, MarkerDataError> {
    keys::validate_key_tables()?;
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

/// Full-width ASCII forms (`：`, `Ｄｏｍａｉｎ`) and the ideographic space as their ASCII
/// counterparts: CJK registries print keys and separators in either width (Unicode's
/// Halfwidth and Fullwidth Forms block, U+FF01–U+FF5E).
fn fold_width(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\u{ff01}'..='\u{ff5e}' => char::from_u32(u32::from(c) - 0xfee0).unwrap_or(c),
            '\u{3000}' => ' ',
            _ => c,
        })
        .collect()
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

/// [`read_whois`] for a lookup of `asked` (the A-label form): an answer that names another
/// domain (its `Domain Name:` echo, read as [`DomainRecord::domain`]) says nothing about the name
/// asked — a registry printing the record of its zone (`com.uy`) or of another name proves
/// nothing — so a definitive reading becomes [`WhoisClass::Unknown`], as the RDAP reader does
/// with a foreign `ldhName` (`parse::rdap::read_rdap_for`). The echo is compared in A-label form
/// (UTS 46 through `url::Host`), so `bäckerei.de` echoed for `xn--bckerei-5wa.de` matches.
pub fn read_whois_for(
    asked: &str,
    raw: &[u8],
    server: Option<&str>,
    suffix: &str,
    charset: Option<&str>,
) -> WhoisReading {
    let mut reading = read_whois(raw, server, suffix, charset);
    if matches!(reading.class, WhoisClass::Unknown | WhoisClass::RateLimited) {
        return reading;
    }
    if let Some(echoed) = reading.record.domain.clone()
        && !same_name(&echoed, asked)
    {
        reading.marker = Some(format!("the answer names {echoed}, not {asked}"));
        reading.class = WhoisClass::Unknown;
        reading.pending_delete = false;
    } else if reading.class == WhoisClass::Available
        && let Some(other) = not_found_names_another(asked, raw, server, suffix, charset)
    {
        // "No match for "OTHER.COM"." in answer to VEXQ.COM: a truncated or mixed-up query, or a
        // proxy's crossed answers; the registry said nothing about the name asked.
        reading.marker = Some(format!("the not-found statement names {other}, not {asked}"));
        reading.class = WhoisClass::Unknown;
    }
    reading
}

/// A name other than `asked`, under the same TLD, that a line of the answer states is not found
/// (the line alone reads as "available"), if any. Names in URLs and e-mail addresses, and
/// `www.`/`whois.`/`rdap.` hosts, are not statements about a domain and are skipped.
fn not_found_names_another(
    asked: &str,
    raw: &[u8],
    server: Option<&str>,
    suffix: &str,
    charset: Option<&str>,
) -> Option<String> {
    let tld = |name: &str| a_label(name).rsplit('.').next().map(str::to_owned);
    let asked_tld = tld(asked)?;
    let text = decode(raw, charset);
    for line in text.lines() {
        let names: Vec<String> = line
            .split(|c: char| c.is_whitespace() || "\"'`«»“”‘’()[]<>{},;:!?|".contains(c))
            .filter(|t| !t.contains('@') && !t.contains("//"))
            .map(|t| t.trim_matches(|c: char| c == '.' || c == '-').to_lowercase())
            .filter(|t| {
                t.contains('.')
                    && !["www.", "whois.", "rdap."].iter().any(|h| t.starts_with(h))
                    && tld(t).as_deref() == Some(asked_tld.as_str())
            })
            .collect();
        // A line that names the asked domain is about it, whatever else it mentions.
        if names.iter().any(|n| same_name(n, asked)) {
            continue;
        }
        let Some(other) = names.first() else { continue };
        if read_whois(line.as_bytes(), server, suffix, None).class == WhoisClass::Available {
            return Some(other.clone());
        }
    }
    None
}

/// `name` in A-label form, lower case, without a trailing dot (as it is when it does not parse).
fn a_label(name: &str) -> String {
    let s = name.trim().trim_end_matches('.').to_lowercase();
    match url::Host::parse(&s) {
        Ok(url::Host::Domain(d)) => d,
        _ => s,
    }
}

/// Whether two spellings name the same domain: equal in A-label form, ignoring case and a
/// trailing dot.
fn same_name(a: &str, b: &str) -> bool {
    a_label(a) == a_label(b)
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
    let text = fold_width(&decode(raw, charset));
    let text = glued::untangle(&text);
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
    // A registry we have no family for: the order its own dates show (`03/25/2021`).
    let date_order = selected.family.map_or_else(|| dates::order_in(&text), |f| f.date_order);
    let mut record = read_fields(&lines, date_order);
    if selected.family.is_some_and(|f| f.nameserver_lines) && record.nameservers.is_empty() {
        record.nameservers = fields::nameserver_lines(&lines);
    }
    let (class, marker) = classify(data, &selected, &lines, &record);
    // Pending delete: an EPP/RGP status the markers know, the lexicon's decision, or the
    // lexicon's wording in a status value or a short statement ("Estado: pendiente de
    // eliminación", "Домен будет освобожден 2026-07-01").
    let pending_delete = class == WhoisClass::Registered
        && (is_pending_delete(data, selected.family, &record)
            || marker.as_deref().is_some_and(|m| m.starts_with("lexicon:pending_delete"))
            || record.status.iter().any(|s| crate::parse::lexicon::says_pending_delete(s).is_some())
            || lines.iter().any(|l| !l.continuation && crate::parse::lexicon::says_pending_delete(&l.norm).is_some()));
    WhoisReading { class, pending_delete, marker, record }
}
