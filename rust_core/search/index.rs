//! The per-account search index: links stored in slots (their original text, for highlights and the
//! substring checks of the filter) and two vocabularies (words, whole hashtags) with their postings.
//! Normalized text is kept only for links whose text is not all ASCII (normalizing it is ~30 ns a byte);
//! ASCII text is only lowercased when a filter reads it, and keeping it twice would double the memory. Replaced or removed links leave stale postings, recognised by their
//! generation and dropped when the index compacts, so an upsert costs O(size of the link) amortized.

use super::matching::{DESCRIPTION, HASHTAGS, NOTE, SLUG, TITLE, URL};
use super::normalize::{normalize, words};
use super::rank::Scores;
use super::vocab::{Posting, Vocab, GENERATION_MASK};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

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
    /// When the link was made (the caller's clock, e.g. microseconds since 1970): the order `filter_page` gives.
    pub created: i64,
    pub link: Link,
    /// The normalized text the filter matches substrings in (see `text_of`), kept when any of the link's text is
    /// not ASCII: normalizing that again for every query that reads it cost ~30 ns a byte, so a query of a dozen
    /// separator-only terms over a thousand accented notes took seconds. ASCII text is only lowercased, at a
    /// fraction of a nanosecond a byte, so it is not kept twice (the index stays within 3 bytes per byte of ASCII
    /// text).
    text: Option<String>,
    postings: usize,
}

impl Doc {
    fn memory_bytes(&self) -> usize {
        let link = &self.link;
        let optional = |text: &Option<String>| text.as_ref().map_or(0, String::capacity);
        self.id.capacity()
            + self.text.as_ref().map_or(0, String::capacity)
            + link.slug.capacity()
            + link.destination_url.capacity()
            + optional(&link.title)
            + optional(&link.description)
            + optional(&link.note)
            + link.hashtags.capacity() * size_of::<String>()
            + link.hashtags.iter().map(String::capacity).sum::<usize>()
    }
}

/// A link's hashtags, normalized, sorted and without duplicates.
fn normalized_tags(link: &Link) -> Vec<String> {
    let mut tags: Vec<String> = link.hashtags.iter().map(|t| normalize(t)).collect();
    tags.sort_unstable();
    tags.dedup();
    tags
}

#[derive(Debug, Default)]
pub struct SearchIndex {
    pub(super) slots: Vec<Option<Doc>>,
    /// Per slot: `generation << 2 | PUBLIC | LIVE`, compact so that checking a posting rarely misses the cache.
    state: Vec<u32>,
    /// Ids back to back with each slot's byte range: filters returning thousands of ids read one buffer.
    id_text: String,
    id_spans: Vec<(usize, usize)>,
    free: Vec<u32>,
    by_id: HashMap<String, u32>,
    pub(super) words: Vocab,
    pub(super) tags: Vocab,
    live_postings: usize,
    stale_postings: usize,
    /// Heap bytes of the live docs and of `by_id`'s keys, kept as links come and go, so `memory_bytes` costs the
    /// same whatever the index's size (it runs after every change).
    doc_bytes: usize,
    /// The ranking's scratch, kept between queries (see `rank::Scores`); a query that finds it lent out makes its
    /// own.
    scores: Mutex<Option<Scores>>,
}

