//! Text normalization shared by indexing and querying: accent- and case-insensitive comparison.

use caseless::Caseless;
use std::cell::RefCell;
use std::collections::HashMap;
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// NFKD, combining marks stripped, full Unicode case folding ("Crème Brûlée" -> "creme brulee", "ß" -> "ss").
pub fn normalize(text: &str) -> String {
    if text.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    normalize_into(text, &mut out);
    out
}

/// Appends `normalize(text)` to `out`. Runs of ASCII are only lowercased and the rest goes char by char: each step
/// of the pipeline works char by char (the canonical reordering of NFKD only moves combining marks, which are
/// dropped), so this is the pipeline over the whole text, minus its cost on ASCII.
pub fn normalize_into(text: &str, out: &mut String) {
    let mut rest = text;
    while !rest.is_empty() {
        let ascii = rest.bytes().position(|b| !b.is_ascii()).unwrap_or(rest.len());
        out.extend(rest[..ascii].chars().map(|c| c.to_ascii_lowercase()));
        rest = &rest[ascii..];
        let other = rest.bytes().position(|b| b.is_ascii()).unwrap_or(rest.len());
        FOLDED.with(|folded| {
            let mut folded = folded.borrow_mut();
            rest[..other].chars().for_each(|c| folded.push(c, out));
        });
        rest = &rest[other..];
    }
}

/// `normalize_into` of one char (no ASCII needed: it is only lowercased).
pub fn normalize_char(c: char, out: &mut String) {
    if c.is_ascii() {
        out.push(c.to_ascii_lowercase());
    } else {
        FOLDED.with(|folded| folded.borrow_mut().push(c, out));
    }
}

thread_local! {
    static FOLDED: RefCell<Folded> = RefCell::new(Folded::default());
}

/// Non-ASCII chars already normalized by this thread: the pipeline costs ~100 ns a char (its iterators, case
/// folding and decomposition tables), a lookup a fraction of that, and text repeats its chars. At most
/// `FOLDED_MAX` chars are kept (~250 KiB: a worker has dozens of threads), then it starts over.
#[derive(Default)]
struct Folded {
    chars: HashMap<char, Box<str>>,
}

const FOLDED_MAX: usize = 4096;

impl Folded {
    fn push(&mut self, c: char, out: &mut String) {
        if let Some(piece) = self.chars.get(&c) {
            out.push_str(piece);
            return;
        }
        // Folding can itself produce a combining mark (e.g. U+0130 -> "i\u{307}"), hence the second filter.
        let piece: String = c
            .encode_utf8(&mut [0; 4])
            .nfkd()
            .filter(|&c| !is_combining_mark(c))
            .default_case_fold()
            .filter(|&c| !is_combining_mark(c))
            .collect();
        out.push_str(&piece);
        if self.chars.len() >= FOLDED_MAX {
            self.chars.clear();
        }
        self.chars.insert(c, piece.into_boxed_str());
    }
}

/// A word character for tokenizing (anything else separates words).
pub fn is_word_char(c: char) -> bool {
    c.is_alphanumeric()
}

/// The words of already-normalized text.
pub fn words(normalized: &str) -> impl Iterator<Item = &str> {
    normalized.split(|c: char| !is_word_char(c)).filter(|w| !w.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accents_and_case() {
        assert_eq!(normalize("Crème Brûlée"), "creme brulee");
        assert_eq!(normalize("Straße"), "strasse");
        assert_eq!(normalize("ÅNGSTRÖM"), "angstrom");
        assert_eq!(normalize("İstanbul"), "istanbul");
        assert_eq!(normalize("ﬁle №5"), "file no5");
        assert_eq!(normalize("plain ascii"), "plain ascii");
        assert_eq!(normalize("MiXeD"), "mixed");
        assert_eq!(normalize(""), "");
    }

    #[test]
    fn char_by_char_is_the_whole_pipeline() {
        // Twice: the second time from the chars this thread already folded.
        for _ in 0..2 {
            for text in [
                "Crème Brûlée",
                "İstanbul ﬁle №5 ǅ ẞ",
                "e\u{301}\u{327}x\u{FDFA}",
                "Ωμέγα ΣΊΣΥΦΟΣ",
            ] {
                let whole: String = text
                    .nfkd()
                    .filter(|&c| !is_combining_mark(c))
                    .default_case_fold()
                    .filter(|&c| !is_combining_mark(c))
                    .collect();
                assert_eq!(normalize(text), whole, "{text}");
                let mut each = String::new();
                text.chars().for_each(|c| normalize_char(c, &mut each));
                assert_eq!(each, whole, "{text}");
            }
        }
    }

    #[test]
    fn word_splitting() {
        let w: Vec<&str> = words("https://doc.rust-lang.org/book/ch01").collect();
        assert_eq!(w, ["https", "doc", "rust", "lang", "org", "book", "ch01"]);
        assert_eq!(words("  --  ").count(), 0);
        assert_eq!(words("café au lait").collect::<Vec<_>>(), ["café", "au", "lait"]);
    }
}
