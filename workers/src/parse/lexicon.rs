//! The generic layer of the WHOIS reader: a multilingual lexicon of not-found, reserved/blocked,
//! pending-delete and quota phrasings (`workers/data/whois-lexicon.json`), applied only when no
//! registry family's markers recognised the answer and no registration evidence was read.
//!
//! Rules (so that an unfamiliar wording never becomes a false "available"):
//! - phrases match at word boundaries on normalised lines of at most [`MAX_LINE`] characters;
//!   wrapped sentence tails and long disclaimer paragraphs are not read;
//! - a not-found phrase right after a negation (`not`, `no`, `non`, `nicht`…) does not count;
//! - quota wins over everything (the registry did not answer the question);
//! - not-found together with a reserved or pending-delete phrase is a conflict: unknown;
//! - "available" needs a not-found phrase and nothing else.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

const LEXICON_JSON: &str = include_str!("../../data/whois-lexicon.json");

/// Longest normalised line the lexicon reads, characters.
pub const MAX_LINE: usize = 160;

/// What the lexicon concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LexiconClass {
    /// A throttling or quota notice.
    Quota(String),
    /// A reserved/blocked/withheld name.
    Reserved(String),
    /// Registered but about to be deleted (redemption, pending delete, "to be released").
    PendingDelete(String),
    /// The registry has no such name.
    NotFound(String),
    /// Phrases of different classes: no definitive reading.
    Conflict(String),
}

#[derive(Debug, Deserialize)]
struct Lexicon {
    quota: Vec<String>,
    pending_delete: Vec<String>,
    reserved: Vec<String>,
    not_found: Vec<String>,
    #[serde(default)]
    fields: FieldLexicon,
}

/// The field reader's data (the lexicon's `fields` section): key synonyms by field, block
/// headers by kind, registrant contact wordings and country names. Everything lower case.
#[derive(Debug, Default, Deserialize)]
pub struct FieldLexicon {
    /// Field name (`registrar`, `status`, `created`, `updated`, `expires`, `registrant_country`,
    /// `nameserver`, `dnssec`) → key wordings.
    #[serde(default)]
    pub keys: BTreeMap<String, Vec<String>>,
    /// Block kind (`status`, `nameservers`, `registrant`, `registrar`) → header wordings.
    #[serde(default)]
    pub blocks: BTreeMap<String, Vec<String>>,
    /// Key prefixes naming the registrant contact (`owner` in `owner-country`).
    #[serde(default)]
    pub registrant_roles: Vec<String>,
    /// A contact's country key (`country`, `pays`, ...).
    #[serde(default)]
    pub contact_country_keys: Vec<String>,
    /// Keys whose value is the registrant contact's handle (`holder-c`).
    #[serde(default)]
    pub registrant_handle_keys: Vec<String>,
    /// Keys that introduce a contact object by its handle (`nic-hdl`, `contact`).
    #[serde(default)]
    pub contact_handle_keys: Vec<String>,
    /// Country names → ISO 3166-1 alpha-2 codes.
    #[serde(default)]
    pub country_names: BTreeMap<String, String>,
    /// `signed` / `unsigned` → DNSSEC value wordings.
    #[serde(default)]
    pub dnssec_values: BTreeMap<String, Vec<String>>,
    /// Words that put an expiry date inside a status value (`OK-UNTIL 20131218000000`).
    #[serde(default)]
    pub status_until_words: Vec<String>,
}

impl FieldLexicon {
    /// The field a key wording names, by the `keys` table.
    pub fn field_of(&self, key: &str) -> Option<&str> {
        self.keys.iter().find(|(_, words)| words.iter().any(|w| w == key)).map(|(f, _)| f.as_str())
    }

    /// The block kind a header wording opens, by the `blocks` table.
    pub fn block_of(&self, key: &str) -> Option<&str> {
        self.blocks.iter().find(|(_, words)| words.iter().any(|w| w == key)).map(|(b, _)| b.as_str())
    }

    /// Whether `key` is a contact's country key.
    pub fn is_country_key(&self, key: &str) -> bool {
        self.contact_country_keys.iter().any(|k| k == key)
    }

