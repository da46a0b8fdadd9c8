//! The vocabulary of an index: each distinct word once, with postings (which link, in which fields).
//! Query terms are matched against the vocabulary (one SIMD substring scan over all words, or one
//! linear pass when a typo is allowed) instead of against every link.
//!
//! Two tiers, as in a log-structured merge tree: new words go to the fresh tier (a hash lookup, lists that grow,
//! buckets for typo passes: ~80 bytes a word), which once it holds `FRESH_WORDS` words becomes a frozen run
//! (`frozen::Frozen`: sorted, a few bytes a word beside its text). `FAN` runs of about the same size are merged
//! into one, so a bulk load rewrites each word a few times, and a query reads a few runs; after a bulk load
//! (`shrink_to_fit`) and a compaction everything is merged into one run. A word may be in several runs and in the
//! fresh tier: each part of its postings is reported, the oldest first.

use super::corpus::Corpus;
use super::frozen::{prefix_key, varint_len, Encoded, Frozen};
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

    /// `generation << FIELD_BITS | fields`, as the frozen tier stores it.
    pub fn packed(self) -> u32 {
        self.packed
    }

    pub fn from_packed(slot: u32, packed: u32) -> Self {
        Posting { slot, packed }
    }
}

/// The fresh tier becomes a run once it holds this many words (~1.3 MB then).
const FRESH_WORDS: usize = 1 << 14;
/// The newest `FAN` runs are merged into one when the oldest of them is at most twice the newest's size: a bulk load
/// rewrites each word about log4(words / `FRESH_WORDS`) + 2 times, and a query reads at most three runs of each size.
const FAN: usize = 4;

#[derive(Debug, Default)]
pub struct Vocab {
    fresh: Fresh,
    /// Frozen runs, oldest first.
    runs: Vec<Frozen>,
}

/// The fresh tier: words since the last merge.
#[derive(Debug, Default)]
struct Fresh {
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

/// The postings of one word: its frozen ones, then its fresh ones (in the order they were added).
#[derive(Debug, Clone, Copy, Default)]
pub struct Postings<'a> {
    frozen: Encoded<'a>,
    head: Option<&'a Posting>,
    rest: &'a [Posting],
}

impl<'a> Postings<'a> {
    fn frozen(frozen: Encoded<'a>) -> Self {
        Postings {
            frozen,
            ..Postings::default()
        }
    }

    pub fn iter(self) -> impl Iterator<Item = Posting> + 'a {
        (self.frozen.iter())
            .chain(self.head.copied())
            .chain(self.rest.iter().copied())
    }

    pub fn len(self) -> usize {
        self.frozen.len() + usize::from(self.head.is_some()) + self.rest.len()
    }
}

/// What a pass over the words of one tier calls for each word.
type OnWord<'f> = dyn FnMut(&str, Postings<'_>) + 'f;

