//! Roll-ups of clicks that analytics reads instead of the click log: one `Cube` per view (a link, an
//! account's links, or its public links) and day or month. A cube holds clicks per combination of device,
//! browser, os, source and referrer host; a day's cube also holds them per hour, and the distinct visitors
//! of each projection of those combinations (`Key`), with their sketches while the day can still grow; an
//! account's cubes hold clicks per link. The click writer merges each batch into the cubes it touches, so
//! a question about a year reads 365 small day cubes, never the clicks.
//!
//! Visitor hashes are keyed with the day's salt, so one person is one hash per day: a period's unique
//! visitors is the sum of its days'. Within a day, device, browser and os come from the user agent, which is
//! part of the hash: each visitor has exactly one of those triples, so the triples partition the day's
//! visitors. Source and referrer are per click, hence kept in the key when a filter names them.

mod blob;
pub mod delta;
pub mod pack;
pub mod query;

use crate::fasthash::{IdMap, IdSet};
use crate::hll::Hll;
use crate::rollup::intern::Interner;

pub use blob::{Blobs, VERSION_2};

/// No string: a click without a referrer host, or a dimension left out of a key.
pub const NONE: u32 = u32::MAX;
/// No variant: a click of a link without variants, or one counted before cubes kept variants.
pub use crate::rollup::NO_VARIANT;
/// Key masks: which of source (bit 0) and referrer (bit 1) a unique-visitor key keeps.
pub const MASKS: [u8; 4] = [0, 1, 2, 3];
/// Combinations a cube keeps apart; past them a new one is kept with its source and referrer host as `OTHER`.
/// Sources and referrers are whatever visitors send, so without this anyone could make a cube, and every
/// question that reads it, as large as the clicks they can make.
pub const MAX_COMBOS: usize = 10_000;
/// Distinct sources, and distinct referrer hosts, a cube keeps apart; past them a new one counts as `OTHER`.
/// Without it a flood of made-up sources (a new `utm_source` on every click) filled a day's cube with 10,000
/// combinations and their visitor keys, half a megabyte that every question about that day read again.
pub const MAX_VALUES: usize = 1_000;
pub const OTHER: &str = "(other)";
pub const DAY: u8 = 0;
pub const MONTH: u8 = 1;
/// A month of an account view's closed day cubes as one row (`pack`); its bucket is the last day it holds.
pub const PACK: u8 = 2;

/// A link's month cube projected onto fewer dimensions (`project`): rows beside the month, each a fraction of its
/// bytes (a busy link's month holds thousands of combinations of user agents, origins and places), which filtered
/// top links read instead of the month when the filters name only dimensions one keeps. `BY_AGENT` keeps device,
/// browser and os.
pub const BY_AGENT: u8 = 3;
/// Device, source and referrer host.
pub const BY_ORIGIN: u8 = 4;
/// Device, country and city.
pub const BY_PLACE: u8 = 5;
/// The projections, smallest first as a rule (a day's visitors have a few user agents, more origins and places).
pub const PROJECTIONS: [u8; 3] = [BY_AGENT, BY_ORIGIN, BY_PLACE];

/// Whether the projection `level` keeps the dimension at `k` of `query::DIMENSIONS` (device is kept by all of
/// them; the variant by none: filtered top links rank links, whose variants are their own).
pub fn keeps(level: u8, k: usize) -> bool {
    match k {
        0 => true,
        1 | 2 => level == BY_AGENT,
        3 | 4 => level == BY_ORIGIN,
        5 | 6 => level == BY_PLACE,
        _ => false,
    }
}

/// The combination as the projection `level` keeps it (`keeps`), the rest left out.
pub fn project(d: Dims, level: u8) -> Dims {
    let kept = |k: usize, s: u32| if keeps(level, k) { s } else { NONE };
    Dims {
        device: d.device,
        browser: kept(1, d.browser),
        os: kept(2, d.os),
        source: kept(3, d.source),
        referrer: kept(4, d.referrer),
        country: kept(5, d.country),
        city: kept(6, d.city),
        variant: NO_VARIANT,
    }
}

