//! A frozen run of a vocabulary: words once each, sorted, in two compact buffers, made by merging the fresh tier
//! and other runs (`Vocab`). A word costs its bytes plus a separator, and its postings a few bytes each (varints),
//! where the fresh tier's hash slot, lists and buckets cost ~80 bytes a word: an account whose words are all
//! different (random text) would otherwise take ten times its text.
//!
//! `text` holds the words back to back, each followed by `\n`, so one SIMD substring search covers them all.
//! `postings` holds, for each word in the same order: for a word of one posting (most words of an account with
//! many), `length << 1 | 1` and the posting as two varints (slot, `generation << FIELD_BITS | fields`); for a word
//! of several, `length << 1`, their number, then each as two little-endian `u32`s (the 8 bytes of `Posting`: a
//! common word's thousands of postings are read at memory speed, not decoded). Lengths are in bytes. Every
//! `BLOCK`-th word starts a block whose offsets in both buffers are kept: an exact or prefix lookup is a binary
//! search over the blocks' first words and a walk of at most `BLOCK` words.

use super::vocab::Posting;
use memchr::memmem::Finder;
use std::slice::ChunksExact;

/// Words per block: a lookup walks at most this many, and each block costs 8 bytes.
const BLOCK: usize = 16;

#[derive(Debug, Clone, Copy)]
struct Block {
    text: u32,
    postings: u32,
}

#[derive(Debug, Default)]
pub struct Frozen {
    text: String,
    postings: Vec<u8>,
    blocks: Vec<Block>,
    /// Blocks holding a word that is not all ASCII (or is empty): a typo pass reads those words whatever the
    /// term (see `Vocab`'s buckets).
    odd_blocks: Vec<u32>,
    words: usize,
    /// Postings held, stale ones included.
    count: usize,
}

fn put_varint(out: &mut Vec<u8>, mut value: u32) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn varint(bytes: &[u8], at: &mut usize) -> u32 {
    let mut value = 0u32;
    let mut shift = 0;
    loop {
        let byte = bytes[*at];
        *at += 1;
        value |= u32::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return value;
        }
        shift += 7;
    }
}

/// Offsets are kept as `u32`: an index past 4 GiB is refused rather than corrupted.
fn offset(len: usize) -> u32 {
    u32::try_from(len).expect("a search index past 4 GiB")
}

/// A word's first 8 bytes as a big-endian number, zeros after a shorter word: ordered as the words are (a word's
/// key is below another's only when the word is), and equal only when both share those bytes.
pub fn prefix_key(word: &str) -> u64 {
    prefix_key_of(word.as_bytes())
}

#[inline]
fn prefix_key_of(bytes: &[u8]) -> u64 {
    let mut first = [0u8; 8];
    let n = bytes.len().min(8);
    first[..n].copy_from_slice(&bytes[..n]);
    u64::from_be_bytes(first)
}

/// Bytes `value` takes as a varint.
pub fn varint_len(value: u32) -> usize {
    (32 - value.leading_zeros() as usize).max(1).div_ceil(7)
}

fn is_odd(word: &str) -> bool {
    word.is_empty() || !word.is_ascii()
}

/// The encoded postings of one word (see the module's doc).
#[derive(Debug, Clone, Copy, Default)]
pub struct Encoded<'a> {
    bytes: &'a [u8],
    count: usize,
}

impl<'a> Encoded<'a> {
    pub fn len(self) -> usize {
        self.count
    }

    pub fn iter(self) -> Decode<'a> {
        if self.count == 1 {
            let mut at = 0;
            let slot = varint(self.bytes, &mut at);
            let packed = varint(self.bytes, &mut at);
            Decode {
                single: Some(Posting::from_packed(slot, packed)),
                raw: [].chunks_exact(RAW),
            }
        } else {
            Decode {
                single: None,
                raw: self.bytes.chunks_exact(RAW),
            }
        }
    }
}

/// Postings decoded one by one.
#[derive(Debug, Clone)]
pub struct Decode<'a> {
    single: Option<Posting>,
    raw: ChunksExact<'a, u8>,
}

