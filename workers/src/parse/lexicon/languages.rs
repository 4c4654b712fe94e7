//! The concept × language table (`workers/data/whois-languages.json`): for each language
//! registries answer in, the common ways to say each concept the generic layer reads — free /
//! not registered / no record found, reserved / blocked / not open for registration, quota used
//! up / too many queries / try later, pending deletion, registered status words — and the key
//! names of registration evidence (domain, holder, registrar, created, expires, name servers,
//! status), with the language's negation words (before the word, after it, or glued to it in a
//! script without spaces).
//!
//! The table is merged into the lexicon's lists at load ([`merge`]): it adds wordings, never
//! rules, so every guard of the generic layer (negation scope, notices, hypotheticals, echoes,
//! "only", registration evidence) applies to them unchanged.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use super::{Lexicon, fold};

const LANGUAGES_JSON: &str = include_str!("../../../data/whois-languages.json");

/// One language's row of the table (every list optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Language {
    /// The language's name (documentation only).
    #[serde(default)]
    #[allow(dead_code)]
    pub(super) name: String,
    /// Negation words that precede what they negate ("not", "nie", "không").
    #[serde(default)]
    pub(super) negations: Vec<String>,
    /// Negation words that follow what they negate (Turkish "değil", Hindi "नहीं", Persian
    /// "نیست", Georgian "არ" in "თავისუფალი არ არის").
    #[serde(default)]
    pub(super) postposed_negations: Vec<String>,
    /// In a script without spaces, a negation glued right before the word (Thai "ไม่").
    #[serde(default)]
    pub(super) glued_negations: Vec<String>,
    /// In a script without spaces, a negation glued right after the word (Japanese "ではありません",
    /// Korean "하지 않").
    #[serde(default)]
    pub(super) glued_postposed_negations: Vec<String>,
    /// Copulas and particles that may stand between the name and what is said of it, or end the
    /// sentence after it ("ir", "është", "است", "है", "байна").
    #[serde(default)]
    pub(super) copulas: Vec<String>,
    /// Singular nouns for the queried object ("domain", "domena", "tên miền").
    #[serde(default)]
    pub(super) domain_words: Vec<String>,
    /// Status words that alone say the name is free.
    #[serde(default)]
    pub(super) free: Vec<String>,
    /// Not-found / not-registered / no-record statements.
    #[serde(default)]
    pub(super) not_found: Vec<String>,
    /// Reserved / blocked / protected / not open for registration statements.
    #[serde(default)]
    pub(super) reserved: Vec<String>,
    /// Status words that alone say the name is withheld.
    #[serde(default)]
    pub(super) reserved_status: Vec<String>,
    /// Quota / rate-limit refusals.
    #[serde(default)]
    pub(super) quota: Vec<String>,
    /// Pending deletion / redemption / quarantine.
    #[serde(default)]
    pub(super) pending_delete: Vec<String>,
    /// Status words that alone say the name is registered.
    #[serde(default)]
    pub(super) taken_status: Vec<String>,
    /// Field → key names (`domain`, `registrant`, `organisation`, `contact`, `registrar`,
    /// `created`, `updated`, `expires`, `nameserver`, `status`). `registrant`, `organisation`
    /// (the holder's) and `contact` (admin/tech) keys are registration evidence only.
    #[serde(default)]
    pub(super) keys: BTreeMap<String, Vec<String>>,
}

/// The whole table: language code → row.
#[derive(Debug, Default, Deserialize)]
pub(super) struct LanguageTable {
    /// Language code (`pl`, `sr-cyrl`, `zh-hant`) → row.
    pub(super) languages: BTreeMap<String, Language>,
}

/// The table as shipped (empty when it does not parse, which a test rules out).
pub(super) fn table() -> &'static LanguageTable {
    static TABLE: OnceLock<LanguageTable> = OnceLock::new();
    TABLE.get_or_init(|| serde_json::from_str(LANGUAGES_JSON).unwrap_or_default())
}

/// Whether the shipped table parses and names only fields the reader knows.
pub(super) fn table_is_valid() -> bool {
    const FIELDS: &[&str] = &[
        "domain",
        "registrant",
        "organisation",
        "contact",
        "registrar",
        "created",
        "updated",
        "expires",
        "nameserver",
        "status",
        "dnssec",
    ];
    serde_json::from_str::<LanguageTable>(LANGUAGES_JSON).is_ok_and(|t| {
        !t.languages.is_empty() && t.languages.values().all(|l| l.keys.keys().all(|k| FIELDS.contains(&k.as_str())))
    })
}

