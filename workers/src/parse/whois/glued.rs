//! Markers run together with other tokens, taken apart before the answer's lines are read.
//!
//! Some registry software prints its answer as one machine-readable line rather than as
//! `Key: value` lines or sentences: `domain:x.zz;status:free;`, `RESULT=NOTFOUND;DOMAIN=x.zz`,
//! `x.zz|status=available|`, `{"domain":"x.zz","status":"AVAILABLE"}`,
//! `<status>free</status><domain>x.zz</domain>`, `[x.zz][NOT-FOUND]`, `%%NOMATCH%%`,
//! `ResultCode: DomainNotFound`. Read as they are, such lines give the field reader one key
//! with a garbled value and the phrase lists no word boundary to match at. [`untangle`] rewrites
//! them as the lines the rest of the reader understands (`domain: x.zz`, `status: free`,
//! `result: not found`); every other line is kept byte for byte, so answers printed the usual
//! way read exactly as before.
//!
//! What is taken apart, on lines of at most [`MAX_GLUED`] characters only:
//! - a line of two or more `key:value` / `key=value` pairs separated by `;` or `|`;
//! - a one-line JSON object of string values, and XML-like `<key>value</key>` elements;
//! - bracketed tokens printed side by side (`[x.zz][NOT-FOUND]`);
//! - the rows of a two-column table (`Domain      | x.zz`), when there are two or more;
//! - decoration around a marker (`%%`, `***`, quotes);
//! - within a word (not a domain name, address or URL): a negation joined by a hyphen
//!   (`NOT-FOUND`, `NO-MATCH`), words in camel case (`DomainNotFound`), and a negation written
//!   together with the word it negates (`NOMATCH`, `notfound`: see
//!   [`crate::parse::lexicon::split_compound`]).
//!
//! Nothing here decides a class: the lines it produces go through every guard of the reader
//! (negation, hypotheticals, asides, registration evidence), so a glued registered record
//! (`domain:x.zz;status:ok;created:2018-06-01;…`) now shows its evidence as well.

use std::borrow::Cow;

/// Longest line taken apart, in bytes: machine-readable answers are short; a long line is prose.
const MAX_GLUED: usize = 400;

/// The answer with its glued lines taken apart (see the module documentation); borrowed when
/// nothing changed.
pub(super) fn untangle(text: &str) -> Cow<'_, str> {
    let mut changed = false;
    let mut out: Vec<Cow<'_, str>> = Vec::new();
    // A table of `Key | value` rows: two rows at least, so that one line of prose with a bar
    // stays as it is.
    let table = text.split('\n').filter(|l| table_row(l).is_some()).count() >= 2;
    for line in text.split('\n') {
        if table && let Some(row) = table_row(line) {
            changed = true;
            out.push(Cow::Owned(row));
            continue;
        }
        match untangle_line(line) {
            Some(parts) => {
                changed = true;
                out.extend(parts.into_iter().map(Cow::Owned));
            }
            None => out.push(Cow::Borrowed(line)),
        }
    }
    if changed { Cow::Owned(out.join("\n")) } else { Cow::Borrowed(text) }
}

/// A row of a two-column table, `Domain      | x.zz`, as `Domain: x.zz`: one bar with blanks
/// around it, a key of words before it (at most 40 characters), a value after it.
fn table_row(line: &str) -> Option<String> {
    let (key, value) = line.trim().split_once(" | ").or_else(|| line.trim().split_once("\t| "))?;
    let (key, value) = (key.trim(), value.trim());
    let words_key = !key.is_empty()
        && key.chars().count() <= 40
        && key.chars().all(|c| c.is_alphabetic() || matches!(c, ' ' | '-' | '_' | '.'));
    (words_key && !value.is_empty() && !value.contains('|')).then(|| format!("{key}: {value}"))
}

