//! Whether a line of a WHOIS answer is a statement about the queried name: negation, "only",
//! hypothetical and general sentences, presence words negated ("there is no record for x"),
//! quota refusals worded as a passed limit, the name echoed with a status word, and lines about
//! another part of the record (asides). The phrase lists live in the parent module; these are
//! the sentence rules that decide whether a phrase found on a line counts.

use super::*;

pub(super) fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `c` at byte `i` of `line` ends a sentence: `.`, `;`, `!`, `?` followed by a blank
/// (a domain name's dots do not end a sentence).
pub(super) fn ends_sentence(line: &str, i: usize, c: char) -> bool {
    // A spaced dash also ends a statement: "DOMAIN NOT FOUND - the domain may be available".
    (matches!(c, '.' | ';' | '!' | '?' | '。') || (c == '-' && line.get(..i).is_some_and(|h| h.ends_with(' '))))
        && line.get(i + c.len_utf8()..).is_some_and(|t| t.starts_with(' '))
}

/// The sentence of `line` around the bytes `start..end`, split at `start`: (head, tail).
pub(super) fn sentence_around(line: &str, start: usize, end: usize) -> (&str, &str) {
    let (Some(head), Some(after)) = (line.get(..start), line.get(end..)) else { return ("", "") };
    let from =
        head.char_indices().filter(|&(i, c)| ends_sentence(line, i, c)).map(|(i, c)| i + c.len_utf8()).next_back();
    let to = after.char_indices().find(|&(i, c)| ends_sentence(line, end + i, c)).map_or(after.len(), |(i, _)| i);
    (head.get(from.unwrap_or(0)..).unwrap_or_default(), after.get(..to).unwrap_or_default())
}

/// The blank-separated words of `text`, punctuation trimmed: a queried name such as `if.zz` or
/// `x.org` stays one word and is neither "if" nor "org".
pub(super) fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split_whitespace().map(|w| w.trim_matches(|c: char| !c.is_alphanumeric())).filter(|w| !w.is_empty())
}

/// Whether the text before a phrase makes its sentence hypothetical or general (see
/// the table's `conditionals`, relative pronouns included).
pub(super) fn conditional(head: &str) -> bool {
    let list = &word_lists().conditionals;
    let ws: Vec<&str> = words(head).collect();
    ws.iter().enumerate().any(|(i, w)| {
        (listed(list, w) || (!w.is_ascii() && list.iter().any(|c| !c.is_ascii() && w.starts_with(c.as_str()))))
            && !negated_modal(&ws, i)
    })
}

/// Whether the word at `i` of `ws` is an ability modal negated by the word right after it or one
/// of the two before it ("could not", "ne peut", "no se puede", "не может").
pub(super) fn negated_modal(ws: &[&str], i: usize) -> bool {
    let lists = word_lists();
    listed(&lists.modals, ws[i])
        && (ws.get(i + 1).is_some_and(|w| listed(&lists.negations, w))
            || ws[i.saturating_sub(2)..i].iter().any(|w| listed(&lists.negations, w)))
}

/// Whether a sentence, or the text after a phrase, is hypothetical (the table's `conditionals` without the
/// relative pronouns).
pub(super) fn hypothetical(text: &str) -> bool {
    let list = &word_lists().conditionals;
    let ws: Vec<&str> = words(text).collect();
    ws.iter().enumerate().any(|(i, w)| {
        ((listed(list, w) && !listed(&word_lists().relatives, w))
            || (!w.is_ascii() && list.iter().any(|c| !c.is_ascii() && w.starts_with(c.as_str()))))
            && !negated_modal(&ws, i)
    })
}

