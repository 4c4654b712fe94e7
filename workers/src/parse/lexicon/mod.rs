//! The generic layer of the WHOIS reader: not-found, reserved/blocked, pending-delete, quota and
//! error phrasings, status words, negation and sentence words, morphology and registration keys,
//! each concept with one home — a column of the concept × language table
//! (`workers/data/whois-languages.json`, [`languages`]; no word list is Rust code) — applied only when no registry family's markers recognised the answer and no registration
//! evidence was read; the status words and [`is_aside`] / [`is_hypothetical`] /
//! [`mentions_error`] also serve the generic markers and the evidence reader.
//!
//! Rules (so that an unfamiliar wording never becomes a false "available"):
//! - lines and phrases are [`fold`]ed alike (case, diacritics, Arabic/Persian letter forms…);
//!   phrases match at word boundaries on lines of at most [`MAX_LINE`] characters; wrapped
//!   sentence tails and long disclaimer paragraphs are not read;
//! - a not-found wording counts only as a statement about the name: not negated within its
//!   clause (`not`, `no`, `nicht`, `غير`…, or a CJK `不` right before it), not after "only", not
//!   in a hypothetical or general sentence (`if`, `may`, `can`…; `that`/`which` before it), not
//!   in a sentence or a `key: value` line about another part of the record ("Registrant Fax:
//!   not found", "contact data not found");
//! - beyond the listed phrases, a negation bearing on a presence word ("There is no record for
//!   x", "nicht registriert") in a short sentence about the name, and the name echoed with a
//!   free status word ("x.zz - available"), are not-found statements too;
//! - beyond the listed phrases and the negated presence words, the morphology columns of the
//!   table ([`morph`], [`presence`]): negations fused onto the
//!   word ("nenalezena", "bulunamadı"), words of absence ("brak", "відсутній"), a negating
//!   determiner on the queried object ("no such name"), "not in our database", absence patterns
//!   of Chinese/Japanese/Korean, status-like keys in any language ("Availability: available",
//!   "Reserved: yes"), free words said of the name ("x.рф свободно"), negated registrability,
//!   pending deletion ("pending release") and quota refusals ("too many" + queries, "try later");
//! - quota wins over everything (the registry did not answer the question), unless the quota
//!   wording is hypothetical ("if you exceed the query limit…");
//! - not-found together with a reserved or pending-delete phrase is a conflict: unknown; so is
//!   not-found next to an error wording ("invalid query or domain name not known");
//! - "available" needs a not-found wording and nothing else.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use aho_corasick::AhoCorasick;
use morph::*;
use presence::*;
use serde::Deserialize;
use statement::*;
pub use statement::{is_aside, is_hypothetical, line_key};

mod languages;
mod morph;
mod presence;
mod statement;

const LEXICON_JSON: &str = include_str!("../../../data/whois-lexicon.json");

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

/// The generic layer's phrase lists: columns of the concept × language table merged over its
/// rows ([`languages`]), folded at load.
#[derive(Debug, Default)]
struct Lexicon {
    quota: Vec<String>,
    pending_delete: Vec<String>,
    reserved: Vec<String>,
    /// Status values that alone say the registry withholds the name (`Status: RESERVED`).
    reserved_status: Vec<String>,
    /// Status values that alone say no such name is registered (`Stav: volná`).
    free_status: Vec<String>,
    /// Status values that alone say the name is registered (`Estado: activo`).
    taken_status: Vec<String>,
    not_found: Vec<String>,
    /// Error wordings: the server did not answer the question ("invalid query", "not
    /// authoritative"), so a not-found phrase next to one proves nothing.
    error: Vec<String>,
    fields: FieldLexicon,
}

/// The field reader's tables (`workers/data/whois-lexicon.json`).
#[derive(Debug, Default, Deserialize)]
struct FieldTables {
    #[serde(default)]
    fields: FieldLexicon,
}

/// The field reader's data: key synonyms by field (the registration keys of the concept ×
/// language table), and from `workers/data/whois-lexicon.json` block headers by kind,
/// registrant contact wordings and country names. Everything lower case.
#[derive(Debug, Default, Deserialize)]
pub struct FieldLexicon {
    /// Field name (`registrar`, `status`, `created`, `updated`, `expires`, `registrant_country`,
    /// `nameserver`, `dnssec`) → key wordings (the table's `keys` column, merged at load).
    #[serde(skip)]
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
    /// Folded key wording → field, for keys printed with other diacritics or case.
    #[serde(skip)]
    folded_keys: BTreeMap<String, String>,
    /// Key wording → the first field (in `keys` order) listing it: [`FieldLexicon::field_of`]
    /// is asked for every key of every answer, and scanning thousands of wordings was a tenth
    /// of the reader's time.
    #[serde(skip)]
    exact_keys: HashMap<String, String>,
}

