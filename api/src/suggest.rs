//! Name suggestions for `GET /v1/domains/suggest` (spec §2.6, §4.5): from a keyword to a ranked,
//! de-duplicated list of registrable domains under supported TLDs. Pure CPU work, no upstream.
//!
//! # Keyword and base
//! The keyword is trimmed and must then be 2–63 characters of letters (any script), digits,
//! spaces and hyphens ([`Keyword::parse`]). The **base** is the keyword in lower case with the
//! spaces and hyphens removed (`Best Pizza-Place` → `bestpizzaplace`, `Bücher` → `bücher`); its
//! A-label form must fit one DNS label (63 octets).
//!
//! # Words
//! Words separated by spaces or hyphens in the keyword are taken as given. A single run-together
//! ASCII keyword is segmented with a unigram model (instant-segment over the shipped
//! `data/words/en-unigrams.tsv`, Google Books counts filtered by SCOWL, CC-BY 3.0): the
//! segmentation is used when it has at least two parts and every part is a known word or a
//! number (`bestpizzaplace` → best pizza place; `zillow` stays one word).
//!
//! # Variants
//! * `exact`: the base under each requested TLD;
//! * `af_cctld`: the base under the requested .af zones (`.af`, `.com.af`, `.org.af`, `.net.af`,
//!   in that order), placed early so the .af audience sees its own zone; never a zone the request
//!   did not ask for;
//! * `split`: the words hyphenated (`best-pizza-place`) and each run of adjacent words shorter than
//!   the whole (`bestpizza`, `pizzaplace`), when there are at least two words;
//! * `prefix`: [`PREFIXES`] + base; `suffix`: base + [`SUFFIXES`] (ASCII bases only: an English
//!   affix on another script would make a mixed-script label registries refuse).
//!
//! # Ranking (deterministic)
//! 1. `exact` first, in the order of the requested TLDs, at most ⌈0.2 × limit⌉ of them;
//! 2. then `af_cctld` (4 at limit ≥ 15, 2 at limit ≥ 10, else 1), skipping zones already given;
//! 3. then the other names, picked one at a time (once the slots left are no more than the
//!    requested TLDs not used yet, only among those, so every requested TLD is used when the limit
//!    allows) by the highest
//!    `name score − 0.5 × TLD rank − 1.0 × (times the name was picked) − 0.6 × (times the TLD was
//!    picked) − 0.5 × (times the variant was picked)`, ties broken by the domain's A-label. The
//!    name score is the mean log10 frequency of the name's words (unknown word −9, number or
//!    non-English word −7; for a prefix or suffix, the keyword's words), + 0.3 for a `split`,
//!    − 0.3 − 0.15 per position for an affix in its list, − 0.06 per character and − 0.4 per
//!    hyphen. The penalties spread the list across names,
//!    TLDs and variants instead of one name under twenty TLDs.
//!
//! Every suggestion is run through the domain normaliser ([`DomainName::parse`]) and must come
//! back unchanged as a registrable domain under its TLD; anything else is dropped, so an invalid
//! label (`--` in positions 3–4, over 63 octets, a bidi violation) is never emitted.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use common::catalogue::{Catalogue, RegistrationPolicy};
use common::domain::DomainName;
use instant_segment::{Search, Segmenter};
use serde::Serialize;
use utoipa::ToSchema;

/// The unigram table shipped with the binary: `word<TAB>count`, 92,638 English words (see
/// `api/data/PROVENANCE.md`).
const UNIGRAMS: &str = include_str!("../data/words/en-unigrams.tsv");

/// Default TLDs (spec §4.5).
pub const DEFAULT_TLDS: &[&str] = &["com", "net", "org", "io", "co", "ai", "dev", "app", "af", "com.af"];

/// The .af zones of the `af_cctld` variant, in order.
pub const AF_ZONES: &[&str] = &["af", "com.af", "org.af", "net.af"];

/// Words put before the base for `prefix` suggestions, most preferred first.
pub const PREFIXES: &[&str] = &["get", "my", "try", "the", "go", "use", "join", "hello"];

/// Words put after the base for `suffix` suggestions, most preferred first.
pub const SUFFIXES: &[&str] = &["app", "hq", "hub", "online", "shop", "labs", "now", "site", "pro", "zone"];

