//! Ranked search: every term must match; a link's score is the sum over terms of its best
//! (field weight x match quality). Work is proportional to the matching postings, not to the corpus.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::highlight::highlights;
use super::index::SearchIndex;
use super::matching::{search_terms, Quality, Term, TermKind, FIELD_WEIGHTS, MAX_EXAMINED, URL};
use super::vocab::Postings;

#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub id: String,
    pub score: f64,
    /// (field name, HTML snippet) for each field that matched.
    pub highlights: Vec<(&'static str, String)>,
}

/// The highest field weight among the fields of a posting's field mask, for every mask.
const WEIGHT_OF_FIELDS: [f64; 1 << FIELD_WEIGHTS.len()] = {
    let mut table = [0.0; 1 << FIELD_WEIGHTS.len()];
    let mut mask = 0;
    while mask < table.len() {
        let mut field = 0;
        while field < FIELD_WEIGHTS.len() {
            if mask & (1 << field) != 0 && FIELD_WEIGHTS[field] > table[mask] {
                table[mask] = FIELD_WEIGHTS[field];
            }
            field += 1;
        }
        mask += 1;
    }
    table
};

/// Per-query scratch: dense arrays indexed by slot, so accumulating costs no hashing. The index keeps one between
/// queries (`SearchIndex::lend_scores`), all zeros, so that a query costs no allocation and no clearing of the
/// whole corpus: only the slots it wrote to are zeroed again.
#[derive(Debug, Default)]
pub(super) struct Scores {
    total: Vec<f64>,
    /// How many terms each link has matched so far; a link stays a candidate only while it matches all.
    matched: Vec<u16>,
    best: Vec<f64>,
    touched: Vec<u32>,
    /// The links that have matched every term so far (`finish_term`).
    matching: Vec<u32>,
    /// The slots the first term reached: every slot this query wrote to (a later term only reaches those).
    written: Vec<u32>,
    /// Postings read so far by this query.
    examined: usize,
}

impl Scores {
    /// Bytes per slot the arrays take once fitted to an index (`memory_bytes` counts them for every slot).
    /// Counted whether or not a scratch is held at the moment: an upper bound.
    pub(super) const BYTES_PER_SLOT: usize = 2 * size_of::<f64>() + size_of::<u16>() + 3 * size_of::<u32>();

    /// Room for `slots` slots, the new ones zero; grown to that size exactly, so what is held stays within
    /// `BYTES_PER_SLOT` per slot of the index.
    fn fit(&mut self, slots: usize) {
        if self.total.len() < slots {
            let extra = slots - self.total.len();
            self.total.reserve_exact(extra);
            self.matched.reserve_exact(extra);
            self.best.reserve_exact(extra);
            self.total.resize(slots, 0.0);
            self.matched.resize(slots, 0);
            self.best.resize(slots, 0.0);
            // A slot is listed at most once per term (every score is above zero): these never grow past the
            // index either, and are kept with the rest (`finish_term` swaps two of them).
            self.touched.reserve_exact(slots);
            self.matching.reserve_exact(slots);
            self.written.reserve_exact(slots);
        }
    }

    /// Zeroes what the query wrote, leaving the arrays as `fit` made them.
    fn clear(&mut self) {
        for &slot in self.written.iter().chain(&self.touched) {
            let i = slot as usize;
            self.total[i] = 0.0;
            self.matched[i] = 0;
            self.best[i] = 0.0;
        }
        self.written.clear();
        self.touched.clear();
        self.matching.clear();
        self.examined = 0;
    }

    fn offer(&mut self, slot: u32, term_index: usize, score: f64) {
        let i = slot as usize;
        if usize::from(self.matched[i]) != term_index {
            return;
        }
        if self.best[i] == 0.0 {
            self.touched.push(slot);
        }
        if score > self.best[i] {
            self.best[i] = score;
        }
    }