impl FieldLexicon {
    /// The field a key wording names, by the `keys` table.
    pub fn field_of(&self, key: &str) -> Option<&str> {
        self.exact_keys.get(key).map(String::as_str).or_else(|| self.folded_keys.get(&fold(key)).map(String::as_str))
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
            && let Some(code) = v.get(open + 1..v.len() - 1).and_then(two)
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
        let tables: FieldTables = serde_json::from_str(LEXICON_JSON).unwrap_or_default();
        let mut lex = Lexicon {
            quota: languages::phrases(|l| &l.quota),
            pending_delete: languages::phrases(|l| &l.pending_delete),
            reserved: languages::phrases(|l| &l.reserved),
            reserved_status: languages::phrases(|l| &l.reserved_status),
            free_status: languages::phrases(|l| &l.free),
            taken_status: languages::phrases(|l| &l.taken_status),
            not_found: languages::phrases(|l| &l.not_found),
            error: languages::phrases(|l| &l.error),
            fields: tables.fields,
        };
        lex.fields.keys = languages::keys();
        let folded: BTreeMap<String, String> =
            lex.fields.keys.iter().flat_map(|(f, words)| words.iter().map(move |w| (fold(w), f.clone()))).collect();
        lex.fields.folded_keys = folded;
        let mut exact: HashMap<String, String> = HashMap::new();
        for (field, words) in &lex.fields.keys {
            for w in words {
                exact.entry(w.clone()).or_insert_with(|| field.clone());
            }
        }
        lex.fields.exact_keys = exact;
        // The phrases are matched against folded lines (the field tables are not phrases).
        for list in [
            &mut lex.quota,
            &mut lex.pending_delete,
            &mut lex.reserved,
            &mut lex.reserved_status,
            &mut lex.free_status,
            &mut lex.taken_status,
            &mut lex.not_found,
            &mut lex.error,
        ] {
            for p in list.iter_mut() {
                *p = fold(p);
            }
        }
        lex
    })
}

/// One phrase list of the lexicon with an Aho-Corasick automaton over it (issue 32).
///
/// Every line is tried against thousands of phrases and most are absent: one pass of the
/// automaton finds every phrase that occurs anywhere in the lines (overlapping matches, so none is
/// hidden by another), and only those go through [`find_phrase`]'s word-boundary and negation
/// rules, in list order. `find_phrase` accepts only an occurrence the automaton also reports, so
/// every verdict is the one a scan of the whole list gives.
struct Phrases {
    list: &'static [String],
    /// `None` only if the automaton cannot be built (it never fails on these lists; the linear
    /// scan then keeps the same verdicts).
    automaton: Option<AhoCorasick>,
}

impl Phrases {
    fn new(list: &'static [String]) -> Self {
        Self { list, automaton: AhoCorasick::new(list).ok() }
    }

    /// The first phrase, in list order, that counts under `reading` in one of `lines`.
    fn first_hit(&self, lines: &[&str], reading: Reading) -> Option<&'static str> {
        let counts = |p: &&'static str| lines.iter().any(|l| find_phrase(l, p, reading));
        let Some(automaton) = &self.automaton else {
            return self.list.iter().map(String::as_str).find(counts);
        };
        let mut present: Vec<usize> = Vec::new();
        for line in lines {
            // The builder's default match kind is `Standard`, the one overlapping search needs.
            if let Ok(matches) = automaton.try_find_overlapping_iter(*line) {
                present.extend(matches.map(|m| m.pattern().as_usize()));
            } else {
                return self.list.iter().map(String::as_str).find(counts);
            }
        }
        present.sort_unstable();
        present.dedup();
        present.into_iter().filter_map(|i| self.list.get(i)).map(String::as_str).find(counts)
    }

    /// Whether a phrase counts under `reading` in `line`.
    fn any(&self, line: &str, reading: Reading) -> bool {
        self.first_hit(&[line], reading).is_some()
    }
}

/// The lexicon's phrase lists that are searched in lines, each with its automaton, built once.
struct PhraseLists {
    quota: Phrases,
    pending_delete: Phrases,
    reserved: Phrases,
    not_found: Phrases,
    error: Phrases,
}

/// The searched phrase lists ([`PhraseLists`]), built on first use.
fn phrases() -> &'static PhraseLists {
    static PHRASES: OnceLock<PhraseLists> = OnceLock::new();
    PHRASES.get_or_init(|| {
        let lex = lexicon();
        PhraseLists {
            quota: Phrases::new(&lex.quota),
            pending_delete: Phrases::new(&lex.pending_delete),
            reserved: Phrases::new(&lex.reserved),
            not_found: Phrases::new(&lex.not_found),
            error: Phrases::new(&lex.error),
        }
    })
}

