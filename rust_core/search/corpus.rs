//! Words back to back in one buffer, scanned with one SIMD substring search per query term instead of
//! one search per word. Entry `i` is the `i`-th word pushed; offsets are `u32` to keep the table small.

use memchr::memmem::Finder;
use std::ops::Range;

/// Ends every entry; query terms never contain whitespace, so a match cannot straddle two entries.
const SEPARATOR: char = '\n';

#[derive(Debug, Default)]
pub struct Corpus {
    text: String,
    starts: Vec<u32>,
}

impl Corpus {
    /// Appends one entry (already normalized, no separator inside) and returns its index.
    pub fn push(&mut self, part: &str) -> usize {
        self.starts.push(self.text.len() as u32);
        self.text.push_str(part);
        self.text.push(SEPARATOR);
        self.starts.len() - 1
    }

    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// Bytes of text, separators included.
    pub fn text_bytes(&self) -> usize {
        self.text.len()
    }

    fn range(&self, entry: usize) -> Range<usize> {
        let end = self.starts.get(entry + 1).map_or(self.text.len(), |&s| s as usize);
        self.starts[entry] as usize..end - SEPARATOR.len_utf8()
    }

    /// The entry's text, without its separator.
    pub fn entry_text(&self, entry: usize) -> &str {
        &self.text[self.range(entry)]
    }

    /// Heap bytes held (capacities, not lengths: what the allocator really gave out).
    pub fn memory_bytes(&self) -> usize {
        self.text.capacity() + self.starts.capacity() * size_of::<u32>()
    }

    /// Index of the entry containing byte `pos`, searching forward from entry `from` (hits come in order).
    fn entry_at(&self, pos: usize, from: usize) -> usize {
        let pos = pos as u32;
        let mut step = 1;
        let mut lo = from;
        // Gallop: dense hits are usually in the next few entries.
        while lo + step < self.starts.len() && self.starts[lo + step] <= pos {
            lo += step;
            step *= 2;
        }
        let hi = (lo + step + 1).min(self.starts.len());
        lo + self.starts[lo..hi].partition_point(|&s| s <= pos) - 1
    }

    /// Calls `on_hit(entry)` for every entry starting with `prefix` (no separator inside). Searching for
    /// separator + prefix finds only entry starts, so a one-letter prefix does not stop at every letter.
    pub fn scan_prefix(&self, prefix: &str, mut on_hit: impl FnMut(usize)) {
        if self.starts.is_empty() {
            return;
        }
        if self.entry_text(0).starts_with(prefix) {
            on_hit(0);
        }
        let needle = format!("{SEPARATOR}{prefix}");
        let (mut from, mut entry) = (0, 0);
        let haystack = self.text.as_bytes();
        let finder = Finder::new(&needle);
        while let Some(found) = finder.find(&haystack[from..]) {
            let start = from + found + SEPARATOR.len_utf8();
            if start >= haystack.len() {
                break;
            }
            entry = self.entry_at(start, entry);
            on_hit(entry);
            from = start;
        }
    }

    /// Calls `on_hit(entry)` once for every entry containing the needle of `finder`.
    pub fn scan(&self, finder: &Finder<'_>, mut on_hit: impl FnMut(usize)) {
        let haystack = self.text.as_bytes();
        let (mut from, mut entry) = (0, 0);
        while let Some(found) = finder.find(&haystack[from..]) {
            entry = self.entry_at(from + found, entry);
            on_hit(entry);
            from = self.range(entry).end + SEPARATOR.len_utf8();
            entry += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(corpus: &Corpus, needle: &str) -> Vec<usize> {
        let mut out = Vec::new();
        corpus.scan(&Finder::new(needle), |entry| out.push(entry));
        out
    }

    #[test]
    fn one_hit_per_entry_and_no_straddling() {
        let mut corpus = Corpus::default();
        corpus.push("rustrust");
        corpus.push("ru");
        corpus.push("st");
        for i in 3..200 {
            corpus.push(if i % 50 == 0 { "rust" } else { "filler" });
        }
        assert_eq!(hits(&corpus, "rust"), [0, 50, 100, 150]);
        assert_eq!(hits(&corpus, "filler").len(), 194);
        assert_eq!(corpus.entry_text(1), "ru");
        let mut starting = Vec::new();
        corpus.scan_prefix("r", |entry| starting.push(entry));
        assert_eq!(starting, [0, 1, 50, 100, 150]);
        starting.clear();
        corpus.scan_prefix("f", |entry| starting.push(entry));
        assert_eq!(starting.len(), 194);
        assert_eq!(corpus.len(), 200);
    }
}