    /// Folds the current term into the totals: `matching` becomes the links that have matched every term so far.
    fn finish_term(&mut self, term_index: usize) {
        for &slot in &self.touched {
            let i = slot as usize;
            self.total[i] += self.best[i];
            self.matched[i] += 1;
            self.best[i] = 0.0;
        }
        if term_index == 0 {
            self.written.extend_from_slice(&self.touched);
        }
        std::mem::swap(&mut self.touched, &mut self.matching);
        self.touched.clear();
    }
}

/// Scores lent by an index for one query: zeroed and handed back when dropped (after a panic too).
struct Lent<'a> {
    index: &'a SearchIndex,
    scores: Scores,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        self.scores.clear();
        self.index.give_back_scores(std::mem::take(&mut self.scores));
    }
}

/// An id's first 8 bytes as a big-endian number, zeros after a shorter id: ordered as the ids' prefixes are, and
/// equal whenever one id's bytes begin the other's (those are then compared whole).
fn id_prefix(id: &str) -> u64 {
    let bytes = id.as_bytes();
    let mut first = [0u8; 8];
    let n = bytes.len().min(8);
    first[..n].copy_from_slice(&bytes[..n]);
    u64::from_be_bytes(first)
}

/// A candidate for the best hits: its score, its id's first 8 bytes (see `id_prefix`) and its id.
struct Ranked<'a> {
    score: f64,
    prefix: u64,
    id: &'a str,
    slot: u32,
}

impl Ranked<'_> {
    /// Whether `self` goes before `other`: a higher score, then the lower id. The same as `self < other` by
    /// `Ord`, written out for the loop over every match (3 of 57 us faster than `<` for 3,000 ties).
    fn before(&self, other: &Self) -> bool {
        match self.score.total_cmp(&other.score) {
            Ordering::Equal => match self.prefix.cmp(&other.prefix) {
                Ordering::Equal => self.id < other.id,
                prefix => prefix == Ordering::Less,
            },
            score => score == Ordering::Greater,
        }
    }
}

impl PartialEq for Ranked<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked<'_> {}

impl PartialOrd for Ranked<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked<'_> {
    /// Later in the ranking is greater, so a max-heap's top is the worst hit it keeps.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then_with(|| self.prefix.cmp(&other.prefix))
            .then_with(|| self.id.cmp(other.id))
    }
}

/// The `limit` best of `slots` by score (descending) then id, best first, in one pass that keeps only the best
/// `limit` seen so far: a link worse than the worst of those costs one comparison of scores (and, on a tie, of
/// its id's first 8 bytes), so thousands of matches cost no sort and no list of them all.
fn best_first<'a>(
    slots: &[u32],
    limit: usize,
    score: impl Fn(u32) -> f64,
    id: impl Fn(u32) -> &'a str,
) -> Vec<(f64, u32)> {
    if limit == 0 {
        return Vec::new();
    }
    let mut kept: BinaryHeap<Ranked<'a>> = BinaryHeap::with_capacity(limit.min(slots.len()));
    for &slot in slots {
        let score = score(slot);
        if kept.len() == limit {
            let worst = kept.peek().map_or(f64::INFINITY, |worst| worst.score);
            if score < worst {
                continue; // the common case when scores differ: no id read
            }
        }
        let id = id(slot);
        let candidate = Ranked {
            score,
            prefix: id_prefix(id),
            id,
            slot,
        };
        if kept.len() < limit {
            kept.push(candidate);
        } else if let Some(mut worst) = kept.peek_mut() {
            if candidate.before(&worst) {
                *worst = candidate;
            }
        }
    }
    kept.into_sorted_vec().into_iter().map(|r| (r.score, r.slot)).collect()
}

impl SearchIndex {
    /// `(number of matching links, the best `limit` hits)`, best first, ties by id. A blank query matches nothing.
    pub fn search(&self, query: &str, limit: usize, public_only: bool) -> (usize, Vec<Hit>) {
        self.search_within(query, limit, public_only, MAX_EXAMINED, usize::MAX)
            .unwrap_or_default()
    }