/// Bounds of `limit` (spec §4.5).
pub const LIMIT_RANGE: std::ops::RangeInclusive<usize> = 5..=20;

/// Score of a word the model does not know (log10 of a relative frequency).
const UNKNOWN_WORD: f64 = -9.0;
/// Score of a number or of a word outside the English model.
const NEUTRAL_WORD: f64 = -7.0;

/// How a suggestion was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Variant {
    /// The base under a requested TLD.
    Exact,
    /// A prefix word + the base.
    Prefix,
    /// The base + a suffix word.
    Suffix,
    /// The keyword's words hyphenated, or a run of adjacent words (word segmentation).
    Split,
    /// The base under an .af zone.
    AfCctld,
}

/// The English word model: segmentation and word frequencies.
pub struct Words {
    segmenter: Segmenter,
    /// log10 of each word's relative frequency.
    log_freq: HashMap<Box<str>, f64>,
}

impl std::fmt::Debug for Words {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Words").field("words", &self.log_freq.len()).finish_non_exhaustive()
    }
}

static WORDS: LazyLock<Words> = LazyLock::new(|| Words::from_tsv(UNIGRAMS));

impl Words {
    /// The shipped model, loaded on first use (about 0.1 s; [`Words::warm_up`] at start-up).
    pub fn shipped() -> &'static Words {
        &WORDS
    }

    /// Loads the shipped model now, so the first request does not pay for it.
    pub fn warm_up() {
        LazyLock::force(&WORDS);
    }

    /// A model from `word<TAB>count` lines (malformed lines are skipped).
    pub fn from_tsv(text: &str) -> Self {
        let counts: Vec<(&str, f64)> = text
            .lines()
            .filter_map(|line| {
                let (word, count) = line.split_once('\t')?;
                let count: f64 = count.trim().parse().ok()?;
                (!word.is_empty() && count > 0.0).then_some((word, count))
            })
            .collect();
        let total: f64 = counts.iter().map(|(_, c)| c).sum();
        let log_freq = counts.iter().map(|(w, c)| (Box::from(*w), (c / total).log10())).collect();
        let segmenter = Segmenter::new(counts.iter().map(|(w, c)| ((*w).into(), *c)), std::iter::empty());
        Self { segmenter, log_freq }
    }

    /// log10 relative frequency of a word; numbers and non-ASCII words score neutral.
    pub fn score(&self, word: &str) -> f64 {
        if let Some(f) = self.log_freq.get(word) {
            *f
        } else if word.bytes().all(|b| b.is_ascii_digit()) || !word.is_ascii() {
            NEUTRAL_WORD
        } else {
            UNKNOWN_WORD
        }
    }

    fn known(&self, word: &str) -> bool {
        self.log_freq.contains_key(word) || word.bytes().all(|b| b.is_ascii_digit())
    }

    /// Splits a run-together lower-case ASCII word into known words (`bestpizzaplace` →
    /// `best pizza place`); `None` when the model finds no split into known words.
    pub fn segment(&self, word: &str) -> Option<Vec<String>> {
        let mut search = Search::default();
        let parts: Vec<String> = self.segmenter.segment(word, &mut search).ok()?.map(str::to_owned).collect();
        (parts.len() >= 2 && parts.iter().all(|p| self.known(p))).then_some(parts)
    }
}

/// A validated keyword (spec §4.5): what was asked, the base and its words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyword {
    /// The keyword as requested, trimmed.
    pub given: String,
    /// Lower case, spaces and hyphens removed (U-label form).
    pub base: String,
    /// The words of the keyword (as given, or from segmentation), lower case.
    pub words: Vec<String>,
}