fn extend(list: &mut Vec<String>, more: &[String]) {
    for w in more {
        let w = w.trim().to_lowercase();
        if !w.is_empty() && !list.contains(&w) {
            list.push(w);
        }
    }
}

/// Merges the table's wordings into the lexicon (before its phrases are folded).
pub(super) fn merge(lex: &mut Lexicon) {
    for l in table().languages.values() {
        extend(&mut lex.free_status, &l.free);
        extend(&mut lex.not_found, &l.not_found);
        extend(&mut lex.reserved, &l.reserved);
        extend(&mut lex.reserved_status, &l.reserved_status);
        extend(&mut lex.quota, &l.quota);
        extend(&mut lex.pending_delete, &l.pending_delete);
        extend(&mut lex.taken_status, &l.taken_status);
        for (field, keys) in &l.keys {
            extend(lex.fields.keys.entry(field.clone()).or_default(), keys);
        }
    }
}

/// The folded words of a column of single words (negations, nouns, copulas), trimmed as the
/// line's words are ([`super::statement::words`]: a trailing Bengali nukta is not alphanumeric).
pub(super) fn word_column(pick: impl Fn(&Language) -> &Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    for w in column(pick) {
        let w = super::statement::words(&w).collect::<Vec<_>>().join(" ");
        if !w.is_empty() && !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// The folded words of one column of the table, over all languages.
pub(super) fn column(pick: impl Fn(&Language) -> &Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    for l in table().languages.values() {
        for w in pick(l) {
            let w = fold(w.trim());
            if !w.is_empty() && !out.contains(&w) {
                out.push(w);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row covers every concept: the table is a matrix, not a list of additions.
    #[test]
    fn every_language_row_covers_every_concept() {
        assert!(table_is_valid());
        let t = table();
        assert!(t.languages.len() >= 56, "{} rows", t.languages.len());
        let mut gaps = Vec::new();
        for (code, l) in &t.languages {
            for (concept, list) in [
                ("free", &l.free),
                ("not_found", &l.not_found),
                ("reserved", &l.reserved),
                ("reserved_status", &l.reserved_status),
                ("quota", &l.quota),
                ("pending_delete", &l.pending_delete),
                ("taken_status", &l.taken_status),
                ("domain_words", &l.domain_words),
            ] {
                if list.is_empty() {
                    gaps.push(format!("{code}: {concept}"));
                }
            }
            for field in ["domain", "registrant", "created", "expires", "nameserver", "status"] {
                if l.keys.get(field).is_none_or(Vec::is_empty) {
                    gaps.push(format!("{code}: keys.{field}"));
                }
            }
            // A row that says "free" must be able to say "not free".
            let negates = !(l.negations.is_empty()
                && l.postposed_negations.is_empty()
                && l.glued_negations.is_empty()
                && l.glued_postposed_negations.is_empty());
            if !negates && code != "en" && !["zh-hans", "zh-hant"].contains(&code.as_str()) {
                gaps.push(format!("{code}: negations"));
            }
        }
        assert!(gaps.is_empty(), "concepts without a wording: {gaps:#?}");
    }

    /// The table's words reach the lexicon's lists (folded).
    #[test]
    fn the_table_is_merged_into_the_lexicon() {
        use super::super::{free_status, reserved_status, taken_status};
        assert_eq!(free_status("slobodna"), Some("slobodna"));
        assert_eq!(free_status("ΕΛΕΥΘΕΡΟ"), Some("ελευθερο"));
        assert_eq!(free_status("müsait değil"), None);
        assert_eq!(taken_status("kayıtlı değil"), None);
        assert!(reserved_status("rezervuotas").is_some());
        assert!(taken_status("registreeritud").is_some());
        assert_eq!(super::super::field_lexicon().field_of("datum isteka"), Some("expires"));
        assert_eq!(super::super::field_lexicon().field_of("DATUM ISTEKA"), Some("expires"), "folded");
        assert_eq!(super::super::field_lexicon().field_of("ημερομηνια ληξης"), Some("expires"), "folded");
    }
}
