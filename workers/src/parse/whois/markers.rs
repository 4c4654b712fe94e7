//! Marker data: `workers/data/whois-markers.json` loaded, validated and compiled, the family
//! chosen for one answer, and how a marker matches a prepared line.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use serde::Deserialize;

use super::MarkerDataError;
use super::lines::Line;

/// The marker data, compiled into the binary so a deployment cannot run without it.
const MARKERS_JSON: &str = include_str!("../../../data/whois-markers.json");

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
pub(super) struct MarkerFileDef {
    #[serde(rename = "$comment", default)]
    pub(super) _comment: Option<serde_json::Value>,
    pub(super) version: u32,
    pub(super) generic: ListsDef,
    pub(super) families: BTreeMap<String, FamilyDef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListsDef {
    #[serde(default)]
    pub(super) available: Option<Vec<String>>,
    #[serde(default)]
    pub(super) unknown: Vec<String>,
    #[serde(default)]
    pub(super) reserved: Vec<String>,
    #[serde(default)]
    pub(super) rate_limited: Vec<String>,
    #[serde(default)]
    pub(super) registered: Vec<String>,
    #[serde(default)]
    pub(super) pending_delete: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FamilyDef {
    #[serde(default)]
    pub(super) about: String,
    #[serde(default)]
    pub(super) hosts: Vec<String>,
    #[serde(default)]
    pub(super) suffixes: Vec<String>,
    #[serde(default)]
    pub(super) exclusive: bool,
    #[serde(default)]
    pub(super) empty_means_available: bool,
    #[serde(default)]
    pub(super) date_order: DateOrder,
    #[serde(default)]
    pub(super) nameserver_lines: bool,
    #[serde(default)]
    pub(super) available: Option<Vec<String>>,
    #[serde(default)]
    pub(super) unknown: Vec<String>,
    #[serde(default)]
    pub(super) reserved: Vec<String>,
    #[serde(default)]
    pub(super) rate_limited: Vec<String>,
    #[serde(default)]
    pub(super) registered: Vec<String>,
    #[serde(default)]
    pub(super) pending_delete: Vec<String>,
}

/// Where in a line a marker must sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Anchor {
    /// Anywhere in the line.
    Contains,
    /// At the start of the line (`^text`).
    Prefix,
    /// The whole line (`=text`).
    Whole,
}

/// One compiled marker: the rule text as written, its anchor and its `*`-separated parts.
#[derive(Debug, Clone)]
pub(super) struct Marker {
    pub(super) rule: String,
    pub(super) anchor: Anchor,
    pub(super) parts: Vec<String>,
    /// The rule ends in `:` or `]` — a key whose value must not be empty.
    pub(super) needs_value: bool,
}

#[derive(Debug, Default)]
pub(super) struct Lists {
    pub(super) available: Option<Vec<Marker>>,
    pub(super) unknown: Vec<Marker>,
    pub(super) reserved: Vec<Marker>,
    pub(super) rate_limited: Vec<Marker>,
    pub(super) registered: Vec<Marker>,
    pub(super) pending_delete: Vec<String>,
}

#[derive(Debug)]
pub(super) struct Family {
    pub(super) name: String,
    pub(super) suffixes: Vec<String>,
    pub(super) exclusive: bool,
    pub(super) empty_means_available: bool,
    pub(super) date_order: DateOrder,
    /// The registered answer is bare `<label> <name server>` lines, one per delegation (Tonic's
    /// `go ns-1.example.com`): read them as name servers.
    pub(super) nameserver_lines: bool,
    pub(super) lists: Lists,
}

#[derive(Debug)]
pub(super) struct Markers {
    pub(super) generic: Lists,
    pub(super) families: Vec<Family>,
    pub(super) by_host: HashMap<String, usize>,
    pub(super) by_suffix: HashMap<String, usize>,
}

/// The family chosen for one answer and how it was chosen.
pub(super) struct Selected<'a> {
    pub(super) family: Option<&'a Family>,
    /// The family was chosen by the server host (not merely by the suffix).
    pub(super) by_host: bool,
    /// The host's family is exclusive to some suffixes and the queried suffix is not one of
    /// them: its "no match" says nothing about this name.
    pub(super) wrong_server: bool,
}

pub(super) fn markers() -> &'static Result<Markers, MarkerDataError> {
    static MARKERS: OnceLock<Result<Markers, MarkerDataError>> = OnceLock::new();
    MARKERS.get_or_init(|| load_markers(MARKERS_JSON))
}

pub(super) fn load_markers(json: &str) -> Result<Markers, MarkerDataError> {
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
            nameserver_lines: f.nameserver_lines,
            lists,
        });
    }
    Ok(Markers { generic, families, by_host, by_suffix })
}

