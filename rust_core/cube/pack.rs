//! A month of a view's closed day cubes as one row: one string table and one table of combinations for the
//! month, then each day's clicks and visitors as positions in that table. A year's question then reads a dozen
//! rows instead of 365, and matches each string and combination against its filters once a month instead of
//! once a day. A pack holds exactly what its day cubes held (the same counts, the same visitor sixteenths), so
//! an answer is the same from either; it keeps neither hours nor sketches, which a closed day's questions over
//! long periods never read.
//!
//! `cube` column: version, strings, combinations (device, six string ids, variant), then the days in order,
//! each its epoch day and its length in bytes (so a reader skips the days outside its period), its clicks per
//! combination and its mask-0 visitors, each position as its distance from the one before (most take a byte). `uniques` column: for each day in the same order, its length, then its
//! visitors of masks 1 to 3 as a day cube's `uniques` column has them (empty for a day without). `links` column:
//! each link's clicks over all the pack's days, as a cube's (top links read it for the month under way).

use super::blob::{
    decode_cube, read_dims, read_strings, section, write_dims, write_strings, MAX_ENTRIES, VERSION as CUBE_VERSION,
    VISITOR_SCALE,
};
use super::{Cube, Dims, NONE};
use crate::codec::{CodecError, Reader, Writer};
use crate::fasthash::IdMap;
use crate::rollup::intern::Interner;

const VERSION: u8 = 1;
// Combinations are written as a day cube of `CUBE_VERSION` writes them (variant included), without their clicks.

/// One stored day cube of a view: (epoch day, `cube` column, `uniques` column, `links` column).
pub type DayCube<'a> = (i64, &'a [u8], Option<&'a [u8]>, Option<&'a [u8]>);

/// A pack's columns: `cube`; `uniques` (None when no day had visitors of masks 1 to 3); `links`, each link's clicks
/// over all its days as a cube's `links` column has them (None when no day had any).
pub type Packed = (Vec<u8>, Option<Vec<u8>>, Option<Vec<u8>>);

/// A position written as its distance from the one before (the first as itself): a day's positions are
/// increasing, so most take one byte. A position met twice is an error.
fn step(last: &mut Option<usize>, i: usize) -> Result<u64, CodecError> {
    let d = match *last {
        None => i,
        Some(l) if i > l => i - l,
        Some(_) => return Err(CodecError::Invalid),
    };
    *last = Some(i);
    Ok(d as u64)
}

fn visitors(out: &mut Writer, entries: &[(usize, f64)], at: &[usize]) -> Result<(), CodecError> {
    out.uint(entries.len() as u64);
    for &(i, v) in entries {
        out.uint(*at.get(i).ok_or(CodecError::Invalid)? as u64);
        out.uint((v * VISITOR_SCALE).round().max(0.0) as u64);
    }
    Ok(())
}

/// The pack of `days` (each day once; in any order).
pub fn pack(days: &[DayCube<'_>]) -> Result<Packed, CodecError> {
    let mut order: Vec<&DayCube<'_>> = days.iter().collect();
    order.sort_unstable_by_key(|d| d.0);
    if order.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(CodecError::Invalid);
    }
    let mut strings = Interner::default();
    let mut table: IdMap<Dims, usize> = IdMap::default();
    let mut combos: Vec<Dims> = Vec::new();
    let mut body = Writer::default();
    let mut rest = Writer::default();
    let mut any_rest = false;
    let mut links = Cube::default();
    body.uint(order.len() as u64);
    for &&(day, cube, uniques, per_link) in &order {
        if let Some(bytes) = per_link {
            let mut r = Reader::new(bytes);
            for _ in 0..r.len(MAX_ENTRIES)? {
                let link = r.str()?;
                let n = r.int()?;
                match links.links.get_mut(link) {
                    Some(sum) => *sum += n,
                    None => {
                        links.links.insert(link.to_owned(), n);
                    }
                }
            }
        }
        let (names, day_combos, own) = decode_cube(cube)?;
        let ids: Vec<u32> = names.iter().map(|s| strings.intern(s)).collect();
        let here = |s: u32| if s == NONE { NONE } else { ids[s as usize] };
        let at: Vec<usize> = day_combos
            .iter()
            .map(|(d, _)| {
                let d = Dims {
                    browser: here(d.browser),
                    os: here(d.os),
                    source: here(d.source),
                    referrer: here(d.referrer),
                    country: here(d.country),
                    city: here(d.city),
                    ..*d
                };
                *table.entry(d).or_insert_with(|| {
                    combos.push(d);
                    combos.len() - 1
                })
            })
            .collect();
        let mut clicks: Vec<(usize, i64)> = at.iter().zip(&day_combos).map(|(&i, &(_, n))| (i, n)).collect();
        clicks.sort_unstable();
        let mut own = own
            .iter()
            .map(|&(i, v)| Ok((*at.get(i).ok_or(CodecError::Invalid)?, v)))
            .collect::<Result<Vec<_>, CodecError>>()?;
        own.sort_unstable_by_key(|e| e.0);
        let mut one = Writer::default();
        one.uint(clicks.len() as u64);
        let mut last = None;
        for (i, n) in clicks {
            one.uint(step(&mut last, i)?);
            one.int(n);
        }
        one.uint(own.len() as u64);
        let mut last = None;
        for (i, v) in own {
            one.uint(step(&mut last, i)?);
            one.uint((v * VISITOR_SCALE).round().max(0.0) as u64);
        }
        let one = one.finish();
        body.int(day);
        body.uint(one.len() as u64);
        body.bytes(&one);
        let mut more = Writer::default();
        if let Some(bytes) = uniques {
            let mut r = Reader::new(bytes);
            for _ in 1..4 {
                let mut s = Writer::default();
                visitors(&mut s, &section(&mut r)?, &at)?;
                let s = s.finish();
                more.uint(s.len() as u64);
                more.bytes(&s);
            }
            any_rest = true;
        }
        let more = more.finish();
        rest.uint(more.len() as u64);
        rest.bytes(&more);
    }
    let mut out = Writer::default();
    out.byte(VERSION);
    write_strings(&mut out, &strings);
    out.uint(combos.len() as u64);
    for d in &combos {
        write_dims(&mut out, d, CUBE_VERSION);
    }
    out.bytes(&body.finish());
    links.links.retain(|_, n| *n != 0);
    Ok((out.finish(), any_rest.then(|| rest.finish()), links.encode_links()))
}

