//! Answering analytics from stored cube columns without building cubes: each row's strings are matched
//! against the filters once, then its combinations are summed as integers.

use super::blob::{decode_cube, read_dims, read_strings, section, MAX_ENTRIES};
use super::pack;
use super::{keeps, Dims, NONE, NO_VARIANT, PROJECTIONS};
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
    /// The first projection of a link's month (`super::PROJECTIONS`) that keeps every dimension these filters name,
    /// if one does: under these filters it totals what the month does (`super::project`).
    pub fn projection(&self) -> Option<u8> {
        PROJECTIONS
            .into_iter()
            .find(|&level| self.0.iter().enumerate().all(|(k, w)| w.is_none() || keeps(level, k)))
    }

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

/// A month's pack of a view's closed days (`super::pack`), of which the days from `first` to `last` are read,
/// added `weight` times.
pub struct PackRow<'a> {
    pub weight: i64,
    pub first: i64,
    pub last: i64,
    pub cube: &'a [u8],
    pub uniques: Option<&'a [u8]>,
}

/// Rows past which a question is answered by two threads, each over about half of the bytes: a year's day cubes
/// of a busy account take tens of milliseconds on one core. A pack holds a month of days: two packs are split.
const SPLIT_ROWS: usize = 64;

pub fn analyse(rows: &[Row<'_>], filters: &Filters, want_hours: bool) -> Result<Answer, CodecError> {
    analyse_with_packs(rows, &[], filters, want_hours)
}

/// `analyse` of day rows and packs together (packs are never asked for hours: they keep none).
pub fn analyse_with_packs(
    rows: &[Row<'_>],
    packs: &[PackRow<'_>],
    filters: &Filters,
    want_hours: bool,
) -> Result<Answer, CodecError> {
    if rows.len() < SPLIT_ROWS && packs.len() < 2 {
        return analyse_part(rows, packs, filters, want_hours);
    }
    // Split where each side has about half of the bytes: packs first, then day rows.
    let size = |r: &Row<'_>| r.cube.len() + r.uniques.map_or(0, <[u8]>::len);
    let pack_size = |p: &PackRow<'_>| p.cube.len() + p.uniques.map_or(0, <[u8]>::len);
    let total: usize = packs.iter().map(pack_size).sum::<usize>() + rows.iter().map(size).sum::<usize>();
    let (mut seen, mut p, mut r) = (0, 0, 0);
    while p < packs.len() && 2 * (seen + pack_size(&packs[p])) <= total {
        seen += pack_size(&packs[p]);
        p += 1;
    }
    if p == packs.len() {
        while r < rows.len() && 2 * (seen + size(&rows[r])) <= total {
            seen += size(&rows[r]);
            r += 1;
        }
    }
    let (left_packs, right_packs) = packs.split_at(p);
    let (left_rows, right_rows) = rows.split_at(r);
    let (a, b) = in_two(
        || analyse_part(left_rows, left_packs, filters, want_hours),
        || analyse_part(right_rows, right_packs, filters, want_hours),
    );
    let (mut a, b) = (a?, b?);
    a.absorb(b);
    Ok(a)
}

/// `mine` on this thread and `other` on another, at once; a panic in the other is passed on as itself, for the
/// boundary to report.
fn in_two<A, B: Send>(mine: impl FnOnce() -> A, other: impl FnOnce() -> B + Send) -> (A, B) {
    let (a, b) = std::thread::scope(|scope| {
        let other = scope.spawn(other);
        (mine(), other.join())
    });
    (a, b.unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
}

impl Answer {
    /// Adds an answer over other rows into this one.
    fn absorb(&mut self, b: Answer) {
        self.total += b.total;
        self.visitors += b.visitors;
        for (day, n) in b.days {
            *self.days.entry(day).or_insert(0) += n;
        }
        for (hour, n) in b.hours {
            *self.hours.entry(hour).or_insert(0) += n;
        }
        for (mine, theirs) in self.breakdowns.iter_mut().zip(b.breakdowns) {
            for (value, n) in theirs {
                *mine.entry(value).or_insert(0) += n;
            }
        }
        for (variant, v) in b.variant_visitors {
            *self.variant_visitors.entry(variant).or_insert(0.0) += v;
        }
    }
}

/// Which combinations of one table of strings fit the filters: each string matched once, each combination then
/// by positions.
struct Matcher<'f> {
    filters: &'f Filters,
    /// Per string, which of the filters on browser, os, source, referrer, country and city it satisfies.
    fits: Vec<[bool; N]>,
    /// A variant filter names an index; one that is no number matches nothing.
    variant: Option<Option<u8>>,
}

impl<'f> Matcher<'f> {
    fn new(filters: &'f Filters, strings: &[&str]) -> Self {
        let on_strings = filters.0[1..VARIANT].iter().any(Option::is_some);
        let fits = if on_strings {
            strings
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
                .collect()
        } else {
            Vec::new()
        };
        let variant = filters.0[VARIANT]
            .as_deref()
            .map(|w| w.parse::<u8>().ok().filter(|&v| v != NO_VARIANT));
        Matcher { filters, fits, variant }
    }

    fn fits(&self, d: &Dims) -> bool {
        let wanted = &self.filters.0;
        let device_fits = wanted[0]
            .as_deref()
            .is_none_or(|w| Device::ALL[usize::from(d.device)].name() == w);
        let strings = [NONE, d.browser, d.os, d.source, d.referrer, d.country, d.city];
        device_fits
            && self.variant.is_none_or(|w| w == Some(d.variant))
            && (1..VARIANT).all(|k| {
                wanted[k].is_none() || (strings[k] != NONE && self.fits.get(strings[k] as usize).is_some_and(|f| f[k]))
            })
    }
}

/// An answer being summed: the rows' strings each once (rows repeat them: one hash lookup per string and row,
/// not per count), with their clicks per dimension.
struct Tally<'a> {
    answer: Answer,
    names: HashMap<&'a str, usize>,
    totals: Vec<[i64; N]>,
    per_device: [i64; 5],
    per_variant: [i64; 256],
    variant_visitors: [f64; 256],
}

impl<'a> Tally<'a> {
    fn new() -> Self {
        Tally {
            answer: Answer::default(),
            names: HashMap::new(),
            totals: Vec::new(),
            per_device: [0; 5],
            per_variant: [0; 256],
            variant_visitors: [0.0; 256],
        }
    }

    /// Each string's place among the tally's, and which of `combos` fit the filters.
    fn matched<'d>(
        &mut self,
        filters: &Filters,
        strings: &[&'a str],
        combos: impl Iterator<Item = &'d Dims>,
    ) -> (Vec<usize>, Vec<bool>) {
        let global: Vec<usize> = strings
            .iter()
            .map(|&s| {
                let next = self.names.len();
                let id = *self.names.entry(s).or_insert(next);
                if id == self.totals.len() {
                    self.totals.push([0; N]);
                }
                id
            })
            .collect();
        let matcher = Matcher::new(filters, strings);
        (global, combos.map(|d| matcher.fits(d)).collect())
    }

    /// `n` clicks (weighted) of the combination `d`, whose strings are at `global`.
    fn count(&mut self, global: &[usize], d: &Dims, n: i64) {
        self.per_device[usize::from(d.device)] += n;
        self.per_variant[usize::from(d.variant)] += n;
        for (k, s) in [
            (1, d.browser),
            (2, d.os),
            (3, d.source),
            (4, d.referrer),
            (5, d.country),
            (6, d.city),
        ] {
            if s != NONE {
                self.totals[global[s as usize]][k] += n;
            }
        }
    }

    /// The visitors of one day, of the entries (`own`, or the section of `uniques` for the filters' mask) whose
    /// combination fits.
    fn visitors(
        &mut self,
        filters: &Filters,
        own: &[(usize, f64)],
        uniques: Option<&[u8]>,
        fitting: &[bool],
        variant_of: impl Fn(usize) -> u8,
        weight: i64,
    ) -> Result<(), CodecError> {
        let mask = filters.mask();
        let w = weight as f64;
        let variant_visitors = &mut self.variant_visitors;
        let mut add = |at: usize, v: f64| variant_visitors[usize::from(variant_of(at))] += w * v;
        let counted = if mask == 0 {
            sum_fitting(own, fitting, &mut add)?
        } else if let Some(bytes) = uniques.filter(|b| !b.is_empty()) {
            visitors(bytes, mask, fitting, &mut add)?
        } else {
            0.0
        };
        self.answer.visitors += w * counted;
        Ok(())
    }

    fn row(&mut self, row: &Row<'a>, filters: &Filters, want_hours: bool) -> Result<(), CodecError> {
        let (strings, combos, own) = decode_cube(row.cube)?;
        let (global, fitting) = self.matched(filters, &strings, combos.iter().map(|(d, _)| d));
        let mut day = 0;
        for ((d, n), _) in combos.iter().zip(&fitting).filter(|(_, &f)| f) {
            let n = n * row.weight;
            day += n;
            self.count(&global, d, n);
        }
        self.answer.total += day;
        if day != 0 {
            *self.answer.days.entry(row.day).or_insert(0) += day;
        }
        let variant_of = |at: usize| combos.get(at).map_or(NO_VARIANT, |c| c.0.variant);
        self.visitors(filters, &own, row.uniques, &fitting, variant_of, row.weight)?;
        if let (true, Some(bytes)) = (want_hours, row.hours) {
            let mut r = Reader::new(bytes);
            for _ in 0..r.len(MAX_ENTRIES)? {
                let hour = i64::from(r.byte()?);
                let at = usize::try_from(r.uint()?).map_err(|_| CodecError::Invalid)?;
                let n = r.int()?;
                if *fitting.get(at).ok_or(CodecError::Invalid)? {
                    *self.answer.hours.entry(row.day * 24 + hour).or_insert(0) += n * row.weight;
                }
            }
        }
        Ok(())
    }

    /// A pack's days from `first` to `last`: its strings and combinations matched once, each combination's
    /// clicks summed over the days before they are counted per dimension.
    fn pack(&mut self, pack: &PackRow<'a>, filters: &Filters) -> Result<(), CodecError> {
        let mut tables = pack::tables(pack.cube)?;
        let (global, fitting) = self.matched(filters, &tables.strings, tables.combos.iter());
        let mut summed = vec![0i64; tables.combos.len()];
        let mut rest = pack.uniques.map(Reader::new);
        for _ in 0..tables.count {
            let (day, body) = pack::next_day(&mut tables.days)?;
            let uniques = rest.as_mut().map(pack::next_uniques).transpose()?;
            if day < pack.first || day > pack.last {
                continue;
            }
            let (clicks, own) = pack::entries(body, tables.combos.len())?;
            let mut total = 0;
            for (at, n) in clicks {
                if fitting[at] {
                    summed[at] += n;
                    total += n;
                }
            }
            if total != 0 {
                self.answer.total += total * pack.weight;
                *self.answer.days.entry(day).or_insert(0) += total * pack.weight;
            }
            let combos = &tables.combos;
            let variant_of = |at: usize| combos.get(at).map_or(NO_VARIANT, |d| d.variant);
            self.visitors(filters, &own, uniques, &fitting, variant_of, pack.weight)?;
        }
        for (d, n) in tables.combos.iter().zip(summed) {
            if n != 0 {
                self.count(&global, d, n * pack.weight);
            }
        }
        Ok(())
    }

    fn finish(mut self) -> Answer {
        let mut answer = self.answer;
        for (device, &n) in self.per_device.iter().enumerate().filter(|(_, &n)| n != 0) {
            answer.breakdowns[0].insert(Device::ALL[device].name().to_owned(), n);
        }
        for (variant, &n) in self.per_variant.iter().enumerate().take(usize::from(NO_VARIANT)) {
            if n != 0 {
                answer.breakdowns[VARIANT].insert(variant.to_string(), n);
                answer
                    .variant_visitors
                    .insert(variant as u8, self.variant_visitors[variant]);
            }
        }
        for (name, &id) in &self.names {
            for (k, &n) in self.totals[id].iter().enumerate().skip(1).filter(|(_, &n)| n != 0) {
                answer.breakdowns[k].insert((*name).to_owned(), n);
            }
        }
        self.totals.clear();
        answer
    }
}

fn analyse_part(
    rows: &[Row<'_>],
    packs: &[PackRow<'_>],
    filters: &Filters,
    want_hours: bool,
) -> Result<Answer, CodecError> {
    let mut tally = Tally::new();
    for pack in packs {
        tally.pack(pack, filters)?;
    }
    for row in rows {
        tally.row(row, filters, want_hours)?;
    }
    Ok(tally.finish())
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
    let clicked: Vec<(&[u8], i64)> = link_totals(rows)?.into_iter().filter(|&(_, c)| c > 0).collect();
    ranked(clicked, n)
        .into_iter()
        .map(|(l, c)| Ok((std::str::from_utf8(l).map_err(|_| CodecError::Invalid)?.to_owned(), c)))
        .collect()
}

/// Each link's clicks over `rows`, keyed by the link's bytes in them: only the links kept or returned are checked
/// as text (a year's rows name 10,000 links a dozen times).
fn link_totals<'a>(rows: &[(i64, &'a [u8])]) -> Result<IdMap<&'a [u8], i64>, CodecError> {
    let mut totals: IdMap<&[u8], i64> = IdMap::default();
    for &(weight, bytes) in rows {
        let mut r = Reader::new(bytes);
        let count = r.len(MAX_ENTRIES)?;
        totals.reserve(count.saturating_sub(totals.len()));
        for _ in 0..count {
            let len = r.len(usize::MAX)?;
            let link = r.take(len)?;
            *totals.entry(link).or_insert(0) += r.int()? * weight;
        }
    }
    Ok(totals)
}

