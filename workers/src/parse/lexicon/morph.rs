//! Morphology of the states a registry reports, for wordings no phrase of the lexicon lists: a
//! negation fused onto the word it negates (Czech/Slovak/Polish/Russian `ne-`/`nie-`/`не-`,
//! Turkish `-ma-`/`-ama-` suffixes), words of absence ("brak", "nincs", "absent",
//! "отсутствует"), absence in scripts written without spaces (Chinese, Japanese, Korean),
//! status-like keys in any language with a free or reserved value, negated registrability
//! ("registration not permitted", "für die Registrierung nicht verfügbar"), pending deletion
//! ("pending release", "wird gelöscht") and quota refusals ("too many queries", "try later",
//! "access temporarily suspended").
//!
//! The word lists are written by the dsa authors from the grammar of each language (see
//! `workers/data/PROVENANCE.md`, "Morphology lists"); every list is folded like the answer's
//! lines ([`fold`]). Each rule reads one short sentence (at most 100 characters, not a
//! hypothetical or general sentence, not another field's value, no error wording) and says what
//! the registry states in it; [`super::classify`] keeps the decision rules (not-found needs no
//! conflicting class, no registration evidence).

use super::*;
use serde::Serialize;

/// Whether `word` is a Slavic negation fused onto a presence stem (the data's `fused_negation_prefixes`,
/// `fused_stems`), the whole word in the negation's script (see [`fused_rest`]).
pub(super) fn fused_negation(word: &str) -> bool {
    let m = morph_lists();
    fused_rest(word).is_some_and(|rest| m.fused_stems.iter().any(|s| rest.starts_with(s.as_str())))
}

/// What follows a fused negation prefix (`ne-`, `nie-`, `не-`) at the start of `word`, when the
/// rest of the word is written in the prefix's script. A Slavic speaker glues the negation onto a
/// word of the same language; Cyrillic "не" glued to a Latin word ("неregistrant",
/// "нёRegistrar") is no negation but mixed-script noise (hostile or broken input the fuzzer
/// found, issue 32), and reading it as one would turn a registered answer "available".
pub(super) fn fused_rest(word: &str) -> Option<&str> {
    morph_lists().fused_prefixes.iter().find_map(|p| {
        let rest = word.strip_prefix(p.as_str())?;
        let script = p.chars().next().map(letter_script)?;
        (script != Script::Other && rest.chars().filter(|c| c.is_alphabetic()).all(|c| letter_script(c) == script))
            .then_some(rest)
    })
}

/// The alphabets a fused negation is written in (the data's `fused_negation_prefixes`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Script {
    Latin,
    Cyrillic,
    Other,
}

/// The script of a letter: the Unicode Latin and Cyrillic blocks (Basic Latin, Latin-1
/// Supplement, Latin Extended-A/B and Additional; Cyrillic, its Supplement and Extended-A/B/C).
fn letter_script(c: char) -> Script {
    match c {
        'a'..='z' | 'A'..='Z' | '\u{00c0}'..='\u{024f}' | '\u{1e00}'..='\u{1eff}' => Script::Latin,
        '\u{0400}'..='\u{052f}' | '\u{1c80}'..='\u{1c8f}' | '\u{2de0}'..='\u{2dff}' | '\u{a640}'..='\u{a69f}' => {
            Script::Cyrillic
        }
        _ => Script::Other,
    }
}

/// A Turkish negative form of a `turkish_stems` verb: `Some(false)` for the plain negative
/// ("bulunmadı", "kaydedilmemiş"), `Some(true)` for the potential negative ("bulunamadı",
/// "kaydedilemez"). `prev` is the word before (`tescil`/`kayıt` + `edil-`: "tescil
/// edilmemiştir").
pub(super) fn turkish_negative(prev: Option<&str>, word: &str) -> Option<(&'static str, bool)> {
    let m = morph_lists();
    let stem_rest =
        m.turkish_stems.iter().find_map(|s| word.strip_prefix(s.as_str()).map(|r| (s.as_str(), r))).or_else(|| {
            prev.filter(|p| ["tescil", "kayit"].contains(p))
                .and_then(|_| word.strip_prefix("edil"))
                .map(|r| ("edil", r))
        });
    let (stem, rest) = stem_rest?;
    let conditional = |tail: &str| tail.starts_with("sa") || tail.starts_with("se");
    if let Some(tail) = m.turkish_cannot.iter().find_map(|s| rest.strip_prefix(s.as_str())) {
        return (!conditional(tail)).then_some((stem, true));
    }
    if let Some(tail) = m.turkish_not.iter().find_map(|s| rest.strip_prefix(s.as_str())) {
        return (!conditional(tail)).then_some((stem, false));
    }
    None
}