/// How a phrase is read in its sentence.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Reading {
    /// Wherever it occurs (error and pending-delete wordings).
    Plain,
    /// Unless negated or in a hypothetical head ("if you exceed the query limit…"): the quota
    /// wordings, which may name the client's IP address.
    Refusal,
    /// Unless negated ("is not reserved"), qualified ("only") or in a hypothetical head ("if a
    /// name is reserved…"): the reserved wordings, whose false hits cost little.
    Claim,
    /// As [`Reading::Claim`], and not in a sentence that is hypothetical or general anywhere
    /// ("… not found here may still…") or is about another part of the record ("contact data
    /// not found"): the not-found wordings, whose false hits would free a taken name.
    Statement,
}

/// The first occurrence of `phrase` in `line` at word boundaries (for scripts without spaces the
/// phrase's own first/last characters decide) that counts under `reading`.
pub(super) fn find_phrase(line: &str, phrase: &str, reading: Reading) -> bool {
    // Every line is tried against thousands of phrases, and most are absent: `memmem::find`
    // (Rabin-Karp on short lines) rejects them without the Two-Way set-up `str::find` pays per
    // call (a third of the reader's time under the fuzzer). A UTF-8 phrase found in UTF-8 text
    // starts at a character boundary.
    if phrase.len() > line.len() {
        return false;
    }
    let mut from = 0;
    while let Some(rel) = line.get(from..).and_then(|rest| memchr::memmem::find(rest.as_bytes(), phrase.as_bytes())) {
        let start = from + rel;
        let end = start + phrase.len();
        let before = line.get(..start).and_then(|h| h.chars().next_back());
        let after = line.get(end..).and_then(|t| t.chars().next());
        let first = phrase.chars().next().unwrap_or(' ');
        let last = phrase.chars().next_back().unwrap_or(' ');
        // A phrase of a script written with spaces starts at a word boundary ("доступен" is not
        // read inside "недоступен"); Arabic and Hebrew glue articles and prepositions on the
        // left, and scripts without spaces have no boundaries.
        let left_ok = !is_word_char(first) || before.is_none_or(|c| !is_word_char(c)) || !spaced_script(first);
        let right_ok = !is_word_char(last) || after.is_none_or(|c| !is_word_char(c)) || !last.is_ascii();
        if left_ok && right_ok && !(reading != Reading::Plain && discounted(line, start, end, reading)) {
            return true;
        }
        from = start + phrase.len().max(1);
        while !line.is_char_boundary(from) {
            from += 1;
        }
    }
    false
}

/// Whether `c` belongs to a script written with blanks between words and without prefixes
/// glued to them (Latin, Greek, Cyrillic, Armenian, Georgian, Devanagari, Bengali).
pub(super) fn spaced_script(c: char) -> bool {
    c.is_ascii()
        || matches!(c,
            '\u{00c0}'..='\u{024f}' | '\u{1e00}'..='\u{1eff}' | '\u{0370}'..='\u{052f}'
            | '\u{0530}'..='\u{058f}' | '\u{10a0}'..='\u{10ff}' | '\u{0900}'..='\u{09ff}')
}

/// Whether a negation follows the phrase (`tail`, the rest of its sentence): a postposed
/// negation word among the first two words ("müsait değil", "उपलब्ध नहीं है", "ազատ չէ"), or,
/// in a script without spaces, one glued right after it ("利用可能ではありません").
pub(super) fn negated_after(tail: &str) -> bool {
    let lists = word_lists();
    words(tail).take(2).any(|w| listed(&lists.postposed, w))
        || lists.glued_after.iter().any(|g| tail.trim_start().starts_with(g.as_str()))
}

