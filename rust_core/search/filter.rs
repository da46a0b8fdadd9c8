//! The `q` filter of `GET /links`: every term must be a substring of some field (`#tag`: equal to a hashtag).

use super::index::SearchIndex;
use super::matching::{filter_terms, FilterTerm, MAX_EXAMINED};
use super::normalize::words;
use memchr::memmem::Finder;

/// Remaining terms are checked link by link once fewer than 1/CHECK_EACH_BELOW of the links are candidates.
const CHECK_EACH_BELOW: usize = 128;

impl SearchIndex {
    /// Ids of the links matching every term of `query` (see `matching::filter_terms`), in no particular order.
    pub fn filter(&self, query: &str, public_only: bool) -> Vec<&str> {
        self.filter_within(query, public_only, MAX_EXAMINED)
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
        let mut slots = self.filter_slots(query, public_only, MAX_EXAMINED);
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
        let mut terms = filter_terms(query);
        // Selective terms first, so later terms only check a few candidates.
        terms.sort_by_key(|t| match t {
            FilterTerm::Tag(_) => (0, 0),
            FilterTerm::Substring(s) => (1, usize::MAX - s.len()),
        });
        let mut candidates: Option<Vec<u32>> = None;
        let mut examined = 0;
        for (i, term) in terms.iter().enumerate() {
            if examined >= budget {
                break; // the rest are ignored, like terms past MAX_TERMS
            }
            candidates = Some(match candidates {
                // Few candidates left: check the remaining terms on each, normalizing its text once (which
                // costs about what reading a few hundred postings does, hence "few").
                Some(current) if current.len() * CHECK_EACH_BELOW < self.len() => {
                    candidates = Some(self.check_each(&terms[i..], current));
                    break;
                }
                current => {
                    let (found, exact) = self.scan(term, public_only, &mut examined);
                    let found = self.intersect(found, current);
                    if exact {
                        found
                    } else {
                        self.check_each(std::slice::from_ref(term), found)
                    }
                }
            });
        }

        match candidates {
            Some(slots) => slots,
            None => (0..self.slots.len() as u32)
                .filter(|&slot| self.visible(slot, public_only))
                .collect(),
        }
    }

    /// The links that may match `term`, and whether they all do (else their text must be checked); adds the
    /// postings (or, without a word to look up, the links) it read to `examined`.
    fn scan(&self, term: &FilterTerm, public_only: bool, examined: &mut usize) -> (Vec<u32>, bool) {
        let mut out = Vec::new();
        match term {
            FilterTerm::Tag(tag) => {
                let postings = self.tags.exact(tag);
                *examined += postings.len();
                out.extend(
                    postings
                        .iter()
                        .filter(|p| self.live(p.slot, p.generation(), public_only))
                        .map(|p| p.slot),
                );
            }
            FilterTerm::Substring(text) => match longest_word(text) {
                // No word character at all ("-", "/"): only the full text can tell.
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
                        for p in postings.iter() {
                            if !seen[p.slot as usize] && self.live(p.slot, p.generation(), public_only) {
                                seen[p.slot as usize] = true;
                                out.push(p.slot);
                            }
                        }
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

    /// The links of `current` matching every one of `terms`; a link's text is normalized once, when a
    /// substring term first needs it.
    fn check_each(&self, terms: &[FilterTerm], current: Vec<u32>) -> Vec<u32> {
        let finders: Vec<Option<Finder<'_>>> = terms
            .iter()
            .map(|term| match term {
                FilterTerm::Substring(text) => Some(Finder::new(text)),
                FilterTerm::Tag(_) => None,
            })
            .collect();
        let mut text = String::new();
        current
            .into_iter()
            .filter(|&slot| {
                let mut normalized = false;
                terms.iter().zip(&finders).all(|(term, finder)| match (term, finder) {
                    (FilterTerm::Tag(tag), _) => self.has_tag(slot, tag),
                    (FilterTerm::Substring(_), Some(finder)) => {
                        if !normalized {
                            self.normalized_text(slot, &mut text);
                            normalized = true;
                        }
                        finder.find(text.as_bytes()).is_some()
                    }
                    (FilterTerm::Substring(_), None) => false,
                })
            })
            .collect()
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
