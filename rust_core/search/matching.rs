//! Query terms and how a term matches a word: exactly, as a prefix, or (long terms) with one typo.

use super::normalize::{is_word_char, normalize};

/// Fields of a link, in the order of `FIELD_NAMES` and `FIELD_WEIGHTS`.
pub const SLUG: usize = 0;
pub const TITLE: usize = 1;
pub const HASHTAGS: usize = 2;
pub const DESCRIPTION: usize = 3;
pub const NOTE: usize = 4;
pub const URL: usize = 5;
pub const FIELD_NAMES: [&str; 6] = ["slug", "title", "hashtags", "description", "note", "destination_url"];
pub const FIELD_WEIGHTS: [f64; 6] = [3.0, 3.0, 2.0, 1.2, 1.2, 1.0];

/// Terms shorter than this (in chars) never match with a typo: too many false friends.
pub const FUZZY_MIN_CHARS: usize = 5;

/// Terms shorter than this never match inside a word (of the URL): "a" would be in nearly every word, so
/// each such term would walk most of the index for matches that say nothing.
pub const SUBSTRING_MIN_CHARS: usize = 3;

/// Terms of a query beyond this many (after duplicates are dropped) are ignored: each one costs a pass
/// over the postings it matches, and a dozen terms already pin a link down.
pub const MAX_TERMS: usize = 16;

/// Once a query has read this many postings (8 bytes each), it takes no further terms: those are ignored
/// like terms past `MAX_TERMS`. Only absurd queries get here (a dozen one-letter terms on a big account: a
/// word term reads one posting per link that has it), and it bounds what any query costs.
pub const MAX_EXAMINED: usize = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Quality {
    /// The term occurs inside the destination URL, though not at a word start.
    Substring,
    Fuzzy,
    Prefix,
    Exact,
}