/// Whether a status value alone says the name is withheld (`RESERVED`, `Reservado`,
/// `reserved (by registry)`; not `blocked`, which AFNIC prints on registered names): the lexicon's `reserved_status` word, as the whole value or
/// followed by a blank or punctuation. Returns the word.
pub fn reserved_status(value: &str) -> Option<&'static str> {
    status_word(&lexicon().reserved_status, value)
}

/// Whether a status value alone says no such name is registered (`AVAILABLE`, `free`, `Stav:
/// volná`, `وضعیت: آزاد`): the lexicon's `free_status` word, as the whole value or followed by a
/// blank or punctuation. Returns the word. Like a not-found phrase, it frees the name only when
/// the answer shows no registration.
pub fn free_status(value: &str) -> Option<&'static str> {
    status_word(&lexicon().free_status, value)
}

/// Whether a status value alone says the name is registered (`active`, `Estado: activo`,
/// `Durum: aktif`, `状态: 正常`): registration evidence, like a creation date. Returns the word.
pub fn taken_status(value: &str) -> Option<&'static str> {
    status_word(&lexicon().taken_status, value)
}

fn status_word(words: &'static [String], value: &str) -> Option<&'static str> {
    let v = fold(value.trim()).replace(['_', '-'], " ");
    let v = v.trim().trim_end_matches(['.', '!']);
    let lists = word_lists();
    words.iter().map(String::as_str).find(|w| {
        v == *w
            || v.strip_prefix(*w).is_some_and(|r| {
                r.chars().next().is_some_and(|c| c == ' ' || c == '(' || c == ',')
                    // "kayıtlı değil", "رجسٹرڈ نہیں", "свободен не": the next word negates it.
                    && !self::statement::words(r)
                        .next()
                        .is_some_and(|n| listed(&lists.negations, n) || listed(&lists.postposed, n))
            })
    })
}

/// Whether a status value or a short statement line (folded here) says the name is on its way
/// out (the lexicon's `pending_delete` phrases: "pendiente de eliminación", "will be released
/// on…"); long notices, hypothetical sentences and other fields' values do not count.
pub fn says_pending_delete(text: &str) -> Option<&'static str> {
    let t = fold(text.trim());
    if t.chars().count() > 100 || is_aside(&t) || is_hypothetical(&t) {
        return None;
    }
    phrases().pending_delete.first_hit(&[&t], Reading::Claim).or_else(|| {
        // A deletion word after a waiting word ("pending release", "wird gelöscht"): see
        // `morph::pending`.
        pending(&t).map(|_| "pending deletion (morphology)")
    })
}

/// What a terse one-line answer says, the queried name aside: `Some(true)` when every part of it
/// is a word that alone says the name is withheld ("Restricted name.", "BLOCKED", "qwzy.zz:
/// restricted", "Gesperrt"; the table's `reserved_status` and `terse_reserved`) or a negated free
/// word ("Not available (reserved)"), with at least one withheld word; `Some(false)` when every
/// part is a free status word ("free", "AVAILABLE"); `None` otherwise ("All rights reserved",
/// "Access restricted", "Your IP is blocked": a part that is no such word).
///
/// `line` is the answer's one content line, normalised; the caller checks that it is the only
/// one.
pub fn terse_reading(line: &str) -> Option<bool> {
    let line = fold(line);
    if line.chars().count() > 60 {
        return None;
    }
    let m = morph_lists();
    let lists = word_lists();
    let mut parts: Vec<&str> = Vec::new();
    for part in line.split(['(', ')', ':', ',', ';', '[', ']']).flat_map(|p| p.split(" - ")) {
        let part = part.trim().trim_matches(['.', '!', '*', '"', '\'', '-', ' ']);
        // The queried name echoed: a word with a dot inside.
        let name = part.contains('.') && !part.contains(' ') && !part.starts_with('.');
        if !part.is_empty() && !name {
            parts.push(part);
        }
    }
    let withheld = |p: &str| {
        reserved_status(p).is_some_and(|w| w == p)
            || m.terse_reserved.iter().any(|w| w == p)
            || phrases().reserved.list.iter().any(|w| w == p)
    };
    let free = |p: &str| free_status(p).is_some_and(|w| w == p);
    let negated_free = |p: &str| {
        let mut ws = statement::words(p);
        ws.next().is_some_and(|n| listed(&lists.negations, n)) && free(ws.collect::<Vec<_>>().join(" ").as_str())
    };
    if parts.is_empty() {
        return None;
    }
    if parts.iter().all(|p| withheld(p) || negated_free(p)) && parts.iter().any(|p| withheld(p)) {
        return Some(true);
    }
    parts.iter().all(|p| free(p)).then_some(false)
}

