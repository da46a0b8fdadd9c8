//! The `q` filter of `GET /links`: every term must be a substring of some field (`#tag`: equal to a hashtag).

use super::index::SearchIndex;
use super::matching::{filter_terms, FilterTerm, MAX_EXAMINED};
use super::normalize::words;
use memchr::memmem::Finder;

/// Remaining terms are checked link by link once fewer than 1/CHECK_EACH_BELOW of the links are candidates.
const CHECK_EACH_BELOW: usize = 128;

/// What checking a link's text for one term costs, in units of the text budget: this many for the check itself
/// (setting up a search costs ~70 ns however short the text), and one more per this many bytes read (a unit is about
/// what reading one 8-byte posting costs).
const CHECK_POSTINGS: usize = 4;
const TEXT_BYTES_PER_POSTING: usize = 8;

/// The text a query may read, in those units (~512 MB of text; 0.1-0.5 s of a thread): a term whose checks would
/// read more is ignored like the terms after it, so the answer is wider. An event loop's caller gives a far smaller
/// budget (`filter_page_bounded`) and, past it, asks a thread instead: nothing is ignored there but absurd queries.
pub const MAX_TEXT_READ: usize = 64 << 20;

impl SearchIndex {
    /// Ids of the links matching every term of `query` (see `matching::filter_terms`), in no particular order.
    pub fn filter(&self, query: &str, public_only: bool) -> Vec<&str> {
        self.filter_within(query, public_only, MAX_EXAMINED)
    }

    /// `filter_page`, or None when checking the links' text would read more than `max_text` (see
    /// `MAX_TEXT_READ`): the answer would then be wider than the query, and the caller asks where `filter_page`
    /// can read more (a thread, with the GIL released).
    pub fn filter_page_bounded(
        &self,
        query: &str,
        public_only: bool,
        newest_first: bool,
        offset: usize,
        limit: usize,
        max_text: usize,
    ) -> Option<(usize, Vec<&str>)> {
        let found = self.filter_counted(query, public_only, MAX_EXAMINED, max_text);
        (!found.2).then(|| self.page(found.0, newest_first, offset, limit))
    }

    /// The number of links matching `query`, and the ids of `limit` of them from `offset`, ordered by when they
    /// were made (`upsert_at`), ties by id: newest first, or oldest first. The order of `ORDER BY created_at, id`.
    pub fn filter_page(
        &self,
        query: &str,
        public_only: bool,
        newest_first: bool,
        offset: usize,
        limit: usize,
    ) -> (usize, Vec<&str>) {
        let slots = self.filter_slots(query, public_only, MAX_EXAMINED);
        self.page(slots, newest_first, offset, limit)
    }

    fn page(&self, mut slots: Vec<u32>, newest_first: bool, offset: usize, limit: usize) -> (usize, Vec<&str>) {
        let total = slots.len();
        let end = offset.saturating_add(limit).min(total);
        if offset >= end {
            return (total, Vec::new());
        }
        // Each slot's creation time read once, beside it: the comparisons then touch no document, and read the id
        // only between links made in the same microsecond.
        let mut keyed: Vec<(i64, u32)> = slots.drain(..).map(|slot| (self.created_of(slot), slot)).collect();
        let order = |a: &(i64, u32), b: &(i64, u32)| {
            let by_age = a.0.cmp(&b.0).then_with(|| self.id_of(a.1).cmp(self.id_of(b.1)));
            if newest_first {
                by_age.reverse()
            } else {
                by_age
            }
        };
        if end < total {
            keyed.select_nth_unstable_by(end, order); // the first `end` are now the first `end` in order
            keyed.truncate(end);
        }
        keyed.sort_unstable_by(order);
        (
            total,
            keyed[offset..].iter().map(|&(_, slot)| self.id_of(slot)).collect(),
        )
    }

    /// `filter`, taking no further terms once `budget` postings have been read.
    pub(super) fn filter_within(&self, query: &str, public_only: bool, budget: usize) -> Vec<&str> {
        let slots = self.filter_slots(query, public_only, budget);
        slots.into_iter().map(|slot| self.id_of(slot)).collect()
    }

