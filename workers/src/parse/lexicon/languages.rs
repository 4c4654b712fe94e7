//! The concept × language table (`workers/data/whois-languages.json`): the one home of every
//! wording and word list the generic layer reads (issue 24). Rows are languages; columns are
//! concepts — free / not registered / no record found, reserved / blocked / not open for
//! registration, quota used up / too many queries / try later, pending deletion, error
//! wordings, registered status words, negation (before the word, after it, glued to it in a
//! script without spaces, a CJK negating character), the sentence words that decide whether a
//! phrase counts (qualifiers, conditionals, relatives, modals, plural subjects, subject and aside
//! key words, presence words and the words between), the morphology lists of [`super::morph`]
//! and the registration keys (domain, holder, registrar, created, expires, name servers, status,
//! holder-name and RIPE handle keys). The file's `$columns` says what each column holds.
//!
//! The row `*` holds wordings shared by several languages or not yet attributed to one. A
//! column's list, as the reader uses it, is the column over all rows: `*` first, then the rows
//! by language code (the table's order), each word once. The table adds wordings, never rules:
//! every guard of the generic layer (negation scope, notices, hypotheticals, echoes, "only",
//! registration evidence) applies to each word whatever its row.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::fold;
use super::morph::MorphLists;

const LANGUAGES_JSON: &str = include_str!("../../../data/whois-languages.json");

/// One language's row of the table (every column optional; see the file's `$columns`).
#[derive(Debug, Default, Deserialize, Serialize)]
pub(super) struct Language {
    /// The language's name (documentation only).
    #[serde(default)]
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
    /// Single CJK characters that negate the phrase right after them ("不可注册").
    #[serde(default)]
    pub(super) cjk_negations: Vec<String>,
    /// Copulas, articles and particles that may stand between a negation and the word it
    /// negates, or between the name and what is said of it ("the", "ir", "është", "است").
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
    /// Error wordings: the server did not answer the question ("invalid query").
    #[serde(default)]
    pub(super) error: Vec<String>,
    /// Words right before a phrase that restrict it to a policy ("*only* available").
    #[serde(default)]
    pub(super) qualifiers: Vec<String>,
    /// Words that make a sentence hypothetical or general ("if", "may", "wenn").
    #[serde(default)]
    pub(super) conditionals: Vec<String>,
    /// Relative pronouns ("that", "which"), compared unfolded.
    #[serde(default)]
    pub(super) relatives: Vec<String>,
    /// Modal verbs of ability that, negated, state a fact ("could not be found").
    #[serde(default)]
    pub(super) ability_modals: Vec<String>,
    /// Plural copulas and nouns of the object ("are", "sind"), compared unfolded.
    #[serde(default)]
    pub(super) plural_subjects: Vec<String>,
    /// Key words that make a key's value a statement about the queried name.
    #[serde(default)]
    pub(super) subject_key_words: Vec<String>,
    /// Words that put a line or sentence about another part of the record.
    #[serde(default)]
    pub(super) aside_key_words: Vec<String>,
    /// Presence words, as word beginnings ("found", "record", "gefunden").
    #[serde(default)]
    pub(super) presence_stems: Vec<String>,
    /// Word beginnings a presence word must not have (registrar, registrant, registry).
    #[serde(default)]
    pub(super) not_presence: Vec<String>,
    /// Keys naming the holder of the name, read only as registration evidence (normalised
    /// keys, compared unfolded).
    #[serde(default)]
    pub(super) holder_name_keys: Vec<String>,
    /// Keys of a RIPE-style object naming its contacts by handle (normalised, unfolded).
    #[serde(default)]
    pub(super) object_handle_keys: Vec<String>,
    /// Keys that describe a contact (name, address, phone), normalised, unfolded.
    #[serde(default)]
    pub(super) contact_subkeys: Vec<String>,
    /// Past forms saying a bound was passed ("exceeded"), unfolded.
    #[serde(default)]
    pub(super) quota_passed_words: Vec<String>,
    /// Word beginnings naming queries or their rate ("quer", "request"), unfolded.
    #[serde(default)]
    pub(super) quota_query_stems: Vec<String>,
    /// Field → key names (`domain`, `registrant`, `organisation`, `contact`, `registrar`,
    /// `created`, `updated`, `expires`, `nameserver`, `status`, `dnssec`, `registrant_country`).
    /// `registrant`, `organisation` (the holder's) and `contact` (admin/tech) keys are
    /// registration evidence only.
    #[serde(default)]
    pub(super) keys: BTreeMap<String, Vec<String>>,
    /// Month names, January to December, spellings of one month separated by `|`.
    #[serde(default)]
    pub(super) months: Vec<String>,
    /// Words between the parts of a date written in words ("12 *de* marzo *de* 2019").
    #[serde(default)]
    pub(super) date_fillers: Vec<String>,
    /// The morphology columns ([`MorphLists`]).
    #[serde(flatten)]
    pub(super) morph: MorphLists,
}

