//! Case-insensitive search that keeps offsets in the text itself.
//!
//! Lower-casing changes a text's length and moves every offset after a changed character:
//! U+0130 (`İ`, 2 bytes) lower-cases to `i` + U+0307 (3 bytes), U+2126 OHM SIGN (3 bytes) to
//! U+03C9 `ω` (2 bytes), U+212A KELVIN SIGN (3 bytes) to `k` (1 byte), U+212B ANGSTROM SIGN to
//! `å`, U+1E9E (`ẞ`) to `ß`. An offset found in a lower-cased copy is therefore no offset in the
//! original: slicing the original with it reads the wrong bytes, or panics inside a character
//! (the status line `Domain Status: \u{130} until\u{2126} 2026-01-01` did, issue 32). Even
//! equal lengths prove nothing: U+0130 grows by one byte and U+2126 shrinks by one. (The sign
//! characters are named by code point here: editors normalise them to the letters they look
//! like, whose lower case keeps its length.)
//!
//! [`Lowered`] lower-cases a text one character at a time (Unicode's full lower-case mapping,
//! `char::to_lowercase`, without the word-final sigma rule of `str::to_lowercase`) and keeps, for
//! every character of the original, where its lower-case form starts in the copy, so an offset
//! found in the copy maps back to the original — or to nothing, when it falls inside the
//! expansion of one character (between the `i` and the dot of `i̇`).

/// A lower-cased copy of a text, with the way back to the original's offsets.
#[derive(Debug, Clone)]
pub struct Lowered<'a> {
    original: &'a str,
    lower: String,
    /// `(offset in lower, offset in original)` at the start of each original character and at
    /// the end of both texts, increasing in both.
    bounds: Vec<(usize, usize)>,
}

impl<'a> Lowered<'a> {
    /// Lower-cases `original`, character by character.
    pub fn new(original: &'a str) -> Self {
        let mut lower = String::with_capacity(original.len());
        let mut bounds = Vec::with_capacity(original.len() + 1);
        for (at, c) in original.char_indices() {
            bounds.push((lower.len(), at));
            lower.extend(c.to_lowercase());
        }
        bounds.push((lower.len(), original.len()));
        Self { original, lower, bounds }
    }

    /// The lower-cased copy.
    pub fn as_str(&self) -> &str {
        &self.lower
    }

    /// The offset in the original of byte offset `lower_at` of the copy, when `lower_at` is where
    /// an original character's lower-case form starts (or the end); `None` inside an expansion or
    /// a character.
    pub fn original_offset(&self, lower_at: usize) -> Option<usize> {
        let i = self.bounds.binary_search_by_key(&lower_at, |&(l, _)| l).ok()?;
        self.bounds.get(i).map(|&(_, o)| o)
    }

    /// The original from the character whose lower-case form starts at `lower_at` of the copy
    /// to the end; `None` when `lower_at` maps to no character boundary of the original.
    pub fn original_from(&self, lower_at: usize) -> Option<&'a str> {
        self.original.get(self.original_offset(lower_at)?..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Characters whose lower-case form has another length in UTF-8, or more characters.
    const SHIFTERS: &[&str] = &[
        "\u{130}", "\u{2126}", "\u{1e9e}", "\u{fb01}", "\u{3a3}", "\u{3c2}", "\u{212a}", "\u{212b}", "\u{1c5}",
        "\u{390}",
    ];

    #[test]
    fn offsets_found_in_the_copy_map_back_to_the_same_text_in_the_original() {
        for shifter in SHIFTERS {
            for text in [
                format!("{shifter} untilΩ 2026-01-01"),
                format!("{shifter}{shifter} UNTIL {shifter} 2026"),
                format!("ok-until{shifter}"),
                format!("İ{shifter}Until: x"),
            ] {
                let lowered = Lowered::new(&text);
                let at = lowered.as_str().find("until").expect("the word is in the copy");
                let end = at + "until".len();
                let from = lowered.original_from(at).expect("a word start maps back");
                assert!(from.to_lowercase().starts_with("until"), "{text:?} → {from:?}");
                let rest = lowered.original_from(end).expect("a word end maps back");
                assert!(text.ends_with(rest), "{text:?} → {rest:?}");
                assert_eq!(lowered.original_offset(at).map(|h| h + from.len()), Some(text.len()));
            }
        }
    }

    #[test]
    fn an_offset_inside_an_expansion_maps_to_nothing() {
        // "İ" lower-cases to "i" + U+0307: the offset between them is no character of "İ".
        let lowered = Lowered::new("İx");
        assert_eq!(lowered.as_str(), "i\u{307}x");
        assert_eq!(lowered.original_offset(0), Some(0));
        assert_eq!(lowered.original_offset(1), None);
        assert_eq!(lowered.original_offset(3), Some(2));
        assert_eq!(lowered.original_from(3), Some("x"));
        // Inside a multi-byte character of the copy.
        let lowered = Lowered::new("Ωa");
        assert_eq!(lowered.original_offset(1), None);
        assert_eq!(lowered.original_from(2), Some("a"));
        // Past the end.
        assert_eq!(lowered.original_from(99), None);
    }

    #[test]
    fn the_copy_is_the_per_character_lower_case() {
        for shifter in SHIFTERS {
            let text = format!("A{shifter}b");
            let expected: String = text.chars().flat_map(char::to_lowercase).collect();
            assert_eq!(Lowered::new(&text).as_str(), expected);
        }
    }
}