    fn filter_slots(&self, query: &str, public_only: bool, budget: usize) -> Vec<u32> {
        self.filter_counted(query, public_only, budget, MAX_TEXT_READ).0
    }

    /// `filter_slots` with `text_budget` for the text checks; also what those read (in units of `CHECK_POSTINGS`),
    /// and whether a term was ignored because they would have read more.
    fn filter_counted(
        &self,
        query: &str,
        public_only: bool,
        budget: usize,
        text_budget: usize,
    ) -> (Vec<u32>, usize, bool) {
        let mut terms = filter_terms(query);
        // Selective terms first, so later terms only check a few candidates: hashtags, then the terms the
        // vocabulary narrows (longest first), then those without a word, which only the text can tell.
        terms.sort_by_key(|t| match t {
            FilterTerm::Tag(_) => (0, 0),
            FilterTerm::Substring(s) if longest_word(s).is_some() => (1, usize::MAX - s.len()),
            FilterTerm::Substring(s) => (2, usize::MAX - s.len()),
        });
        let mut candidates: Option<Vec<u32>> = None;
        let mut unchecked: Vec<&FilterTerm> = Vec::new(); // terms the candidates' text must still be checked for
        let mut examined = 0;
        for (i, term) in terms.iter().enumerate() {
            if examined >= budget {
                break; // the rest are ignored, like terms past MAX_TERMS
            }
            match (&candidates, term) {
                // Few candidates left: the remaining terms are checked on each.
                (Some(current), _) if current.len() * CHECK_EACH_BELOW < self.len() => {
                    unchecked.extend(&terms[i..]);
                    break;
                }
                (_, FilterTerm::Substring(text)) if longest_word(text).is_none() => unchecked.push(term),
                _ => {
                    let (found, exact) = self.scan(term, public_only, &mut examined);
                    candidates = Some(self.intersect(found, candidates.take()));
                    if !exact {
                        unchecked.push(term);
                    }
                }
            }
        }
        let candidates = candidates.unwrap_or_else(|| {
            (0..self.slots.len() as u32)
                .filter(|&slot| self.visible(slot, public_only))
                .collect()
        });
        self.check_text(&unchecked, candidates, text_budget)
    }

    /// The links that may match `term`, and whether they all do (else their text must be checked); adds the
    /// postings (or, without a word to look up, the links) it read to `examined`.
    fn scan(&self, term: &FilterTerm, public_only: bool, examined: &mut usize) -> (Vec<u32>, bool) {
        let mut out = Vec::new();
        match term {
            FilterTerm::Tag(tag) => {
                self.tags.for_each_exact(tag, |postings| {
                    *examined += postings.len();
                    out.extend(
                        postings
                            .iter()
                            .filter(|p| self.live(p.slot, p.generation(), public_only))
                            .map(|p| p.slot),
                    );
                });
            }
            FilterTerm::Substring(text) => match longest_word(text) {
                // No word character at all ("-", "/"): only the full text can tell (`filter_slots` leaves such
                // terms to the text check without asking here).
                None => {
                    out.extend((0..self.slots.len() as u32).filter(|&slot| self.visible(slot, public_only)));
                    *examined += self.slots.len();
                    return (out, false);
                }
                // A match of `text` contains a match of its longest word, inside one indexed word: the
                // vocabulary yields the candidates and only text with separators needs a second look.
                Some(word) => {
                    let mut seen = vec![false; self.slots.len()];
                    self.words.for_each_containing(&Finder::new(word), |_, postings| {
                        *examined += postings.len();
                        postings.iter().for_each(|p| {
                            if !seen[p.slot as usize] && self.live(p.slot, p.generation(), public_only) {
                                seen[p.slot as usize] = true;
                                out.push(p.slot);
                            }
                        });
                    });
                    return (out, word.len() == text.len());
                }
            },
        }
        (out, true)
    }

    fn intersect(&self, found: Vec<u32>, current: Option<Vec<u32>>) -> Vec<u32> {
        let Some(current) = current else {
            return found;
        };
        let mut mark = vec![false; self.slots.len()];
        current.iter().for_each(|&slot| mark[slot as usize] = true);
        found.into_iter().filter(|&slot| mark[slot as usize]).collect()
    }

