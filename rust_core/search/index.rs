//! The per-account search index: links stored in slots, indexed into an append-only corpus (substring
//! filter), a URL corpus (substring matches in ranked search) and two vocabularies (words, whole hashtags).
//! Replaced or removed links leave stale entries, recognised by their generation and dropped when the
//! index compacts, so an upsert costs O(size of the link) amortized.

use super::corpus::Corpus;
use super::matching::{DESCRIPTION, HASHTAGS, NOTE, SLUG, TITLE, URL};
use super::normalize::{normalize, words};
use super::vocab::{Posting, Vocab};
use std::borrow::Cow;
use std::collections::HashMap;

/// The searchable text of a link, as given (highlights quote it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Link {
    pub slug: String,
    pub destination_url: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub note: Option<String>,
    pub hashtags: Vec<String>,
}

impl Link {
    /// The original text of field `field` (see `matching::FIELD_NAMES`); hashtags joined by spaces.
    pub fn field(&self, field: usize) -> Cow<'_, str> {
        fn optional(text: &Option<String>) -> Cow<'_, str> {
            Cow::Borrowed(text.as_deref().unwrap_or_default())
        }
        match field {
            SLUG => Cow::Borrowed(&self.slug),
            TITLE => optional(&self.title),
            HASHTAGS => Cow::Owned(self.hashtags.join(" ")),
            DESCRIPTION => optional(&self.description),
            NOTE => optional(&self.note),
            URL => Cow::Borrowed(&self.destination_url),
            _ => Cow::Borrowed(""),
        }
    }
}

#[derive(Debug)]
pub(super) struct Doc {
    pub id: String,
    pub public: bool,
    pub link: Link,
    pub tags: Vec<String>,
    postings: usize,
}

#[derive(Debug, Default)]
pub struct SearchIndex {
    pub(super) slots: Vec<Option<Doc>>,
    /// Per slot: `generation << 2 | PUBLIC | LIVE`, compact so that checking a posting rarely misses the cache.
    state: Vec<u32>,
    /// Per slot: its entry in `corpus` (kept apart from `Doc` for the same reason).
    pub(super) entries: Vec<u32>,
    /// Ids back to back with each slot's byte range: filters returning thousands of ids read one buffer.
    id_text: String,
    id_spans: Vec<(usize, usize)>,
    free: Vec<u32>,
    by_id: HashMap<String, u32>,
    pub(super) corpus: Corpus,
    pub(super) words: Vocab,
    pub(super) tags: Vocab,
    live_postings: usize,
    stale_postings: usize,
}

const LIVE: u32 = 1;
const PUBLIC: u32 = 2;
const GENERATION_MASK: u32 = u32::MAX >> 2;

/// Compaction waits until stale postings outnumber live ones (and this many), keeping upserts amortized O(1).
const MIN_STALE_FOR_COMPACTION: usize = 1 << 16;