/// Whether the phrase at `start..end` of `line` does not count under `reading` (see
/// [`Reading`]).
pub(super) fn discounted(line: &str, start: usize, end: usize, reading: Reading) -> bool {
    let lists = word_lists();
    let (head, tail) = sentence_around(line, start, end);
    // Negations are looked for in the phrase's own clause ("… is not allowed: restricted name"
    // is a restricted name).
    let clause = head.rsplit([':', ',']).next().unwrap_or(head);
    let near: Vec<&str> = words(clause).collect();
    let near = &near[near.len().saturating_sub(3)..];
    let head_trim = head.trim_end();
    near.iter().any(|w| listed(&lists.negations, w))
        || near.last().is_some_and(|w| listed(&lists.qualifiers, w))
        || head_trim.ends_with("n't")
        || head_trim.ends_with("no longer")
        || head_trim.chars().next_back().is_some_and(|c| lists.cjk_negations.contains(&c))
        || lists.glued_before.iter().any(|g| head.ends_with(g.as_str()))
        || negated_after(tail)
        || conditional(head)
        || (reading != Reading::Refusal && words(head).any(|w| listed(&lists.aside, w)))
        // "Excessive querying will lead to a temporary block": the service's policy.
        || (reading == Reading::Refusal && words(tail).any(|w| starts_any(w, &morph_lists().consequence_stems)))
        || (reading == Reading::Statement && (hypothetical(tail) || words(tail).any(|w| listed(&lists.aside, w))))
        || (reading == Reading::Statement && general_or_shown(head, tail))
        // "Names in the redemption period cannot be registered by others": names in general
        // (a sentence that names a domain is about it: "El domini x.cat està reservat").
        || (matches!(reading, Reading::Claim | Reading::Statement) && general_plural(head, tail))
}

/// Whether a sentence (`head` before a phrase, `tail` after it, four words or more around the
/// phrase) has a plural
/// noun of the object ("names", "domains", "strings": the table's `plural_subjects` that are no
/// copulas) and names no domain: a notice about names in general.
pub(super) fn general_plural(head: &str, tail: &str) -> bool {
    let lists = word_lists();
    let names_domain = words(head).chain(words(tail)).any(|w| w.contains('.') && !w.starts_with('.'));
    // A notice is a full sentence; a short statement ("Nazwa domeny zastrzeżona", where the
    // Polish genitive "domeny" looks like a plural) is about the name asked.
    let long = words(head).chain(words(tail)).count() >= 4;
    long && !names_domain && words(head).any(|w| listed(&lists.plural_subjects, w) && !listed(&lists.glue, w))
}

/// Whether the sentence of a phrase (`head` before it, `tail` after) speaks of names in general
/// (the table's `plural_subjects`), refers to a record shown with the answer ("The object shown below
/// is not in the registry database": it exists elsewhere), or, in a script without spaces,
/// names another part of the record ("등록자 정보가 없습니다": no registrant data).
fn general_or_shown(head: &str, tail: &str) -> bool {
    let glue = &word_lists().glue;
    let last = words(head).filter(|w| !listed(glue, w)).last();
    last.is_some_and(|w| listed(&word_lists().plural_subjects, w))
        || words(head).chain(words(tail)).any(|w| matches!(w, "below" | "above" | "shown" | "following"))
        || script_aside(head)
        || script_aside(tail)
}

/// A quota refusal in words no phrase lists: in one short, non-hypothetical sentence, a word
/// saying a bound was passed ("exceeded", "reached") and one naming queries or their rate
/// ("Number of allowed queries exceeded", "Maximum query rate reached", "Queries from your IP
/// address have exceeded the allowed limit").
pub(super) fn exceeded_limit(line: &str) -> Option<String> {
    // Past forms only: "queries that exceed the rate limit are refused" states a policy.
    let lists = word_lists();
    if line.chars().count() > 120 || hypothetical(line) {
        return None;
    }
    let ws: Vec<&str> = words(line).collect();
    // "Queries over the limit will lead to a block": a consequence is the service's policy.
    if ws.iter().any(|w| starts_any(w, &morph_lists().consequence_stems)) {
        return None;
    }
    let passed = ws.iter().find(|w| listed(&lists.quota_passed, w))?;
    let what = ws.iter().find(|w| lists.quota_queries.iter().any(|q| w.starts_with(q.as_str())))?;
    Some(format!("{what} … {passed}"))
}