/// One combination of a click's dimensions; strings are ids of the cube's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Dims {
    pub device: u8,
    pub browser: u32,
    pub os: u32,
    pub source: u32,
    pub referrer: u32,
    /// Where the clicks came from (`NONE`: unknown): per visitor, like device, browser and os (the address that
    /// places a click is part of its visitor hash).
    pub country: u32,
    pub city: u32,
    /// The link's variant the clicks were sent to (its index; `NO_VARIANT`: none): per visitor too, as the variant
    /// is drawn from the visitor's keyed hash, the same all day.
    pub variant: u8,
}

impl Dims {
    /// The projection a unique-visitor key with `mask` keeps.
    pub fn masked(self, mask: u8) -> Dims {
        Dims {
            source: if mask & 1 == 0 { NONE } else { self.source },
            referrer: if mask & 2 == 0 { NONE } else { self.referrer },
            ..self
        }
    }
}

pub type Key = (u8, Dims);

#[derive(Debug, Default)]
pub struct Cube {
    pub strings: Interner,
    pub combos: IdMap<Dims, i64>,
    pub hours: IdMap<(u8, Dims), i64>,
    pub links: IdMap<String, i64>,
    pub uniques: IdMap<Key, f64>,
    pub sketches: IdMap<Key, Hll>,
    /// The sources and referrer hosts the combinations name, worked out at the first `admit` that needs them
    /// and kept up to date by `admit` (one that no combination names any more still counts: it only folds a
    /// newcomer a little sooner).
    values: Option<Values>,
}

#[derive(Debug, Default)]
struct Values {
    sources: IdSet<u32>,
    referrers: IdSet<u32>,
}

impl Values {
    fn of(combos: &IdMap<Dims, i64>) -> Values {
        let mut values = Values::default();
        for d in combos.keys() {
            values.sources.insert(d.source);
            if d.referrer != NONE {
                values.referrers.insert(d.referrer);
            }
        }
        values
    }
}

/// Whether `value` may be kept apart among `seen` (remembering it if so).
fn keep(seen: &mut IdSet<u32>, value: u32) -> bool {
    if seen.contains(&value) {
        return true;
    }
    if seen.len() < MAX_VALUES {
        seen.insert(value);
        return true;
    }
    false
}

fn add<K: std::hash::Hash + Eq>(map: &mut IdMap<K, i64>, key: K, n: i64) {
    use std::collections::hash_map::Entry;
    match map.entry(key) {
        Entry::Occupied(mut e) => {
            *e.get_mut() += n;
            if *e.get() == 0 {
                e.remove();
            }
        }
        Entry::Vacant(e) => {
            if n != 0 {
                e.insert(n);
            }
        }
    }
}

impl Cube {
    /// The combination `d` is counted under here: itself; or with `OTHER` for a source, or a referrer host,
    /// past the `MAX_VALUES` this cube keeps apart; or past `MAX_COMBOS` with `OTHER` for its source, its
    /// referrer host and its city (those it has).
    pub fn admit(&mut self, d: Dims) -> Dims {
        if self.combos.contains_key(&d) {
            return d;
        }
        let room = self.combos.len() < MAX_COMBOS;
        let values = self.values.get_or_insert_with(|| Values::of(&self.combos));
        let source = room && keep(&mut values.sources, d.source);
        let referrer = room && (d.referrer == NONE || keep(&mut values.referrers, d.referrer));
        if source && referrer {
            return d;
        }
        let other = self.strings.intern(OTHER);
        let d = Dims {
            city: if room || d.city == NONE { d.city } else { other },
            source: if source { d.source } else { other },
            referrer: if referrer || d.referrer == NONE {
                d.referrer
            } else {
                other
            },
            ..d
        };
        let values = self.values.get_or_insert_with(Values::default);
        values.sources.insert(d.source);
        if d.referrer != NONE {
            values.referrers.insert(d.referrer);
        }
        d
    }

    /// Adds `other` into this cube `weight` times (1 to add a batch or a link, -1 to take a link out).
    ///
    /// Visitors: an added key whose sketch both sides hold is re-estimated from the union; where this side no
    /// longer keeps its sketch (a closed day), the other's estimate is added, counting anyone on both sides
    /// twice. Taking out subtracts the estimate and drops this side's sketch of the key, which still holds the
    /// visitors taken out: the day's later clicks then add to the lowered figure.
    pub fn merge(&mut self, other: &Cube, weight: i64) {
        self.merge_as(other, weight, true);
    }