/// The lines one glued line stands for, or `None` to keep it as it is.
fn untangle_line(line: &str) -> Option<Vec<String>> {
    let body = line.trim_end_matches('\r');
    let t = body.trim();
    if t.is_empty() || t.len() > MAX_GLUED {
        return None;
    }
    if let Some(segments) = split_segments(t) {
        let parts: Vec<String> = segments
            .iter()
            .map(|seg| strip_decoration(seg))
            .filter(|seg| !seg.is_empty())
            .map(|seg| split_words(&key_value(seg)))
            .collect();
        return (!parts.is_empty()).then_some(parts);
    }
    // One field: rewritten only when a word in it hides a negation ("%%NOMATCH%%", "NOT-FOUND",
    // "DomainNotFound"), its indentation kept for the block reader.
    let field = key_value(strip_decoration(t));
    let words = split_words(&field);
    if words == field {
        return None;
    }
    let indent = body.get(..body.len() - body.trim_start().len()).unwrap_or_default();
    Some(vec![format!("{indent}{words}")])
}

/// The pieces of a line made of several fields: `;`/`|`-separated pairs, a JSON object, XML-like
/// elements, bracketed tokens. `None` when the line is not of that shape.
fn split_segments(t: &str) -> Option<Vec<String>> {
    // {"domain":"x.zz","status":"AVAILABLE"}
    if let Some(inner) = t.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
        let pairs: Vec<String> = inner.split(',').map(|p| p.replace('"', "")).collect();
        if pairs.len() >= 2 && pairs.iter().all(|p| p.contains(':')) {
            return Some(pairs);
        }
    }
    // <status>free</status><domain>x.zz</domain>
    if t.starts_with('<') && t.ends_with('>') && t.contains("</") {
        let mut out = Vec::new();
        let mut rest = t;
        while let Some(open) = rest.strip_prefix('<') {
            let (tag, after) = open.split_once('>')?;
            let close = format!("</{tag}>");
            let at = after.find(close.as_str())?;
            let value = after.get(..at)?;
            if tag.is_empty() || tag.contains(['<', '/', ' ']) || value.contains('<') {
                return None;
            }
            out.push(format!("{tag}: {value}"));
            rest = after.get(at + close.len()..)?.trim_start();
        }
        return (rest.is_empty() && !out.is_empty()).then_some(out);
    }
    // [x.zz][NOT-FOUND]
    if t.starts_with('[') && t.ends_with(']') && t.contains("][") {
        return Some(t.trim_start_matches('[').trim_end_matches(']').split("][").map(str::to_owned).collect());
    }
    // x.zz|RESERVED: the name and one status word, as the echo form "x.zz: RESERVED".
    if let Some((name, word)) = t.trim_end_matches('|').split_once('|')
        && is_name(name.trim())
        && !word.trim().is_empty()
        && word.trim().chars().all(char::is_alphabetic)
    {
        return Some(vec![format!("{}: {}", name.trim(), word.trim())]);
    }
    // ERROR:NOSUCHDOMAIN:x.zz: fields run together with colons, no blank anywhere.
    if !t.contains(char::is_whitespace) && !t.contains("//") && t.matches(':').count() >= 2 {
        let pieces: Vec<String> = t.split(':').map(str::to_owned).collect();
        // Not an IPv6 address or a time: no empty piece, a word first.
        let fields = pieces
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | '_')))
            && pieces.first().is_some_and(|p| p.chars().all(char::is_alphabetic));
        // Only when a piece hides a marker ("NOSUCHDOMAIN"): rwhois prints its attributes as
        // `domain:Created:20090324`, which the field reader reads as they are.
        if fields && pieces.iter().any(|p| split_words(p) != *p) {
            return Some(pieces);
        }
    }
    // domain:x.zz;status:free;   RESULT=NOTFOUND;DOMAIN=x.zz   x.zz|status=available|
    // domain=x.zz&available=1 (a query string, no blank in it)
    // A query string only when every `&`-separated piece is `key=value` ("Activ&eacute;" is an
    // HTML entity).
    let query_string = !t.contains(char::is_whitespace)
        && t.contains('&')
        && t.split('&').all(|p| p.split_once('=').is_some_and(|(k, v)| !k.is_empty() && !v.is_empty()));
    let separators: &[char] = if query_string { &[';', '|', '&'] } else { &[';', '|'] };
    if t.contains(separators) && !t.contains("://") {
        let pieces: Vec<&str> = t.split(separators).map(str::trim).filter(|p| !p.is_empty()).collect();
        let pairs = pieces.iter().filter(|p| is_pair(p)).count();
        // Every piece a field (a pair, or one word such as the echoed name), at least two pairs:
        // prose with a semicolon ("No match; try again") stays one line.
        if (pairs >= 2 || (pairs >= 1 && pieces.len() >= 2 && pieces.iter().all(|p| !p.contains(' '))))
            && pieces.iter().all(|p| is_pair(p) || p.split_whitespace().count() == 1)
        {
            return Some(pieces.into_iter().map(str::to_owned).collect());
        }
    }
    None
}