    /// `owner country`, `holder country code`: a registrant role followed by a country key.
    pub fn is_registrant_country_key(&self, key: &str) -> bool {
        self.registrant_roles.iter().any(|role| {
            key.strip_prefix(role.as_str()).and_then(|r| r.strip_prefix(' ')).is_some_and(|r| self.is_country_key(r))
        })
    }

    /// A DNSSEC value: `Some(true)` signed, `Some(false)` unsigned, by the `dnssec_values` table.
    pub fn dnssec(&self, value: &str) -> Option<bool> {
        let v = value.trim().to_lowercase();
        let starts = |w: &str| {
            v == w
                || v.strip_prefix(w)
                    .and_then(|r| r.chars().next())
                    .is_some_and(|c| c.is_whitespace() || ",;.(-/".contains(c))
        };
        // Unsigned first: "not signed" must not read as "signed"-anything.
        for (state, signed) in [("unsigned", false), ("signed", true)] {
            if self.dnssec_values.get(state).is_some_and(|words| words.iter().any(|w| starts(w))) {
                return Some(signed);
            }
        }
        None
    }

    /// A country value as an ISO code: `FR`, `France`, `France (FR)`.
    pub fn country_code(&self, value: &str) -> Option<String> {
        let v = value.trim().trim_end_matches('.').trim();
        let two =
            |s: &str| (s.len() == 2 && s.chars().all(|c| c.is_ascii_alphabetic())).then(|| s.to_ascii_uppercase());
        if let Some(code) = two(v) {
            return Some(code);
        }
        if v.ends_with(')')
            && let Some(open) = v.rfind('(')
            && let Some(code) = two(&v[open + 1..v.len() - 1])
        {
            return Some(code);
        }
        let lower = v.to_lowercase();
        self.country_names.get(&lower).map(|c| c.to_ascii_uppercase())
    }
}

/// The field reader's data (empty when the lexicon does not parse, which a test rules out).
pub fn field_lexicon() -> &'static FieldLexicon {
    &lexicon().fields
}

fn lexicon() -> &'static Lexicon {
    static LEXICON: OnceLock<Lexicon> = OnceLock::new();
    LEXICON.get_or_init(|| {
        serde_json::from_str(LEXICON_JSON).unwrap_or(Lexicon {
            quota: Vec::new(),
            pending_delete: Vec::new(),
            reserved: Vec::new(),
            not_found: Vec::new(),
            fields: FieldLexicon::default(),
        })
    })
}

/// Whether the shipped lexicon parses (checked by a test, so a broken file cannot ship).
pub fn lexicon_is_valid() -> bool {
    serde_json::from_str::<Lexicon>(LEXICON_JSON).is_ok_and(|l| !l.not_found.is_empty())
}

const NEGATIONS: &[&str] = &["not", "no", "non", "nicht", "niet", "nie", "ne", "не", "un", "never", "no longer"];

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The first occurrence of `phrase` in `line` at word boundaries (for scripts without spaces the
/// phrase's own first/last characters decide), skipping negated ones when `negatable`.
fn find_phrase(line: &str, phrase: &str, negatable: bool) -> bool {
    let mut from = 0;
    while let Some(rel) = line[from..].find(phrase) {
        let start = from + rel;
        let end = start + phrase.len();
        let before = line[..start].chars().next_back();
        let after = line[end..].chars().next();
        let first = phrase.chars().next().unwrap_or(' ');
        let last = phrase.chars().next_back().unwrap_or(' ');
        let left_ok = !is_word_char(first) || before.is_none_or(|c| !is_word_char(c)) || !first.is_ascii();
        let right_ok = !is_word_char(last) || after.is_none_or(|c| !is_word_char(c)) || !last.is_ascii();
        if left_ok && right_ok {
            let negated = negatable && {
                let head = line[..start].trim_end();
                let last_word = head.rsplit(|c: char| !is_word_char(c)).next().unwrap_or("");
                NEGATIONS.contains(&last_word) || head.ends_with("no longer") || head.ends_with("n't")
            };
            if !negated {
                return true;
            }
        }
        from = start + phrase.len().max(1);
        while !line.is_char_boundary(from) {
            from += 1;
        }
    }
    false
}

fn first_hit<'a>(phrases: &'a [String], lines: &[&str], negatable: bool) -> Option<&'a str> {
    phrases.iter().map(String::as_str).find(|p| lines.iter().any(|l| find_phrase(l, p, negatable)))
}