    /// `search`, or None when highlighting its hits would read more than `max_text` (`highlight_cost` of each hit,
    /// times the query's terms):
    /// the caller then searches where a long wait holds up nobody else (a thread, with the GIL released).
    pub fn search_bounded(
        &self,
        query: &str,
        limit: usize,
        public_only: bool,
        max_text: usize,
    ) -> Option<(usize, Vec<Hit>)> {
        self.search_within(query, limit, public_only, MAX_EXAMINED, max_text)
    }

    /// `search_bounded`, taking no further terms once `budget` postings have been read.
    pub(super) fn search_within(
        &self,
        query: &str,
        limit: usize,
        public_only: bool,
        budget: usize,
        max_text: usize,
    ) -> Option<(usize, Vec<Hit>)> {
        let mut terms = search_terms(query);
        if terms.is_empty() || terms.len() > usize::from(u16::MAX) {
            return Some((0, Vec::new()));
        }
        let mut lent = Lent {
            index: self,
            scores: self.lend_scores(),
        };
        let scores = &mut lent.scores;
        scores.fit(self.slots.len());
        for (i, term) in terms.iter().enumerate() {
            if scores.examined >= budget {
                terms.truncate(i); // the rest are ignored, like terms past MAX_TERMS
                break;
            }
            self.score_term(term, i, public_only, scores);
            scores.finish_term(i);
            if scores.matching.is_empty() {
                return Some((0, Vec::new()));
            }
        }
        let total = scores.matching.len();
        // Rounded before ranking, so float noise (1.0499999999999998 vs 1.05) neither shows nor reorders ties.
        let round = |score: f64| (score * 1e6).round() / 1e6;
        let score = |slot: u32| round(scores.total[slot as usize]);
        let best = best_first(&scores.matching, limit, score, |slot| self.id_of(slot));
        // Every word of a hit's text is matched against every term.
        let cost = best
            .iter()
            .map(|&(_, slot)| self.highlight_cost(slot))
            .sum::<usize>()
            .saturating_mul(terms.len());
        if cost > max_text {
            return None;
        }
        let hits = best
            .into_iter()
            .filter_map(|(score, slot)| {
                let doc = self.slots[slot as usize].as_ref()?;
                Some(Hit {
                    id: doc.id.clone(),
                    score,
                    highlights: highlights(&doc.link, &terms),
                })
            })
            .collect();
        Some((total, hits))
    }