    /// The links of `current` matching every one of `terms`, one term at a time over the links still in; what the
    /// checks read (`CHECK_POSTINGS`, `TEXT_BYTES_PER_POSTING`); and whether a term was ignored: one whose checks
    /// take the reads past `budget` is, with the links it had ruled out so far kept, and so are the terms after it.
    /// Without a bound, sixteen terms over every link of an account with long notes read each note sixteen times.
    fn check_text(&self, terms: &[&FilterTerm], mut current: Vec<u32>, budget: usize) -> (Vec<u32>, usize, bool) {
        let mut scratch = String::new();
        let mut read = 0;
        for term in terms {
            match term {
                FilterTerm::Tag(tag) => {
                    read += current.len();
                    current.retain(|&slot| self.has_tag(slot, tag));
                }
                FilterTerm::Substring(text) => {
                    let finder = Finder::new(text);
                    let mut kept = Vec::with_capacity(current.len());
                    for &slot in &current {
                        let haystack = self.text_of(slot, &mut scratch).as_bytes();
                        let found = finder.find(haystack);
                        let bytes = found.map_or(haystack.len(), |at| at + text.len());
                        read += CHECK_POSTINGS + bytes.div_ceil(TEXT_BYTES_PER_POSTING);
                        if read > budget {
                            return (current, read, true);
                        }
                        if found.is_some() {
                            kept.push(slot);
                        }
                    }
                    current = kept;
                }
            }
        }
        (current, read, false)
    }
}

fn longest_word(text: &str) -> Option<&str> {
    words(text).max_by_key(|w| w.len())
}

#[cfg(test)]
mod tests {
    use super::super::index::tests::{link, sample, sorted};
    use super::super::index::SearchIndex;

    #[test]
    fn a_page_is_in_creation_order_then_id_either_way() {
        let mut index = SearchIndex::new();
        // (id, created): two made in the same instant, inserted out of order.
        for (id, created) in [("c", 30), ("a", 10), ("e", 20), ("d", 20), ("b", 40), ("x", 25)] {
            let title = if id == "x" { "other" } else { "rust" };
            index.upsert_at(id, link("s", title, "https://example.com", &[]), id != "e", created);
        }
        assert_eq!(
            index.filter_page("rust", false, true, 0, 10),
            (5, vec!["b", "c", "e", "d", "a"])
        );
        assert_eq!(
            index.filter_page("rust", false, false, 0, 10),
            (5, vec!["a", "d", "e", "c", "b"])
        );
        assert_eq!(index.filter_page("rust", false, true, 1, 2), (5, vec!["c", "e"]));
        assert_eq!(index.filter_page("rust", false, false, 4, 2), (5, vec!["b"]));
        assert_eq!(index.filter_page("rust", false, false, 5, 2), (5, vec![]));
        assert_eq!(index.filter_page("rust", true, true, 0, 3), (4, vec!["b", "c", "d"]));
        assert_eq!(index.filter_page("", false, true, 0, 2), (6, vec!["b", "c"]));
    }

    #[test]
    fn and_semantics_over_fields() {
        let index = sample();
        assert_eq!(sorted(index.filter("rust", false)), ["lnk_a", "lnk_c"]);
        assert_eq!(sorted(index.filter("RUST book", false)), ["lnk_a"]);
        assert_eq!(sorted(index.filter("rust dessert", false)), Vec::<String>::new());
        assert_eq!(sorted(index.filter("creme brulee", false)), ["lnk_b"]);
        assert_eq!(sorted(index.filter("lang.org", false)), ["lnk_a"]);
        assert_eq!(sorted(index.filter("  ", false)), ["lnk_a", "lnk_b", "lnk_c"]);
    }

    #[test]
    fn hashtag_terms_match_whole_tags_only() {
        let index = sample();
        assert_eq!(sorted(index.filter("#rust", false)), ["lnk_a", "lnk_c"]);
        assert_eq!(sorted(index.filter("#book", false)), Vec::<String>::new());
        assert_eq!(sorted(index.filter("#books", false)), ["lnk_a"]);
        assert_eq!(sorted(index.filter("book", false)), ["lnk_a"]);
    }