/// A line that is the queried name and a status word: "x.zz - available", "x.zz: free",
/// "x.zz (reserved)". Returns the status value, for [`free_status`] / [`reserved_status`].
pub(super) fn echo_status(line: &str) -> Option<&str> {
    // "domain x.zz: free", "domain name x.zz: available": the name after the word domain.
    let line = ["domain name ", "domain "].iter().find_map(|p| line.strip_prefix(p)).unwrap_or(line);
    let (name, rest) = line.split_once(char::is_whitespace).or_else(|| line.split_once(':'))?;
    let name = name.trim_end_matches(':');
    // A service host ("whois.nic.zz - available 24/7") is not the queried name.
    let host_like = name.contains('.')
        && !name.starts_with('.')
        && !name.ends_with('.')
        && !["whois.", "www.", "rdap.", "http"].iter().any(|p| name.starts_with(p))
        && name.chars().all(|c| c.is_alphanumeric() || c == '.' || c == '-');
    let value = rest.trim().trim_start_matches(['-', ':', '(', '=', ' ']).trim_end_matches([')', '.', '!', ' ']);
    // The whole rest is one status value (a word or two), not a sentence.
    (host_like && !value.is_empty() && value.split_whitespace().count() <= 2).then_some(value)
}

/// Whether a normalised line's first sentence is hypothetical ("to see if a name is available",
/// "if a domain is not found here…"): a notice about the service, not an answer about the name.
pub fn is_hypothetical(line: &str) -> bool {
    let line = fold(line);
    let line = line.as_str();
    let end = line.char_indices().find(|&(i, c)| ends_sentence(line, i, c)).map_or(line.len(), |(i, _)| i);
    hypothetical(line.get(..end).unwrap_or(line))
}

/// The key of a `key: value` line (normalised: lower case, ` :` already `:`), when the line has
/// that shape: a short key (at most 40 characters, 5 words, no URL) and a non-empty value.
pub fn line_key(line: &str) -> Option<&str> {
    let (key, value) = line.split_once(':')?;
    let (key, value) = (key.trim(), value.trim());
    let plausible = !key.is_empty()
        && key.chars().count() <= 40
        && key.split_whitespace().count() <= 5
        && !key.contains("http")
        && !value.is_empty()
        && !value.starts_with("//");
    plausible.then_some(key)
}

/// Whether a normalised line is a `key: value` statement about something other than the queried
/// name (the table's `subject_key_words`): its value's not-found wording must not count. A key that
/// itself carries the wording ("not found: x.zz", "no match: x") or names the domain itself
/// ("x.cl: no existe") is not aside.
pub fn is_aside(line: &str) -> bool {
    let line = fold(line);
    let Some(key) = line_key(&line) else { return false };
    let words: Vec<&str> =
        key.split(|c: char| !(c.is_alphanumeric() || c == '.' || c == '-')).filter(|w| !w.is_empty()).collect();
    // "free.cl: no existe": the key is the queried name.
    if words.len() == 1 && words[0].contains('.') {
        return false;
    }
    let has = |list: &[String]| {
        words.iter().any(|w| listed(list, w)) || list.iter().any(|l| !l.is_ascii() && key.contains(l.as_str()))
    };
    if phrases().not_found.any(key, Reading::Statement) {
        return false;
    }
    let lists = word_lists();
    if has(&lists.aside) {
        return true;
    }
    if has(&lists.subject) {
        return false;
    }
    // A lead-in ("Good news:", "Notice:", "Info:") before a sentence that names a domain is no
    // field: "Good news: x.zz is free to register" is a statement about the name.
    let value = line.split_once(':').map_or(line.as_str(), |(_, v)| v).trim();
    let value_words: Vec<&str> = self::words(value).collect();
    let names_domain = value_words.iter().any(|w| {
        w.contains('.')
            && !w.starts_with('.')
            && !w.contains(['@', '/'])
            && !["whois.", "www.", "rdap.", "http"].iter().any(|p| w.starts_with(p))
    });
    !(words.len() <= 3 && value_words.len() >= 3 && names_domain)
}