/// A pack's tables, read back: its strings and combinations, the number of its days and a reader at the first.
pub struct Tables<'a> {
    pub strings: Vec<&'a str>,
    pub combos: Vec<Dims>,
    pub count: usize,
    pub days: Reader<'a>,
}

pub fn tables(bytes: &[u8]) -> Result<Tables<'_>, CodecError> {
    let mut r = Reader::new(bytes);
    if r.byte()? != VERSION {
        return Err(CodecError::Invalid);
    }
    let strings = read_strings(&mut r)?;
    let n = r.len(MAX_ENTRIES)?;
    let combos = (0..n)
        .map(|_| read_dims(&mut r, strings.len(), CUBE_VERSION))
        .collect::<Result<Vec<_>, _>>()?;
    let count = r.len(MAX_ENTRIES)?;
    Ok(Tables {
        strings,
        combos,
        count,
        days: r,
    })
}

/// The next day of a pack, from the reader `tables` left past the day count: its epoch day and its body.
pub fn next_day<'a>(days: &mut Reader<'a>) -> Result<(i64, &'a [u8]), CodecError> {
    let day = days.int()?;
    let len = days.len(usize::MAX)?;
    Ok((day, days.take(len)?))
}

/// A day's body: its clicks per combination and its mask-0 visitors, as positions in the pack's `combos`
/// combinations (checked).
pub type Entries = (Vec<(usize, i64)>, Vec<(usize, f64)>);

pub fn entries(body: &[u8], combos: usize) -> Result<Entries, CodecError> {
    let mut r = Reader::new(body);
    // Each position is the one before plus the distance read (the first: as read), below `combos`.
    let position = |at: &mut Option<usize>, v: u64| {
        let next = usize::try_from(v)
            .ok()
            .and_then(|v| at.map_or(Some(v), |a| a.checked_add(v).filter(|_| v > 0)))
            .filter(|&i| i < combos)
            .ok_or(CodecError::Invalid)?;
        *at = Some(next);
        Ok(next)
    };
    let mut at = None;
    let clicks = (0..r.len(MAX_ENTRIES)?)
        .map(|_| Ok((position(&mut at, r.uint()?)?, r.int()?)))
        .collect::<Result<Vec<_>, CodecError>>()?;
    let mut at = None;
    let own = (0..r.len(MAX_ENTRIES)?)
        .map(|_| Ok((position(&mut at, r.uint()?)?, r.uint()? as f64 / VISITOR_SCALE)))
        .collect::<Result<Vec<_>, CodecError>>()?;
    Ok((clicks, own))
}

/// The `uniques` column's part for the next day: its sections of masks 1 to 3, as a day cube's `uniques`
/// column has them (empty for a day without).
pub fn next_uniques<'a>(rest: &mut Reader<'a>) -> Result<&'a [u8], CodecError> {
    let len = rest.len(usize::MAX)?;
    rest.take(len)
}