impl Keyword {
    /// Validates a keyword and derives its base and words.
    ///
    /// # Errors
    /// A message for the client (400): length outside 2–63 characters, a character other than a
    /// letter, digit, space or hyphen, or a base that is not a valid DNS label.
    pub fn parse(input: &str, words: &Words) -> Result<Self, String> {
        let given = input.trim();
        let len = given.chars().count();
        if !(2..=63).contains(&len) {
            return Err(format!("keyword must be 2 to 63 characters after trimming, not {len}."));
        }
        if let Some(bad) = given.chars().find(|c| !(c.is_alphabetic() || c.is_numeric() || *c == ' ' || *c == '-')) {
            return Err(format!("keyword may contain letters, digits, spaces and hyphens only, not {bad:?}."));
        }
        let lower = given.to_lowercase();
        let tokens: Vec<String> = lower.split([' ', '-']).filter(|t| !t.is_empty()).map(str::to_owned).collect();
        let base: String = tokens.concat();
        let ascii = label_to_ascii(&base)
            .ok_or_else(|| format!("keyword {given:?} does not make a valid domain label ({base:?})."))?;
        if ascii.len() > 63 {
            return Err(format!("keyword {given:?} makes a label longer than 63 octets ({ascii})."));
        }
        let words = match tokens.as_slice() {
            [one] if one.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) => {
                words.segment(one).unwrap_or_else(|| vec![one.clone()])
            }
            _ => tokens,
        };
        Ok(Self { given: given.to_owned(), base, words })
    }
}

/// One label's A-label form per UTS 46 (`None` when it is not a valid label).
fn label_to_ascii(label: &str) -> Option<String> {
    let ascii = idna::domain_to_ascii_strict(label).ok()?;
    (!ascii.is_empty() && !ascii.contains('.')).then_some(ascii)
}

/// A registry suffix accepted for suggestions: in the catalogue, sold, not restricted.
///
/// # Errors
/// A message naming the TLD (400): malformed, not a registry suffix, unsupported or restricted.
pub fn parse_tld(input: &str, catalogue: &Catalogue) -> Result<String, String> {
    let trimmed = input.trim();
    let Some(bare) = trimmed.strip_prefix('.') else {
        return Err(format!("TLD {trimmed:?} must start with a dot (e.g. .com)."));
    };
    let probe = DomainName::parse(&format!("dsa-probe.{bare}"), catalogue)
        .map_err(|e| format!("TLD {trimmed:?} is not supported: {e}."))?;
    if probe.sld() != "dsa-probe" {
        return Err(format!("{trimmed:?} is not a registry suffix (it has a name under {}).", probe.tld()));
    }
    let suffix = probe.suffix().to_owned();
    let resolution = catalogue.resolve(&suffix).map_err(|why| format!("TLD .{suffix} is not supported: {why}."))?;
    let entry = resolution.entry();
    if resolution.is_restricted() {
        let why = match &entry.policy {
            RegistrationPolicy::Restricted { reason } => reason.clone(),
            _ => "eligible registrants only".into(),
        };
        return Err(format!("TLD .{suffix} is restricted ({why}); no suggestions are made under it."));
    }
    if !entry.is_supported() {
        return Err(format!("TLD .{suffix} is not supported: {}.", entry.reason));
    }
    Ok(suffix)
}

/// One suggestion.
#[derive(Debug, Clone, PartialEq)]
pub struct Suggestion {
    /// The normalised domain.
    pub domain: DomainName,
    /// How it was made.
    pub variant: Variant,
    /// The ranking score it was picked with (higher is better; `exact` and `af_cctld` are placed
    /// before the score applies).
    pub score: f64,
}

/// The output of [`suggest`].
#[derive(Debug, Clone)]
pub struct Suggestions {
    /// The requested TLDs that suggestions use (registry suffixes without the dot), in the order of
    /// the request.
    pub tlds_used: Vec<String>,
    /// The suggestions in rank order.
    pub items: Vec<Suggestion>,
}

struct Name {
    sld: String,
    variant: Variant,
    score: f64,
}