const LIVE: u32 = 1;
const PUBLIC: u32 = 2;

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
        self.upsert_at(id, link, public, 0);
    }

    /// `upsert`, with the moment the link was made (see `filter_page`).
    pub fn upsert_at(&mut self, id: &str, link: Link, public: bool, created: i64) {
        self.remove_quietly(id);
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.state.push(0);
            self.id_spans.push((0, 0));
            (self.slots.len() - 1) as u32
        });
        let doc = Doc {
            id: id.to_owned(),
            public,
            created,
            link,
            text: None,
            postings: 0,
        };
        self.index_doc(slot, doc);
        self.doc_bytes += self.slots[slot as usize].as_ref().map_or(0, Doc::memory_bytes) + id.len();
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
        let Some((key, slot)) = self.by_id.remove_entry(id) else {
            return false;
        };
        self.doc_bytes -= key.capacity();
        if let Some(doc) = self.slots[slot as usize].take() {
            self.live_postings -= doc.postings;
            self.stale_postings += doc.postings;
            self.doc_bytes -= doc.memory_bytes();
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
        let tags = normalized_tags(&doc.link);
        let ascii = [SLUG, TITLE, URL, DESCRIPTION, NOTE]
            .iter()
            .all(|&field| doc.link.field(field).is_ascii())
            && doc.link.hashtags.iter().all(|tag| tag.is_ascii());
        if !ascii && doc.text.is_none() {
            // Compaction indexes a doc again, and keeps the text it has.
            let mut text = String::new();
            for field in [SLUG, TITLE, URL, DESCRIPTION, NOTE] {
                text.push_str(&norm[field]);
                text.push('\n');
            }
            for tag in &tags {
                text.push_str(tag);
                text.push('\n');
            }
            text.shrink_to_fit();
            doc.text = Some(text);
        }
        norm[HASHTAGS] = tags.join(" ");
        self.id_spans[slot as usize] = (self.id_text.len(), self.id_text.len() + doc.id.len());
        self.id_text.push_str(&doc.id);
        let mut fields_of: HashMap<&str, u8> = HashMap::new();
        for (field, text) in norm.iter().enumerate() {
            for word in words(text) {
                *fields_of.entry(word).or_default() |= 1 << field;
            }
        }
        for (word, &fields) in &fields_of {
            self.words.add(word, Posting::new(slot, generation, fields));
        }
        for tag in &tags {
            self.tags.add(tag, Posting::new(slot, generation, 1 << HASHTAGS));
        }
        doc.postings = fields_of.len() + tags.len();
        self.live_postings += doc.postings;
        self.slots[slot as usize] = Some(doc);
    }

    /// What highlighting the link in `slot` costs, in bytes of ASCII text: its text's length, eight times over when
    /// any of it is not ASCII (each char then goes through normalization and Unicode tables: ~140 ns a byte
    /// measured on letters the thread had normalized before, against 20-40 for ASCII).
    pub(super) fn highlight_cost(&self, slot: u32) -> usize {
        self.slots[slot as usize].as_ref().map_or(0, |doc| {
            let link = &doc.link;
            let optional = |text: &Option<String>| text.as_ref().map_or(0, String::len);
            let bytes = link.slug.len()
                + link.destination_url.len()
                + optional(&link.title)
                + optional(&link.description)
                + optional(&link.note)
                + link.hashtags.iter().map(|tag| tag.len() + 1).sum::<usize>();
            bytes * if doc.text.is_some() { 8 } else { 1 }
        })
    }

    /// The normalized text the filter matches substrings in: each field, then each hashtag, one per line (query
    /// terms hold no whitespace, so a match never straddles two of them). Made in `scratch` when the link's text
    /// is all ASCII (normalized, it is only lowercased), else the copy kept when the link was indexed.
    pub(super) fn text_of<'a>(&'a self, slot: u32, scratch: &'a mut String) -> &'a str {
        let Some(doc) = &self.slots[slot as usize] else {
            return "";
        };
        if let Some(text) = &doc.text {
            return text;
        }
        scratch.clear();
        let link = &doc.link;
        for field in [SLUG, TITLE, URL, DESCRIPTION, NOTE] {
            scratch.push_str(&link.field(field));
            scratch.push('\n');
        }
        for tag in &link.hashtags {
            scratch.push_str(tag);
            scratch.push('\n');
        }
        scratch.make_ascii_lowercase();
        scratch
    }

    /// Whether the link in `slot` has hashtag `tag` (normalized).
    pub(super) fn has_tag(&self, slot: u32, tag: &str) -> bool {
        self.slots[slot as usize]
            .as_ref()
            .is_some_and(|doc| doc.link.hashtags.iter().any(|t| normalize(t) == tag))
    }

    /// Heap bytes the index holds, from capacities (what the allocator gave out, not what is in use). Costs
    /// the same whatever the index's size: the docs' and the vocabularies' own allocations are kept as they change.
    pub fn memory_bytes(&self) -> usize {
        let per_slot =
            size_of::<Option<Doc>>() + size_of::<u32>() + size_of::<(usize, usize)>() + Scores::BYTES_PER_SLOT;
        let by_id = self.by_id.capacity() * (size_of::<(String, u32)>() + 1);
        self.slots.capacity() * per_slot
            + self.doc_bytes
            + self.id_text.capacity()
            + self.free.capacity() * size_of::<u32>()
            + by_id
            + self.words.memory_bytes()
            + self.tags.memory_bytes()
    }

    /// Gives back the spare capacity of growing buffers (after a bulk load, which will not grow much more).
    pub fn shrink_to_fit(&mut self) {
        self.slots.shrink_to_fit();
        self.state.shrink_to_fit();
        self.id_spans.shrink_to_fit();
        self.id_text.shrink_to_fit();
        self.by_id.shrink_to_fit();
        self.words.shrink_to_fit();
        self.tags.shrink_to_fit();
        *self.scores.get_mut().unwrap_or_else(PoisonError::into_inner) = None; // fitted again by the next query
    }

    /// The kept ranking scratch (all zeros), or a new one when another query has it.
    pub(super) fn lend_scores(&self) -> Scores {
        self.scores
            .try_lock()
            .ok()
            .and_then(|mut kept| kept.take())
            .unwrap_or_default()
    }

    /// Keeps `scores` (zeroed) for the next query, unless one is kept already.
    pub(super) fn give_back_scores(&self, scores: Scores) {
        if let Ok(mut kept) = self.scores.try_lock() {
            kept.get_or_insert(scores);
        }
    }

    /// Rebuilds corpora and vocabularies from the live links only.
    fn compact(&mut self) {
        let docs: Vec<(u32, Doc)> = (0..self.slots.len())
            .filter_map(|slot| self.slots[slot].take().map(|doc| (slot as u32, doc)))
            .collect();
        self.id_text.clear();
        self.words = Vocab::default();
        self.tags = Vocab::default();
        (self.live_postings, self.stale_postings) = (0, 0);
        for (slot, doc) in docs {
            self.index_doc(slot, doc);
        }
        self.words.freeze();
        self.tags.freeze();
    }

    /// (live postings, postings held including stale ones).
    #[cfg(test)]
    pub(super) fn postings(&self) -> (usize, usize) {
        (
            self.live_postings,
            self.words.postings_held() + self.tags.postings_held(),
        )
    }

    /// `doc_bytes`, counted again from every doc and key (what `memory_bytes` did on every call before).
    #[cfg(test)]
    fn doc_bytes_counted(&self) -> usize {
        self.slots.iter().flatten().map(Doc::memory_bytes).sum::<usize>()
            + self.by_id.keys().map(String::capacity).sum::<usize>()
    }

    /// The id of the link in `slot` (or of the last link that was there).
    pub(super) fn id_of(&self, slot: u32) -> &str {
        let (start, end) = self.id_spans[slot as usize];
        &self.id_text[start..end]
    }

    /// When the link in `slot` was made (0 for an empty slot).
    pub(super) fn created_of(&self, slot: u32) -> i64 {
        self.slots[slot as usize].as_ref().map_or(0, |doc| doc.created)
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

    #[test]
    fn bytes_kept_as_links_change_match_a_full_count() {
        let mut index = SearchIndex::new();
        let check = |index: &SearchIndex| {
            assert_eq!(index.doc_bytes, index.doc_bytes_counted());
            for vocab in [&index.words, &index.tags] {
                assert_eq!(vocab.held(), vocab.held_counted());
            }
        };
        // Enough churn to pass MIN_STALE_FOR_COMPACTION: the counts must survive compactions too.
        for round in 0..30_000usize {
            let id = format!("lnk_{:05}", round % 3_000);
            let words = format!("w{} common shared{} ünïcode", round % 97, round % 13);
            let tags = [format!("t{}", round % 7), "x".repeat(round % 40)];
            let tags: Vec<&str> = tags.iter().map(String::as_str).collect();
            if round % 5 == 4 {
                index.remove(&id);
            } else {
                index.upsert(
                    &id,
                    link(&id, &words, &format!("https://e.test/{round}"), &tags),
                    round % 2 == 0,
                );
            }
            if round % 1_000 == 0 {
                check(&index);
            }
        }
        check(&index);
        index.shrink_to_fit();
        check(&index);
        assert!(
            index.postings().1 < 150_000,
            "stale postings were compacted away (~280,000 were added)"
        );
    }
}