/// The whole table: language code → row.
#[derive(Debug, Default, Deserialize)]
pub(super) struct LanguageTable {
    /// Column → what it holds (documentation; every column of a row must be listed here).
    #[serde(rename = "$columns", default)]
    pub(super) columns: BTreeMap<String, String>,
    /// Language code (`*`, `pl`, `sr-cyrl`, `zh-hant`) → row; `*` sorts first.
    pub(super) languages: BTreeMap<String, Language>,
}

/// The table as shipped (empty when it does not parse, which a test rules out).
pub(super) fn table() -> &'static LanguageTable {
    static TABLE: OnceLock<LanguageTable> = OnceLock::new();
    TABLE.get_or_init(|| serde_json::from_str(LANGUAGES_JSON).unwrap_or_default())
}

/// The columns a row may have: the fields of [`Language`] (and of its flattened morphology).
fn known_columns() -> Vec<String> {
    match serde_json::to_value(Language::default()) {
        Ok(serde_json::Value::Object(fields)) => fields.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// Whether the shipped table parses, every row's columns are documented in `$columns` and
/// known to the reader (a misspelt column would otherwise be ignored), and the keys name only
/// fields the reader knows.
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
        "registrant_country",
    ];
    let known = known_columns();
    let Ok(raw) = serde_json::from_str::<serde_json::Value>(LANGUAGES_JSON) else { return false };
    let rows_known = raw["languages"].as_object().is_some_and(|rows| {
        rows.values().all(|row| {
            row.as_object().is_some_and(|cols| {
                cols.keys().all(|c| known.contains(c) && (c == "name" || raw["$columns"].get(c).is_some()))
            })
        })
    });
    rows_known
        && serde_json::from_str::<LanguageTable>(LANGUAGES_JSON).is_ok_and(|t| {
            !t.languages.is_empty()
                && t.columns.keys().all(|c| known.contains(c))
                && t.languages.values().all(|l| l.keys.keys().all(|k| FIELDS.contains(&k.as_str())))
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

/// A phrase column over all rows (trimmed, lower case, each once; folded by the caller).
pub(super) fn phrases(pick: impl Fn(&Language) -> &Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    for l in table().languages.values() {
        extend(&mut out, pick(l));
    }
    out
}

/// The registration keys over all rows: field → key names (trimmed, lower case, each once).
pub(super) fn keys() -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in table().languages.values() {
        for (field, keys) in &l.keys {
            extend(out.entry(field.clone()).or_default(), keys);
        }
    }
    out
}

/// A column over all rows as written (trimmed, each once, not folded): for words compared
/// with text that is not folded either (normalised keys, relative pronouns).
pub(super) fn raw_column(pick: impl Fn(&Language) -> &Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in table().languages.values() {
        for w in pick(l) {
            let w = w.trim();
            if !w.is_empty() && !out.iter().any(|o| o == w) {
                out.push(w.to_owned());
            }
        }
    }
    out
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

/// The folded words of one column of the table, over all rows.
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

/// Folded month name → month number (1–12), over all rows' `months` columns; a spelling two
/// languages give different months is left out (ambiguous).
pub(super) fn month_names() -> BTreeMap<String, u8> {
    let mut out: BTreeMap<String, u8> = BTreeMap::new();
    let mut clash: Vec<String> = Vec::new();
    for l in table().languages.values() {
        for (i, spellings) in l.months.iter().enumerate() {
            let Ok(n) = u8::try_from(i + 1) else { continue };
            for w in spellings.split('|').map(|w| fold(w.trim())).filter(|w| !w.is_empty()) {
                match out.get(&w) {
                    Some(m) if *m != n => clash.push(w),
                    _ => {
                        out.insert(w, n);
                    }
                }
            }
        }
    }
    for w in clash {
        out.remove(&w);
    }
    out
}

/// The morphology columns over all rows, as written (folded by [`super::morph::morph_lists`]).
pub(super) fn morphology() -> MorphLists {
    let mut out = MorphLists::default();
    for l in table().languages.values() {
        out.append(&l.morph);
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
        for (code, l) in t.languages.iter().filter(|(code, _)| code.as_str() != "*") {
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