/// Generates up to `limit` suggestions for `keyword` under `tlds` (registry suffixes without the
/// dot, already validated with [`parse_tld`]). See the module documentation for the rules.
pub fn suggest(words: &Words, catalogue: &Catalogue, keyword: &Keyword, tlds: &[String], limit: usize) -> Suggestions {
    let mut picked: Vec<Suggestion> = Vec::with_capacity(limit);
    let mut seen: HashSet<String> = HashSet::new();
    let mut try_pick = |sld: &str, suffix: &str, variant: Variant, score: f64, picked: &mut Vec<Suggestion>| -> bool {
        let text = format!("{sld}.{suffix}");
        let Ok(domain) = DomainName::parse(&text, catalogue) else { return false };
        if domain.suffix() != suffix || domain.was_subdomain() || !seen.insert(domain.as_str().to_owned()) {
            return false;
        }
        let ascii_sld = domain.sld();
        if ascii_sld.len() > 63 || (ascii_sld.get(2..4) == Some("--") && !ascii_sld.starts_with("xn--")) {
            return false;
        }
        picked.push(Suggestion { domain, variant, score });
        true
    };
    let base = keyword.base.as_str();
    let base_score = mean_score(words, &keyword.words) - 0.06 * base.chars().count() as f64;

    // 1. exact
    let exact_quota = limit.div_ceil(5);
    let mut exact = 0;
    for suffix in tlds {
        if exact >= exact_quota || picked.len() >= limit {
            break;
        }
        if try_pick(base, suffix, Variant::Exact, base_score, &mut picked) {
            exact += 1;
        }
    }
    // 2. af_cctld
    let af_quota = if limit >= 15 {
        4
    } else if limit >= 10 {
        2
    } else {
        1
    };
    let mut af = 0;
    let requested_af = AF_ZONES.iter().filter(|zone| tlds.iter().any(|t| t == *zone));
    for (rank, suffix) in requested_af.enumerate() {
        if af >= af_quota || picked.len() >= limit {
            break;
        }
        if picked.iter().any(|s| s.domain.suffix() == *suffix) {
            continue;
        }
        if try_pick(base, suffix, Variant::AfCctld, base_score - 0.5 * rank as f64, &mut picked) {
            af += 1;
        }
    }
    // 3. the other names, greedily spread across names, TLDs and variants.
    let mut names = other_names(words, keyword);
    // The exact name stays a candidate under the TLDs its quota did not reach.
    names.insert(0, Name { sld: base.to_owned(), variant: Variant::Exact, score: base_score });
    let mut remaining: Vec<(usize, usize)> =
        (0..names.len()).flat_map(|n| (0..tlds.len()).map(move |t| (n, t))).collect();
    let mut name_uses: HashMap<&str, usize> = HashMap::new();
    let mut tld_uses: HashMap<&str, usize> = HashMap::new();
    let mut variant_uses: HashMap<Variant, usize> = HashMap::new();
    while picked.len() < limit && !remaining.is_empty() {
        // Reserve the last slots for requested TLDs no suggestion uses yet.
        let unused: Vec<usize> = (0..tlds.len())
            .filter(|&t| !picked.iter().any(|s| s.domain.suffix() == tlds[t]))
            .filter(|&t| remaining.iter().any(|&(_, rt)| rt == t))
            .collect();
        let reserve = !unused.is_empty() && limit - picked.len() <= unused.len();
        let effective = |&(n, t): &(usize, usize)| -> f64 {
            let name: &Name = &names[n];
            name.score
                - 0.5 * t as f64
                - 1.0 * *name_uses.get(name.sld.as_str()).unwrap_or(&0) as f64
                - 0.6 * *tld_uses.get(tlds[t].as_str()).unwrap_or(&0) as f64
                - 0.5 * *variant_uses.get(&name.variant).unwrap_or(&0) as f64
        };
        let mut best = 0;
        let mut best_score = f64::NEG_INFINITY;
        let mut best_key = String::new();
        for (i, cand) in remaining.iter().enumerate() {
            if reserve && !unused.contains(&cand.1) {
                continue;
            }
            let s = effective(cand);
            let key = || format!("{}.{}", names[cand.0].sld, tlds[cand.1]);
            if s > best_score || (s == best_score && key() < best_key) {
                best = i;
                best_score = s;
                best_key = key();
            }
        }
        let (n, t) = remaining.swap_remove(best);
        let name = &names[n];
        if try_pick(&name.sld, &tlds[t], name.variant, best_score, &mut picked) {
            *name_uses.entry(name.sld.as_str()).or_default() += 1;
            *tld_uses.entry(tlds[t].as_str()).or_default() += 1;
            *variant_uses.entry(name.variant).or_default() += 1;
        }
    }
    let mut tlds_used: Vec<String> = Vec::new();
    for suffix in tlds.iter().map(String::as_str) {
        if !tlds_used.iter().any(|t| t == suffix) && picked.iter().any(|s| s.domain.suffix() == suffix) {
            tlds_used.push(suffix.to_owned());
        }
    }
    Suggestions { tlds_used, items: picked }
}

fn mean_score(words: &Words, parts: &[String]) -> f64 {
    if parts.is_empty() {
        return UNKNOWN_WORD;
    }
    parts.iter().map(|w| words.score(w)).sum::<f64>() / parts.len() as f64
}