/// Whether `stem` is a Turkish register stem (a potential negative on it withholds the name).
pub(super) fn turkish_register_stem(stem: &str) -> bool {
    matches!(stem, "kaydedil" | "kaydol" | "tescillen" | "edil")
}

/// A word of absence (the data's `absence_stems`, `absence_words`).
pub(super) fn absence_word(word: &str) -> bool {
    let m = morph_lists();
    listed(&m.absence_words, word) || m.absence_stems.iter().any(|s| word.starts_with(s.as_str()))
}

/// The morphology's word lists: columns of the concept × language table
/// (`workers/data/whois-languages.json`, where `$columns` says what each holds and which
/// languages), merged over its rows and folded once like the answer's lines.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub(super) struct MorphLists {
    /// Words that alone say "nothing" ("Nothing matched", "nichts gefunden").
    #[serde(default)]
    pub(super) nothing: Vec<String>,
    /// Determiners negating the noun after them ("no such name", "aucun domaine").
    #[serde(rename = "negating_determiners", default)]
    pub(super) determiners: Vec<String>,
    /// The queried object as a noun (word beginnings): domain, name, object.
    #[serde(rename = "object_stems", default)]
    pub(super) objects: Vec<String>,
    /// Word beginnings naming a domain.
    #[serde(rename = "domain_stems", default)]
    pub(super) domains: Vec<String>,
    /// The queried object as a singular noun ("Die Domain ist frei").
    #[serde(default)]
    pub(super) singular_objects: Vec<String>,
    /// "Such" and its counterparts ("no such name", "nincs ilyen domain").
    #[serde(default)]
    pub(super) such: Vec<String>,
    /// Prepositions that may follow the object of a not-found statement.
    #[serde(rename = "object_prepositions", default)]
    pub(super) prepositions: Vec<String>,
    /// Negation prefixes fused onto a Slavic participle (ne-, nie-, не-).
    #[serde(rename = "fused_negation_prefixes", default)]
    pub(super) fused_prefixes: Vec<String>,
    /// Slavic presence stems after a fused negation prefix.
    #[serde(default)]
    pub(super) fused_stems: Vec<String>,
    /// Word beginnings of absence ("absent", "отсутств").
    #[serde(default)]
    pub(super) absence_stems: Vec<String>,
    /// Whole words of absence ("brak", "nincs", "yok").
    #[serde(default)]
    pub(super) absence_words: Vec<String>,
    /// Turkish verb stems of finding and registering.
    #[serde(default)]
    pub(super) turkish_stems: Vec<String>,
    /// Turkish plain negative suffix chains with a finite tense.
    #[serde(default)]
    pub(super) turkish_not: Vec<String>,
    /// Turkish potential negative suffix chains ("cannot be").
    #[serde(default)]
    pub(super) turkish_cannot: Vec<String>,
    /// Prepositions of place before a container of records.
    #[serde(rename = "container_prepositions", default)]
    pub(super) container_preps: Vec<String>,
    /// Containers of records: record, file, database, register.
    #[serde(rename = "container_stems", default)]
    pub(super) containers: Vec<String>,
    /// Possessives and demonstratives before a container ("our", "notre").
    #[serde(default)]
    pub(super) possessives: Vec<String>,
    /// Registrability negated in CJK ("登録できません", "无法注册").
    #[serde(default)]
    pub(super) script_withheld: Vec<String>,
    /// CJK words of absence ("미등록", "未注册").
    #[serde(default)]
    pub(super) script_absence_words: Vec<String>,
    /// CJK words naming another part of the record (registrant, contact…).
    #[serde(default)]
    pub(super) script_aside: Vec<String>,
    /// Key words naming the state: status, availability… in many languages.
    #[serde(default)]
    pub(super) status_keys: Vec<String>,
    /// CJK/Arabic-script status key words, matched inside the key.
    #[serde(default)]
    pub(super) script_status_keys: Vec<String>,
    /// Key words about something else than the name (service, renewal…).
    #[serde(default)]
    pub(super) not_status_keys: Vec<String>,
    /// Values affirming a yes/no key ("yes", "ja", "да").
    #[serde(default)]
    pub(super) affirmative: Vec<String>,
    /// Keys that say the name is withheld, answered yes/no.
    #[serde(default)]
    pub(super) withheld_keys: Vec<String>,
    /// Words saying a name may be registered (available, permitted…).
    #[serde(default)]
    pub(super) registrability: Vec<String>,
    /// Words of registration (the act).
    #[serde(rename = "registration_stems", default)]
    pub(super) registration: Vec<String>,
    /// Word beginnings of deletion and release.
    #[serde(default)]
    pub(super) delete_stems: Vec<String>,
    /// Words that put the deletion ahead ("pending", "wird", "待").
    #[serde(default)]
    pub(super) waiting: Vec<String>,
    /// "Too many" in the registries' languages.
    #[serde(default)]
    pub(super) too_many: Vec<String>,
    /// Word beginnings naming queries, requests, lookups.
    #[serde(rename = "query_stems", default)]
    pub(super) queries: Vec<String>,
    /// Word beginnings saying a bound was passed.
    #[serde(rename = "exceeded_stems", default)]
    pub(super) exceeded: Vec<String>,
    /// Word beginnings saying a bound was reached (only with a limit word).
    #[serde(rename = "reached_stems", default)]
    pub(super) reached: Vec<String>,
    /// Word beginnings of a limit or quota.
    #[serde(rename = "limit_stems", default)]
    pub(super) limits: Vec<String>,
    /// Verbs asking to try again.
    #[serde(rename = "retry_stems", default)]
    pub(super) retry: Vec<String>,
    /// Words putting the new try later.
    #[serde(rename = "later_stems", default)]
    pub(super) later: Vec<String>,
    /// "Temporarily".
    #[serde(default)]
    pub(super) temporarily: Vec<String>,
    /// Word beginnings of a refusal of service.
    #[serde(rename = "refused_stems", default)]
    pub(super) refused: Vec<String>,
    /// Verbs by which a registry says what it holds, shows or returns ("contains", "enthält").
    #[serde(default)]
    pub(super) holding_stems: Vec<String>,
    /// Words by which the registry names itself as a sentence's subject ("we", "wir").
    #[serde(default)]
    pub(super) speakers: Vec<String>,
    /// Verbs of consequence after a quota wording ("will lead to", "führt zu"): a policy.
    #[serde(default)]
    pub(super) consequence_stems: Vec<String>,
    /// Words that, as a whole one-line answer, say the name is withheld ("Restricted name.").
    #[serde(default)]
    pub(super) terse_reserved: Vec<String>,
    /// Chinese, Japanese and Korean absence patterns (see [`script_absence`]).
    #[serde(default)]
    script_patterns: Vec<ScriptPattern>,
}