/// Reads normalised lines (lower case, whitespace collapsed; continuation lines already left
/// out) with the generic lexicon. `None` when no phrase of any class is present.
pub fn classify(lines: &[&str]) -> Option<LexiconClass> {
    let lex = lexicon();
    let lines: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.is_empty() && l.chars().count() <= MAX_LINE && !l.contains("rights reserved"))
        .collect();
    if let Some(p) = first_hit(&lex.quota, &lines, false) {
        return Some(LexiconClass::Quota(format!("lexicon:quota \"{p}\"")));
    }
    let pending = first_hit(&lex.pending_delete, &lines, false);
    let reserved = first_hit(&lex.reserved, &lines, true);
    let not_found = first_hit(&lex.not_found, &lines, true);
    match (not_found, reserved, pending) {
        (Some(n), Some(o), _) | (Some(n), None, Some(o)) => {
            Some(LexiconClass::Conflict(format!("lexicon: \"{n}\" and \"{o}\" conflict")))
        }
        (Some(n), None, None) => Some(LexiconClass::NotFound(format!("lexicon:not_found \"{n}\""))),
        (None, _, Some(p)) => Some(LexiconClass::PendingDelete(format!("lexicon:pending_delete \"{p}\""))),
        (None, Some(r), None) => Some(LexiconClass::Reserved(format!("lexicon:reserved \"{r}\""))),
        (None, None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_lexicon_parses() {
        assert!(lexicon_is_valid());
        let f = field_lexicon();
        assert_eq!(f.field_of("expired"), Some("expires"));
        assert_eq!(f.block_of("flags"), Some("status"));
        assert!(f.is_registrant_country_key("owner country"));
        assert!(!f.is_registrant_country_key("admin country"));
        assert_eq!(f.country_code("France"), Some("FR".to_owned()));
        assert_eq!(f.country_code("United States (US)"), Some("US".to_owned()));
        assert_eq!(f.country_code("fo"), Some("FO".to_owned()));
        assert_eq!(f.country_code("Atlantis"), None);
        assert_eq!(f.dnssec("Signed delegation"), Some(true));
        assert_eq!(f.dnssec("not signed"), Some(false));
        assert_eq!(f.dnssec("Nein"), Some(false));
        assert_eq!(f.dnssec("noise"), None);
        // Every key table names a field the reader knows.
        for name in f.keys.keys() {
            assert!(
                ["registrar", "status", "created", "updated", "expires", "registrant_country", "nameserver", "dnssec"]
                    .contains(&name.as_str()),
                "unknown field {name}"
            );
        }
        for name in f.blocks.keys() {
            assert!(
                ["status", "nameservers", "registrant", "registrar"].contains(&name.as_str()),
                "unknown block {name}"
            );
        }
    }

    #[test]
    fn unfamiliar_wordings_are_read_and_negations_and_disclaimers_are_not() {
        let c = |lines: &[&str]| classify(lines);
        assert!(matches!(c(&["the domain example.zz was not found in our registry"]), Some(LexiconClass::NotFound(_))));
        assert!(matches!(c(&["el dominio ejemplo.zz no existe"]), Some(LexiconClass::NotFound(_))));
        assert!(matches!(c(&["домен example.zz не зарегистрирован"]), Some(LexiconClass::NotFound(_))));
        assert!(matches!(c(&["该域名未注册"]), Some(LexiconClass::NotFound(_))));
        assert!(matches!(
            c(&["this name is withheld from registration by the registry"]),
            Some(LexiconClass::Reserved(_))
        ));
        assert!(matches!(c(&["domain to be released on 2026-12-01"]), Some(LexiconClass::PendingDelete(_))));
        assert!(matches!(c(&["you have exceeded your allotted number of queries"]), Some(LexiconClass::Quota(_))));
        // Negated or incidental mentions are not not-found answers.
        assert_eq!(c(&["the whois service is not available at this address"]), None);
        assert_eq!(c(&["copyright 2026 registry. all rights reserved"]), None);
        assert_eq!(c(&["notfound_handler=1"]), None, "word boundaries");
        // Both kinds: a conflict, never available.
        assert!(matches!(c(&["not found", "this name is reserved by the registry"]), Some(LexiconClass::Conflict(_))));
    }
}