/// The month a word names in one of the table's languages (`months` column: "mars", "März",
/// "marzo", "марта"), 1–12; the date reader asks it for words that are no English month.
pub fn month_number(word: &str) -> Option<u8> {
    static MONTHS: OnceLock<BTreeMap<String, u8>> = OnceLock::new();
    MONTHS.get_or_init(languages::month_names).get(&fold(word.trim_end_matches('.'))).copied()
}

/// Whether a word may stand between the parts of a date written in words ("12 de marzo de
/// 2019"; the table's `date_fillers`).
pub fn is_date_filler(word: &str) -> bool {
    static FILLERS: OnceLock<Vec<String>> = OnceLock::new();
    FILLERS.get_or_init(|| languages::column(|l| &l.date_fillers)).iter().any(|f| *f == fold(word))
}

/// Whether `text` (any case) has a negation word of the table's `negations` column as one of its
/// words ("NOT FOUND", "no match").
pub fn has_negation(text: &str) -> bool {
    let t = fold(text);
    statement::words(&t).any(|w| listed(&word_lists().negations, w))
}

/// A token that is a negation written together with the words it negates, spaced: `NOMATCH` →
/// `NO MATCH`, `notfound` → `not found`, `nosuchdomain` → `no such domain` (registries that print
/// machine-readable markers). The token, in one case and at least five letters, must split
/// wholly into words of the lexicon's not-found, free and reserved phrases and negations, one of
/// them a negation, every other word at least three letters; a token that is itself such a word
/// ("nothing", "cannot") is left alone. `None` when it does not split so.
pub fn split_compound(token: &str) -> Option<String> {
    let one_case = token.chars().all(|c| !c.is_alphabetic() || c.is_lowercase())
        || token.chars().all(|c| !c.is_alphabetic() || c.is_uppercase());
    // One script: Cyrillic "не" glued to a Latin word ("неavailable") is mixed-script noise, not
    // a negation (the fused-negation rule of `morph` has the same guard).
    let one_script = token.is_ascii() || !token.chars().any(|c| c.is_ascii_alphabetic());
    // Bounded work on hostile input: markers are short, and so is every word of the split.
    let letters = token.chars().count();
    if !(5..=MAX_COMPOUND).contains(&letters) || !one_case || !one_script || !token.chars().all(char::is_alphabetic) {
        return None;
    }
    let w = fold(token);
    let vocab = compound_vocabulary();
    let negations = &word_lists().negations;
    if vocab.contains(w.as_str()) || listed(negations, &w) {
        return None;
    }
    // Shortest split into known words (dynamic programming over byte offsets of `w`), with the
    // number of negations among them.
    let n = w.len();
    let mut best: Vec<Option<Vec<usize>>> = vec![None; n + 1];
    best[0] = Some(Vec::new());
    for end in 1..=n {
        if !w.is_char_boundary(end) {
            continue;
        }
        for start in end.saturating_sub(MAX_COMPOUND_PART)..end {
            let (Some(prev), Some(part)) = (best[start].as_ref(), w.get(start..end)) else { continue };
            let negation = listed(negations, part);
            let word = negation || (part.chars().count() >= 3 && vocab.contains(part));
            if word && best[end].as_ref().is_none_or(|b| b.len() > prev.len() + 1) {
                let mut cuts = prev.clone();
                cuts.push(end);
                best[end] = Some(cuts);
            }
        }
    }
    let cuts = best[n].take()?;
    let mut parts = Vec::new();
    let mut from = 0;
    for to in cuts {
        parts.push(w.get(from..to)?);
        from = to;
    }
    (parts.len() >= 2 && parts.iter().any(|p| listed(negations, p))).then(|| {
        let spaced = parts.join(" ");
        if token.chars().any(char::is_uppercase) { spaced.to_uppercase() } else { spaced }
    })
}

/// Whether every word of `text` (any case) is a word of the lexicon's not-found, free and
/// reserved phrases or a negation: a marker such as `NOT FOUND` or `Domain Not Found`, not an
/// identifier that merely contains one (`notfound_page_disabled`).
pub fn marker_words(text: &str) -> bool {
    let t = fold(text);
    let vocab = compound_vocabulary();
    statement::words(&t).all(|w| vocab.contains(w) || listed(&word_lists().negations, w))
}

/// Longest token [`split_compound`] reads, in letters.
const MAX_COMPOUND: usize = 40;
/// Longest word of a split, in bytes (the DP looks this far back).
const MAX_COMPOUND_PART: usize = 24;