    /// `merge` of a link's cube into one of its account's views, which keep no variants: a variant is one link's
    /// (its index means nothing across links), and a visitor may be sent to variant 0 of one link and 1 of another
    /// the same day, so keys split by variant would count them twice in the view's visitors.
    pub fn merge_into_view(&mut self, link: &Cube, weight: i64) {
        self.merge_as(link, weight, false);
    }

    fn merge_as(&mut self, other: &Cube, weight: i64, variants: bool) {
        let ids: Vec<u32> = (0..other.strings.len() as u32)
            .map(|id| self.strings.intern(other.strings.name(id)))
            .collect();
        let map = |d: Dims| Dims {
            device: d.device,
            browser: remap(&ids, d.browser),
            os: remap(&ids, d.os),
            source: remap(&ids, d.source),
            referrer: remap(&ids, d.referrer),
            country: remap(&ids, d.country),
            city: remap(&ids, d.city),
            variant: if variants { d.variant } else { NO_VARIANT },
        };
        // Where each of the other's combinations (and the keys projected from it) is counted here.
        let mut placed: IdMap<Dims, Dims> = IdMap::with_capacity_and_hasher(other.combos.len(), Default::default());
        let mut keys: IdMap<Key, Key> = IdMap::default();
        for (&dims, &n) in &other.combos {
            let here = self.admit(map(dims));
            placed.insert(dims, here);
            for mask in MASKS {
                keys.entry((mask, dims.masked(mask)))
                    .or_insert((mask, here.masked(mask)));
            }
            add(&mut self.combos, here, n * weight);
        }
        for (&(hour, dims), &n) in &other.hours {
            let here = placed.get(&dims).copied().unwrap_or_else(|| map(dims));
            add(&mut self.hours, (hour, here), n * weight);
        }
        for (link, &n) in &other.links {
            add(&mut self.links, link.clone(), n * weight);
        }
        for (&(mask, dims), &theirs) in &other.uniques {
            let key = keys.get(&(mask, dims)).copied().unwrap_or_else(|| (mask, map(dims)));
            if weight < 0 {
                self.sketches.remove(&key);
                let left = self.uniques.get(&key).copied().unwrap_or(0.0) - theirs;
                if left > 0.5 {
                    self.uniques.insert(key, left);
                } else {
                    self.uniques.remove(&key);
                }
                continue;
            }
            match (other.sketches.get(&(mask, dims)), self.uniques.contains_key(&key)) {
                (Some(sketch), false) => {
                    self.uniques.insert(key, sketch.estimate());
                    self.sketches.insert(key, sketch.clone());
                }
                (Some(sketch), true) if self.sketches.contains_key(&key) => {
                    let mine = self.sketches.entry(key).or_default();
                    mine.merge(sketch);
                    let estimate = mine.estimate();
                    self.uniques.insert(key, estimate);
                }
                _ => *self.uniques.entry(key).or_insert(0.0) += theirs,
            }
        }
    }

    /// This cube with its clicks and visitors of every variant counted as without one, as an account's views count
    /// a link's (`merge_into_view`): what a cube is before variants were kept (0021's downgrade).
    pub fn without_variants(&self) -> Cube {
        let mut plain = Cube::default();
        plain.merge_into_view(self, 1);
        plain
    }

    /// Makes this view's day cube again from `parts` (the day cubes of the links in the view now), keeping its
    /// per-link counts: exact again after a link left the view, where taking it out could only subtract its
    /// own visitors.
    pub fn rebuild(&mut self, parts: &[Cube]) {
        let links = std::mem::take(&mut self.links);
        *self = Cube::default();
        self.links = links;
        for part in parts {
            self.merge_into_view(part, 1);
        }
    }

    /// Drops what no click is left for: after a link is taken out, keys whose combinations are gone.
    pub fn prune(&mut self) {
        let kept: IdSet<Key> = self
            .combos
            .keys()
            .flat_map(|&d| MASKS.iter().map(move |&m| (m, d.masked(m))))
            .collect();
        self.uniques.retain(|key, _| kept.contains(key));
        self.sketches.retain(|key, _| kept.contains(key));
    }

    pub fn total(&self) -> i64 {
        self.combos.values().sum()
    }

    pub fn is_empty(&self) -> bool {
        self.combos.is_empty() && self.links.is_empty()
    }
}

fn remap(ids: &[u32], id: u32) -> u32 {
    if id == NONE {
        NONE
    } else {
        ids[id as usize]
    }
}

#[cfg(test)]
mod pack_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod variant_tests;
