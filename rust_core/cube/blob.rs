//! A cube as the five columns of its row. `cube` holds the string table and the combinations with their
//! clicks; the others refer to a combination by its position there. They are apart so that a question reads
//! only what it needs: a year's series reads `cube` and the visitors of one key mask, never the hours, the
//! per-link counts or the sketches. `uniques` is one section per mask, each prefixed with its length, so a
//! reader skips the masks it does not use.

use super::{project, Cube, Dims, Key, MASKS, NONE, NO_VARIANT};
use crate::codec::{CodecError, Reader, Writer};
use crate::fasthash::IdMap;
use crate::hll::Hll;
use crate::rollup::intern::Interner;
use crate::useragent::Device;

/// Version 2 adds each combination's country and city; version 1 cubes (written before) read as unknown places.
/// Version 3 adds its variant (a byte after the city); cubes written before read as clicks without a variant.
pub const VERSION: u8 = 3;
/// The version before variants, which a cube keeping none is written in for code that cannot read 3 (0021's
/// downgrade).
pub const VERSION_2: u8 = 2;
/// Visitor counts are kept in sixteenths: estimates past the exact range have fractions, which only matter summed.
pub const VISITOR_SCALE: f64 = 16.0;
/// Bound on any count read back: a cube never holds more entries than this.
pub const MAX_ENTRIES: usize = 1 << 24;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Blobs {
    pub cube: Vec<u8>,
    pub uniques: Option<Vec<u8>>,
    pub hours: Option<Vec<u8>>,
    pub links: Option<Vec<u8>>,
    pub sketches: Option<Vec<u8>>,
}

fn id(id: u32) -> u64 {
    if id == NONE {
        0
    } else {
        u64::from(id) + 1
    }
}

impl Cube {
    pub fn encode(&self) -> Blobs {
        self.encode_as(VERSION)
    }

    /// `encode` in `version`, `VERSION_2` or `VERSION`: version 2 has no variant byte, so a cube written in it
    /// must keep no variants (`without_variants`).
    pub fn encode_as(&self, version: u8) -> Blobs {
        debug_assert!(
            version == VERSION || (version == VERSION_2 && self.combos.keys().all(|d| d.variant == NO_VARIANT))
        );
        let combos: Vec<(Dims, i64)> = self.combos.iter().map(|(&d, &n)| (d, n)).collect();
        let (mut out, position) = self.write_combos(combos, version, true);
        let (own, rest) = self.encode_uniques(&position);
        out.bytes(&own);
        Blobs {
            cube: out.finish(),
            uniques: rest,
            hours: self.encode_hours(&position),
            links: self.encode_links(),
            sketches: self.encode_sketches(&position),
        }
    }

    /// This cube's clicks projected as `project` does for `level` (one of `super::PROJECTIONS`), as a
    /// `cube` column without visitors: what filtered top links read of a link's month instead of its whole cube.
    pub fn encode_projection(&self, level: u8) -> Vec<u8> {
        let mut projected: IdMap<Dims, i64> = IdMap::default();
        for (&d, &n) in &self.combos {
            *projected.entry(project(d, level)).or_insert(0) += n;
        }
        let combos: Vec<(Dims, i64)> = projected.into_iter().filter(|&(_, n)| n != 0).collect();
        let (mut out, _) = self.write_combos(combos, VERSION, false);
        out.uint(0); // no visitor counts
        out.finish()
    }

    /// The version byte, the string table and `combos` with their clicks, sorted (so equal cubes are equal bytes):
    /// only the strings a combination uses are written, in first-use order. With each visitor key's position, if
    /// asked for.
    fn write_combos(&self, mut combos: Vec<(Dims, i64)>, version: u8, keys: bool) -> (Writer, IdMap<Key, usize>) {
        // By device, then each string's place in the sorted table (none first), then variant: the strings are
        // sorted once, not compared at every step of the sort (a busy link's month is thousands of combinations,
        // sorted at every write).
        let rank = self.strings.ranks();
        let place = |s: u32| if s == NONE { 0 } else { rank[s as usize] + 1 };
        combos.sort_unstable_by_key(|(d, _)| {
            let strings = [d.browser, d.os, d.source, d.referrer, d.country, d.city].map(place);
            (d.device, strings, d.variant)
        });
        let mut strings = Interner::default();
        let mut keep = |s: u32| {
            if s == NONE {
                NONE
            } else {
                strings.intern(self.strings.name(s))
            }
        };
        let written: Vec<(Dims, Dims, i64)> = combos
            .iter()
            .map(|&(d, n)| {
                let new = Dims {
                    device: d.device,
                    browser: keep(d.browser),
                    os: keep(d.os),
                    source: keep(d.source),
                    referrer: keep(d.referrer),
                    country: keep(d.country),
                    city: keep(d.city),
                    variant: d.variant,
                };
                (d, new, n)
            })
            .collect();
        let mut out = Writer::default();
        out.byte(version);
        write_strings(&mut out, &strings);
        out.uint(written.len() as u64);
        let mut position: IdMap<Key, usize> = IdMap::default();
        for (i, &(old, new, n)) in written.iter().enumerate() {
            write_dims(&mut out, &new, version);
            out.int(n);
            for mask in MASKS.into_iter().filter(|_| keys) {
                position.entry((mask, old.masked(mask))).or_insert(i);
            }
        }
        (out, position)
    }