/// A domain name as registries echo it: letters, digits and hyphens in two or more labels.
fn is_name(s: &str) -> bool {
    s.contains('.')
        && !s.starts_with('.')
        && !s.ends_with('.')
        && s.chars().all(|c| c.is_alphanumeric() || c == '.' || c == '-')
        && s.chars().any(char::is_alphabetic)
}

/// `key:value` or `key=value` without blanks in the key (a URL's `https:` is no key).
fn is_pair(p: &str) -> bool {
    p.split_once([':', '=']).is_some_and(|(k, v)| {
        !k.is_empty()
            && !k.contains(char::is_whitespace)
            && k.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
            && !v.trim().is_empty()
            && !v.starts_with("//")
    })
}

/// A segment without the decoration registries put around a marker: `%%NOMATCH%%`,
/// `*** NO-MATCH ***`, quotes.
fn strip_decoration(seg: &str) -> &str {
    let s = seg.trim();
    let deco = |c: char| matches!(c, '*' | '"' | '\'' | '[' | ']' | '{' | '}');
    let s = s.trim_matches(deco).trim();
    // `%%X%%` is decoration; a leading `%` alone is a comment mark, kept for the line reader.
    match s.strip_prefix("%%").and_then(|r| r.strip_suffix("%%")) {
        Some(inner) => inner.trim_matches('%').trim(),
        None => s,
    }
}

/// `KEY=value` as `KEY: value`, and `key:value` with the blank the field reader expects (not in
/// a URL, a time or an IPv6 address: only when the key is a word).
fn key_value(seg: &str) -> String {
    let Some(at) = seg.find([':', '=']) else { return seg.to_owned() };
    let (key, rest) = seg.split_at(at);
    let value = rest.get(1..).unwrap_or_default();
    let word_key = !key.is_empty() && key.chars().all(|c| c.is_alphabetic() || matches!(c, '_' | '-' | ' '));
    if word_key && !value.starts_with("//") && !value.starts_with(':') {
        // A camel-case key in words, as the key tables list them ("ResultCode" → "Result Code").
        let key: Vec<String> = key.split_whitespace().flat_map(camel_parts).collect();
        format!("{}: {}", key.join(" "), value.trim())
    } else {
        seg.to_owned()
    }
}

