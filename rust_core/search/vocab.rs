//! The vocabulary of an index: each distinct word once, with postings (which link, in which fields).
//! Query terms are matched against the vocabulary (one SIMD substring scan over all words, or one
//! linear pass when a typo is allowed) instead of against every link.

use super::corpus::Corpus;
use super::matching::{Quality, Term};
use memchr::memmem::Finder;
use std::collections::hash_map::{Entry, RandomState};
use std::collections::HashMap;
use std::hash::BuildHasher;

/// One link's use of one word: 8 bytes, the bulk of an index's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Posting {
    pub slot: u32,
    /// `generation << FIELD_BITS | fields`, where bit `f` of fields is set when the word occurs in field `f`.
    packed: u32,
}

const FIELD_BITS: u32 = 6;

/// Generations wrap within this many bits (what is left of a `u32` next to the field bits).
pub const GENERATION_MASK: u32 = u32::MAX >> FIELD_BITS;

impl Posting {
    pub fn new(slot: u32, generation: u32, fields: u8) -> Self {
        debug_assert!(generation <= GENERATION_MASK && u32::from(fields) < 1 << FIELD_BITS);
        Posting {
            slot,
            packed: generation << FIELD_BITS | u32::from(fields),
        }
    }

    pub fn generation(self) -> u32 {
        self.packed >> FIELD_BITS
    }

    pub fn fields(self) -> u8 {
        (self.packed & ((1 << FIELD_BITS) - 1)) as u8
    }
}

#[derive(Debug, Default)]
pub struct Vocab {
    /// All words, one entry each (entry = word id), so a substring scan walks one buffer.
    text: Corpus,
    /// Keyed hash of a word -> its id. The words themselves are only in `text`: a second copy as keys
    /// would cost more than the word (an allocation each). The hash is keyed per process, so nobody can
    /// pick words that collide; should two words still share a hash, the later one goes to `collided`.
    lookup: HashMap<u64, u32>,
    collided: HashMap<Box<str>, u32>,
    hasher: RandomState,
    /// Per word: its first posting inline, the others in `rest`. Most words of a big account occur in one
    /// link (slugs, ids in URLs): reading their posting then walks one array instead of chasing an
    /// allocation per word, and an empty `rest` allocates nothing.
    heads: Vec<Posting>,
    rest: Vec<Vec<Posting>>,
    /// ASCII words by their first byte and by their second: a typo match of an ASCII term must have the
    /// term's first or second byte there (`could_be_close`), so a typo pass reads four buckets, not every word.
    by_first: Vec<Vec<u32>>,
    by_second: Vec<Vec<u32>>,
    /// Words with a non-ASCII byte: checked by every typo pass.
    non_ascii: Vec<u32>,
    /// Heap bytes of the `rest` lists and of the `collided` keys, kept as they grow, so `memory_bytes` costs
    /// the same whatever the vocabulary's size (it runs after every change).
    held: usize,
}

/// Bytes an allocation of `bytes` takes, with the allocator's usual 16-byte rounding and header.
fn allocation(bytes: usize) -> usize {
    if bytes == 0 {
        0
    } else {
        (bytes + 8).div_ceil(16) * 16
    }
}

fn postings_bytes(list: &Vec<Posting>) -> usize {
    allocation(list.capacity() * size_of::<Posting>())
}

/// The postings of one word.
#[derive(Debug, Clone, Copy)]
pub struct Postings<'a> {
    head: Option<&'a Posting>,
    rest: &'a [Posting],
}

impl<'a> Postings<'a> {
    const NONE: Postings<'static> = Postings { head: None, rest: &[] };

    pub fn iter(self) -> impl Iterator<Item = &'a Posting> {
        self.head.into_iter().chain(self.rest)
    }

    pub fn len(self) -> usize {
        usize::from(self.head.is_some()) + self.rest.len()
    }

    #[cfg(test)]
    pub fn is_empty(self) -> bool {
        self.head.is_none()
    }
}