impl MorphLists {
    /// Every word list, in one order (the patterns aside).
    fn lists_mut(&mut self) -> [&mut Vec<String>; 42] {
        [
            &mut self.nothing,
            &mut self.determiners,
            &mut self.objects,
            &mut self.domains,
            &mut self.singular_objects,
            &mut self.such,
            &mut self.prepositions,
            &mut self.fused_prefixes,
            &mut self.fused_stems,
            &mut self.absence_stems,
            &mut self.absence_words,
            &mut self.turkish_stems,
            &mut self.turkish_not,
            &mut self.turkish_cannot,
            &mut self.container_preps,
            &mut self.containers,
            &mut self.possessives,
            &mut self.script_withheld,
            &mut self.script_absence_words,
            &mut self.script_aside,
            &mut self.status_keys,
            &mut self.script_status_keys,
            &mut self.not_status_keys,
            &mut self.affirmative,
            &mut self.withheld_keys,
            &mut self.registrability,
            &mut self.registration,
            &mut self.delete_stems,
            &mut self.waiting,
            &mut self.too_many,
            &mut self.queries,
            &mut self.exceeded,
            &mut self.reached,
            &mut self.limits,
            &mut self.retry,
            &mut self.later,
            &mut self.temporarily,
            &mut self.refused,
            &mut self.holding_stems,
            &mut self.speakers,
            &mut self.consequence_stems,
            &mut self.terse_reserved,
        ]
    }