impl SearchIndex {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    pub fn contains(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    pub fn upsert(&mut self, id: &str, link: Link, public: bool) {
        self.remove_quietly(id);
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.state.push(0);
            self.entries.push(0);
            self.id_spans.push((0, 0));
            (self.slots.len() - 1) as u32
        });
        let doc = Doc {
            id: id.to_owned(),
            public,
            link,
            tags: Vec::new(),
            postings: 0,
        };
        self.index_doc(slot, doc);
        self.by_id.insert(id.to_owned(), slot);
        self.compact_if_stale();
    }

    pub fn remove(&mut self, id: &str) -> bool {
        let removed = self.remove_quietly(id);
        self.compact_if_stale();
        removed
    }

    fn compact_if_stale(&mut self) {
        if self.stale_postings > self.live_postings.max(MIN_STALE_FOR_COMPACTION) {
            self.compact();
        }
    }

    fn remove_quietly(&mut self, id: &str) -> bool {
        let Some(slot) = self.by_id.remove(id) else {
            return false;
        };
        if let Some(doc) = self.slots[slot as usize].take() {
            self.live_postings -= doc.postings;
            self.stale_postings += doc.postings;
        }
        let generation = (self.state[slot as usize] >> 2).wrapping_add(1) & GENERATION_MASK;
        self.state[slot as usize] = generation << 2;
        self.free.push(slot);
        true
    }

    fn index_doc(&mut self, slot: u32, mut doc: Doc) {
        let generation = self.state[slot as usize] >> 2;
        self.state[slot as usize] = generation << 2 | LIVE | if doc.public { PUBLIC } else { 0 };
        let mut norm: [String; 6] = Default::default();
        for (field, text) in norm.iter_mut().enumerate() {
            if field != HASHTAGS {
                *text = normalize(&doc.link.field(field));
            }
        }
        doc.tags = doc.link.hashtags.iter().map(|t| normalize(t)).collect();
        doc.tags.sort_unstable();
        doc.tags.dedup();
        norm[HASHTAGS] = doc.tags.join(" ");
        let entry = self.corpus.push(
            slot,
            generation,
            [SLUG, TITLE, URL, DESCRIPTION, NOTE]
                .iter()
                .map(|&f| norm[f].as_str())
                .chain(doc.tags.iter().map(String::as_str)),
        );
        self.entries[slot as usize] = entry as u32;
        self.id_spans[slot as usize] = (self.id_text.len(), self.id_text.len() + doc.id.len());
        self.id_text.push_str(&doc.id);
        let mut fields_of: HashMap<&str, u8> = HashMap::new();
        for (field, text) in norm.iter().enumerate() {
            for word in words(text) {
                *fields_of.entry(word).or_default() |= 1 << field;
            }
        }
        for (word, &fields) in &fields_of {
            self.words.add(
                word,
                Posting {
                    slot,
                    generation,
                    fields,
                },
            );
        }
        for tag in &doc.tags {
            self.tags.add(
                tag,
                Posting {
                    slot,
                    generation,
                    fields: 1 << HASHTAGS,
                },
            );
        }
        doc.postings = fields_of.len() + doc.tags.len();
        self.live_postings += doc.postings;
        self.slots[slot as usize] = Some(doc);
    }

    /// Rebuilds corpora and vocabularies from the live links only.
    fn compact(&mut self) {
        let docs: Vec<(u32, Doc)> = (0..self.slots.len())
            .filter_map(|slot| self.slots[slot].take().map(|doc| (slot as u32, doc)))
            .collect();
        self.corpus = Corpus::default();
        self.id_text.clear();
        self.words = Vocab::default();
        self.tags = Vocab::default();
        (self.live_postings, self.stale_postings) = (0, 0);
        for (slot, doc) in docs {
            self.index_doc(slot, doc);
        }
    }

    /// The id of the link in `slot` (or of the last link that was there).
    pub(super) fn id_of(&self, slot: u32) -> &str {
        let (start, end) = self.id_spans[slot as usize];
        &self.id_text[start..end]
    }

    /// Whether `slot` holds a link visible under `public_only`.
    pub(super) fn visible(&self, slot: u32, public_only: bool) -> bool {
        let state = self.state[slot as usize];
        state & LIVE != 0 && (state & PUBLIC != 0 || !public_only)
    }

    /// Whether a posting for (`slot`, `generation`) is current and visible under `public_only`.
    #[inline]
    pub(super) fn live(&self, slot: u32, generation: u32, public_only: bool) -> bool {
        let state = self.state[slot as usize];
        let wanted = generation << 2 | LIVE | if public_only { PUBLIC } else { 0 };
        state & (!PUBLIC | wanted) == wanted
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub fn link(slug: &str, title: &str, url: &str, tags: &[&str]) -> Link {
        Link {
            slug: slug.into(),
            destination_url: url.into(),
            title: Some(title.into()),
            hashtags: tags.iter().map(|t| t.to_string()).collect(),
            ..Link::default()
        }
    }

    pub fn sample() -> SearchIndex {
        let mut index = SearchIndex::new();
        index.upsert(
            "lnk_a",
            link(
                "rust-book",
                "The Rust Book",
                "https://doc.rust-lang.org/book/",
                &["rust", "books"],
            ),
            true,
        );
        index.upsert(
            "lnk_b",
            link("brulee", "Crème Brûlée", "https://cooking.example/creme", &["dessert"]),
            true,
        );
        index.upsert(
            "lnk_c",
            link(
                "secret",
                "Private notes on Rust",
                "https://notes.example/rust",
                &["rust"],
            ),
            false,
        );
        index
    }

    pub fn sorted(ids: Vec<&str>) -> Vec<String> {
        let mut ids: Vec<String> = ids.into_iter().map(str::to_owned).collect();
        ids.sort();
        ids
    }
}