/// The `n` first of `links` by clicks, then by id: only those `n` are sorted.
fn ranked<K: Ord>(mut links: Vec<(K, i64)>, n: usize) -> Vec<(K, i64)> {
    let order = |a: &(K, i64), b: &(K, i64)| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0));
    if n < links.len() {
        links.select_nth_unstable_by(n, order);
        links.truncate(n);
    }
    links.sort_unstable_by(order);
    links
}

/// Every link's clicks over a period, kept for many questions: its `LEADERS` most clicked ranked once (what top
/// links asks for), any link's clicks looked up by id. Each link's id is held once; the rest of the ranking is made
/// only if more than the leaders are asked for.
pub struct LinkTotals {
    by_link: IdMap<Box<str>, i64>,
    leaders: Vec<(Box<str>, i64)>,
}

impl LinkTotals {
    /// How many of the most clicked are ranked when made: top links asks for 10, or 25 candidates under a filter.
    pub const LEADERS: usize = 64;

    /// The links with clicks over `rows` of per-link counts (each added `weight` times).
    pub fn new(rows: &[(i64, &[u8])]) -> Result<Self, CodecError> {
        let totals = link_totals(rows)?;
        let mut by_link = IdMap::default();
        by_link.reserve(totals.len());
        for (link, clicks) in totals {
            if clicks > 0 {
                let link = std::str::from_utf8(link).map_err(|_| CodecError::Invalid)?;
                by_link.insert(Box::from(link), clicks);
            }
        }
        let mut made = Self {
            by_link,
            leaders: Vec::new(),
        };
        made.leaders = made
            .rank(Self::LEADERS)
            .into_iter()
            .map(|(l, c)| (Box::from(l), c))
            .collect();
        Ok(made)
    }