    /// Appends another row's lists (and patterns) to these.
    pub(super) fn append(&mut self, other: &MorphLists) {
        let mut theirs = other.clone();
        for (mine, more) in self.lists_mut().into_iter().zip(theirs.lists_mut()) {
            mine.append(more);
        }
        self.script_patterns.append(&mut theirs.script_patterns);
    }
}

/// One absence pattern of a script written without spaces: a `first` word, then within `gap`
/// characters a `then` word, with none of `not_between` in the gap (ability, registrant,
/// contact… words that make it another statement).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
struct ScriptPattern {
    first: Vec<String>,
    then: Vec<String>,
    gap: usize,
    not_between: Vec<String>,
}

/// Whether the table's morphology columns are filled (checked by a test).
pub(super) fn morphology_is_valid() -> bool {
    let m = super::languages::morphology();
    !m.nothing.is_empty() && !m.refused.is_empty() && m.script_patterns.len() == 3
}

/// The morphology's lists, merged over the rows of the concept × language table and folded
/// (empty when the table does not parse, which a test rules out: every rule then finds nothing,
/// the safe direction).
pub(super) fn morph_lists() -> &'static MorphLists {
    static LISTS: OnceLock<MorphLists> = OnceLock::new();
    LISTS.get_or_init(|| {
        let mut m = super::languages::morphology();
        for list in m.lists_mut() {
            for w in list.iter_mut() {
                *w = fold(w);
            }
        }
        // The language table's nouns for the queried object.
        for w in super::languages::word_column(|l| &l.domain_words) {
            if !m.singular_objects.contains(&w) {
                m.singular_objects.push(w);
            }
        }
        for p in &mut m.script_patterns {
            for w in p.first.iter_mut().chain(p.then.iter_mut()).chain(p.not_between.iter_mut()) {
                *w = fold(w);
            }
        }
        m
    })
}

/// Whether `word` starts with one of `stems`.
pub(super) fn starts_any(word: &str, stems: &[String]) -> bool {
    stems.iter().any(|s| word.starts_with(s.as_str()))
}

/// The sentences of a line that may state something about the name: the line at most 100
/// characters, not another field's value, not hypothetical, without an error wording; each
/// sentence not hypothetical and without a word about another part of the record. Yields each
/// sentence with its words.
pub(super) fn statement_sentences(line: &str) -> Vec<(&str, Vec<&str>)> {
    if line.chars().count() > 100 || is_aside(line) || is_hypothetical(line) {
        return Vec::new();
    }
    if phrases().error.any(line, Reading::Plain) {
        return Vec::new();
    }
    let lists = word_lists();
    sentences(line)
        .filter_map(|s| {
            let ws: Vec<&str> = words(s).collect();
            (!ws.iter().any(|w| listed(&lists.aside, w)) && !hypothetical(s)).then_some((s, ws))
        })
        .collect()
}

/// The sentences of a line (split where [`ends_sentence`] says).
pub(super) fn sentences(line: &str) -> impl Iterator<Item = &str> {
    let mut cuts: Vec<usize> =
        line.char_indices().filter(|&(i, c)| ends_sentence(line, i, c)).map(|(i, c)| i + c.len_utf8()).collect();
    cuts.push(line.len());
    let mut from = 0;
    cuts.into_iter().map(move |to| {
        // Both cuts are character boundaries of `line` (from `char_indices`).
        let s = line.get(from..to).unwrap_or_default();
        from = to;
        s
    })
}