/// Words within a token taken apart when that shows a negation hidden in it: a negation joined
/// by a hyphen or underscore (`NOT-FOUND`), camel case (`DomainNotFound`), a negation written
/// together with its word (`NOMATCH`). Other tokens, and tokens with a dot, `@`, `/` or a digit
/// (names, addresses, URLs, EPP statuses such as `clientTransferProhibited`), are left alone.
fn split_words(seg: &str) -> String {
    use crate::parse::lexicon::{has_negation, marker_words, split_compound};
    seg.split(' ')
        .map(|token| {
            let word = token.trim_end_matches([':', ',', '.', ';']);
            let tail = token.get(word.len()..).unwrap_or_default();
            if word.is_empty() || !word.chars().all(|c| c.is_alphabetic() || c == '-' || c == '_') {
                return token.to_owned();
            }
            let spaced: Vec<String> = word
                .split(['-', '_'])
                .flat_map(camel_parts)
                .map(|part| split_compound(&part).unwrap_or(part))
                .collect();
            let spaced = spaced.join(" ");
            if spaced != word.replace(['-', '_'], " ") || word.contains('-') {
                // Only a negation brought to light counts ("first-come" stays as it is).
                if has_negation(&spaced) && !has_negation(word) && marker_words(&spaced) {
                    return format!("{spaced}{tail}");
                }
            }
            token.to_owned()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The words of a camel-case token (`DomainNotFound` → `Domain`, `Not`, `Found`); a token in one
/// case, or with a single capital, is one word.
fn camel_parts(token: &str) -> Vec<String> {
    let chars: Vec<char> = token.chars().collect();
    let humps = chars.windows(2).filter(|w| w[0].is_lowercase() && w[1].is_uppercase()).count();
    if humps == 0 {
        return vec![token.to_owned()];
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if i > 0 && c.is_uppercase() && chars[i - 1].is_lowercase() && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        cur.push(c);
    }
    out.push(cur);
    out
}

#[cfg(test)]
mod tests {
    use super::untangle;

    #[test]
    fn glued_lines_are_taken_apart_and_others_kept() {
        assert_eq!(untangle("domain:x.zz;status:free;"), "domain: x.zz\nstatus: free");
        assert_eq!(untangle("RESULT=NOTFOUND;DOMAIN=x.zz"), "RESULT: NOT FOUND\nDOMAIN: x.zz");
        assert_eq!(untangle("x.zz|status=available|"), "x.zz\nstatus: available");
        assert_eq!(untangle(r#"{"domain":"x.zz","status":"AVAILABLE"}"#), "domain: x.zz\nstatus: AVAILABLE");
        assert_eq!(untangle("<status>free</status><domain>x.zz</domain>"), "status: free\ndomain: x.zz");
        assert_eq!(untangle("[x.zz][NOT-FOUND]"), "x.zz\nNOT FOUND");
        assert_eq!(untangle("%%NOMATCH%%"), "NO MATCH");
        assert_eq!(untangle("ResultCode: DomainNotFound"), "Result Code: Domain Not Found");
        assert_eq!(untangle("*** NO-MATCH *** x.zz"), "NO MATCH *** x.zz");
        assert_eq!(untangle("notfound:x.zz"), "not found: x.zz");
        assert_eq!(untangle("x.zz|RESERVED"), "x.zz: RESERVED");
        assert_eq!(untangle("ERROR:NOSUCHDOMAIN:x.zz"), "ERROR\nNO SUCH DOMAIN\nx.zz");
        assert_eq!(untangle("domain=x.zz&available=1"), "domain: x.zz\navailable: 1");
        assert_eq!(untangle("  Status: NOT-REGISTERED"), "  Status: NOT REGISTERED");
        assert_eq!(untangle("Domain      | x.zz\nRegistrar   | Example Ltd"), "Domain: x.zz\nRegistrar: Example Ltd");
        assert_eq!(untangle("Registrar   | Example Ltd"), "Registrar   | Example Ltd", "one row is no table");
        // Lines printed the usual way are kept byte for byte.
        for same in [
            "Domain Name: EXAMPLE.COM",
            "% This is a comment; with a semicolon",
            "No match for \"X.ZZ\".",
            "Name Server: ns1.example.zz; ns2.example.zz",
            "URL: https://www.example.zz/whois?q=x;y=z",
            "Status: clientTransferProhibited https://icann.org/epp#clientTransferProhibited",
            "first-come, first-served",
            "nothing, notice, another, nominal",
            "[whois.nic.zz]",
            "RegistrarName: Example Registrar",
            "notice: nothing to report",
            "whois_handler=notfound_page_disabled",
            "Created: 2020-01-01T10:00:00Z",
            "2001:db8::1",
            "domain:Created:20090324",
            "Status:Activ&eacute;",
            "Name Server: ns1.example.zz | ns2.example.zz",
        ] {
            assert_eq!(untangle(same), same, "{same}");
        }
    }

    /// Hostile input: long single-case tokens, glued lines and table rows by the thousand are
    /// read in bounded time (the compound split looks at tokens of at most 40 letters).
    #[test]
    fn hostile_glued_input_is_read_in_bounded_time() {
        let mut text = String::new();
        for i in 0..2000 {
            text.push_str(&"NOTFOUND".repeat(5 + i % 40));
            text.push('\n');
            text.push_str(&format!("k{i}=NOMATCH;v=notfoundnotfound;x={}|\n", "a".repeat(i % 300)));
            text.push_str("Key | value\n");
        }
        let started = std::time::Instant::now();
        let out = untangle(&text);
        let reading = crate::parse::whois::read_whois_generic(text.as_bytes(), None, "", None);
        assert!(out.len() >= text.len() / 2);
        assert_ne!(reading.class, crate::parse::whois::WhoisClass::Registered);
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
    }
}