/// The words of the lexicon's not-found, free and reserved phrases (folded), for
/// [`split_compound`].
fn compound_vocabulary() -> &'static std::collections::HashSet<String> {
    static VOCAB: OnceLock<std::collections::HashSet<String>> = OnceLock::new();
    VOCAB.get_or_init(|| {
        let lex = lexicon();
        lex.not_found
            .iter()
            .chain(&lex.free_status)
            .chain(&lex.reserved)
            .chain(&lex.reserved_status)
            .flat_map(|p| statement::words(p).map(str::to_owned).collect::<Vec<_>>())
            .filter(|w| w.chars().all(char::is_alphabetic))
            .collect()
    })
}

/// Whether a normalised line carries an error wording (the lexicon's `error` list): "invalid
/// query or domain name not known" is no answer about the name.
pub fn mentions_error(line: &str) -> bool {
    let line = fold(line);
    line.chars().count() <= MAX_LINE && phrases().error.any(&line, Reading::Plain)
}

/// Whether a value (any case) says "not found" in the lexicon's words: `Registrant: not found`
/// is no registrant.
pub fn says_not_found(value: &str) -> bool {
    let v = fold(value.trim());
    phrases().not_found.any(&v, Reading::Statement)
}

/// Folds text for phrase matching, so that one phrase covers the spellings registries print:
/// lower case; Latin letters without diacritics ("no se encontro" = "no se encontró", an upper
/// case Turkish "BULUNAMADI" = "bulunamadı", "İ" without its dot); Arabic yeh and kaf as their
/// Persian forms (registries in Iran and Afghanistan print either), Arabic-Indic and Persian
/// digits as ASCII, tatweel, harakat and zero-width joiners dropped; typographic apostrophes,
/// quotes and dashes as ASCII; `ё` as `е`. Both the lexicon's phrases and the answer's lines are
/// folded, so partial coverage of a script is still consistent.
pub fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        // ASCII, most of every answer, maps to ASCII: lower case, `_` as a blank, a backtick
        // as an apostrophe (as the arms below do), without the case-mapping tables.
        if c.is_ascii() {
            out.push(match c {
                '_' => ' ',
                '`' => '\'',
                _ => c.to_ascii_lowercase(),
            });
            continue;
        }
        for c in c.to_lowercase() {
            fold_lower(c, &mut out);
        }
    }
    out
}

/// [`fold`] of one lower-case character, appended to `out`.
fn fold_lower(c: char, out: &mut String) {
    match c {
        '\u{200b}'..='\u{200d}' | '\u{feff}' | '\u{0640}' | '\u{0307}' | '\u{064b}'..='\u{065f}' | '\u{0670}' => {}
        'ي' | 'ى' => out.push('ی'),
        'ك' => out.push('ک'),
        '\u{0660}'..='\u{0669}' => out.push(char::from_digit(u32::from(c) - 0x0660, 10).unwrap_or(c)),
        '\u{06f0}'..='\u{06f9}' => out.push(char::from_digit(u32::from(c) - 0x06f0, 10).unwrap_or(c)),
        'ё' => out.push('е'),
        // Greek without tonos or dialytika, final sigma as sigma ("ΔΕΝ ΒΡΕΘΗΚΕ" = "δεν βρέθηκε").
        'ά' => out.push('α'),
        'έ' => out.push('ε'),
        'ή' => out.push('η'),
        'ί' | 'ϊ' | 'ΐ' => out.push('ι'),
        'ό' => out.push('ο'),
        'ύ' | 'ϋ' | 'ΰ' => out.push('υ'),
        'ώ' => out.push('ω'),
        'ς' => out.push('σ'),
        // Bengali letters with nukta, precomposed or not, as base + nukta.
        '\u{09dc}' => out.push_str("\u{09a1}\u{09bc}"),
        '\u{09dd}' => out.push_str("\u{09a2}\u{09bc}"),
        '\u{09df}' => out.push_str("\u{09af}\u{09bc}"),
        '\u{2018}' | '\u{2019}' | '\u{02bc}' | '\u{00b4}' | '`' => out.push('\''),
        '\u{201c}' | '\u{201d}' | '\u{201e}' | '\u{00ab}' | '\u{00bb}' => out.push('"'),
        '\u{2013}' | '\u{2014}' => out.push('-'),
        // "Object_Not_Found", "query_status": an underscore joins words.
        '_' => out.push(' '),
        '\u{00a0}' => out.push(' '),
        _ => match latin_base(c) {
            Some(base) => out.push_str(base),
            None => out.push(c),
        },
    }
}