/// "Not on file", "not in the database", "nicht in der Datenbank": the negation at `i` followed
/// (articles and auxiliaries skipped) by a preposition of place and a container of records.
pub(super) fn negated_container<'a>(ws: &[&'a str], i: usize) -> Option<&'a str> {
    let lists = word_lists();
    let m = morph_lists();
    let mut j = i + 1;
    while j < ws.len() && listed(&lists.glue, ws[j]) && !listed(&m.container_preps, ws[j]) {
        j += 1;
    }
    if !ws.get(j).is_some_and(|w| listed(&m.container_preps, w)) {
        return None;
    }
    j += 1;
    // Only articles and possessives before the noun ("in *our* database", "in *the* registry"):
    // a named database ("NOT in the UAEPP database", .ua's note over a record it fetched from
    // another server) is one store among others.
    while j < ws.len() && (listed(&lists.glue, ws[j]) || listed(&m.possessives, ws[j])) {
        j += 1;
    }
    let container = *ws.get(j).filter(|w| starts_any(w, &m.containers))?;
    // "The object shown below is not in …": a record is shown, so it exists somewhere.
    (!ws.iter().any(|w| matches!(*w, "below" | "above" | "shown" | "following"))).then_some(container)
}

/// A free name in a sentence: the sentence ends in a free status word right after the name, the
/// object or a copula ("qwzv.рф свободно", "Die Domain ist frei", "x.zz is vacant"), or a free
/// word is followed by a registration word ("is free to register", "libre para registrar",
/// "frei zur Registrierung", "свободен для регистрации"). Not negated, not qualified ("only"),
/// not about a service, a renewal or a transfer.
pub(super) fn free_statement(line: &str) -> Option<String> {
    let lists = word_lists();
    let m = morph_lists();
    for (sentence, ws) in statement_sentences(line) {
        if !about_name(sentence, &ws)
            || ws.iter().any(|w| listed(&m.not_status_keys, w) || listed(&lists.qualifiers, w))
        {
            continue;
        }
        let free_word = |w: &str| free_status(w).is_some_and(|f| f == w);
        for (i, w) in ws.iter().enumerate() {
            if !free_word(w) {
                continue;
            }
            let negated = ws[i.saturating_sub(3)..i].iter().any(|x| listed(&lists.negations, x))
                || ws.iter().skip(i + 1).take(2).any(|x| listed(&lists.postposed, x));
            if negated {
                continue;
            }
            // Said of the name itself: the word before (copulas skipped) is the queried name or
            // a singular "domain" ("Domain names are available for registration through
            // registrars" is a notice about the service).
            let Some(before) = ws[..i].iter().rev().find(|x| !listed(&lists.glue, x)) else { continue };
            let named = (before.contains('.')
                && !before.starts_with('.')
                && !["whois.", "www.", "rdap.", "http"].iter().any(|p| before.starts_with(p)))
                || listed(&m.singular_objects, before);
            if !named {
                continue;
            }
            // Said last in the sentence, or followed only by a copula ("آزاد است", "उपलब्ध है").
            if ws[i + 1..].iter().all(|x| listed(&lists.glue, x)) {
                return Some(format!("{before} … {w}"));
            }
            if let Some(r) =
                ws.iter().skip(i + 1).take(3).find(|x| registration_verb(x) || starts_any(x, &m.registration))
                && !["registrar", "registrant", "registry"].iter().any(|n| r.starts_with(n))
            {
                return Some(format!("{w} … {r}"));
            }
        }
    }
    None
}

// ----- scripts without spaces -----------------------------------------------------------------

/// A withheld name in Chinese, Japanese or Korean (the data's `script_withheld`).
pub(super) fn script_withheld(line: &str) -> Option<&'static str> {
    if line.chars().count() > 100 || is_aside(line) || is_hypothetical(line) {
        return None;
    }
    morph_lists().script_withheld.iter().map(String::as_str).find(|w| line.contains(w))
}

