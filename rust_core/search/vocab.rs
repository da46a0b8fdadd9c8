//! The vocabulary of an index: each distinct word once, with postings (which link, in which fields).
//! Query terms are matched against the vocabulary (one SIMD substring scan over all words, or one
//! linear pass when a typo is allowed) instead of against every link.

use super::corpus::Corpus;
use super::matching::{Quality, Term};
use memchr::memmem::Finder;
use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Posting {
    pub slot: u32,
    pub generation: u32,
    /// Bit `f` set when the word occurs in field `f`.
    pub fields: u8,
}

#[derive(Debug, Default)]
pub struct Vocab {
    /// All words, one entry each (owner = word id), so a substring scan walks one buffer.
    text: Corpus,
    /// Per word: its byte range in `text` and whether it is ASCII (the fast path of typo matching).
    shapes: Vec<(u32, u32, bool)>,
    lookup: HashMap<Box<str>, u32>,
    postings: Vec<Vec<Posting>>,
}

impl Vocab {
    pub fn add(&mut self, word: &str, posting: Posting) {
        let id = match self.lookup.get(word) {
            Some(&id) => id,
            None => {
                let id = self.postings.len() as u32;
                let entry = self.text.push(id, 0, [word]);
                let start = self.text.start(entry) as u32;
                self.shapes.push((start, start + word.len() as u32, word.is_ascii()));
                self.lookup.insert(word.into(), id);
                self.postings.push(Vec::new());
                id
            }
        };
        self.postings[id as usize].push(posting);
    }

    fn word(&self, id: usize) -> &str {
        let entry = self.text.entry_text(id);
        &entry[..entry.len() - 1]
    }

    /// Postings of exactly `word`.
    pub fn exact(&self, word: &str) -> &[Posting] {
        self.lookup.get(word).map_or(&[], |&id| &self.postings[id as usize])
    }

    /// Calls `on_word` with the postings of every word containing the needle of `finder`.
    pub fn for_each_containing(&self, finder: &Finder<'_>, mut on_word: impl FnMut(&str, &[Posting])) {
        self.text.scan(finder, |id, _| {
            on_word(self.word(id as usize), &self.postings[id as usize])
        });
    }

    /// Calls `on_match` for every word `term` matches: exactly, as a prefix, with a typo, or (`Substring`)
    /// anywhere inside the word. A word may be reported twice (typo and substring).
    pub fn for_each_match(&self, term: &Term, mut on_match: impl FnMut(Quality, &[Posting])) {
        let fuzzy = term.allows_typos();
        if fuzzy {
            let text = self.text.text();
            let head = term.text.as_bytes();
            let mut scratch = Vec::new();
            for (id, &(start, end, ascii)) in self.shapes.iter().enumerate() {
                let word = &text[start as usize..end as usize];
                if ascii && term.is_ascii() && !could_be_close(head, word.as_bytes()) {
                    continue;
                }
                if let Some(quality) = term.quality(word, ascii, &mut scratch) {
                    on_match(quality, &self.postings[id]);
                }
            }
        }
        self.for_each_containing(&Finder::new(&term.text), |word, postings| {
            match (word.starts_with(term.text.as_str()), fuzzy) {
                (false, _) => on_match(Quality::Substring, postings),
                (true, false) => on_match(
                    if word.len() == term.text.len() {
                        Quality::Exact
                    } else {
                        Quality::Prefix
                    },
                    postings,
                ),
                (true, true) => {} // already reported by the linear pass
            }
        });
    }
}

/// Cheap necessary condition for a word to be within one edit of an ASCII term (or of the term's length
/// prefix of the word): the word is long enough, and one of its first two bytes lines up with the term.
fn could_be_close(term: &[u8], word: &[u8]) -> bool {
    match (term, word) {
        ([t0, t1, ..], [w0, w1, ..]) if word.len() + 1 >= term.len() => w0 == t0 || w0 == t1 || w1 == t0 || w1 == t1,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::matching::TermKind;
    use super::*;

    fn posting(slot: u32) -> Posting {
        Posting {
            slot,
            generation: 0,
            fields: 1,
        }
    }

    fn matches(vocab: &Vocab, term: &str) -> Vec<(Quality, usize)> {
        let mut seen = Vec::new();
        vocab.for_each_match(&Term::new(term, TermKind::Word), |q, p| seen.push((q, p.len())));
        seen.sort_by_key(|&(q, n)| (std::cmp::Reverse(q), n));
        seen
    }

    #[test]
    fn matches_by_quality() {
        let mut vocab = Vocab::default();
        for (i, word) in ["python", "pythonic", "python", "java", "cpython"].iter().enumerate() {
            vocab.add(word, posting(i as u32));
        }
        assert_eq!(vocab.exact("python").len(), 2);
        assert!(vocab.exact("pyth").is_empty());
        assert_eq!(matches(&vocab, "pyhton"), [(Quality::Fuzzy, 1), (Quality::Fuzzy, 2)]);
        assert_eq!(
            matches(&vocab, "python"),
            [
                (Quality::Exact, 2),
                (Quality::Prefix, 1),
                (Quality::Fuzzy, 1),
                (Quality::Substring, 1)
            ]
        );
        assert_eq!(
            matches(&vocab, "py"),
            [(Quality::Prefix, 1), (Quality::Prefix, 2), (Quality::Substring, 1)]
        );
        assert_eq!(matches(&vocab, "av"), [(Quality::Substring, 1)]);
    }
}
