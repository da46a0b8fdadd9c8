//! Ranked search: every term must match; a link's score is the sum over terms of its best
//! (field weight x match quality). Work is proportional to the matching postings, not to the corpus.

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

/// Per-query scratch: dense arrays indexed by slot, so accumulating costs no hashing.
struct Scores {
    total: Vec<f64>,
    /// How many terms each link has matched so far; a link stays a candidate only while it matches all.
    matched: Vec<u16>,
    best: Vec<f64>,
    touched: Vec<u32>,
    /// Postings read so far by this query.
    examined: usize,
}

impl Scores {
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

    /// Folds the current term into the totals; returns the links that have matched every term so far.
    fn finish_term(&mut self) -> Vec<u32> {
        let touched = std::mem::take(&mut self.touched);
        for &slot in &touched {
            let i = slot as usize;
            self.total[i] += self.best[i];
            self.matched[i] += 1;
            self.best[i] = 0.0;
        }
        touched
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

/// The `limit` best of (score, slot) by score (descending) then id. Comparing ids is the expensive part
/// (a string per link), so the cut is found on scores alone and ids only order links tied at the cut.
fn best_first<'a>(mut ranked: Vec<(f64, u32)>, limit: usize, id: impl Fn(u32) -> &'a str) -> Vec<(f64, u32)> {
    if limit == 0 {
        return Vec::new();
    }
    if ranked.len() > limit {
        ranked.select_nth_unstable_by(limit - 1, |a, b| b.0.total_cmp(&a.0));
        let cut = ranked[limit - 1].0;
        let (mut kept, mut tied): (Vec<_>, Vec<_>) = ranked.into_iter().filter(|r| r.0 >= cut).partition(|r| r.0 > cut);
        let wanted = limit - kept.len();
        if tied.len() > wanted {
            // By each id's first 8 bytes, read once (as a big-endian number: the same order), and by the whole id
            // only where those are the same: thousands of links can tie, and each comparison read two ids.
            let mut keyed: Vec<(u64, (f64, u32))> = tied.into_iter().map(|r| (id_prefix(id(r.1)), r)).collect();
            keyed.select_nth_unstable_by(wanted - 1, |a, b| {
                a.0.cmp(&b.0).then_with(|| id(a.1 .1).cmp(id(b.1 .1)))
            });
            tied = keyed.into_iter().take(wanted).map(|(_, r)| r).collect();
        }
        kept.extend(tied);
        ranked = kept;
    }
    ranked.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then_with(|| id(a.1).cmp(id(b.1))));
    ranked
}

impl SearchIndex {
    /// `(number of matching links, the best `limit` hits)`, best first, ties by id. A blank query matches nothing.
    pub fn search(&self, query: &str, limit: usize, public_only: bool) -> (usize, Vec<Hit>) {
        self.search_within(query, limit, public_only, MAX_EXAMINED)
    }

    /// `search`, taking no further terms once `budget` postings have been read.
    pub(super) fn search_within(
        &self,
        query: &str,
        limit: usize,
        public_only: bool,
        budget: usize,
    ) -> (usize, Vec<Hit>) {
        let mut terms = search_terms(query);
        if terms.is_empty() || terms.len() > usize::from(u16::MAX) {
            return (0, Vec::new());
        }
        let n = self.slots.len();
        let mut scores = Scores {
            total: vec![0.0; n],
            matched: vec![0; n],
            best: vec![0.0; n],
            touched: Vec::new(),
            examined: 0,
        };
        let mut matching = Vec::new();
        for (i, term) in terms.iter().enumerate() {
            if scores.examined >= budget {
                terms.truncate(i); // the rest are ignored, like terms past MAX_TERMS
                break;
            }
            self.score_term(term, i, public_only, &mut scores);
            matching = scores.finish_term();
            if matching.is_empty() {
                return (0, Vec::new());
            }
        }
        let total = matching.len();
        // Rounded before ranking, so float noise (1.0499999999999998 vs 1.05) neither shows nor reorders ties.
        let round = |score: f64| (score * 1e6).round() / 1e6;
        let ranked: Vec<(f64, u32)> = matching
            .into_iter()
            .map(|slot| (round(scores.total[slot as usize]), slot))
            .collect();
        let id = |slot: u32| self.id_of(slot);
        let hits = best_first(ranked, limit, id)
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
        (total, hits)
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
            for p in postings.iter() {
                let fields = p.fields() & allowed;
                if fields == 0
                    || usize::from(scores.matched[p.slot as usize]) != term_index
                    || !self.live(p.slot, p.generation(), public_only)
                {
                    continue;
                }
                scores.offer(
                    p.slot,
                    term_index,
                    WEIGHT_OF_FIELDS[usize::from(fields)] * quality.value(),
                );
            }
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
        assert_eq!(index.search_within("common absent", 10, false, usize::MAX).0, 0);
        // "common" reads 100 postings, past a budget of 50: "absent" is not looked at.
        assert_eq!(index.search_within("common absent", 10, false, 50).0, 100);
        assert_eq!(index.filter_within("common absent", false, usize::MAX).len(), 0);
        assert_eq!(index.filter_within("common absent", false, 50).len(), 100);
    }
}