    /// The visitors of mask 0 (device, browser, os: what most questions read), kept in the `cube` column, and
    /// the other masks' for the `uniques` column.
    fn encode_uniques(&self, position: &IdMap<Key, usize>) -> (Vec<u8>, Option<Vec<u8>>) {
        let mut own = Vec::new();
        let mut out = Writer::default();
        for mask in MASKS {
            let mut entries: Vec<(usize, f64)> = self
                .uniques
                .iter()
                .filter(|(k, _)| k.0 == mask)
                .filter_map(|(k, &v)| position.get(k).map(|&i| (i, v)))
                .collect();
            entries.sort_unstable_by_key(|e| e.0);
            let mut section = Writer::default();
            section.uint(entries.len() as u64);
            for (i, v) in entries {
                section.uint(i as u64);
                section.uint((v * VISITOR_SCALE).round().max(0.0) as u64);
            }
            let section = section.finish();
            if mask == 0 {
                own = section;
            } else {
                out.uint(section.len() as u64);
                out.bytes(&section);
            }
        }
        let rest = self.uniques.keys().any(|k| k.0 != 0).then(|| out.finish());
        (own, rest)
    }

    fn encode_hours(&self, position: &IdMap<Key, usize>) -> Option<Vec<u8>> {
        let mut entries: Vec<(u8, usize, i64)> = self
            .hours
            .iter()
            .filter_map(|(&(h, d), &n)| position.get(&(3, d)).map(|&i| (h, i, n)))
            .collect();
        if entries.is_empty() {
            return None;
        }
        entries.sort_unstable();
        let mut out = Writer::default();
        out.uint(entries.len() as u64);
        for (h, i, n) in entries {
            out.byte(h);
            out.uint(i as u64);
            out.int(n);
        }
        Some(out.finish())
    }

    pub fn encode_links(&self) -> Option<Vec<u8>> {
        if self.links.is_empty() {
            return None;
        }
        let mut links: Vec<(&String, &i64)> = self.links.iter().collect();
        links.sort_unstable();
        let mut out = Writer::default();
        out.uint(links.len() as u64);
        for (link, &n) in links {
            out.str(link);
            out.int(n);
        }
        Some(out.finish())
    }

    fn encode_sketches(&self, position: &IdMap<Key, usize>) -> Option<Vec<u8>> {
        let mut entries: Vec<(u8, usize, &Hll)> = self
            .sketches
            .iter()
            .filter_map(|(k, s)| position.get(k).map(|&i| (k.0, i, s)))
            .collect();
        if entries.is_empty() {
            return None;
        }
        entries.sort_unstable_by_key(|e| (e.0, e.1));
        let mut out = Writer::default();
        out.uint(entries.len() as u64);
        for (mask, i, sketch) in entries {
            out.byte(mask);
            out.uint(i as u64);
            sketch.encode(&mut out);
        }
        Some(out.finish())
    }

    /// The cube of a row; a missing column is an empty part.
    pub fn decode(
        cube: &[u8],
        uniques: Option<&[u8]>,
        hours: Option<&[u8]>,
        links: Option<&[u8]>,
        sketches: Option<&[u8]>,
    ) -> Result<Cube, CodecError> {
        let mut out = Cube::default();
        let (strings, combos, own) = decode_cube(cube)?;
        for s in &strings {
            out.strings.intern(s);
        }
        if out.strings.len() != strings.len() {
            return Err(CodecError::Invalid); // a string written twice
        }
        for &(d, n) in &combos {
            out.combos.insert(d, n);
        }
        let at = |i: usize| combos.get(i).map(|c| c.0).ok_or(CodecError::Invalid);
        for (i, v) in own {
            out.uniques.insert((0, at(i)?.masked(0)), v);
        }
        if let Some(bytes) = uniques {
            let mut r = Reader::new(bytes);
            for mask in 1..4 {
                for (i, v) in section(&mut r)? {
                    out.uniques.insert((mask, at(i)?.masked(mask)), v);
                }
            }
        }
        if let Some(bytes) = hours {
            let mut r = Reader::new(bytes);
            for _ in 0..r.len(MAX_ENTRIES)? {
                let hour = r.byte()?;
                if hour > 23 {
                    return Err(CodecError::Invalid);
                }
                let d = at(index(r.uint()?)?)?;
                out.hours.insert((hour, d), r.int()?);
            }
        }
        if let Some(bytes) = links {
            let mut r = Reader::new(bytes);
            for _ in 0..r.len(MAX_ENTRIES)? {
                let link = r.str()?.to_owned();
                out.links.insert(link, r.int()?);
            }
        }
        if let Some(bytes) = sketches {
            let mut r = Reader::new(bytes);
            for _ in 0..r.len(MAX_ENTRIES)? {
                let mask = r.byte()?;
                if mask > 3 {
                    return Err(CodecError::Invalid);
                }
                let d = at(index(r.uint()?)?)?;
                out.sketches.insert((mask, d.masked(mask)), Hll::decode(&mut r)?);
            }
        }
        Ok(out)
    }
}