/// Whether text names another part of the record in a script without spaces (the data's `script_aside`).
pub(super) fn script_aside(text: &str) -> bool {
    morph_lists().script_aside.iter().any(|a| text.contains(a.as_str()))
}

/// An absence statement in Chinese, Japanese or Korean (the data's `script_patterns`). Returns the
/// two parts matched.
pub(super) fn script_absence(line: &str) -> Option<String> {
    if line.chars().count() > 100 || is_aside(line) || is_hypothetical(line) || script_aside(line) {
        return None;
    }
    if phrases().error.any(line, Reading::Plain) {
        return None;
    }
    let m = morph_lists();
    if let Some(w) = m.script_absence_words.iter().find(|w| line.contains(w.as_str())) {
        return Some(w.clone());
    }
    for p in &m.script_patterns {
        for first in &p.first {
            for (at, _) in line.match_indices(first.as_str()) {
                let after = line.get(at + first.len()..).unwrap_or_default();
                let window: String = after.chars().take(p.gap + 6).collect();
                for then in &p.then {
                    if let Some((gap, from_then)) =
                        window.find(then.as_str()).and_then(|at| window.split_at_checked(at))
                    {
                        let ok = gap.chars().count() <= p.gap
                            && !p.not_between.iter().any(|n| gap.contains(n.as_str()))
                            && !(then == "ない" && from_then.starts_with("ないで"));
                        if ok {
                            return Some(format!("{first} … {then}"));
                        }
                    }
                }
            }
        }
    }
    None
}

// ----- status-like keys ----------------------------------------------------------------------

/// A `key: value` line whose key names the state (the data's `status_keys`) and whose whole value is
/// a status word: `Some((true, word))` free, `Some((false, word))` withheld. A yes/no key that
/// says withheld ("Reserved: yes") is withheld too.
pub(super) fn status_key_value(line: &str) -> Option<(bool, &'static str)> {
    let key = line_key(line)?;
    let value = line.split_once(':')?.1.trim().trim_end_matches(['.', '!']);
    let m = morph_lists();
    let key_words: Vec<&str> = key.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let aside = &word_lists().aside;
    if key_words.iter().any(|w| listed(&m.not_status_keys, w) || (listed(aside, w) && !listed(&m.status_keys, w))) {
        return None;
    }
    if key_words.len() <= 2 && key_words.iter().any(|w| listed(&m.withheld_keys, w)) && listed(&m.affirmative, value) {
        return Some((false, "reserved: yes"));
    }
    // "Available: yes", "available=1" (a query string taken apart): a free word as the key,
    // answered yes.
    if key_words.len() <= 2
        && key_words.iter().any(|w| free_status(w).is_some_and(|f| f == *w))
        && listed(&m.affirmative, value)
    {
        return Some((true, "available: yes"));
    }
    let statusish = key_words.iter().any(|w| listed(&m.status_keys, w))
        || (key_words.len() >= 2 && m.status_keys.iter().any(|k| k.contains(' ') && key.contains(k.as_str())))
        || m.script_status_keys.iter().any(|k| key.contains(k.as_str()));
    if !statusish {
        return None;
    }
    if let Some(w) = free_status(value).filter(|w| fold(value) == **w) {
        return Some((true, w));
    }
    reserved_status(value).map(|w| (false, w))
}

// ----- withheld: negated registrability ------------------------------------------------------