impl Vocab {
    pub fn add(&mut self, word: &str, posting: Posting) {
        let id = match self.id(word) {
            Some(id) => id,
            None => {
                let id = self.text.push(word) as u32;
                let hash = self.hasher.hash_one(word);
                match self.lookup.entry(hash) {
                    Entry::Occupied(_) => {
                        self.collided.insert(word.into(), id);
                        self.held += allocation(word.len());
                    }
                    Entry::Vacant(free) => {
                        free.insert(id);
                    }
                }
                self.heads.push(posting);
                self.rest.push(Vec::new());
                self.bucket(word, id);
                return;
            }
        };
        let list = &mut self.rest[id as usize];
        let before = postings_bytes(list);
        list.push(posting);
        self.held += postings_bytes(list) - before;
    }

    fn id(&self, word: &str) -> Option<u32> {
        let &id = self.lookup.get(&self.hasher.hash_one(word))?;
        if self.text.entry_text(id as usize) == word {
            Some(id)
        } else {
            self.collided.get(word).copied()
        }
    }

    /// Heap bytes held, from capacities. A hash map entry is counted with its control byte; each
    /// allocation (key, postings list) with the allocator's usual 16-byte rounding and header.
    pub fn memory_bytes(&self) -> usize {
        let lookup = self.lookup.capacity() * (size_of::<(u64, u32)>() + 1)
            + self.collided.capacity() * (size_of::<(Box<str>, u32)>() + 1);
        let postings = self.heads.capacity() * size_of::<Posting>() + self.rest.capacity() * size_of::<Vec<Posting>>();
        let buckets = (self.by_first.iter().chain(&self.by_second))
            .map(|b| size_of::<Vec<u32>>() + allocation(b.capacity() * size_of::<u32>()))
            .sum::<usize>()
            + self.non_ascii.capacity() * size_of::<u32>();
        self.text.memory_bytes() + lookup + postings + self.held + buckets
    }