/// The base letters of a lower-case Latin letter with a diacritic (Latin-1 Supplement and
/// Latin Extended-A), `None` for any other character.
fn latin_base(c: char) -> Option<&'static str> {
    Some(match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ă' | 'ą' => "a",
        'ç' | 'ć' | 'ĉ' | 'ċ' | 'č' => "c",
        'ď' | 'đ' => "d",
        'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ĕ' | 'ė' | 'ę' | 'ě' => "e",
        'ĝ' | 'ğ' | 'ġ' | 'ģ' => "g",
        'ĥ' | 'ħ' => "h",
        'ì' | 'í' | 'î' | 'ï' | 'ĩ' | 'ī' | 'ĭ' | 'į' | 'ı' => "i",
        'ĵ' => "j",
        'ķ' => "k",
        'ĺ' | 'ļ' | 'ľ' | 'ŀ' | 'ł' => "l",
        'ñ' | 'ń' | 'ņ' | 'ň' => "n",
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' | 'ŏ' | 'ő' => "o",
        'ŕ' | 'ŗ' | 'ř' => "r",
        'ś' | 'ŝ' | 'ş' | 'š' | 'ș' => "s",
        'ţ' | 'ť' | 'ŧ' | 'ț' => "t",
        'ù' | 'ú' | 'û' | 'ü' | 'ũ' | 'ū' | 'ŭ' | 'ů' | 'ű' | 'ų' => "u",
        'ŵ' => "w",
        'ý' | 'ÿ' | 'ŷ' => "y",
        'ź' | 'ż' | 'ž' => "z",
        'ß' => "ss",
        'æ' => "ae",
        'œ' => "oe",
        _ => return None,
    })
}

/// The sentence and negation columns of the concept × language table, merged over its rows
/// and folded once (see [`fold`]; relatives, plural subjects and the key columns as written).
struct WordLists {
    negations: Vec<String>,
    /// Single CJK characters negating the phrase right after them.
    cjk_negations: Vec<char>,
    qualifiers: Vec<String>,
    conditionals: Vec<String>,
    /// Relative pronouns, unfolded.
    relatives: Vec<String>,
    /// Plural copulas and nouns of the object, unfolded.
    plural_subjects: Vec<String>,
    subject: Vec<String>,
    aside: Vec<String>,
    presence: Vec<String>,
    modals: Vec<String>,
    glue: Vec<String>,
    not_presence: Vec<String>,
    /// Negations after the word they negate (the table's `postposed_negations`).
    postposed: Vec<String>,
    /// Negations glued before / after the word in scripts without spaces.
    glued_before: Vec<String>,
    glued_after: Vec<String>,
    /// Normalised keys naming the holder, unfolded.
    holder_name_keys: Vec<String>,
    /// Normalised keys of a RIPE object's contact handles, unfolded.
    object_handle_keys: Vec<String>,
    /// Normalised keys describing a contact, unfolded.
    contact_subkeys: Vec<String>,
    /// Past forms saying a bound was passed, unfolded.
    quota_passed: Vec<String>,
    /// Word beginnings naming queries or their rate, unfolded.
    quota_queries: Vec<String>,
}

fn word_lists() -> &'static WordLists {
    static LISTS: OnceLock<WordLists> = OnceLock::new();
    let with = |mut base: Vec<String>, more: Vec<String>| {
        for w in more {
            if !base.contains(&w) {
                base.push(w);
            }
        }
        base
    };
    LISTS.get_or_init(|| WordLists {
        negations: languages::word_column(|l| &l.negations),
        cjk_negations: languages::raw_column(|l| &l.cjk_negations).iter().filter_map(|c| c.chars().next()).collect(),
        qualifiers: languages::column(|l| &l.qualifiers),
        conditionals: languages::column(|l| &l.conditionals),
        relatives: languages::raw_column(|l| &l.relatives),
        plural_subjects: languages::raw_column(|l| &l.plural_subjects),
        subject: with(languages::column(|l| &l.subject_key_words), languages::word_column(|l| &l.domain_words)),
        aside: languages::column(|l| &l.aside_key_words),
        presence: languages::column(|l| &l.presence_stems),
        modals: languages::column(|l| &l.ability_modals),
        glue: languages::word_column(|l| &l.copulas),
        not_presence: languages::column(|l| &l.not_presence),
        postposed: languages::word_column(|l| &l.postposed_negations),
        glued_before: languages::column(|l| &l.glued_negations),
        glued_after: languages::column(|l| &l.glued_postposed_negations),
        holder_name_keys: languages::raw_column(|l| &l.holder_name_keys),
        object_handle_keys: languages::raw_column(|l| &l.object_handle_keys),
        contact_subkeys: languages::raw_column(|l| &l.contact_subkeys),
        quota_passed: languages::raw_column(|l| &l.quota_passed_words),
        quota_queries: languages::raw_column(|l| &l.quota_query_stems),
    })
}

/// Keys naming the holder of the name (ICANN RDDS `Registrant Name`, ccTLD wordings), as the
/// field reader normalises keys: the table's `holder_name_keys` column.
pub fn holder_name_keys() -> &'static [String] {
    &word_lists().holder_name_keys
}