/// A withheld name in words no phrase lists: a negation (or a negated ability modal: "cannot",
/// "may not", "kann nicht", "ne peut pas") bearing on a registrability word, in a short sentence
/// that speaks of registration ("Registration not permitted", "Diese Domain ist für die
/// Registrierung nicht verfügbar", "Домен недоступен для регистрации", "no se permite su
/// registro"); the Turkish potential negative of a register verb ("kaydedilemez").
pub(super) fn withheld(line: &str) -> Option<String> {
    let lists = word_lists();
    let m = morph_lists();
    for (_, ws) in statement_sentences(line) {
        // Said of names in general ("Names in the redemption period cannot be registered by
        // others"): a notice about the service.
        if general_plural(&ws.join(" "), "") {
            continue;
        }
        // The act of registration, not the registrar, registrant or registry ("the registry is
        // not available" is no withheld name).
        let registrationish = |w: &str| {
            (starts_any(w, &m.registration) || registration_verb(w))
                && !["registrar", "registrant", "registry", "registries", "registrador", "registrante"]
                    .iter()
                    .any(|n| w.starts_with(n))
        };
        for (i, w) in ws.iter().enumerate() {
            if let Some((stem, true)) = turkish_negative(i.checked_sub(1).map(|j| ws[j]), w)
                && turkish_register_stem(stem)
            {
                return Some(format!("{w} (cannot be registered)"));
            }
            // "недоступен", "nedostupná", "niedostępna": a fused negation on registrability.
            let fused =
                fused_rest(w).is_some_and(|rest| starts_any(rest, &m.registrability)) || w.starts_with("unavailab");
            if fused && ws.iter().any(|x| registrationish(x)) {
                return Some(format!("{w} … registration"));
            }
            // "cannot", "can't": a negated ability modal in one word.
            let one_word_modal = matches!(*w, "cannot" | "can't" | "couldn't");
            if !listed(&lists.negations, w) && !one_word_modal {
                continue;
            }
            // The negation bears on the first word after it that is not an article or auxiliary
            // ("not permitted", "nicht verfügbar", "no se permite", "is not possible").
            let Some(after) = ws.iter().skip(i + 1).take(3).find(|x| !listed(&lists.glue, x)) else { continue };
            if starts_any(after, &m.registrability) && ws.iter().any(|x| registrationish(x)) {
                return Some(format!("{w} … {after}"));
            }
            // "could not be registered", "kann nicht registriert werden", "cannot be allocated".
            let modal =
                one_word_modal || (i >= 1 && negated_modal(&ws, i - 1)) || (i >= 2 && negated_modal(&ws, i - 2));
            if modal && registration_verb(after) {
                return Some(format!("{w} … {after}"));
            }
        }
    }
    None
}

/// A registration verb or participle ("registered", "registriert", "enregistré",
/// "zarejestrowana"), not the nouns of the registrar / registrant / registry.
fn registration_verb(w: &str) -> bool {
    let lists = word_lists();
    (w.starts_with("regist") || w.starts_with("enregistr") || w.starts_with("zarejestr") || w.starts_with("зарегистр"))
        && !lists.not_presence.iter().any(|n| w.starts_with(n.as_str()))
}

// ----- pending deletion ----------------------------------------------------------------------

/// A pending deletion in words no phrase lists: a deletion word within three words after a
/// waiting word, or right before "pending" ("deletion pending"), in a short statement; or a
/// CJK deletion word next to a waiting one ("削除予定", "待删除", "삭제 대기").
pub(super) fn pending(line: &str) -> Option<String> {
    let m = morph_lists();
    for (s, ws) in statement_sentences(line) {
        // "Domains *are* deleted 30 days after expiry": a policy about names in general.
        if ws.iter().any(|w| listed(&word_lists().plural_subjects, w)) {
            continue;
        }
        for (i, w) in ws.iter().enumerate() {
            if !starts_any(w, &m.delete_stems) || w.starts_with("dropdown") {
                continue;
            }
            let wait = ws[i.saturating_sub(3)..i].iter().find(|x| listed(&m.waiting, x));
            if let Some(x) = wait {
                return Some(format!("{x} … {w}"));
            }
            // "to be released", "will be deleted".
            if i >= 2 && ws[i - 1] == "be" && matches!(ws[i - 2], "to" | "will" | "shall") {
                return Some(format!("{} be {w}", ws[i - 2]));
            }
            if ws.get(i + 1).is_some_and(|x| *x == "pending") {
                return Some(format!("{w} pending"));
            }
        }
        if !s.is_ascii() {
            for d in m.delete_stems.iter().filter(|d| !d.is_ascii()) {
                if let Some((head, tail)) = s.find(d).and_then(|at| s.split_at_checked(at)) {
                    let mut near: String = head.chars().rev().take(6).collect::<Vec<_>>().into_iter().rev().collect();
                    near.extend(tail.chars().take(10));
                    if let Some(x) = m.waiting.iter().filter(|x| !x.is_ascii()).find(|x| near.contains(x.as_str())) {
                        return Some(format!("{x} … {d}"));
                    }
                }
            }
        }
    }
    None
}

