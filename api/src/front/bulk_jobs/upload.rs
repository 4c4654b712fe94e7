//! The upload of a bulk job, parsed as it streams in: the front holds one chunk and one entry at
//! a time, never the whole list.
//!
//! Formats (by `Content-Type`):
//! * `application/json`: one JSON array of strings, `["example.com", …]`;
//! * `application/x-ndjson`: one JSON value per line, a string or `{"domain": "…"}`;
//! * `text/csv`: one name per line in the first column (RFC 4180 quoting); a first line whose
//!   first column is `domain` is a header;
//! * `text/plain`: one name per line.
//!
//! Blank lines are skipped. An entry longer than [`MAX_ENTRY_BYTES`] is rejected (reported as
//! invalid, not kept in memory).

/// Longest entry kept, bytes (a single check takes 1,024 characters).
pub const MAX_ENTRY_BYTES: usize = 1024;

/// The formats an upload may be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A JSON array of strings.
    JsonArray,
    /// One JSON string (or `{"domain": …}`) per line.
    Ndjson,
    /// CSV: the first column of each line.
    Csv,
    /// One name per line.
    Text,
}

impl Format {
    /// The format of a `Content-Type` value; `None` for any other media type.
    pub fn of(content_type: &str) -> Option<Self> {
        let media = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        match media.as_str() {
            "application/json" => Some(Self::JsonArray),
            "application/x-ndjson" | "application/ndjson" | "application/jsonl" => Some(Self::Ndjson),
            "text/csv" => Some(Self::Csv),
            "text/plain" => Some(Self::Text),
            _ => None,
        }
    }
}

/// One entry of the upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A name to normalise and check.
    Name(String),
    /// An entry that is not a name at all (wrong JSON type, too long), with the reason.
    Rejected {
        /// The entry as sent (cut to [`MAX_ENTRY_BYTES`]).
        input: String,
        /// Why.
        error: String,
    },
}

/// The upload is not in its declared format (a 400 naming the problem).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Malformed(pub String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArrayState {
    Start,
    ValueOrEnd,
    Value,
    InString { escaped: bool },
    AfterValue,
    Done,
}

/// The incremental parser: feed chunks with [`Entries::push`], then [`Entries::finish`]; take
/// the entries found so far with [`Entries::take`].
#[derive(Debug)]
pub struct Entries {
    format: Format,
    /// The current line or JSON string token (at most `MAX_ENTRY_BYTES + 8` bytes kept).
    current: Vec<u8>,
    /// The current token was longer than what is kept.
    overflow: bool,
    array: ArrayState,
    first_line: bool,
    out: Vec<Entry>,
}

const KEEP: usize = MAX_ENTRY_BYTES + 8;

impl Entries {
    /// A parser for `format`.
    pub fn new(format: Format) -> Self {
        Self {
            format,
            current: Vec::new(),
            overflow: false,
            array: ArrayState::Start,
            first_line: true,
            out: Vec::new(),
        }
    }

    /// The entries parsed so far (and forgets them).
    pub fn take(&mut self) -> Vec<Entry> {
        std::mem::take(&mut self.out)
    }