impl Iterator for Decode<'_> {
    type Item = Posting;

    #[inline]
    fn next(&mut self) -> Option<Posting> {
        if let Some(posting) = self.single.take() {
            return Some(posting);
        }
        self.raw.next().map(from_raw)
    }

    /// Internal iteration (`for_each`, `fold`): a tight loop over the 8-byte postings.
    #[inline]
    fn fold<B, F: FnMut(B, Posting) -> B>(mut self, init: B, mut f: F) -> B {
        let mut acc = init;
        if let Some(posting) = self.single.take() {
            acc = f(acc, posting);
        }
        self.raw.fold(acc, |acc, raw| f(acc, from_raw(raw)))
    }
}

#[inline]
fn from_raw(raw: &[u8]) -> Posting {
    let raw: &[u8; RAW] = raw.try_into().expect("8 bytes");
    let [a, b, c, d, e, f, g, h] = *raw;
    Posting::from_packed(u32::from_le_bytes([a, b, c, d]), u32::from_le_bytes([e, f, g, h]))
}

/// Bytes of a posting in a list: slot and `packed`, 4 bytes each (little-endian).
const RAW: usize = 8;

fn put_raw(out: &mut Vec<u8>, posting: Posting) {
    out.extend_from_slice(&posting.slot.to_le_bytes());
    out.extend_from_slice(&posting.packed().to_le_bytes());
}

/// A position in the frozen words: the start of a word (or the end) in both buffers.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    text: usize,
    postings: usize,
}

/// One word read at a cursor, and where the next one starts.
struct Entry<'a> {
    word: &'a str,
    postings: Encoded<'a>,
    next: Cursor,
}

impl Frozen {
    pub fn len(&self) -> usize {
        self.words
    }

    #[cfg(test)]
    pub fn postings_held(&self) -> usize {
        self.count
    }

    /// Heap bytes held: the capacities of the four buffers.
    pub fn memory_bytes(&self) -> usize {
        self.text.capacity()
            + self.postings.capacity()
            + self.blocks.capacity() * size_of::<Block>()
            + self.odd_blocks.capacity() * size_of::<u32>()
    }

    fn block_start(&self, block: usize) -> Cursor {
        let b = self.blocks[block];
        Cursor {
            text: b.text as usize,
            postings: b.postings as usize,
        }
    }

    fn end(&self) -> Cursor {
        Cursor {
            text: self.text.len(),
            postings: self.postings.len(),
        }
    }