/// The non-exact names: splits, then prefixes and suffixes (ASCII bases only), with their scores.
fn other_names(words: &Words, keyword: &Keyword) -> Vec<Name> {
    let base = keyword.base.as_str();
    let mut names: Vec<Name> = Vec::new();
    let mut push = |sld: String, variant: Variant, parts: &[String], bonus: f64| {
        if sld == base || sld.is_empty() || names.iter().any(|n| n.sld == sld) {
            return;
        }
        let hyphens = sld.matches('-').count() as f64;
        let score = mean_score(words, parts) + bonus - 0.06 * sld.chars().count() as f64 - 0.4 * hyphens;
        names.push(Name { sld, variant, score });
    };
    let w = &keyword.words;
    if w.len() >= 2 {
        push(w.join("-"), Variant::Split, w, 0.3);
        for len in (2..w.len()).rev() {
            for start in 0..=w.len() - len {
                let run = &w[start..start + len];
                if run.iter().all(|part| part.bytes().all(|b| b.is_ascii_digit())) {
                    continue; // a bare number drops the keyword's meaning
                }
                push(run.concat(), Variant::Split, run, 0.3);
            }
        }
    }
    if base.is_ascii() {
        for (i, prefix) in PREFIXES.iter().enumerate() {
            if w.first().is_some_and(|first| first == prefix) {
                continue;
            }
            push(format!("{prefix}{base}"), Variant::Prefix, w, -0.3 - 0.15 * i as f64);
        }
        for (i, suffix) in SUFFIXES.iter().enumerate() {
            if w.last().is_some_and(|last| last == suffix) {
                continue;
            }
            push(format!("{base}{suffix}"), Variant::Suffix, w, -0.3 - 0.15 * i as f64);
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalogue() -> Catalogue {
        Catalogue::embedded().expect("catalogue")
    }

    fn tlds(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn run_together_keywords_are_segmented_into_words() {
        let words = Words::shipped();
        for (input, expected) in [
            ("bestpizzaplace", &["best", "pizza", "place"][..]),
            ("cheapdomainsforsale", &["cheap", "domains", "for", "sale"][..]),
            ("sunnybeachhotel", &["sunny", "beach", "hotel"][..]),
            ("pizza", &["pizza"][..]),
            ("Best Pizza-Place", &["best", "pizza", "place"][..]),
            ("zillow", &["zillow"][..]),
        ] {
            let k = Keyword::parse(input, words).expect(input);
            assert_eq!(k.words, expected, "{input}");
        }
    }

    #[test]
    fn keyword_rules() {
        let words = Words::shipped();
        assert_eq!(Keyword::parse("  Bücher ", words).expect("idn").base, "bücher");
        assert_eq!(Keyword::parse("24 7 pizza", words).expect("digits").base, "247pizza");
        for bad in ["a", " b ", "", "pizza.com", "pizza_place", "piz<za", &"x".repeat(64), "--"] {
            assert!(Keyword::parse(bad, words).is_err(), "{bad:?} must be refused");
        }
    }

    /// Issue 30: with `tlds=.com,.net`, no .af zone may appear; with the default list, every
    /// requested TLD is used at limit 20 and `tlds_used` lists exactly the requested TLDs used.
    #[test]
    fn suggestions_stay_within_the_requested_tlds_and_use_each() {
        let words = Words::shipped();
        let cat = catalogue();
        let default: Vec<String> = DEFAULT_TLDS.iter().map(|s| (*s).to_owned()).collect();
        for keyword in ["bestpizzaplace", "kabulbakery", "pizza", "cheapflights", "bücher"] {
            let k = Keyword::parse(keyword, words).expect(keyword);
            let out = suggest(words, &cat, &k, &tlds(&["com", "net"]), 20);
            assert!(!out.items.is_empty());
            for s in &out.items {
                assert!(["com", "net"].contains(&s.domain.suffix()), "{keyword}: {} not requested", s.domain);
            }
            assert!(out.tlds_used.iter().all(|t| t == "com" || t == "net"), "{:?}", out.tlds_used);
            let out = suggest(words, &cat, &k, &default, 20);
            let used: Vec<&str> = out.items.iter().map(|s| s.domain.suffix()).collect();
            for tld in &default {
                assert!(used.contains(&tld.as_str()), "{keyword}: .{tld} never used: {used:?}");
            }
            assert_eq!(out.tlds_used, default, "{keyword}: tlds_used is the requested TLDs used, in order");
            for s in &out.items {
                assert!(default.iter().any(|t| t == s.domain.suffix()), "{} not requested", s.domain);
            }
        }
    }

    #[test]
    fn suggestions_are_valid_unique_and_spread() {
        let words = Words::shipped();
        let cat = catalogue();
        let default: Vec<String> = DEFAULT_TLDS.iter().map(|s| (*s).to_owned()).collect();
        for keyword in ["bestpizzaplace", "pizza", "bücher", "24 7 pizza", "a-b", "xn", "لوازم"] {
            let k = Keyword::parse(keyword, words).expect(keyword);
            for limit in [5, 12, 20] {
                let out = suggest(words, &cat, &k, &default, limit);
                assert!(out.items.len() <= limit);
                let mut seen = HashSet::new();
                for s in &out.items {
                    assert!(seen.insert(s.domain.as_str().to_owned()), "duplicate {}", s.domain);
                    let again = DomainName::parse(s.domain.as_str(), &cat).expect("valid");
                    assert_eq!(again.as_str(), s.domain.as_str());
                    assert!(s.domain.sld().len() <= 63);
                    assert!(cat.resolve(s.domain.suffix()).expect("supported").entry().is_supported());
                }
                assert_eq!(out.items[0].variant, Variant::Exact, "{keyword}: exact first");
                assert!(out.items.iter().any(|s| s.variant == Variant::AfCctld || s.domain.suffix().ends_with("af")));
            }
        }
        let k = Keyword::parse("bestpizzaplace", words).expect("k");
        let out = suggest(words, &cat, &k, &default, 20);
        assert_eq!(out.items.len(), 20);
        let domains: Vec<&str> = out.items.iter().map(|s| s.domain.as_str()).collect();
        assert_eq!(domains[0], "bestpizzaplace.com");
        assert!(domains.iter().any(|d| d.starts_with("best-pizza-place.")), "{domains:?}");
        assert!(domains.contains(&"bestpizzaplace.af") && domains.contains(&"bestpizzaplace.com.af"), "{domains:?}");
        let variants: HashSet<Variant> = out.items.iter().map(|s| s.variant).collect();
        for v in [Variant::Exact, Variant::Split, Variant::Prefix, Variant::Suffix, Variant::AfCctld] {
            assert!(variants.contains(&v), "{v:?} missing: {domains:?}");
        }
        // Spread: no name under more than a third of the list, no TLD over half of it.
        let mut per_name: HashMap<&str, usize> = HashMap::new();
        let mut per_tld: HashMap<&str, usize> = HashMap::new();
        for s in &out.items {
            *per_name.entry(s.domain.sld()).or_default() += 1;
            *per_tld.entry(s.domain.suffix()).or_default() += 1;
        }
        assert!(per_name.values().all(|&n| n <= 10), "{per_name:?}");
        assert!(per_tld.values().all(|&n| n <= 10), "{per_tld:?}");
        // Deterministic.
        let again = suggest(words, &cat, &k, &default, 20);
        assert_eq!(again.items, out.items);
    }

    #[test]
    fn idn_keywords_give_a_labels() {
        let words = Words::shipped();
        let cat = catalogue();
        let k = Keyword::parse("bücher", words).expect("k");
        let out = suggest(words, &cat, &k, &tlds(&["com", "de"]), 5);
        let domains: Vec<&str> = out.items.iter().map(|s| s.domain.as_str()).collect();
        assert_eq!(domains[0], "xn--bcher-kva.com");
        assert!(domains.contains(&"xn--bcher-kva.de"), "{domains:?}");
        assert!(out.items.iter().all(|s| s.variant != Variant::Prefix), "no English affix on an IDN base");
    }

    #[test]
    fn tlds_are_checked_against_the_catalogue() {
        let cat = catalogue();
        assert_eq!(parse_tld(".com", &cat).expect("com"), "com");
        assert_eq!(parse_tld(".COM.AF", &cat).expect("com.af"), "com.af");
        for bad in ["com", ".nosuchtld", ".gov.af", ".example.com", ".", ""] {
            assert!(parse_tld(bad, &cat).is_err(), "{bad:?} must be refused");
        }
    }
}