    /// Parses a chunk.
    ///
    /// # Errors
    /// [`Malformed`] when the bytes break the format (JSON array only; line formats take any
    /// line).
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), Malformed> {
        match self.format {
            Format::JsonArray => self.push_array(chunk),
            _ => {
                for &b in chunk {
                    if b == b'\n' {
                        self.end_line();
                    } else {
                        self.keep(b);
                    }
                }
                Ok(())
            }
        }
    }

    /// Ends the upload.
    ///
    /// # Errors
    /// [`Malformed`] for a JSON array that did not end.
    pub fn finish(&mut self) -> Result<(), Malformed> {
        match self.format {
            Format::JsonArray => match self.array {
                ArrayState::Done => Ok(()),
                ArrayState::Start => Err(Malformed("The body is empty: send a JSON array of names.".into())),
                _ => Err(Malformed("The JSON array is not closed: the body ended inside it.".into())),
            },
            _ => {
                if !self.current.is_empty() || self.overflow {
                    self.end_line();
                }
                Ok(())
            }
        }
    }

    fn keep(&mut self, b: u8) {
        if self.current.len() < KEEP {
            self.current.push(b);
        } else {
            self.overflow = true;
        }
    }

    fn too_long(&mut self) -> Entry {
        let input = String::from_utf8_lossy(&self.current[..self.current.len().min(MAX_ENTRY_BYTES)]).into_owned();
        Entry::Rejected { input, error: format!("Entry too long: at most {MAX_ENTRY_BYTES} bytes per name.") }
    }

    fn end_line(&mut self) {
        let first = std::mem::replace(&mut self.first_line, false);
        if self.overflow {
            let entry = self.too_long();
            self.out.push(entry);
        } else {
            let line = String::from_utf8_lossy(&self.current).into_owned();
            let line = line.trim();
            if !line.is_empty() {
                match self.format {
                    Format::Text => self.out.push(Entry::Name(line.to_owned())),
                    Format::Csv => {
                        let field = first_csv_field(line);
                        let header = first && field.trim().eq_ignore_ascii_case("domain");
                        if !header && !field.trim().is_empty() {
                            self.out.push(Entry::Name(field.trim().to_owned()));
                        }
                    }
                    Format::Ndjson => self.out.push(ndjson_entry(line)),
                    Format::JsonArray => {}
                }
            }
        }
        self.current.clear();
        self.overflow = false;
    }

    fn push_array(&mut self, chunk: &[u8]) -> Result<(), Malformed> {
        for &b in chunk {
            self.array = match self.array {
                ArrayState::InString { escaped } => {
                    self.keep(b);
                    if escaped {
                        ArrayState::InString { escaped: false }
                    } else if b == b'\\' {
                        ArrayState::InString { escaped: true }
                    } else if b == b'"' {
                        self.end_string()?;
                        ArrayState::AfterValue
                    } else {
                        ArrayState::InString { escaped: false }
                    }
                }
                _ if b.is_ascii_whitespace() => self.array,
                // A UTF-8 byte order mark before the array.
                ArrayState::Start if matches!(b, 0xEF | 0xBB | 0xBF) => ArrayState::Start,
                ArrayState::Start if b == b'[' => ArrayState::ValueOrEnd,
                ArrayState::Start => {
                    return Err(Malformed(
                        "The body is not a JSON array: send [\"example.com\", …] (or NDJSON, CSV or text lines with their Content-Type).".into(),
                    ));
                }
                ArrayState::ValueOrEnd if b == b']' => ArrayState::Done,
                ArrayState::ValueOrEnd | ArrayState::Value if b == b'"' => {
                    self.current.clear();
                    self.overflow = false;
                    self.current.push(b);
                    ArrayState::InString { escaped: false }
                }
                ArrayState::ValueOrEnd | ArrayState::Value => {
                    return Err(Malformed("The JSON array must hold strings only (one domain name each).".into()));
                }
                ArrayState::AfterValue if b == b',' => ArrayState::Value,
                ArrayState::AfterValue if b == b']' => ArrayState::Done,
                ArrayState::AfterValue => {
                    return Err(Malformed("Malformed JSON array: expected , or ] after a name.".into()));
                }
                ArrayState::Done => {
                    return Err(Malformed("Unexpected data after the end of the JSON array.".into()));
                }
            };
        }
        Ok(())
    }

    fn end_string(&mut self) -> Result<(), Malformed> {
        if self.overflow {
            let entry = self.too_long();
            self.out.push(entry);
        } else {
            let name: String = serde_json::from_slice(&self.current)
                .map_err(|e| Malformed(format!("Malformed JSON string in the array: {e}.")))?;
            self.out.push(Entry::Name(name));
        }
        self.current.clear();
        self.overflow = false;
        Ok(())
    }
}

/// The first field of a CSV line (RFC 4180: a quoted field may hold commas and doubled quotes).
fn first_csv_field(line: &str) -> String {
    let Some(rest) = line.strip_prefix('"') else {
        return line.split(',').next().unwrap_or("").to_owned();
    };
    let mut field = String::new();
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '"' {
            if chars.peek() == Some(&'"') {
                field.push('"');
                chars.next();
            } else {
                break;
            }
        } else {
            field.push(c);
        }
    }
    field
}