impl Quality {
    pub fn value(self) -> f64 {
        match self {
            Self::Exact => 1.0,
            Self::Prefix => 0.6,
            Self::Fuzzy => 0.35,
            Self::Substring => 0.3,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TermKind {
    /// Matches words of any field (and substrings of the URL).
    Word,
    /// `#tag`: matches whole hashtags only.
    Tag,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    pub text: String,
    pub kind: TermKind,
    chars: Vec<char>,
    ascii: bool,
}

impl Term {
    pub fn new(text: &str, kind: TermKind) -> Self {
        Term {
            text: text.to_owned(),
            kind,
            chars: text.chars().collect(),
            ascii: text.is_ascii(),
        }
    }

    pub fn is_ascii(&self) -> bool {
        self.ascii
    }

    /// Typos are tolerated only in terms of `FUZZY_MIN_CHARS` or more, and never in hashtags.
    pub fn allows_typos(&self) -> bool {
        self.kind == TermKind::Word && self.chars.len() >= FUZZY_MIN_CHARS
    }

    /// Only word terms of `SUBSTRING_MIN_CHARS` or more match inside a word.
    pub fn allows_substrings(&self) -> bool {
        self.kind == TermKind::Word && self.chars.len() >= SUBSTRING_MIN_CHARS
    }

    /// How this term matches the start of `word` (normalized), if at all: exactly, as a prefix or with a typo.
    /// `word_is_ascii` is passed in by callers that know it; `scratch` avoids an allocation per word.
    pub fn quality(&self, word: &str, word_is_ascii: bool, scratch: &mut Vec<char>) -> Option<Quality> {
        if let Some(rest) = word.strip_prefix(self.text.as_str()) {
            return Some(if rest.is_empty() {
                Quality::Exact
            } else {
                Quality::Prefix
            });
        }
        if !self.allows_typos() {
            return None;
        }
        let fuzzy = if self.ascii && word_is_ascii {
            fuzzy_match(self.text.as_bytes(), word.as_bytes())
        } else {
            scratch.clear();
            scratch.extend(word.chars());
            fuzzy_match(&self.chars, scratch)
        };
        fuzzy.then_some(Quality::Fuzzy)
    }
}

/// Within Damerau distance 1 of `word`, or of `word`'s prefix of the term's length.
fn fuzzy_match<T: PartialEq>(term: &[T], word: &[T]) -> bool {
    within_one(term, word) || (word.len() > term.len() && within_one(term, &word[..term.len()]))
}

/// Optimal-string-alignment distance of `a` and `b` is at most 1.
pub fn within_one<T: PartialEq>(a: &[T], b: &[T]) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if long.len() - short.len() > 1 {
        return false;
    }
    let p = short.iter().zip(long).take_while(|(x, y)| x == y).count();
    if p == short.len() {
        return true;
    }
    if short.len() < long.len() {
        return short[p..] == long[p + 1..];
    }
    let substituted = short[p + 1..] == long[p + 1..];
    let transposed =
        p + 1 < short.len() && short[p] == long[p + 1] && short[p + 1] == long[p] && short[p + 2..] == long[p + 2..];
    substituted || transposed
}

/// Terms of a ranked search: `#tag` tokens stay whole, other tokens are split into words. Duplicates dropped;
/// the first `MAX_TERMS` kept.
pub fn search_terms(query: &str) -> Vec<Term> {
    let mut terms: Vec<Term> = Vec::new();
    let mut push = |text: &str, kind: TermKind| {
        if terms.len() < MAX_TERMS && !terms.iter().any(|t| t.text == text && t.kind == kind) {
            terms.push(Term::new(text, kind));
        }
    };
    for token in normalize(query).split_whitespace() {
        match token.strip_prefix('#') {
            Some(tag) if !tag.is_empty() => push(tag, TermKind::Tag),
            _ => token
                .split(|c: char| !is_word_char(c))
                .filter(|w| !w.is_empty())
                .for_each(|w| push(w, TermKind::Word)),
        }
    }
    terms
}

/// A term of a `GET /links?q=` filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterTerm {
    /// A substring of any field.
    Substring(String),
    /// `#tag`: equal to a whole hashtag.
    Tag(String),
}

/// Terms of a `q` filter, duplicates dropped, the first `MAX_TERMS` kept.
pub fn filter_terms(query: &str) -> Vec<FilterTerm> {
    let mut terms = Vec::new();
    for token in normalize(query).split_whitespace() {
        let term = match token.strip_prefix('#') {
            Some(tag) if !tag.is_empty() => FilterTerm::Tag(tag.to_owned()),
            _ => FilterTerm::Substring(token.to_owned()),
        };
        if terms.len() < MAX_TERMS && !terms.contains(&term) {
            terms.push(term);
        }
    }
    terms
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quality(term: &str, word: &str) -> Option<Quality> {
        Term::new(term, TermKind::Word).quality(word, word.is_ascii(), &mut Vec::new())
    }

    #[test]
    fn exact_prefix_and_typos() {
        assert_eq!(quality("rust", "rust"), Some(Quality::Exact));
        assert_eq!(quality("ru", "rust"), Some(Quality::Prefix));
        assert_eq!(quality("rusty", "rust"), Some(Quality::Fuzzy), "deletion");
        assert_eq!(quality("rustyy", "rust"), None);
        assert_eq!(quality("pyhton", "python"), Some(Quality::Fuzzy), "transposition");
        assert_eq!(quality("pythn", "python"), Some(Quality::Fuzzy), "deletion");
        assert_eq!(quality("pythoon", "python"), Some(Quality::Fuzzy), "insertion");
        assert_eq!(quality("pithon", "python"), Some(Quality::Fuzzy), "substitution");
        assert_eq!(
            quality("progrom", "programming"),
            Some(Quality::Fuzzy),
            "typo in a prefix"
        );
        assert_eq!(quality("pxthxn", "python"), None);
        assert_eq!(quality("rost", "rust"), None, "terms under 5 chars never match fuzzily");
        assert_eq!(quality("crème", "crèmé"), Some(Quality::Fuzzy), "non-ascii");
    }

    #[test]
    fn distance_one() {
        assert!(within_one(b"abc", b"abc"));
        assert!(within_one(b"abc", b"acb"));
        assert!(within_one(b"abc", b"ab"));
        assert!(within_one(b"", b"a"));
        assert!(!within_one(b"abc", b"cab"));
        assert!(!within_one(b"abcd", b"ab"));
    }

    #[test]
    fn tag_terms_match_prefixes_but_not_typos() {
        let term = Term::new("rust", TermKind::Tag);
        assert_eq!(term.quality("rust-lang", true, &mut Vec::new()), Some(Quality::Prefix));
        assert_eq!(
            Term::new("pythn", TermKind::Tag).quality("python", true, &mut Vec::new()),
            None
        );
    }

    #[test]
    fn parsing() {
        let terms = search_terms("Rust-Book #Café rust #");
        let texts: Vec<(&str, &TermKind)> = terms.iter().map(|t| (t.text.as_str(), &t.kind)).collect();
        assert_eq!(
            texts,
            [
                ("rust", &TermKind::Word),
                ("book", &TermKind::Word),
                ("cafe", &TermKind::Tag)
            ]
        );
        assert_eq!(
            filter_terms(" Rust-Book  #Café # rust-book"),
            [
                FilterTerm::Substring("rust-book".into()),
                FilterTerm::Tag("cafe".into()),
                FilterTerm::Substring("#".into())
            ]
        );
        assert!(filter_terms("   ").is_empty());
        let many: String = ('a'..='z').map(|c| format!("{c} ")).collect();
        assert_eq!(search_terms(&many).len(), MAX_TERMS);
        assert_eq!(filter_terms(&many).len(), MAX_TERMS);
        assert_eq!(search_terms(&many)[MAX_TERMS - 1].text, "p", "the first ones are kept");
    }
}
