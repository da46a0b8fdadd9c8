//! Text normalization shared by indexing and querying: accent- and case-insensitive comparison.

use caseless::Caseless;
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

/// Appends `normalize(text)` to `out`. Runs of ASCII are only lowercased and the rest goes through the full
/// pipeline run by run: each step works char by char (the canonical reordering of NFKD only moves combining
/// marks, which are dropped), so this is the pipeline over the whole text, minus its cost on ASCII.
pub fn normalize_into(text: &str, out: &mut String) {
    let mut rest = text;
    while !rest.is_empty() {
        let ascii = rest.bytes().position(|b| !b.is_ascii()).unwrap_or(rest.len());
        out.extend(rest[..ascii].chars().map(|c| c.to_ascii_lowercase()));
        rest = &rest[ascii..];
        let other = rest.bytes().position(|b| b.is_ascii()).unwrap_or(rest.len());
        // Folding can itself produce a combining mark (e.g. U+0130 -> "i\u{307}"), hence the second filter.
        out.extend(
            rest[..other]
                .nfkd()
                .filter(|&c| !is_combining_mark(c))
                .default_case_fold()
                .filter(|&c| !is_combining_mark(c)),
        );
        rest = &rest[other..];
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
    fn word_splitting() {
        let w: Vec<&str> = words("https://doc.rust-lang.org/book/ch01").collect();
        assert_eq!(w, ["https", "doc", "rust", "lang", "org", "book", "ch01"]);
        assert_eq!(words("  --  ").count(), 0);
        assert_eq!(words("café au lait").collect::<Vec<_>>(), ["café", "au", "lait"]);
    }
}