    /// `held`, counted again from every list and key (what `memory_bytes` did on every call before).
    #[cfg(test)]
    pub fn held_counted(&self) -> usize {
        self.rest.iter().map(postings_bytes).sum::<usize>()
            + self.collided.keys().map(|k| allocation(k.len())).sum::<usize>()
    }

    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.held
    }

    pub fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.lookup.shrink_to_fit();
        self.heads.shrink_to_fit();
        self.rest.shrink_to_fit();
        self.rest.iter_mut().for_each(Vec::shrink_to_fit);
        self.held = self.rest.iter().map(postings_bytes).sum::<usize>()
            + self.collided.keys().map(|k| allocation(k.len())).sum::<usize>();
        for bucket in self.by_first.iter_mut().chain(&mut self.by_second) {
            bucket.shrink_to_fit();
        }
        self.non_ascii.shrink_to_fit();
    }

    fn bucket(&mut self, word: &str, id: u32) {
        if self.by_first.is_empty() {
            self.by_first.resize_with(128, Vec::new);
            self.by_second.resize_with(128, Vec::new);
        }
        match word.as_bytes() {
            bytes if !word.is_ascii() || bytes.is_empty() => self.non_ascii.push(id),
            [first] => self.by_first[usize::from(*first)].push(id),
            [first, second, ..] => {
                self.by_first[usize::from(*first)].push(id);
                self.by_second[usize::from(*second)].push(id);
            }
            [] => {}
        }
    }

    /// Ids of the words a typo pass for `term` must look at, each once.
    fn typo_candidates<'a>(&'a self, term: &'a Term) -> Box<dyn Iterator<Item = u32> + 'a> {
        let bytes = term.text.as_bytes();
        if !term.is_ascii() || bytes.len() < 2 || self.by_first.is_empty() {
            return Box::new(0..self.text.len() as u32);
        }
        let (t0, t1) = (usize::from(bytes[0]), usize::from(bytes[1]));
        let firsts = if t0 == t1 { vec![t0] } else { vec![t0, t1] };
        let by_first = firsts
            .clone()
            .into_iter()
            .flat_map(|b| self.by_first[b].iter().copied());
        // Words starting with t0 or t1 were in `by_first` already.
        let by_second = firsts.into_iter().flat_map(move |b| {
            self.by_second[b].iter().copied().filter(move |&id| {
                let first = usize::from(self.text.entry_text(id as usize).as_bytes()[0]);
                first != t0 && first != t1
            })
        });
        Box::new(by_first.chain(by_second).chain(self.non_ascii.iter().copied()))
    }

    #[cfg(test)]
    pub fn postings_held(&self) -> usize {
        self.heads.len() + self.rest.iter().map(Vec::len).sum::<usize>()
    }

    fn postings(&self, id: usize) -> Postings<'_> {
        Postings {
            head: Some(&self.heads[id]),
            rest: &self.rest[id],
        }
    }

    /// Postings of exactly `word`.
    pub fn exact(&self, word: &str) -> Postings<'_> {
        self.id(word).map_or(Postings::NONE, |id| self.postings(id as usize))
    }

    /// Calls `on_word` with the postings of every word containing the needle of `finder`.
    pub fn for_each_containing(&self, finder: &Finder<'_>, mut on_word: impl FnMut(&str, Postings<'_>)) {
        self.text
            .scan(finder, |id| on_word(self.text.entry_text(id), self.postings(id)));
    }

    /// Calls `on_match` for every word `term` matches: exactly, as a prefix, with a typo, or (`Substring`,
    /// terms of `SUBSTRING_MIN_CHARS` or more) anywhere inside the word. A word may be reported twice.
    pub fn for_each_match(&self, term: &Term, mut on_match: impl FnMut(Quality, Postings<'_>)) {
        let fuzzy = term.allows_typos();
        if fuzzy {
            let head = term.text.as_bytes();
            let mut scratch = Vec::new();
            for id in self.typo_candidates(term) {
                let id = id as usize;
                let word = self.text.entry_text(id);
                let ascii = word.is_ascii();
                if ascii && term.is_ascii() && !could_be_close(head, word.as_bytes()) {
                    continue;
                }
                if let Some(quality) = term.quality(word, ascii, &mut scratch) {
                    on_match(quality, self.postings(id));
                }
            }
        }
        let substrings = term.allows_substrings();
        if !fuzzy && !substrings {
            // Only matches at a word's start count: find those directly.
            return self.text.scan_prefix(&term.text, |id| {
                let quality = if self.text.entry_text(id).len() == term.text.len() {
                    Quality::Exact
                } else {
                    Quality::Prefix
                };
                on_match(quality, self.postings(id));
            });
        }
        self.for_each_containing(&Finder::new(&term.text), |word, postings| {
            match (word.starts_with(term.text.as_str()), fuzzy) {
                (false, _) if substrings => on_match(Quality::Substring, postings),
                (false, _) => {}
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
        Posting::new(slot, 0, 1)
    }

    fn matches(vocab: &Vocab, term: &str) -> Vec<(Quality, usize)> {
        let mut seen = Vec::new();
        vocab.for_each_match(&Term::new(term, TermKind::Word), |q, p| seen.push((q, p.len())));
        seen.sort_by_key(|&(q, n)| (std::cmp::Reverse(q), n));
        seen
    }

    #[test]
    fn words_sharing_a_hash_stay_apart() {
        let mut vocab = Vocab::default();
        vocab.add("alpha", posting(1));
        // As if "beta" hashed like "alpha": its id must not be taken for alpha's, nor the other way round.
        let taken = vocab.hasher.hash_one("beta");
        vocab.lookup.insert(taken, 0);
        vocab.add("beta", posting(2));
        vocab.add("beta", posting(3));
        let exact = |word: &str| vocab.exact(word).iter().copied().collect::<Vec<_>>();
        assert_eq!(exact("alpha"), [posting(1)]);
        assert_eq!(exact("beta"), [posting(2), posting(3)]);
        assert_eq!(vocab.collided.len(), 1);
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
        assert_eq!(matches(&vocab, "py"), [(Quality::Prefix, 1), (Quality::Prefix, 2)]);
        assert_eq!(matches(&vocab, "ava"), [(Quality::Substring, 1)]);
        assert!(matches(&vocab, "av").is_empty(), "too short to match inside a word");
    }
}