/// The first occurrence of `t` in `s` at word boundaries (for scripts without spaces, anywhere).
fn find_word(s: &str, t: &str) -> Option<usize> {
    s.match_indices(t)
        .map(|(at, _)| at)
        .find(|&at| !t.is_ascii() || s.get(..at).and_then(|h| h.chars().next_back()).is_none_or(|c| !is_word_char(c)))
}

// ----- quota refusals ------------------------------------------------------------------------

/// A quota refusal in words no phrase lists, in one short sentence that is not hypothetical:
/// "too many" with a query word after it ("Sie haben zu viele Abfragen gestellt", "عدد كبير جدا
/// من الاستعلامات"); a passed bound with a query or limit word ("Limit of 100 queries per day
/// reached", "Se ha excedido el límite de consultas"; "reached" only with a limit word); access
/// temporarily suspended or blocked, in a sentence that does not speak of a domain ("Access to WHOIS temporarily suspended due to abuse").
pub(super) fn refusal(line: &str) -> Option<String> {
    if line.chars().count() > 120 || is_hypothetical(line) {
        return None;
    }
    let m = morph_lists();
    for s in sentences(line) {
        if hypothetical(s) {
            continue;
        }
        let ws: Vec<&str> = words(s).collect();
        // "Excessive querying will lead to a temporary block": the service's policy.
        if ws.iter().any(|w| starts_any(w, &m.consequence_stems)) {
            continue;
        }
        let query = |w: &&str| starts_any(w, &m.queries);
        for t in &m.too_many {
            if let Some((head, tail)) = find_word(s, t).and_then(|at| s.split_at_checked(at)) {
                let after: Vec<&str> = words(tail.get(t.len()..).unwrap_or_default()).take(5).collect();
                let cjk_after: String = tail.chars().take(12).collect();
                let cjk_before: String = head.chars().rev().take(12).collect::<Vec<_>>().into_iter().rev().collect();
                if after.iter().any(query)
                    || (!t.is_ascii()
                        && m.queries.iter().any(|q| {
                            !q.is_ascii() && (cjk_after.contains(q.as_str()) || cjk_before.contains(q.as_str()))
                        }))
                {
                    return Some(format!("{t} … queries"));
                }
            }
        }
        let found = |list: &[String]| {
            ws.iter()
                .find(|w| starts_any(w, list))
                .map(|w| (*w).to_owned())
                .or_else(|| list.iter().find(|p| !p.is_ascii() && s.contains(p.as_str())).cloned())
        };
        let limit = found(&m.limits);
        let what = limit.clone().or_else(|| found(&m.queries));
        if let (Some(p), Some(w)) = (found(&m.exceeded), what) {
            return Some(format!("{w} … {p}"));
        }
        if let (Some(p), Some(w)) = (found(&m.reached), limit) {
            return Some(format!("{w} … {p}"));
        }
        // "Please try later", "versuchen Sie es später", "لطفا دقایقی دیگر تلاش کنید".
        let has = |list: &[String]| {
            ws.iter().any(|w| starts_any(w, list))
                || list.iter().any(|p| (!p.is_ascii() || p.contains(' ')) && s.contains(p.as_str()))
        };
        if has(&m.retry) && has(&m.later) {
            return Some("try … later".to_owned());
        }
        let temp = ws.iter().position(|w| starts_any(w, &m.temporarily));
        if let Some(t) = temp
            && let Some(r) = ws[t.saturating_sub(3)..(t + 4).min(ws.len())].iter().find(|w| starts_any(w, &m.refused))
            && !ws.iter().any(|w| starts_any(w, &m.domains) || (w.contains('.') && !w.starts_with('.')))
        {
            return Some(format!("{} … {r}", ws[t]));
        }
    }
    None
}