    fn rank(&self, n: usize) -> Vec<(&str, i64)> {
        ranked(self.by_link.iter().map(|(l, &c)| (&**l, c)).collect(), n)
    }

    /// The `n` most clicked links, by clicks then id.
    pub fn top(&self, n: usize) -> Vec<(String, i64)> {
        if n <= self.leaders.len() || self.leaders.len() == self.by_link.len() {
            return self.leaders.iter().take(n).map(|(l, c)| (l.to_string(), *c)).collect();
        }
        self.rank(n).into_iter().map(|(l, c)| (l.to_owned(), c)).collect()
    }

    /// The `n` most clicked links with the clicks of `rows` of per-link counts (the days since these totals were
    /// made) added, ranked as all the days together would rank them, ties by id included. Only the `n` leaders here
    /// and the links `rows` name are candidates, never every link: clicks only grow, so each of the `n` leaders
    /// still beats every link past them without recent clicks, and any recent one short of the `n`-th leader's.
    pub fn top_with(&self, rows: &[(i64, &[u8])], n: usize) -> Result<Vec<(String, i64)>, CodecError> {
        let leaders = self.top(n);
        let floor = if n > 0 && leaders.len() >= n {
            leaders[n - 1].1
        } else {
            0
        };
        let mut by_link: IdMap<String, i64> = leaders.into_iter().collect();
        for (link, recent) in link_totals(rows)? {
            if recent <= 0 {
                continue;
            }
            let link = std::str::from_utf8(link).map_err(|_| CodecError::Invalid)?;
            let now = self.get(link) + recent;
            if now >= floor {
                by_link.insert(link.to_owned(), now);
            }
        }
        Ok(ranked(by_link.into_iter().collect(), n))
    }

