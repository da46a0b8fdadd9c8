//! Answering analytics from stored cube columns without building cubes: each row's strings are matched
//! against the filters once, then its combinations are summed as integers.

use super::blob::{decode_cube, section, MAX_ENTRIES};
use super::{Dims, NONE, NO_VARIANT};
use crate::codec::{CodecError, Reader};
use crate::fasthash::IdMap;
use crate::useragent::Device;
use std::collections::HashMap;

/// The dimensions, in the order filters and breakdowns use them.
pub const DIMENSIONS: [&str; 8] = [
    "device", "browser", "os", "source", "referrer", "country", "city", "variant",
];
/// Where the variant is among `DIMENSIONS`: its values are the variants' indexes, in decimal.
const VARIANT: usize = 7;
const N: usize = DIMENSIONS.len();

/// Lowercased values a click's dimensions must equal; `None` lets every value through.
#[derive(Debug, Default, Clone)]
pub struct Filters(pub [Option<String>; N]);

impl Filters {
    /// The unique-visitor key mask that answers these filters: source and referrer kept when filtered on.
    fn mask(&self) -> u8 {
        u8::from(self.0[3].is_some()) | u8::from(self.0[4].is_some()) << 1
    }
}

/// One stored day of a view, added `weight` times (-1 takes out a link being moved or deleted).
pub struct Row<'a> {
    pub weight: i64,
    pub day: i64,
    pub cube: &'a [u8],
    pub uniques: Option<&'a [u8]>,
    pub hours: Option<&'a [u8]>,
}

#[derive(Debug, Default)]
pub struct Answer {
    pub total: i64,
    pub visitors: f64,
    pub days: HashMap<i64, i64>,
    /// Clicks per hour since the epoch, when asked for.
    pub hours: HashMap<i64, i64>,
    /// Clicks per value of each of `DIMENSIONS`; clicks without a referrer (a country, a city, a variant) have no
    /// entry there.
    pub breakdowns: [HashMap<String, i64>; N],
    /// Visitors per variant (by index): a visitor is sent to one variant all day, so a day's variants partition
    /// its visitors as its devices do.
    pub variant_visitors: HashMap<u8, f64>,
}

/// Rows past which a question is answered by two threads, each over half of them: a year's day cubes of a busy
/// account take tens of milliseconds on one core.
const SPLIT_ROWS: usize = 64;