fn index(v: u64) -> Result<usize, CodecError> {
    usize::try_from(v).map_err(|_| CodecError::Invalid)
}

/// One length-prefixed section of visitor counts: (combination position, visitors).
pub fn section(r: &mut Reader<'_>) -> Result<Vec<(usize, f64)>, CodecError> {
    let len = r.len(usize::MAX)?;
    let mut s = Reader::new(r.take(len)?);
    entries(&mut s)
}

fn entries(s: &mut Reader<'_>) -> Result<Vec<(usize, f64)>, CodecError> {
    (0..s.len(MAX_ENTRIES)?)
        .map(|_| Ok((index(s.uint()?)?, s.uint()? as f64 / VISITOR_SCALE)))
        .collect()
}

/// A `cube` column read back: its strings, its combinations with their clicks (strings as positions in the
/// table), and the visitor counts of mask 0 (combination position, visitors).
pub type Decoded<'a> = (Vec<&'a str>, Vec<(Dims, i64)>, Vec<(usize, f64)>);

pub fn decode_cube(bytes: &[u8]) -> Result<Decoded<'_>, CodecError> {
    let mut r = Reader::new(bytes);
    let version = r.byte()?;
    if !(1..=VERSION).contains(&version) {
        return Err(CodecError::Invalid);
    }
    let strings = read_strings(&mut r)?;
    let n = r.len(MAX_ENTRIES)?;
    let mut combos = Vec::with_capacity(n);
    for _ in 0..n {
        let d = read_dims(&mut r, strings.len(), version)?;
        combos.push((d, r.int()?));
    }
    let own = entries(&mut r)?;
    Ok((strings, combos, own))
}

/// One combination as `version` writes it (`read_dims`): its strings as positions in the table, 0 for none.
pub fn write_dims(out: &mut Writer, d: &Dims, version: u8) {
    out.byte(d.device);
    for s in [d.browser, d.os, d.source, d.referrer, d.country, d.city] {
        out.uint(id(s));
    }
    if version > VERSION_2 {
        out.byte(d.variant);
    }
}

/// A string table (`read_strings`).
pub fn write_strings(out: &mut Writer, strings: &Interner) {
    out.uint(strings.len() as u64);
    for s in 0..strings.len() as u32 {
        out.str(strings.name(s));
    }
}

/// A string table: its number, then each string.
pub fn read_strings<'a>(r: &mut Reader<'a>) -> Result<Vec<&'a str>, CodecError> {
    let n = r.len(MAX_ENTRIES)?;
    (0..n).map(|_| r.str()).collect()
}

/// One combination as `version` writes it (country and city from 2, the variant from 3), its strings checked
/// against the table's `strings` of them.
pub fn read_dims(r: &mut Reader<'_>, strings: usize, version: u8) -> Result<Dims, CodecError> {
    let string = |v: u64| -> Result<u32, CodecError> {
        match v {
            0 => Ok(NONE),
            v if (v as usize) <= strings => Ok((v - 1) as u32),
            _ => Err(CodecError::Invalid),
        }
    };
    let device = r.byte()?;
    if usize::from(device) >= Device::ALL.len() {
        return Err(CodecError::Invalid);
    }
    Ok(Dims {
        device,
        browser: string(r.uint()?)?,
        os: string(r.uint()?)?,
        source: string(r.uint()?)?,
        referrer: string(r.uint()?)?,
        country: if version == 1 { NONE } else { string(r.uint()?)? },
        city: if version == 1 { NONE } else { string(r.uint()?)? },
        variant: if version < 3 { NO_VARIANT } else { r.byte()? },
    })
}