    /// The clicks of `link` (0 for a link without any).
    pub fn get(&self, link: &str) -> i64 {
        self.by_link.get(link).copied().unwrap_or(0)
    }

    /// How many links have clicks.
    pub fn len(&self) -> usize {
        self.by_link.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_link.is_empty()
    }

    /// Bytes held, roughly: the ids' text (each an allocation, counted at 16 bytes over its length), their map
    /// slots (with the map's spare capacity) and the leaders.
    pub fn bytes(&self) -> usize {
        const ALLOCATION: usize = 16;
        let slot = std::mem::size_of::<(Box<str>, i64)>() + 1;
        let text: usize = self.by_link.keys().map(|l| l.len() + ALLOCATION).sum();
        let leaders: usize = self.leaders.iter().map(|(l, _)| l.len() + ALLOCATION + slot).sum();
        std::mem::size_of::<Self>() + text + self.by_link.capacity() * slot + leaders
    }
}

/// Clicks that fit `filters` in each group of rows `(group, weight, cube column)`, each row added `weight`
/// times: the per-link totals top links rank under a filter. Only strings and combinations are read (no
/// breakdowns, no visitors, no days); past `SPLIT_ROWS` rows, by two threads over about half of the bytes each.
pub fn fitting_totals(rows: &[(i64, i64, &[u8])], filters: &Filters) -> Result<IdMap<i64, i64>, CodecError> {
    let part = |rows: &[(i64, i64, &[u8])]| -> Result<IdMap<i64, i64>, CodecError> {
        let mut totals: IdMap<i64, i64> = IdMap::default();
        for &(group, weight, bytes) in rows {
            let mut r = Reader::new(bytes);
            let version = r.byte()?;
            if !(1..=super::blob::VERSION).contains(&version) {
                return Err(CodecError::Invalid);
            }
            let strings = read_strings(&mut r)?;
            let matcher = Matcher::new(filters, &strings);
            let mut sum = 0;
            for _ in 0..r.len(MAX_ENTRIES)? {
                let d = read_dims(&mut r, strings.len(), version)?;
                let n = r.int()?;
                if matcher.fits(&d) {
                    sum += n;
                }
            }
            *totals.entry(group).or_insert(0) += sum * weight;
        }
        Ok(totals)
    };
    if rows.len() < SPLIT_ROWS {
        return part(rows);
    }
    let total: usize = rows.iter().map(|r| r.2.len()).sum();
    let (mut seen, mut at) = (0, 0);
    while at < rows.len() && 2 * (seen + rows[at].2.len()) <= total {
        seen += rows[at].2.len();
        at += 1;
    }
    let (left, right) = rows.split_at(at);
    let (a, b) = in_two(|| part(left), || part(right));
    let (mut a, b) = (a?, b?);
    for (group, n) in b {
        *a.entry(group).or_insert(0) += n;
    }
    Ok(a)
}