pub fn analyse(rows: &[Row<'_>], filters: &Filters, want_hours: bool) -> Result<Answer, CodecError> {
    if rows.len() < SPLIT_ROWS {
        return analyse_part(rows, filters, want_hours);
    }
    let (left, right) = rows.split_at(rows.len() / 2);
    let (a, b) = std::thread::scope(|scope| {
        let other = scope.spawn(|| analyse_part(right, filters, want_hours));
        let mine = analyse_part(left, filters, want_hours);
        (mine, other.join())
    });
    // A panic in the other half is passed on as itself, for the boundary to report.
    let b = b.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    let (mut a, b) = (a?, b?);
    a.total += b.total;
    a.visitors += b.visitors;
    for (day, n) in b.days {
        *a.days.entry(day).or_insert(0) += n;
    }
    for (hour, n) in b.hours {
        *a.hours.entry(hour).or_insert(0) += n;
    }
    for (mine, theirs) in a.breakdowns.iter_mut().zip(b.breakdowns) {
        for (value, n) in theirs {
            *mine.entry(value).or_insert(0) += n;
        }
    }
    for (variant, v) in b.variant_visitors {
        *a.variant_visitors.entry(variant).or_insert(0.0) += v;
    }
    Ok(a)
}

fn analyse_part(rows: &[Row<'_>], filters: &Filters, want_hours: bool) -> Result<Answer, CodecError> {
    let mut answer = Answer::default();
    // The rows' strings, each once (rows repeat them: one hash lookup per string and row, not per count).
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut totals: Vec<[i64; N]> = Vec::new();
    let mut per_device = [0i64; 5];
    let mut per_variant = [0i64; 256];
    let mut variant_visitors = [0f64; 256];
    // A variant filter names an index; one that is no number matches nothing.
    let variant_wanted = filters.0[VARIANT]
        .as_deref()
        .map(|w| w.parse::<u8>().ok().filter(|&v| v != NO_VARIANT));
    for row in rows {
        let (strings, combos, own) = decode_cube(row.cube)?;
        let global: Vec<usize> = strings
            .iter()
            .map(|&s| {
                let next = names.len();
                let id = *names.entry(s).or_insert(next);
                if id == totals.len() {
                    totals.push([0; N]);
                }
                id
            })
            .collect();
        // Per string, which of the filters on browser, os, source, referrer, country and city it satisfies.
        let fits: Vec<[bool; N]> = strings
            .iter()
            .map(|s| {
                let mut fit = [false; N];
                for (k, wanted) in filters.0.iter().enumerate().take(VARIANT).skip(1) {
                    fit[k] = wanted
                        .as_deref()
                        .is_some_and(|w| s.eq_ignore_ascii_case(w) || (!s.is_ascii() && s.to_lowercase() == w));
                }
                fit
            })
            .collect();
        let matches = |d: &Dims| {
            let device_fits = filters.0[0]
                .as_deref()
                .is_none_or(|w| Device::ALL[usize::from(d.device)].name() == w);
            let strings = [NONE, d.browser, d.os, d.source, d.referrer, d.country, d.city];
            device_fits
                && variant_wanted.is_none_or(|w| w == Some(d.variant))
                && (1..VARIANT).all(|k| filters.0[k].is_none() || (strings[k] != NONE && fits[strings[k] as usize][k]))
        };
        let fitting: Vec<bool> = combos.iter().map(|(d, _)| matches(d)).collect();
        let mut day = 0;
        for ((d, n), _) in combos.iter().zip(&fitting).filter(|(_, &f)| f) {
            let n = n * row.weight;
            day += n;
            per_device[usize::from(d.device)] += n;
            per_variant[usize::from(d.variant)] += n;
            for (k, s) in [
                (1, d.browser),
                (2, d.os),
                (3, d.source),
                (4, d.referrer),
                (5, d.country),
                (6, d.city),
            ] {
                if s != NONE {
                    totals[global[s as usize]][k] += n;
                }
            }
        }
        answer.total += day;
        if day != 0 {
            *answer.days.entry(row.day).or_insert(0) += day;
        }
        let mask = filters.mask();
        let weight = row.weight as f64;
        let mut add = |at: usize, v: f64| {
            let variant = combos.get(at).map_or(NO_VARIANT, |c| c.0.variant);
            variant_visitors[usize::from(variant)] += weight * v;
        };
        let counted = if mask == 0 {
            sum_fitting(&own, &fitting, &mut add)?
        } else if let Some(bytes) = row.uniques {
            visitors(bytes, mask, &fitting, &mut add)?
        } else {
            0.0
        };
        answer.visitors += weight * counted;
        if let (true, Some(bytes)) = (want_hours, row.hours) {
            let mut r = Reader::new(bytes);
            for _ in 0..r.len(MAX_ENTRIES)? {
                let hour = i64::from(r.byte()?);
                let at = usize::try_from(r.uint()?).map_err(|_| CodecError::Invalid)?;
                let n = r.int()?;
                if *fitting.get(at).ok_or(CodecError::Invalid)? {
                    *answer.hours.entry(row.day * 24 + hour).or_insert(0) += n * row.weight;
                }
            }
        }
    }
    for (device, &n) in per_device.iter().enumerate().filter(|(_, &n)| n != 0) {
        answer.breakdowns[0].insert(Device::ALL[device].name().to_owned(), n);
    }
    for (variant, &n) in per_variant.iter().enumerate().take(usize::from(NO_VARIANT)) {
        if n != 0 {
            answer.breakdowns[VARIANT].insert(variant.to_string(), n);
            answer.variant_visitors.insert(variant as u8, variant_visitors[variant]);
        }
    }
    for (name, &id) in &names {
        for (k, &n) in totals[id].iter().enumerate().skip(1).filter(|(_, &n)| n != 0) {
            answer.breakdowns[k].insert((*name).to_owned(), n);
        }
    }
    Ok(answer)
}

/// The visitors of the keys with `mask` whose combination fits: the mask keeps every filtered dimension,
/// so a key fits exactly when the combination it points at does.
fn visitors(bytes: &[u8], mask: u8, fitting: &[bool], each: &mut impl FnMut(usize, f64)) -> Result<f64, CodecError> {
    let mut r = Reader::new(bytes);
    for m in 1..4 {
        if m == mask {
            return sum_fitting(&section(&mut r)?, fitting, each);
        }
        let len = r.len(usize::MAX)?;
        r.take(len)?;
    }
    Ok(0.0)
}

/// The visitors of the fitting entries, each also handed to `each` (its combination's position, its visitors).
fn sum_fitting(
    entries: &[(usize, f64)],
    fitting: &[bool],
    each: &mut impl FnMut(usize, f64),
) -> Result<f64, CodecError> {
    let mut sum = 0.0;
    for &(at, v) in entries {
        if *fitting.get(at).ok_or(CodecError::Invalid)? {
            sum += v;
            each(at, v);
        }
    }
    Ok(sum)
}

/// Clicks per link over `rows` of per-link counts (each added `weight` times), the `n` most clicked first.
pub fn top_links(rows: &[(i64, &[u8])], n: usize) -> Result<Vec<(String, i64)>, CodecError> {
    let mut totals: IdMap<&str, i64> = IdMap::default();
    for &(weight, bytes) in rows {
        let mut r = Reader::new(bytes);
        for _ in 0..r.len(MAX_ENTRIES)? {
            let link = r.str()?;
            *totals.entry(link).or_insert(0) += r.int()? * weight;
        }
    }
    let mut ranked: Vec<(&str, i64)> = totals.into_iter().filter(|&(_, c)| c > 0).collect();
    ranked.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    Ok(ranked.into_iter().take(n).map(|(l, c)| (l.to_owned(), c)).collect())
}