pub(super) fn compile_lists(
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

pub(super) fn compile_marker(rule: &str) -> Result<Marker, String> {
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
    // Matched against folded lines (see `lexicon::fold`), so folded the same way.
    let parts: Vec<String> = crate::parse::lexicon::fold(body).split('*').map(str::to_owned).collect();
    if parts.iter().skip(1).take(parts.len().saturating_sub(2)).any(String::is_empty) {
        return Err(format!("{rule:?}: `**` is not allowed"));
    }
    Ok(Marker { rule: rule.to_owned(), anchor, needs_value: body.ends_with([':', ']']), parts })
}

impl Markers {
    pub(super) fn select(&self, server: Option<&str>, suffix: &str) -> Selected<'_> {
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
    pub(super) fn covers(&self, suffix: &str) -> bool {
        self.suffixes.iter().any(|s| match s.strip_prefix("*.") {
            Some(parent) => suffix.len() > parent.len() + 1 && suffix.ends_with(&format!(".{parent}")),
            None => s == suffix,
        })
    }
}

impl Marker {
    /// Does this marker match the normalised line?
    pub(super) fn matches(&self, line: &str) -> bool {
        let first = &self.parts[0];
        // `memmem` rather than `str::find`, which sets up a Two-Way searcher per call (the
        // reader's largest cost under the fuzzer, with the prefix tests: the first byte is
        // compared before `memcmp` is called). A UTF-8 part found in UTF-8 text starts and ends
        // at character boundaries.
        let mut pos = match self.anchor {
            Anchor::Contains => match memchr::memmem::find(line.as_bytes(), first.as_bytes()) {
                Some(p) => p + first.len(),
                None => return false,
            },
            Anchor::Prefix | Anchor::Whole => {
                if line.as_bytes().first() != first.as_bytes().first() || !line.starts_with(first.as_str()) {
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
            match line.get(pos..).and_then(|rest| memchr::memmem::find(rest.as_bytes(), part.as_bytes())) {
                Some(p) => pos += p + part.len(),
                None => return false,
            }
        }
        match self.anchor {
            Anchor::Whole => pos == line.len(),
            _ if self.needs_value => !is_placeholder_value(line.get(pos..).unwrap_or_default()),
            _ => true,
        }
    }
}

/// A value that stands for nothing (`Registrar: -`, `Name Server: unknown`): a rule that needs
/// a value (`^registrar:`) does not match it — a blank template is no registration.
fn is_placeholder_value(v: &str) -> bool {
    matches!(
        v.trim().trim_end_matches(['.', ')']).trim_start_matches('('),
        "" | "-" | "--" | "n/a" | "na" | "n.a" | "none" | "null" | "nil" | "unknown" | "not found" | "not defined"
    )
}

/// The matching marker on the latest line, with that line's index.
pub(super) fn last_hit<'m>(markers: &'m [Marker], lines: &[Line<'_>]) -> Option<(&'m Marker, usize)> {
    lines.iter().enumerate().rev().find_map(|(i, l)| markers.iter().find(|m| line_matches(m, l)).map(|m| (m, i)))
}

/// Unanchored and `*` rules only read lines up to this many characters: a registry's verdict
/// is a short statement, while disclaimers come as long paragraphs that mention "not found" or
/// "available for registration" in passing ("the lack of a whois record ... does not indicate
/// that the name is available for registration").
pub(super) const MAX_LOOSE_LINE: usize = 160;

pub(super) fn first_match<'m>(markers: &'m [Marker], lines: &[Line<'_>]) -> Option<&'m Marker> {
    markers.iter().find(|m| lines.iter().any(|l| line_matches(m, l)))
}

/// [`first_match`] over the lines that are statements about the queried name: a `key: value`
/// line about another part of the record ("Registrant Fax: not found", see
/// [`crate::parse::lexicon::is_aside`]), a hypothetical sentence ("… to see if a name is
/// available", [`crate::parse::lexicon::is_hypothetical`]) and a line with an error wording
/// ("invalid query or domain not found", [`crate::parse::lexicon::mentions_error`]) are skipped.
/// Used for the generic "available" rules, whose loose forms (`=* not found`, `=* is available`)
/// would otherwise read such a line as the answer.
pub(super) fn first_statement_match<'m>(markers: &'m [Marker], lines: &[Line<'_>]) -> Option<&'m Marker> {
    use crate::parse::lexicon::{is_aside, is_hypothetical, mentions_error};
    // A line about a service host ("whois.nic.zz is available") is not about the name.
    let service = |l: &Line<'_>| ["whois.", "rdap.", "www.", "http"].iter().any(|p| l.norm.starts_with(p));
    let statement =
        |l: &Line<'_>| !is_aside(&l.norm) && !is_hypothetical(&l.norm) && !mentions_error(&l.norm) && !service(l);
    markers.iter().find(|m| lines.iter().any(|l| line_matches(m, l) && statement(l)))
}

pub(super) fn line_matches(m: &Marker, l: &Line<'_>) -> bool {
    // An anchored rule reads a line as a statement of its own; the tail of a wrapped sentence
    // ("All rights\nreserved.") is not one.
    !(l.continuation && m.anchor != Anchor::Contains)
        && !((m.anchor == Anchor::Contains || m.parts.len() > 1) && l.norm_chars > MAX_LOOSE_LINE)
        && m.matches(&l.norm)
}
