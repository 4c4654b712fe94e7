//! Line preparation: the answer split into lines, each with its indentation, its normalised
//! form (what markers match against) and whether it continues a wrapped sentence.

/// One line of the answer: the raw text, its indentation and its normalised form.
pub(super) struct Line<'a> {
    pub(super) raw: &'a str,
    pub(super) indent: usize,
    /// Lower case, comment/quote marks stripped from the start, whitespace collapsed, dot
    /// leaders turned into `": "`, trailing `. ! < >` removed — the form markers match against.
    pub(super) norm: String,
    /// `norm`'s length in characters (the markers' length limits), counted once.
    pub(super) norm_chars: usize,
    pub(super) comment: bool,
    /// The line continues the previous line's sentence (previous line ends mid-sentence and
    /// this one starts in lower case).
    pub(super) continuation: bool,
}

/// A line at least this long that ends mid-sentence is taken to be wrapped (in an answer whose
/// case does not tell, see [`prepare_lines`]): registries wrap their notices at 60 to 80 columns.
const WRAPPED_LINE: usize = 50;

pub(super) fn prepare_lines(text: &str) -> Vec<Line<'_>> {
    let raws: Vec<&str> = text
        .lines()
        .map(|raw| raw.trim_end_matches(['\r', '\u{feff}']))
        .filter(|raw| !is_client_artifact(raw.trim()))
        .collect();
    // A registry that prints its whole answer as comment lines (every non-blank line behind
    // `%`, `#`, `;`…) puts its facts there too: read them as content, without the marks —
    // otherwise the comment stripping eats the only informative lines.
    let all_comments = raws.iter().any(|r| !r.trim().is_empty())
        && raws.iter().all(|r| r.trim().is_empty() || comment_body(r).is_some());
    // Case tells a wrapped sentence's tail ("All rights\nreserved.") from a new statement only
    // when the answer uses both cases; an answer printed all in capitals or all in lower case
    // is read by line length instead (a wrapped line is a long one).
    let cased = |f: fn(&char) -> bool| raws.iter().any(|r| r.chars().any(|c| f(&c)));
    let case_tells = cased(|c| c.is_uppercase()) && cased(|c| c.is_lowercase());
    let mut prev: Option<String> = None;
    raws.into_iter()
        .map(|raw| {
            let (raw, comment) = match comment_body(raw) {
                Some(body) if all_comments => (body, false),
                Some(_) => (raw, true),
                None => (raw, false),
            };
            let trimmed = raw.trim_start();
            let indent =
                raw.strip_suffix(trimmed).unwrap_or_default().chars().map(|c| if c == '\t' { 8 } else { 1 }).sum();
            let here = content(raw);
            // Lower-case "key: value" lines (RIPE style) are statements, not wrapped text.
            let key_like = here.find(':').is_some_and(|i| i < 40);
            let continuation = prev.as_deref().is_some_and(|p| {
                // A line that ends in a URL, host name or address ends its sentence there.
                let last_word = p.rsplit(char::is_whitespace).next().unwrap_or_default();
                p.ends_with(|c: char| c.is_alphanumeric() || c == ',')
                    && !last_word.contains(['.', '/', '@'])
                    && if case_tells {
                        here.starts_with(|c: char| c.is_lowercase())
                    } else {
                        p.chars().count() >= WRAPPED_LINE && here.starts_with(char::is_alphanumeric)
                    }
            }) && !key_like;
            prev = Some(here).filter(|h| !h.is_empty());
            let norm = normalise(raw);
            let norm_chars = norm.chars().count();
            Line { raw, indent, norm, norm_chars, comment, continuation }
        })
        .collect()
}

/// The line's text without its comment marks, with the indentation after them, when the line
/// is a comment: `%`, `#` (RIPE, ICANN footers), `;` (registrar legal notices), `//`, `--` and
/// `>>>` (ICANN's "Last update of WHOIS database" line) followed by a blank or the line's end.
/// A line of dashes (`-----`) is decoration, not a comment.
pub(super) fn comment_body(raw: &str) -> Option<&str> {
    let t = raw.trim_start();
    let body = if t.starts_with(['%', '#', ';']) {
        t.trim_start_matches(['%', '#', ';'])
    } else if let Some(rest) = t.strip_prefix("//").or_else(|| t.strip_prefix(">>>")).or_else(|| t.strip_prefix("--")) {
        let rest = rest.trim_start_matches(['/', '>', '-']);
        if !(rest.is_empty() || rest.starts_with([' ', '\t'])) || rest.trim().chars().all(|c| c == '-' || c == '=') {
            return None;
        }
        rest
    } else {
        return None;
    };
    Some(body.strip_prefix(' ').unwrap_or(body))
}

/// A line's text for sentence analysis: trimmed, comment marks and leading blanks removed.
fn content(raw: &str) -> String {
    comment_body(raw).unwrap_or(raw).trim().trim_start_matches(['%', '#', ' ', '\t']).to_owned()
}

/// Lines a command-line whois client adds around the server's answer (`[Querying host]`,
/// `[Redirected to host]`, `[host]`): not registry text.
pub(super) fn is_client_artifact(t: &str) -> bool {
    let Some(inner) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']')) else {
        return false;
    };
    inner.starts_with("Querying ")
        || inner.starts_with("Redirected to ")
        || (!inner.is_empty()
            && inner.contains('.')
            && inner.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-'))
}

pub(super) fn normalise(raw: &str) -> String {
    let raw = comment_body(raw).unwrap_or(raw);
    let t = raw.trim().trim_start_matches(|c: char| matches!(c, '%' | '#' | '>' | '*' | ';') || c.is_whitespace());
    let chars: Vec<char> = t.chars().collect();
    let mut out = String::with_capacity(t.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '.' {
            // A dot leader: three or more dots, possibly spaced (". . . ."), as in
            // "Domain Name.........: x" or "object:. . . . . .x".
            let mut j = i;
            let mut dots = 0;
            while j < chars.len() && (chars[j] == '.' || (chars[j] == ' ' && chars.get(j + 1) == Some(&'.'))) {
                if chars[j] == '.' {
                    dots += 1;
                }
                j += 1;
            }
            if dots >= 3 {
                let mut k = j;
                while k < chars.len() && (chars[k] == ':' || chars[k].is_whitespace()) {
                    k += 1;
                }
                if k < chars.len() {
                    while out.ends_with([' ', ':']) {
                        out.pop();
                    }
                    out.push_str(": ");
                }
                i = k;
                continue;
            }
        }
        if c.is_whitespace() {
            if !out.is_empty() && !out.ends_with(' ') {
                out.push(' ');
            }
        } else if c == ':' && out.ends_with(' ') {
            // "Domain Name   : x" → "domain name: x"
            out.pop();
            out.push(':');
        } else {
            out.extend(c.to_lowercase());
        }
        i += 1;
    }
    let end = out.trim_end_matches(['.', '!', '<', '>', ' ']).len();
    out.truncate(end);
    // Diacritics, Arabic/Persian letter forms, typographic quotes: see `lexicon::fold`.
    crate::parse::lexicon::fold(&out)
}