    #[test]
    fn public_only_leaves_out_private_links() {
        let index = sample();
        assert_eq!(sorted(index.filter("rust", true)), ["lnk_a"]);
        assert_eq!(sorted(index.filter("", true)), ["lnk_a", "lnk_b"]);
    }

    #[test]
    fn upsert_replaces_and_remove_forgets() {
        let mut index = sample();
        index.upsert(
            "lnk_a",
            link("go-book", "The Go Book", "https://go.dev/", &["go"]),
            true,
        );
        assert_eq!(index.len(), 3);
        assert_eq!(sorted(index.filter("rust", false)), ["lnk_c"]);
        assert_eq!(sorted(index.filter("#go", false)), ["lnk_a"]);
        assert!(index.remove("lnk_c"));
        assert!(!index.remove("lnk_c"));
        assert!(!index.contains("lnk_c"));
        assert!(index.filter("rust", false).is_empty());
    }

    #[test]
    fn terms_without_a_word_are_matched_in_the_text() {
        let mut index = SearchIndex::new();
        index.upsert("a", link("a", "well-known -- dashes", "https://x.example/", &[]), true);
        index.upsert("b", link("b", "one-dash", "https://x.example/", &[]), true);
        index.upsert("c", link("c", "none", "https://x.example/a.b", &[]), true);
        assert_eq!(sorted(index.filter("-", false)), ["a", "b"]);
        assert_eq!(sorted(index.filter("-- -", false)), ["a"]);
        assert_eq!(sorted(index.filter("dash -", false)), ["a", "b"]);
        assert_eq!(sorted(index.filter("one-dash --", false)), Vec::<String>::new());
        assert_eq!(sorted(index.filter("/ .", false)), ["a", "b", "c"]);
        assert_eq!(sorted(index.filter("// ///", false)), Vec::<String>::new());
        assert_eq!(sorted(index.filter("known-", false)), Vec::<String>::new());
        assert_eq!(sorted(index.filter("well-known", false)), ["a"]);
    }

    #[test]
    fn reading_text_counts_against_the_budget() {
        // Sixteen terms without a word, each found only at the end of a long note: accented (its normalized text
        // kept by the index) and ASCII (lowercased when read).
        for note in ["É ".repeat(2048), "Ab ".repeat(1365)] {
            let mut index = SearchIndex::new();
            for i in 0..1000 {
                let mut doc = link(&format!("s{i}"), "notes", "https://x.example/", &[]);
                doc.note = Some(note.clone() + &"-".repeat(16));
                index.upsert(&format!("lnk_{i}"), doc, true);
            }
            index.upsert("lnk_plain", link("plain", "plain", "https://x.example/", &[]), true);
            let query: Vec<String> = (1..=16).map(|n| "-".repeat(n)).collect();
            let query = query.join(" ");
            let mut scratch = String::new();
            let text_bytes: usize = (0..index.slots.len() as u32)
                .map(|slot| index.text_of(slot, &mut scratch).len())
                .sum();
            let longest = index.text_of(0, &mut scratch).len();
            // With room for every read, the answer is exact, and each term read (nearly) every note.
            let (exact, read, cut) = index.filter_counted(&query, false, usize::MAX, usize::MAX);
            assert_eq!(exact.len(), 1000);
            assert!(!cut);
            assert!(read >= 16 * 1000 * (longest - 32) / 8, "read {read}");
            // Within a budget, the terms it cannot afford are ignored (the answer is wider), and little more is
            // read.
            for budget in [10_000, 100_000, 1_000_000] {
                let (within, read, cut) = index.filter_counted(&query, false, usize::MAX, budget);
                assert!(cut);
                assert!(
                    read <= budget + super::CHECK_POSTINGS + longest / 8 + 1,
                    "read {read} of {budget}"
                );
                assert!(within.len() >= 1000);
            }
            let (first_term_only, _, _) = index.filter_counted(&query, false, usize::MAX, text_bytes / 8 + 7000);
            assert_eq!(
                first_term_only.len(),
                1000,
                "the longest term, read once, left out the plain link"
            );
        }
    }