/// Keys that describe a contact (`name`, `address`, `phone`), as the field reader normalises
/// keys: the table's `contact_subkeys` column.
pub fn contact_subkeys() -> &'static [String] {
    &word_lists().contact_subkeys
}

/// Keys of a RIPE-style domain object naming its contacts by handle (`admin c`, `mnt by`), as
/// the field reader normalises keys: the table's `object_handle_keys` column.
pub fn object_handle_keys() -> &'static [String] {
    &word_lists().object_handle_keys
}

fn listed(list: &[String], word: &str) -> bool {
    list.iter().any(|w| w == word)
}

/// Whether the shipped lexicon parses (checked by a test, so a broken file cannot ship).
pub fn lexicon_is_valid() -> bool {
    serde_json::from_str::<FieldTables>(LEXICON_JSON).is_ok_and(|t| !t.fields.blocks.is_empty())
        && !lexicon().not_found.is_empty()
        && morphology_is_valid()
        && languages::table_is_valid()
}

/// Reads normalised lines (lower case, whitespace collapsed; continuation lines already left
/// out) with the generic lexicon. `None` when no phrase of any class is present.
pub fn classify(lines: &[&str]) -> Option<LexiconClass> {
    let folded: Vec<String> = lines.iter().map(|l| fold(l)).collect();
    let lines: Vec<&str> = folded
        .iter()
        .map(String::as_str)
        // "All rights reserved", "We reserve the right to…": legal boilerplate, not a reserved
        // name (folded, French "réservé" is "reserve" too).
        .filter(|l| {
            !l.is_empty()
                && l.chars().count() <= MAX_LINE
                && !l.contains("rights reserved")
                && !l.contains("reserve the right")
                && !l.contains("reserves the right")
        })
        .collect();
    // A quota wording counts unless negated or in a hypothetical head ("if you exceed the
    // query limit, access may be suspended" is the service's policy, not a refusal).
    if let Some(p) = phrases().quota.first_hit(&lines, Reading::Refusal) {
        return Some(LexiconClass::Quota(format!("lexicon:quota \"{p}\"")));
    }
    if let Some(m) = lines.iter().find_map(|l| exceeded_limit(l).or_else(|| refusal(l))) {
        return Some(LexiconClass::Quota(format!("lexicon:quota \"{m}\"")));
    }
    let statements: Vec<&str> = lines.iter().copied().filter(|l| !is_aside(l)).collect();
    // Read as a statement about the name: "A name in its redemption period can be restored only
    // by its last registrar" is a notice about the service, not this name's state.
    let pending_hit = phrases()
        .pending_delete
        .first_hit(&lines, Reading::Statement)
        .map(str::to_owned)
        .or_else(|| lines.iter().find_map(|l| pending(l)));
    let status_keys: Vec<(bool, &str)> = lines.iter().filter_map(|l| status_key_value(l)).collect();
    let reserved = phrases()
        .reserved
        .first_hit(&lines, Reading::Claim)
        .map(str::to_owned)
        .or_else(|| lines.iter().find_map(|l| echo_status(l).and_then(reserved_status)).map(str::to_owned))
        .or_else(|| status_keys.iter().find(|(free, _)| !free).map(|(_, w)| format!("status: {w}")))
        .or_else(|| statements.iter().find_map(|l| withheld(l)))
        .or_else(|| statements.iter().find_map(|l| script_withheld(l)).map(str::to_owned));
    let not_found = phrases().not_found.first_hit(&statements, Reading::Statement).map(str::to_owned).or_else(|| {
        statements
            .iter()
            .find_map(|l| echo_status(l).filter(|v| free_status(v) == Some(*v)).map(|w| format!("echo: {w}")))
            .or_else(|| status_keys.iter().find(|(free, _)| *free).map(|(_, w)| format!("status: {w}")))
            .or_else(|| statements.iter().find_map(|l| negated_presence(l)))
            .or_else(|| statements.iter().find_map(|l| negated_holding(l)))
            .or_else(|| statements.iter().find_map(|l| script_absence(l)))
            .or_else(|| statements.iter().find_map(|l| free_statement(l)))
    });
    if let (Some(n), Some(e)) = (&not_found, phrases().error.first_hit(&lines, Reading::Plain)) {
        return Some(LexiconClass::Conflict(format!("lexicon: \"{n}\" next to the error \"{e}\"")));
    }
    match (not_found, reserved, pending_hit) {
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
                [
                    "registrar",
                    "status",
                    "created",
                    "updated",
                    "expires",
                    "registrant_country",
                    "nameserver",
                    "dnssec",
                    "domain",
                    "registrant",
                    "organisation",
                    "contact"
                ]
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
        for line in [
            "number of allowed queries exceeded",
            "maximum query rate reached",
            "queries from your ip address have exceeded the allowed limit",
        ] {
            assert!(matches!(c(&[line]), Some(LexiconClass::Quota(_))), "{line}");
        }
        // A notice about the policy is no refusal.
        assert_eq!(c(&["if you exceed the query limit, access may be suspended"]), None);
        assert_eq!(c(&["queries that exceed the rate are refused"]), None);
        // Negated or incidental mentions are not not-found answers.
        assert_eq!(c(&["the whois service is not available at this address"]), None);
        assert_eq!(c(&["copyright 2026 registry. all rights reserved"]), None);
        assert_eq!(c(&["we reserve the right to modify these terms at any time"]), None);
        assert_eq!(c(&["notfound_handler=1"]), None, "word boundaries");
        // Both kinds: a conflict, never available.
        assert!(matches!(c(&["not found", "this name is reserved by the registry"]), Some(LexiconClass::Conflict(_))));
    }

    #[test]
    fn notices_field_values_and_policies_are_not_answers() {
        let c = |lines: &[&str]| classify(lines);
        // Hypothetical or general sentences about the service.
        assert_eq!(c(&["if a domain is not found in this database, it may be available for registration"]), None);
        assert_eq!(c(&["note: a domain that is not found here may still be unavailable"]), None);
        // A relative clause after the phrase only restricts the query.
        assert!(matches!(c(&["no entries found that match your query"]), Some(LexiconClass::NotFound(_))));
        // A not-found value of another field, or a sentence about another part of the record.
        assert_eq!(c(&["registrant fax: not found"]), None);
        assert_eq!(c(&["ds records: no records found"]), None);
        assert_eq!(c(&["contact data not found are withheld for privacy reasons"]), None);
        // A policy, not a state.
        assert_eq!(c(&["remarks: this domain is only available for registration under certain conditions"]), None);
        // Statements about the name still count, in key-value form too.
        for line in [
            "domain status: no object found",
            "resultado: no encontrado",
            "free.zz: not found",
            "not found: free.zz",
            "domain if.zz not found",
            "the domain free.zz was not found",
            "error:101: no entries found",
        ] {
            assert!(matches!(c(&[line]), Some(LexiconClass::NotFound(_))), "{line}");
        }
        // A negation a few words before the phrase, in its clause; a CJK negation right before it.
        assert_eq!(
            c(&["el dominio x.cl no está disponible para registro"]).map(|r| matches!(r, LexiconClass::NotFound(_))),
            Some(false)
        );
        // "Cannot be registered": never not-found; like the English "cannot be registered", a
        // withheld name.
        assert!(matches!(c(&["该域名不可注册"]), Some(LexiconClass::Reserved(_))));
        assert!(matches!(
            c(&["registration of x.zz is not allowed: restricted name"]),
            Some(LexiconClass::Reserved(_))
        ));
        // A negation next to a presence word, in wordings no phrase lists.
        for line in [
            "there is no record for x.zz in our database",
            "nothing matched your query",
            "x.zz finns inte registrerad",
            "het domein x.nl is niet bekend in het register",
        ] {
            assert!(matches!(c(&[line]), Some(LexiconClass::NotFound(_))), "{line}");
        }
        for line in [
            "no registrar listed",
            "no registration status listed",
            "no dnssec records",
            "registrant data not found",
            "no personal data is shown",
            "the denic whois service on port 43 never discloses any information concerning the domain",
            "requestor will not use information obtained using whois",
        ] {
            assert!(!matches!(c(&[line]), Some(LexiconClass::NotFound(_))), "{line}");
        }
        // Not about the name: no verdict.
        assert_eq!(c(&["no data protection applies to legal persons"]), None);
        assert_eq!(c(&["whois.nic.zz - available 24/7"]), None);
        // The queried name and a status word.
        assert!(matches!(c(&["x.zz - available"]), Some(LexiconClass::NotFound(_))));
        assert!(matches!(c(&["x.zz (reserved)"]), Some(LexiconClass::Reserved(_))));
        assert_eq!(reserved_status("RESERVED"), Some("reserved"));
        assert_eq!(reserved_status("Reserved (by registry)"), Some("reserved"));
        assert_eq!(reserved_status("clientTransferProhibited"), None);
        assert_eq!(reserved_status("ok"), None);
        assert!(mentions_error("invalid query or domain name not known in the registry"));
        assert!(says_not_found("Not Found") && !says_not_found("Example Org"));
        assert!(is_hypothetical("availability: use https://x.zz/check to see if a name is available"));
        assert!(!is_hypothetical("no match for \"if.zz\". if you wish to register it, contact a registrar"));
        assert!(is_aside("registrant fax: not found") && is_aside("terms of use: no data found in the text"));
        assert!(!is_aside("query_status: 220 available") && !is_aside("the queried object does not exist: x"));
    }
}