    fn at(&self, cursor: Cursor) -> Option<Entry<'_>> {
        if cursor.text >= self.text.len() {
            return None;
        }
        let mut at = cursor.postings;
        let head = varint(&self.postings, &mut at) as usize;
        let len = head >> 1;
        let (count, bytes) = if head & 1 == 0 {
            let count = varint(&self.postings, &mut at) as usize;
            (count, count * RAW)
        } else {
            let mut end = at;
            varint(&self.postings, &mut end);
            varint(&self.postings, &mut end);
            (1, end - at)
        };
        Some(Entry {
            word: &self.text[cursor.text..cursor.text + len],
            postings: Encoded {
                bytes: &self.postings[at..at + bytes],
                count,
            },
            next: Cursor {
                text: cursor.text + len + 1,
                postings: at + bytes,
            },
        })
    }

    /// The first word of `block`.
    fn first_word(&self, block: usize) -> &str {
        let b = self.blocks[block];
        let mut at = b.postings as usize;
        let len = varint(&self.postings, &mut at) as usize >> 1;
        &self.text[b.text as usize..b.text as usize + len]
    }

    /// The cursor at the first word not below `key` (bytewise), or the end.
    fn seek(&self, key: &[u8]) -> Cursor {
        // Compared by their first 8 bytes as numbers first (see `prefix_key`): no call to `memcmp` for most.
        let key_prefix = prefix_key_of(key);
        let below = |word: &str| {
            let prefix = prefix_key_of(word.as_bytes());
            prefix < key_prefix || (prefix == key_prefix && word.as_bytes() < key)
        };
        // The first block whose first word is not below `key`: the word sought is in the block before it, or
        // is that first word.
        let (mut lo, mut hi) = (0, self.blocks.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if below(self.first_word(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if self.blocks.is_empty() {
            return self.end();
        }
        let mut cursor = self.block_start(lo.saturating_sub(1));
        while let Some(entry) = self.at(cursor) {
            if !below(entry.word) {
                return cursor;
            }
            cursor = entry.next;
        }
        cursor
    }

    /// The postings of exactly `word`, if frozen.
    pub fn exact(&self, word: &str) -> Option<Encoded<'_>> {
        let entry = self.at(self.seek(word.as_bytes()))?;
        (entry.word == word).then_some(entry.postings)
    }

    /// Calls `on_word` for every word starting with `prefix`, in order.
    pub fn for_each_with_prefix(&self, prefix: &[u8], mut on_word: impl FnMut(&str, Encoded<'_>)) {
        let mut cursor = self.seek(prefix);
        while let Some(entry) = self.at(cursor) {
            if !entry.word.as_bytes().starts_with(prefix) {
                return;
            }
            on_word(entry.word, entry.postings);
            cursor = entry.next;
        }
    }

    /// Calls `on_word` for every word, in order.
    pub fn for_each(&self, mut on_word: impl FnMut(&str, Encoded<'_>)) {
        let mut cursor = Cursor { text: 0, postings: 0 };
        while let Some(entry) = self.at(cursor) {
            on_word(entry.word, entry.postings);
            cursor = entry.next;
        }
    }

    /// The block holding text byte `pos`, searching forward from block `from` (hits come in order). Gallops: dense
    /// hits are in the same block or the next few.
    fn block_of(&self, pos: usize, from: usize) -> usize {
        let (mut lo, mut step) = (from, 1);
        while lo + step < self.blocks.len() && self.blocks[lo + step].text as usize <= pos {
            lo += step;
            step *= 2;
        }
        let hi = (lo + step).min(self.blocks.len());
        lo + self.blocks[lo..hi].partition_point(|b| b.text as usize <= pos) - 1
    }

    /// Calls `on_word` once for every word containing the needle of `finder`.
    pub fn for_each_containing(&self, finder: &Finder<'_>, mut on_word: impl FnMut(&str, Encoded<'_>)) {
        let haystack = self.text.as_bytes();
        let needle = finder.needle().len();
        let (mut from, mut cursor, mut block) = (0, Cursor { text: 0, postings: 0 }, 0);
        while let Some(found) = finder.find(&haystack[from..]) {
            let pos = from + found;
            // The block holding the hit, unless the cursor is already in it.
            block = self.block_of(pos, block);
            if self.blocks[block].text as usize > cursor.text {
                cursor = self.block_start(block);
            }
            let entry = loop {
                let entry = self.at(cursor).expect("a hit lies in a word");
                if entry.next.text > pos {
                    break entry;
                }
                cursor = entry.next;
            };
            let end = entry.next.text - 1; // the word's separator
            if pos + needle > end {
                // Across a separator inside a hashtag (query words hold none): not in one word.
                from = pos + 1;
                continue;
            }
            on_word(entry.word, entry.postings);
            from = entry.next.text;
            cursor = entry.next;
        }
    }

    /// Calls `on_word` for every word a typo pass for the ASCII term starting with `t0`, `t1` must read (the
    /// fresh tier's buckets, found here by binary search): ASCII words whose first byte is `t0` or `t1`, those whose
    /// second byte is (the others), and every word that is not ASCII (or is empty). Each word once.
    pub fn for_each_typo_candidate(&self, t0: u8, t1: u8, mut on_word: impl FnMut(&str, Encoded<'_>)) {
        if self.blocks.len() <= 4 {
            return self.for_each(on_word);
        }
        let mut ascii_with_prefix = |prefix: &[u8]| {
            self.for_each_with_prefix(prefix, |word, postings| {
                if word.is_ascii() {
                    on_word(word, postings);
                }
            });
        };
        let firsts: &[u8] = if t0 == t1 { &[t0] } else { &[t0, t1] };
        for &first in firsts {
            ascii_with_prefix(&[first]);
        }
        // Every first byte present, but t0 and t1: the words with t0 or t1 second.
        let mut first = 0u8;
        while first < 0x80 {
            let Some(entry) = self.at(self.seek(&[first])) else {
                break;
            };
            let Some(&present) = entry.word.as_bytes().first().filter(|b| b.is_ascii()) else {
                break;
            };
            if !firsts.contains(&present) {
                for &second in firsts {
                    ascii_with_prefix(&[present, second]);
                }
            }
            first = present + 1;
        }
        for &block in &self.odd_blocks {
            let mut cursor = self.block_start(block as usize);
            for _ in 0..BLOCK {
                let Some(entry) = self.at(cursor) else { break };
                if is_odd(entry.word) {
                    on_word(entry.word, entry.postings);
                }
                cursor = entry.next;
            }
        }
    }

    /// One run holding every word of `runs` (oldest first) and of `fresh` (every fresh word once, sorted bytewise,
    /// with its postings), each word's postings in that order: the order they were added. `text` and `postings` are
    /// what the fresh words add to each buffer (`Vocab::merged`): with those, the buffers are allocated once, a
    /// little larger than needed only when words are in several sources.
    pub fn merge<'a>(
        runs: &'a [Frozen],
        fresh: impl ExactSizeIterator<Item = (&'a str, &'a [Posting], &'a [Posting])>,
        text: usize,
        postings: usize,
    ) -> Frozen {
        let mut out = Writer::default();
        let words = runs.iter().map(Frozen::len).sum::<usize>() + fresh.len();
        let f = &mut out.frozen;
        f.text
            .reserve_exact(runs.iter().map(|r| r.text.len()).sum::<usize>() + text);
        // A word in several sources takes fewer bytes than its parts (one length and count, not several), but for a
        // longer count or byte length (lists past 127 postings or 16 KiB): then the buffer grows once.
        f.postings
            .reserve_exact(runs.iter().map(|r| r.postings.len()).sum::<usize>() + postings);
        f.blocks.reserve_exact(words.div_ceil(BLOCK));
        let start = Cursor { text: 0, postings: 0 };
        // Each source's next word, with its first 8 bytes as a number (`prefix_key`): most comparisons stop there.
        let head = |entry: Entry<'a>| (prefix_key(entry.word), entry);
        let mut heads: Vec<Option<(u64, Entry<'a>)>> = runs.iter().map(|run| run.at(start).map(head)).collect();
        let mut fresh = fresh
            .map(|(word, first, rest)| (prefix_key(word), word, first, rest))
            .peekable();
        let mut parts: Vec<Encoded<'a>> = Vec::with_capacity(runs.len());
        loop {
            let mut least: Option<(u64, &'a str)> = fresh.peek().map(|&(key, word, _, _)| (key, word));
            for (key, entry) in heads.iter().flatten() {
                if least.is_none_or(|least| (*key, entry.word) < least) {
                    least = Some((*key, entry.word));
                }
            }
            let Some((key, word)) = least else { break };
            parts.clear();
            for (run, head) in runs.iter().zip(&mut heads) {
                if let Some((_, entry)) = head.as_ref().filter(|(k, entry)| *k == key && entry.word == word) {
                    parts.push(entry.postings);
                    *head = run.at(entry.next).map(|entry| (prefix_key(entry.word), entry));
                }
            }
            match fresh.peek() {
                Some(&(k, fresh_word, first, rest)) if k == key && fresh_word == word => {
                    out.push(word, &parts, first, rest);
                    fresh.next();
                }
                _ => out.push(word, &parts, &[], &[]),
            }
        }
        let mut frozen = out.frozen;
        frozen.text.shrink_to_fit();
        frozen.postings.shrink_to_fit();
        frozen.blocks.shrink_to_fit();
        frozen.odd_blocks.shrink_to_fit();
        frozen
    }
}

#[derive(Default)]
struct Writer {
    frozen: Frozen,
}

impl Writer {
    fn push(&mut self, word: &str, old: &[Encoded<'_>], head: &[Posting], rest: &[Posting]) {
        let f = &mut self.frozen;
        if f.words % BLOCK == 0 {
            f.blocks.push(Block {
                text: offset(f.text.len()),
                postings: offset(f.postings.len()),
            });
        }
        let block = offset(f.blocks.len() - 1);
        if is_odd(word) && f.odd_blocks.last() != Some(&block) {
            f.odd_blocks.push(block);
        }
        f.words += 1;
        f.text.push_str(word);
        f.text.push('\n');
        let count = old.iter().map(|o| o.count).sum::<usize>() + head.len() + rest.len();
        f.count += count;
        if count == 1 {
            let mut one = old
                .iter()
                .flat_map(|o| o.iter())
                .chain(head.iter().chain(rest).copied());
            let posting = one.next().expect("one posting");
            put_varint(&mut f.postings, offset(word.len() * 2 + 1));
            put_varint(&mut f.postings, posting.slot);
            put_varint(&mut f.postings, posting.packed());
        } else {
            put_varint(&mut f.postings, offset(word.len() * 2));
            put_varint(&mut f.postings, offset(count));
            for o in old {
                match o.count {
                    1 => o.iter().for_each(|p| put_raw(&mut f.postings, p)),
                    _ => f.postings.extend_from_slice(o.bytes),
                }
            }
            head.iter().chain(rest).for_each(|&p| put_raw(&mut f.postings, p));
        }
        debug_assert!(f.text.len() <= u32::MAX as usize && f.postings.len() <= u32::MAX as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    type Words = BTreeMap<String, Vec<Posting>>;

    /// A small deterministic generator (no dependency): xorshift.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn random_words(seed: u64, n: usize) -> Words {
        let mut rng = Rng(seed);
        let mut words = Words::new();
        let alphabet = ["a", "b", "c", "x", "é", "ß", "1", "日"];
        while words.len() < n {
            let len = 1 + rng.below(7) as usize;
            let word: String = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect();
            let postings = (0..1 + rng.below(3) * rng.below(3))
                .map(|_| {
                    Posting::new(
                        rng.below(70_000) as u32,
                        rng.below(1 << 20) as u32,
                        1 + rng.below(63) as u8,
                    )
                })
                .collect();
            words.insert(word, postings);
        }
        words
    }

    fn fresh(words: &Words) -> impl ExactSizeIterator<Item = (&str, &[Posting], &[Posting])> {
        words.iter().map(|(w, p)| (w.as_str(), &p[..1], &p[1..]))
    }

    fn frozen(words: &Words) -> Frozen {
        Frozen::merge(&[], fresh(words), 0, 0)
    }

    fn all(frozen: &Frozen) -> Vec<(String, Vec<Posting>)> {
        let mut out = Vec::new();
        frozen.for_each(|word, postings| {
            assert_eq!(postings.iter().count(), postings.len());
            out.push((word.to_owned(), postings.iter().collect()));
        });
        out
    }

    #[test]
    fn varints_round_trip() {
        for value in [0, 1, 127, 128, 300, 16_383, 16_384, u32::MAX >> 6, u32::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            let mut at = 0;
            assert_eq!(varint(&out, &mut at), value);
            assert_eq!(at, out.len());
        }
    }

    #[test]
    fn words_and_postings_round_trip_in_order() {
        let words = random_words(7, 1_000);
        let frozen = frozen(&words);
        assert_eq!(frozen.len(), 1_000);
        assert_eq!(frozen.blocks.len(), 1_000usize.div_ceil(BLOCK));
        let expected: Vec<(String, Vec<Posting>)> = words.into_iter().collect();
        assert_eq!(all(&frozen), expected);
        assert_eq!(
            frozen.postings_held(),
            expected.iter().map(|(_, p)| p.len()).sum::<usize>()
        );
        assert!(!frozen.odd_blocks.is_empty());
        assert!(frozen.memory_bytes() >= frozen.text.len() + frozen.postings.len());
    }

    #[test]
    fn exact_lookup() {
        let words = random_words(11, 700);
        let frozen = frozen(&words);
        for (word, postings) in &words {
            let found = frozen.exact(word).expect(word);
            assert_eq!(found.iter().collect::<Vec<_>>(), *postings, "{word}");
        }
        for absent in ["", "aaaaaaaaaaa", "zzz", "日日日日日日日日", "ab\n", "\u{0}"] {
            assert_eq!(words.contains_key(absent), frozen.exact(absent).is_some(), "{absent}");
        }
        assert!(Frozen::default().exact("a").is_none());
    }

    #[test]
    fn prefix_ranges() {
        let words = random_words(13, 900);
        let frozen = frozen(&words);
        for prefix in ["", "a", "ab", "abc", "é", "éß", "日", "1x", "x1é", "z", "aaaaaaa"] {
            let mut found = Vec::new();
            frozen.for_each_with_prefix(prefix.as_bytes(), |word, _| found.push(word.to_owned()));
            let expected: Vec<String> = words.keys().filter(|w| w.starts_with(prefix)).cloned().collect();
            assert_eq!(found, expected, "{prefix:?}");
        }
    }

    #[test]
    fn substrings_found_once_per_word() {
        let words = random_words(17, 900);
        let frozen = frozen(&words);
        for needle in ["a", "ab", "ba", "éß", "日", "x1", "cc", "abcab", "q"] {
            let mut found = Vec::new();
            frozen.for_each_containing(&Finder::new(needle), |word, postings| {
                assert_eq!(postings.iter().collect::<Vec<_>>(), words[word]);
                found.push(word.to_owned());
            });
            let expected: Vec<String> = words.keys().filter(|w| w.contains(needle)).cloned().collect();
            assert_eq!(found, expected, "{needle:?}");
        }
    }

    #[test]
    fn typo_candidates_are_the_buckets_once_each() {
        let words = random_words(19, 2_000);
        let frozen = frozen(&words);
        for (t0, t1) in [(b'a', b'b'), (b'x', b'x'), (b'1', b'c'), (b'b', b'a')] {
            let mut found = Vec::new();
            frozen.for_each_typo_candidate(t0, t1, |word, _| found.push(word.to_owned()));
            found.sort();
            let expected: Vec<String> = (words.keys())
                .filter(|w| {
                    let b = w.as_bytes();
                    let near = |x: u8| x == t0 || x == t1;
                    is_odd(w) || near(b[0]) || (b.len() > 1 && near(b[1]))
                })
                .cloned()
                .collect();
            assert_eq!(found, expected, "{}{}", t0 as char, t1 as char);
        }
    }

    #[test]
    fn merging_keeps_every_posting_old_ones_first() {
        let (a, b, c) = (random_words(23, 600), random_words(29, 600), random_words(31, 300));
        let shared = a.keys().filter(|w| b.contains_key(*w) && c.contains_key(*w)).count();
        assert!(shared > 20, "the three draws share words ({shared})");
        let mut expected = a.clone();
        for (word, postings) in b.iter().chain(&c) {
            expected.entry(word.clone()).or_default().extend(postings);
        }
        let expected: Vec<(String, Vec<Posting>)> = expected.into_iter().collect();
        let runs = [frozen(&a), frozen(&b)];
        let merged = Frozen::merge(&runs, fresh(&c), 1 << 10, 1 << 10);
        assert_eq!(merged.len(), expected.len());
        assert_eq!(all(&merged), expected);
        // Runs merged with runs, and merging nothing, give the same.
        let runs = [frozen(&a), frozen(&b), frozen(&c)];
        let again = Frozen::merge(&runs, std::iter::empty(), 0, 0);
        assert_eq!(again.text, merged.text);
        assert_eq!(again.postings, merged.postings);
        let once = Frozen::merge(std::slice::from_ref(&again), std::iter::empty(), 0, 0);
        assert_eq!((once.text, once.postings), (again.text, again.postings));
    }
}