fn ndjson_entry(line: &str) -> Entry {
    match serde_json::from_str::<serde_json::Value>(line) {
        Ok(serde_json::Value::String(name)) => Entry::Name(name),
        Ok(serde_json::Value::Object(map)) => match map.get("domain") {
            Some(serde_json::Value::String(name)) => Entry::Name(name.clone()),
            _ => {
                Entry::Rejected { input: line.to_owned(), error: "An NDJSON object needs a \"domain\" string.".into() }
            }
        },
        Ok(_) => Entry::Rejected {
            input: line.to_owned(),
            error: "An NDJSON line must be a string or {\"domain\": …}.".into(),
        },
        Err(e) => Entry::Rejected { input: line.to_owned(), error: format!("Not JSON: {e}.") },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(format: Format, body: &[u8], chunk: usize) -> Result<Vec<Entry>, Malformed> {
        let mut entries = Entries::new(format);
        let mut all = Vec::new();
        for part in body.chunks(chunk.max(1)) {
            entries.push(part)?;
            all.extend(entries.take());
        }
        entries.finish()?;
        all.extend(entries.take());
        Ok(all)
    }

    fn names(list: &[&str]) -> Vec<Entry> {
        list.iter().map(|n| Entry::Name((*n).to_owned())).collect()
    }

    #[test]
    fn every_format_gives_the_same_names_whatever_the_chunking() {
        let cases: [(Format, &[u8]); 4] = [
            (Format::JsonArray, b" [\"a.com\", \"b\\u002enet\" ,\"c,\\\"d\"]\n"),
            (Format::Ndjson, b"\"a.com\"\n{\"domain\":\"b.net\"}\n\n\"c,\\\"d\"\n"),
            (Format::Csv, b"domain,note\r\na.com,x\r\nb.net\r\n\"c,\"\"d\",y"),
            (Format::Text, b"a.com\n\n b.net \r\nc,\"d"),
        ];
        for (format, body) in cases {
            for chunk in [1, 2, 3, 7, 1000] {
                assert_eq!(
                    parse(format, body, chunk).expect("parses"),
                    names(&["a.com", "b.net", "c,\"d"]),
                    "{format:?} {chunk}"
                );
            }
        }
    }

    #[test]
    fn bad_input_is_reported_or_refused() {
        assert!(parse(Format::JsonArray, b"{\"domains\":[]}", 4).is_err());
        assert!(parse(Format::JsonArray, b"[\"a\", 1]", 4).is_err());
        assert!(parse(Format::JsonArray, b"[\"a\"", 4).is_err());
        assert!(parse(Format::JsonArray, b"[\"a\"] x", 4).is_err());
        assert!(parse(Format::JsonArray, b"", 4).is_err());
        assert_eq!(parse(Format::JsonArray, b"[]", 4).expect("empty"), vec![]);
        let long = format!("[\"{}\", \"ok.com\"]", "x".repeat(5000));
        let parsed = parse(Format::JsonArray, long.as_bytes(), 100).expect("parses");
        assert!(matches!(&parsed[0], Entry::Rejected { input, .. } if input.len() == MAX_ENTRY_BYTES));
        assert_eq!(parsed[1], Entry::Name("ok.com".into()));
        let ndjson = parse(Format::Ndjson, b"1\n{\"x\":1}\nnot json\n", 3).expect("parses");
        assert!(ndjson.iter().all(|e| matches!(e, Entry::Rejected { .. })), "{ndjson:?}");
        let bytes = parse(Format::Text, &[0xff, 0xfe, b'\n', b'a'], 1).expect("any bytes");
        assert_eq!(bytes.len(), 2);
    }

    #[test]
    fn content_types_map_to_formats() {
        assert_eq!(Format::of("application/json; charset=utf-8"), Some(Format::JsonArray));
        assert_eq!(Format::of("application/x-ndjson"), Some(Format::Ndjson));
        assert_eq!(Format::of("Text/CSV"), Some(Format::Csv));
        assert_eq!(Format::of("text/plain"), Some(Format::Text));
        assert_eq!(Format::of("application/xml"), None);
    }
}