    #[test]
    fn a_bounded_page_declines_rather_than_widen_and_the_unbounded_one_is_exact() {
        // 2,000 links with 4 KB notes have the word "book"; one has "rust-book": an ordinary query, whose check of
        // every candidate's text reads ~8 MB (~1,000,000 units).
        let mut index = SearchIndex::new();
        for i in 0..2000 {
            let mut doc = link(&format!("s{i}"), "a book", "https://x.example/", &[]);
            let tail = if i == 7 { " rust-book" } else { " rust book" };
            doc.note = Some("word ".repeat(800) + tail);
            index.upsert_at(&format!("lnk_{i:04}"), doc, true, i);
        }
        assert_eq!(
            index.filter_page("rust-book", false, true, 0, 20),
            (1, vec!["lnk_0007"])
        );
        assert_eq!(sorted(index.filter("rust-book", false)), ["lnk_0007"]);
        assert_eq!(
            index.filter_page_bounded("rust-book", false, true, 0, 20, 500_000),
            None
        );
        assert_eq!(
            index.filter_page_bounded("rust-book", false, true, 0, 20, 4 << 20),
            Some((1, vec!["lnk_0007"]))
        );
        // Nothing to read in the text: the bound never declines.
        assert_eq!(
            index.filter_page_bounded("rust", false, true, 0, 1, 0),
            Some((2000, vec!["lnk_1999"]))
        );
    }

    #[test]
    fn every_check_counts_however_short_its_read() {
        let mut index = SearchIndex::new();
        for i in 0..100 {
            index.upsert(&format!("lnk_{i}"), link("a-b", "x", "https://x.example/", &[]), true);
        }
        // Both terms are found at once in each slug; listing the links read 100 postings.
        let (found, read, _) = index.filter_counted("- a-", false, usize::MAX, usize::MAX);
        assert_eq!(found.len(), 100);
        assert!(read >= 2 * 100 * super::CHECK_POSTINGS, "read {read}");
    }

    #[test]
    fn ascii_text_is_lowercased_when_read_and_other_text_kept_normalized() {
        let mut index = SearchIndex::new();
        let mut upper = link("UP", "Title-CASE", "https://X.example/A-B", &["Tag-One"]);
        upper.note = Some("Some NOTE--here".into());
        index.upsert("a", upper, true);
        index.upsert("b", link("b", "Crème-Brûlée", "https://x.example/", &["Été-x"]), true);
        assert_eq!(sorted(index.filter("title-case", false)), ["a"]);
        assert_eq!(sorted(index.filter("x.example/a-b", false)), ["a"]);
        assert_eq!(sorted(index.filter("note--", false)), ["a"]);
        assert_eq!(sorted(index.filter("tag-one", false)), ["a"]);
        assert_eq!(sorted(index.filter("creme-brulee", false)), ["b"]);
        assert_eq!(sorted(index.filter("CRÈME-brulee ete-x", false)), ["b"]);
        assert_eq!(sorted(index.filter("-", false)), ["a", "b"]);
        assert_eq!(sorted(index.filter("e-b", false)), ["b"]);
        let mut scratch = String::new();
        assert_eq!(
            index.text_of(0, &mut scratch),
            "up\ntitle-case\nhttps://x.example/a-b\n\nsome note--here\ntag-one\n"
        );
    }

    #[test]
    fn many_candidates_and_compaction() {
        let mut index = SearchIndex::new();
        for round in 0..3 {
            for i in 0..30_000 {
                let title = if i % 1000 == 0 {
                    format!("needle-r{round}")
                } else {
                    format!("hay {i}")
                };
                index.upsert(
                    &format!("lnk_{i}"),
                    link(&format!("s{i}"), &title, "https://x.example/", &["t"]),
                    true,
                );
            }
        }
        assert_eq!(index.len(), 30_000);
        assert_eq!(index.filter("needle-r2", false).len(), 30);
        assert_eq!(index.filter("needle-r1", false).len(), 0);
        assert_eq!(index.filter("#t hay", false).len(), 29_970);
        let (live, held) = index.postings();
        assert!(held < 3 * live, "compacted: {held} postings held for {live} live");
    }
}