/// A tier of the vocabulary, as `for_each_match` reads it.
trait Tier {
    /// Every word a typo pass for `term` must look at, each once.
    fn typo_candidates(&self, term: &Term, on_word: &mut OnWord<'_>);
    /// Every word starting with `prefix`.
    fn with_prefix(&self, prefix: &str, on_word: &mut OnWord<'_>);
    /// Every word containing the needle of `finder`, each once.
    fn containing(&self, finder: &Finder<'_>, on_word: &mut OnWord<'_>);
}

impl Vocab {
    pub fn add(&mut self, word: &str, posting: Posting) {
        self.fresh.add(word, posting);
        if self.fresh.text.len() >= FRESH_WORDS {
            self.flush();
        }
    }

    /// The fresh tier as a new run (then the newest runs merged, see `FAN`), leaving it empty.
    fn flush(&mut self) {
        let run = self.merged(0);
        self.runs.push(run);
        while self.runs.len() >= FAN
            && self.runs[self.runs.len() - FAN].len() <= 2 * self.runs[self.runs.len() - 1].len()
        {
            let tail = self.runs.split_off(self.runs.len() - FAN);
            self.runs.push(Frozen::merge(&tail, std::iter::empty(), 0, 0));
        }
    }

    /// Merges every run and the fresh tier into one run, leaving the fresh tier empty (its memory given back).
    pub fn freeze(&mut self) {
        if self.runs.len() + usize::from(self.fresh.text.len() > 0) > 1 {
            let run = self.merged(self.runs.len());
            self.runs.clear();
            self.runs.push(run);
        } else if self.fresh.text.len() > 0 {
            self.flush();
        }
        self.runs.shrink_to_fit();
    }

    /// One run of the newest `runs` runs and of the fresh tier (then emptied); those runs are dropped.
    fn merged(&mut self, runs: usize) -> Frozen {
        let fresh = std::mem::take(&mut self.fresh);
        let order = fresh.sorted();
        let words = order.iter().map(|&id| {
            let id = id as usize;
            (
                fresh.text.entry_text(id),
                std::slice::from_ref(&fresh.heads[id]),
                fresh.rest[id].as_slice(),
            )
        });
        let tail = self.runs.split_off(self.runs.len() - runs);
        Frozen::merge(&tail, words, fresh.text.text_bytes(), fresh.encoded_bytes())
    }

    /// Heap bytes held, from capacities (see `Fresh::memory_bytes`).
    pub fn memory_bytes(&self) -> usize {
        self.fresh.memory_bytes()
            + self.runs.capacity() * size_of::<Frozen>()
            + self.runs.iter().map(Frozen::memory_bytes).sum::<usize>()
    }

    /// Every word frozen, in one run: what a bulk load leaves takes the least memory.
    pub fn shrink_to_fit(&mut self) {
        self.freeze();
    }

    #[cfg(test)]
    pub fn held_counted(&self) -> usize {
        self.fresh.held_counted()
    }

    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.fresh.held
    }

    #[cfg(test)]
    pub fn postings_held(&self) -> usize {
        self.fresh.postings_held() + self.runs.iter().map(Frozen::postings_held).sum::<usize>()
    }

    /// Calls `on_postings` with the postings of exactly `word`: once for each run and tier it is in, the oldest
    /// first.
    pub fn for_each_exact(&self, word: &str, mut on_postings: impl FnMut(Postings<'_>)) {
        for run in &self.runs {
            if let Some(postings) = run.exact(word) {
                on_postings(Postings::frozen(postings));
            }
        }
        if let Some(id) = self.fresh.id(word) {
            on_postings(self.fresh.postings(id as usize));
        }
    }

    /// Calls `on_word` with the postings of every word containing the needle of `finder`; a word in several runs
    /// is reported once for each.
    pub fn for_each_containing(&self, finder: &Finder<'_>, mut on_word: impl FnMut(&str, Postings<'_>)) {
        for run in &self.runs {
            run.containing(finder, &mut on_word);
        }
        self.fresh.containing(finder, &mut on_word);
    }

    /// Calls `on_match` for every word `term` matches: exactly, as a prefix, with a typo, or (`Substring`,
    /// terms of `SUBSTRING_MIN_CHARS` or more) anywhere inside the word. A word may be reported twice (and once
    /// for each run it is in).
    pub fn for_each_match(&self, term: &Term, mut on_match: impl FnMut(Quality, Postings<'_>)) {
        for run in &self.runs {
            match_in(run, term, &mut on_match);
        }
        match_in(&self.fresh, term, &mut on_match);
    }
}

fn match_in(tier: &impl Tier, term: &Term, on_match: &mut impl FnMut(Quality, Postings<'_>)) {
    let fuzzy = term.allows_typos();
    if fuzzy {
        let head = term.text.as_bytes();
        let mut scratch = Vec::new();
        tier.typo_candidates(term, &mut |word, postings| {
            let ascii = word.is_ascii();
            if ascii && term.is_ascii() && !could_be_close(head, word.as_bytes()) {
                return;
            }
            if let Some(quality) = term.quality(word, ascii, &mut scratch) {
                on_match(quality, postings);
            }
        });
    }
    let substrings = term.allows_substrings();
    if !fuzzy && !substrings {
        // Only matches at a word's start count: find those directly.
        return tier.with_prefix(&term.text, &mut |word, postings| {
            let quality = if word.len() == term.text.len() {
                Quality::Exact
            } else {
                Quality::Prefix
            };
            on_match(quality, postings);
        });
    }
    tier.containing(&Finder::new(&term.text), &mut |word, postings| {
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

impl Tier for Frozen {
    fn typo_candidates(&self, term: &Term, on_word: &mut OnWord<'_>) {
        match term.text.as_bytes() {
            [t0, t1, ..] if term.is_ascii() => {
                self.for_each_typo_candidate(*t0, *t1, |word, postings| on_word(word, Postings::frozen(postings)))
            }
            _ => self.for_each(|word, postings| on_word(word, Postings::frozen(postings))),
        }
    }

    fn with_prefix(&self, prefix: &str, on_word: &mut OnWord<'_>) {
        self.for_each_with_prefix(prefix.as_bytes(), |word, postings| {
            on_word(word, Postings::frozen(postings))
        });
    }

    fn containing(&self, finder: &Finder<'_>, on_word: &mut OnWord<'_>) {
        self.for_each_containing(finder, |word, postings| on_word(word, Postings::frozen(postings)));
    }
}

impl Tier for Fresh {
    fn typo_candidates(&self, term: &Term, on_word: &mut OnWord<'_>) {
        for id in self.typo_ids(term) {
            let id = id as usize;
            on_word(self.text.entry_text(id), self.postings(id));
        }
    }

    fn with_prefix(&self, prefix: &str, on_word: &mut OnWord<'_>) {
        self.text
            .scan_prefix(prefix, |id| on_word(self.text.entry_text(id), self.postings(id)));
    }

    fn containing(&self, finder: &Finder<'_>, on_word: &mut OnWord<'_>) {
        self.text
            .scan(finder, |id| on_word(self.text.entry_text(id), self.postings(id)));
    }
}

impl Fresh {
    fn add(&mut self, word: &str, posting: Posting) {
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
    fn held_counted(&self) -> usize {
        self.rest.iter().map(postings_bytes).sum::<usize>()
            + self.collided.keys().map(|k| allocation(k.len())).sum::<usize>()
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
    fn typo_ids<'a>(&'a self, term: &'a Term) -> Box<dyn Iterator<Item = u32> + 'a> {
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
    fn postings_held(&self) -> usize {
        self.heads.len() + self.rest.iter().map(Vec::len).sum::<usize>()
    }

    fn postings(&self, id: usize) -> Postings<'_> {
        Postings {
            frozen: Encoded::default(),
            head: Some(&self.heads[id]),
            rest: &self.rest[id],
        }
    }

    /// Bytes the postings of every word take once frozen (see `frozen`).
    fn encoded_bytes(&self) -> usize {
        (0..self.text.len())
            .map(|id| {
                let len = self.text.entry_text(id).len() as u32;
                let (head, rest) = (self.heads[id], &self.rest[id]);
                if rest.is_empty() {
                    varint_len(len * 2 + 1) + varint_len(head.slot) + varint_len(head.packed())
                } else {
                    let count = 1 + rest.len();
                    varint_len(len * 2) + varint_len(count as u32) + count * size_of::<Posting>()
                }
            })
            .sum()
    }

    /// Ids of the words, sorted bytewise: by their first 8 bytes as a number (zeros after a shorter word: ordered as
    /// the words are), then the few sharing those by the whole word.
    fn sorted(&self) -> Vec<u32> {
        let mut keyed: Vec<(u64, u32)> = (0..self.text.len())
            .map(|id| (prefix_key(self.text.entry_text(id)), id as u32))
            .collect();
        keyed.sort_unstable();
        let mut start = 0;
        while start < keyed.len() {
            let end = start + keyed[start..].iter().take_while(|k| k.0 == keyed[start].0).count();
            if end - start > 1 {
                keyed[start..end].sort_unstable_by(|a, b| {
                    (self.text.entry_text(a.1 as usize)).cmp(self.text.entry_text(b.1 as usize))
                });
            }
            start = end;
        }
        keyed.into_iter().map(|(_, id)| id).collect()
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
        let taken = vocab.fresh.hasher.hash_one("beta");
        vocab.fresh.lookup.insert(taken, 0);
        vocab.add("beta", posting(2));
        vocab.add("beta", posting(3));
        let exact = |word: &str| {
            let mut all = Vec::new();
            vocab.for_each_exact(word, |postings| all.extend(postings.iter()));
            all
        };
        assert_eq!(exact("alpha"), [posting(1)]);
        assert_eq!(exact("beta"), [posting(2), posting(3)]);
        assert_eq!(vocab.fresh.collided.len(), 1);
    }

    #[test]
    fn matches_by_quality() {
        let mut vocab = Vocab::default();
        for (i, word) in ["python", "pythonic", "python", "java", "cpython"].iter().enumerate() {
            vocab.add(word, posting(i as u32));
        }
        let exact = |word: &str| {
            let mut n = 0;
            vocab.for_each_exact(word, |postings| n += postings.len());
            n
        };
        assert_eq!(exact("python"), 2);
        assert_eq!(exact("pyth"), 0);
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

    /// Every (quality, posting) reported for `term`, sorted.
    fn reported(vocab: &Vocab, term: &Term) -> Vec<(Quality, u32, u32, u8)> {
        let mut seen = Vec::new();
        vocab.for_each_match(term, |q, postings| {
            seen.extend(postings.iter().map(|p| (q, p.slot, p.generation(), p.fields())));
        });
        seen.sort();
        seen
    }

    #[test]
    fn runs_and_fresh_words_answer_as_one_vocabulary() {
        // Words over a small alphabet (many shared prefixes, typos and substrings), some not ASCII.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let alphabet = ["a", "b", "c", "d", "e", "é", "ß", "1"];
        let adds: Vec<(String, Posting)> = (0..6_000)
            .map(|i| {
                let len = 1 + next(8) as usize;
                let word: String = (0..len).map(|_| alphabet[next(8) as usize]).collect();
                (word, Posting::new(i, next(4) as u32, 1 + next(63) as u8))
            })
            .collect();
        let mut fresh_only = Vocab::default();
        let mut layered = Vocab::default();
        let mut frozen = Vocab::default();
        for (i, (word, posting)) in adds.iter().enumerate() {
            fresh_only.add(word, *posting);
            layered.add(word, *posting);
            frozen.add(word, *posting);
            if i % 500 == 250 {
                layered.flush(); // runs of 500 words, merged by eights
            }
        }
        frozen.freeze();
        assert!(fresh_only.runs.is_empty());
        assert!(
            layered.runs.len() > 2 && layered.fresh.text.len() > 0,
            "{}",
            layered.runs.len()
        );
        assert!(frozen.runs.len() == 1 && frozen.fresh.text.len() == 0);
        let total = |v: &Vocab| v.postings_held();
        assert_eq!(total(&layered), 6_000);
        assert_eq!(total(&frozen), 6_000);
        let mut terms: Vec<Term> = Vec::new();
        for text in [
            "a", "ab", "abc", "abcd", "abcde", "bacde", "éaßb", "1é", "ß", "aaaaaa", "dcbae", "e1e1e", "zz",
        ] {
            terms.push(Term::new(text, TermKind::Word));
            terms.push(Term::new(text, TermKind::Tag));
        }
        for (word, _) in adds.iter().step_by(97) {
            terms.push(Term::new(word, TermKind::Word));
            terms.push(Term::new(word, TermKind::Tag));
        }
        for term in &terms {
            let wanted = reported(&fresh_only, term);
            assert_eq!(reported(&layered, term), wanted, "{}", term.text);
            assert_eq!(reported(&frozen, term), wanted, "{}", term.text);
        }
        for (word, _) in adds.iter().step_by(31) {
            let exact = |v: &Vocab| {
                let mut all = Vec::new();
                v.for_each_exact(word, |postings| all.extend(postings.iter()));
                all
            };
            assert_eq!(exact(&layered), exact(&fresh_only), "{word}");
            assert_eq!(exact(&frozen), exact(&fresh_only), "{word}");
            let half: String = word.chars().skip(word.chars().count() / 2).collect();
            let containing = |v: &Vocab| {
                let mut all = Vec::new();
                v.for_each_containing(&Finder::new(&half), |_, postings| {
                    all.extend(postings.iter().map(|p| p.slot))
                });
                all.sort();
                all
            };
            assert_eq!(containing(&layered), containing(&fresh_only), "{word}");
            assert_eq!(containing(&frozen), containing(&fresh_only), "{word}");
        }
        assert!(frozen.memory_bytes() < fresh_only.memory_bytes() / 2);
    }
}
