//! Append-only normalized text of many links, scanned with one SIMD substring search per query term
//! instead of one search per link. Each entry remembers its owner (slot, generation); entries of
//! removed or replaced links stay behind until the index compacts, and the caller skips them.

use memchr::memmem::Finder;
use std::ops::Range;

/// Separates fields inside an entry and ends every entry; query terms never contain whitespace,
/// so a match cannot straddle two fields or two links.
const SEPARATOR: char = '\n';

#[derive(Debug, Default)]
pub struct Corpus {
    text: String,
    starts: Vec<usize>,
    owners: Vec<(u32, u32)>,
}

impl Corpus {
    /// Appends one entry made of `parts` (already normalized) and returns its index.
    pub fn push<'a>(&mut self, slot: u32, generation: u32, parts: impl IntoIterator<Item = &'a str>) -> usize {
        self.starts.push(self.text.len());
        self.owners.push((slot, generation));
        for part in parts {
            self.text.push_str(part);
            self.text.push(SEPARATOR);
        }
        self.owners.len() - 1
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.owners.len()
    }

    pub fn start(&self, entry: usize) -> usize {
        self.starts[entry]
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    fn range(&self, entry: usize) -> Range<usize> {
        let end = self.starts.get(entry + 1).copied().unwrap_or(self.text.len());
        self.starts[entry]..end
    }

    pub fn entry_text(&self, entry: usize) -> &str {
        &self.text[self.range(entry)]
    }

    /// Index of the entry containing byte `pos`, searching forward from entry `from` (hits come in order).
    fn entry_at(&self, pos: usize, from: usize) -> usize {
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

    /// Calls `on_hit(slot, generation)` once for every entry containing the needle of `finder`.
    pub fn scan(&self, finder: &Finder<'_>, mut on_hit: impl FnMut(u32, u32)) {
        let haystack = self.text.as_bytes();
        let (mut from, mut entry) = (0, 0);
        while let Some(found) = finder.find(&haystack[from..]) {
            entry = self.entry_at(from + found, entry);
            let (slot, generation) = self.owners[entry];
            on_hit(slot, generation);
            from = self.range(entry).end;
            entry += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(corpus: &Corpus, needle: &str) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        corpus.scan(&Finder::new(needle), |slot, generation| out.push((slot, generation)));
        out
    }

    #[test]
    fn one_hit_per_entry_and_no_straddling() {
        let mut corpus = Corpus::default();
        corpus.push(0, 0, ["rust rust", "rust"]);
        corpus.push(1, 0, ["ru", "st"]);
        for i in 2..200 {
            corpus.push(i, 7, ["filler", if i % 50 == 0 { "rust" } else { "go" }]);
        }
        assert_eq!(hits(&corpus, "rust"), [(0, 0), (50, 7), (100, 7), (150, 7)]);
        assert_eq!(hits(&corpus, "filler").len(), 198);
        assert_eq!(corpus.entry_text(1), "ru\nst\n");
        assert_eq!(corpus.len(), 200);
    }
}