    fn score_term(&self, term: &Term, term_index: usize, public_only: bool, scores: &mut Scores) {
        let offer_postings = |quality: Quality, postings: Postings<'_>| {
            // Inside a word (not at its start) only counts for the URL: "ust" should not find "Rust" titles.
            let allowed = if quality == Quality::Substring {
                1 << URL
            } else {
                u8::MAX
            };
            scores.examined += postings.len();
            // `for_each`: a loop per part of the postings (see `Postings::iter`), not one `next` across them.
            postings.iter().for_each(|p| {
                let fields = p.fields() & allowed;
                if fields == 0
                    || usize::from(scores.matched[p.slot as usize]) != term_index
                    || !self.live(p.slot, p.generation(), public_only)
                {
                    return;
                }
                scores.offer(
                    p.slot,
                    term_index,
                    WEIGHT_OF_FIELDS[usize::from(fields)] * quality.value(),
                );
            });
        };
        match term.kind {
            TermKind::Tag => self.tags.for_each_match(term, offer_postings),
            TermKind::Word => self.words.for_each_match(term, offer_postings),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::index::tests::link;
    use super::super::index::SearchIndex;

    #[test]
    fn terms_past_the_examined_budget_are_ignored() {
        let mut index = SearchIndex::new();
        for i in 0..100 {
            index.upsert(
                &format!("l{i}"),
                link(&format!("s{i}"), "common words", "https://x.example/", &[]),
                true,
            );
        }
        assert_eq!(
            index
                .search_within("common absent", 10, false, usize::MAX, usize::MAX)
                .unwrap()
                .0,
            0
        );
        // "common" reads 100 postings, past a budget of 50: "absent" is not looked at.
        assert_eq!(
            index
                .search_within("common absent", 10, false, 50, usize::MAX)
                .unwrap()
                .0,
            100
        );
        assert_eq!(index.filter_within("common absent", false, usize::MAX).len(), 0);
        assert_eq!(index.filter_within("common absent", false, 50).len(), 100);
    }

    #[test]
    fn ties_sharing_an_id_prefix_are_ordered_by_the_whole_id() {
        let mut index = SearchIndex::new();
        let mut ids: Vec<String> = (0..40).map(|i| format!("lnk_same{:02}", (i * 17) % 40)).collect();
        ids.push("lnk_samd99".into()); // a lower prefix, the same score
        ids.push("lnk_samf00".into()); // a higher prefix
        for id in &ids {
            index.upsert(id, link(id, "tied words", "https://x.example/", &[]), true);
        }
        ids.sort();
        for limit in [1, 2, 5, 20, 41, 42, 50] {
            let (total, hits) = index.search("tied", limit, false);
            assert_eq!(total, 42);
            let got: Vec<&str> = hits.iter().map(|hit| hit.id.as_str()).collect();
            let wanted: Vec<&str> = ids.iter().take(limit).map(String::as_str).collect();
            assert_eq!(got, wanted, "limit {limit}");
        }
    }

    #[test]
    fn a_bounded_search_declines_hits_with_too_much_text_to_highlight() {
        let mut index = SearchIndex::new();
        index.upsert("a", link("a", "needle", "https://x.example/", &[]), true);
        let mut long = link("b", "needle", "https://x.example/", &[]);
        long.note = Some("crème ".repeat(100));
        index.upsert("b", long, true);
        let ascii = "a".len() + "needle".len() + "https://x.example/".len();
        let accented = 8 * ("b".len() + "needle".len() + "https://x.example/".len() + "crème ".repeat(100).len());
        let all = index.search("needle", 10, false);
        assert_eq!(all.0, 2);
        assert_eq!(index.search_bounded("needle", 10, false, ascii + accented), Some(all));
        assert_eq!(index.search_bounded("needle", 10, false, ascii + accented - 1), None);
        // Only the hits returned count: the best one alone is within the bound.
        assert!(index.search_bounded("needle", 1, false, accented).is_some());
        // Each term reads every word again.
        let both = index.search("needle x", 10, false);
        assert_eq!(both.0, 2);
        assert_eq!(
            index.search_bounded("needle x", 10, false, 2 * (ascii + accented)),
            Some(both)
        );
        assert_eq!(
            index.search_bounded("needle x", 10, false, 2 * (ascii + accented) - 1),
            None
        );
    }

    #[test]
    fn the_kept_scores_are_all_zero_after_every_query() {
        let mut index = SearchIndex::new();
        for i in 0..60 {
            let title = ["rust book", "rust guide", "python book", "rust python guide"][i % 4];
            index.upsert(
                &format!("l{i:02}"),
                link(&format!("s{i}"), title, "https://x.example/", &["tag"]),
                true,
            );
        }
        let queries = [
            "rust",
            "rust python",
            "book rust guide",
            "absent",
            "rust absent",
            "#tag rust",
            "gu",
        ];
        let answers: Vec<_> = queries.iter().map(|q| index.search(q, 7, false)).collect();
        for _ in 0..2 {
            for (query, answer) in queries.iter().zip(&answers) {
                assert_eq!(&index.search(query, 7, false), answer, "{query}");
                assert!(index.search_within(query, 7, false, 20, usize::MAX).unwrap().0 <= 60);
                let kept = index.lend_scores();
                assert!(kept.total.iter().all(|&t| t == 0.0), "{query}");
                assert!(kept.matched.iter().all(|&m| m == 0) && kept.best.iter().all(|&b| b == 0.0));
                assert!(kept.touched.is_empty() && kept.written.is_empty() && kept.matching.is_empty());
                assert_eq!(kept.examined, 0);
                assert_eq!(kept.total.len(), 60, "the scores were not kept");
                for list in [&kept.touched, &kept.matching, &kept.written] {
                    assert_eq!(list.capacity(), 60, "a list was not kept, or grew past the index");
                }
                index.give_back_scores(kept);
            }
        }
    }
}
