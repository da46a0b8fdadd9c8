//! The click queue between the redirects and the database: one cheap call per click keeps the raw click
//! (headers already cut to what is stored), within a byte budget; a flusher takes batches out and encodes
//! them — classification, visitor hashes, roll-ups and the rows as JSON — with no lock held on the queue.

use crate::geo::{GeoDb, Place};
use crate::keys::KeyedHasher;
use crate::rollup::json::JsonRows;
use crate::rollup::{epoch_day, visitor_hash, ClickBatch, ClickError, Origin, PlaceIds, Visitor, NO_VARIANT};
use crate::useragent::{classify_user_agent, Agent};
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Write;
use std::time::{SystemTime, UNIX_EPOCH};

/// What a heap allocation costs besides its bytes (the allocator's header and rounding), for the budget.
const ALLOCATION_OVERHEAD: usize = 16;

/// Where the headers of a click are cut when it is recorded: the lengths the click log keeps.
#[derive(Debug, Clone, Copy)]
pub struct Cuts {
    /// bytes
    pub user_agent: usize,
    /// bytes
    pub referrer: usize,
    /// characters
    pub source: usize,
}

/// One click as the redirect saw it; its strings share one allocation.
#[derive(Debug)]
pub struct RawClick {
    data: Box<[u8]>,
    ends: [u32; 5], // link id, user agent, referrer, utm_source, client IP
    timestamp: f64,
    has_utm: bool,
    via_qr: bool,
    /// The country a trusted proxy's header named (ISO alpha-2, upper case), if any.
    country: Option<[u8; 2]>,
    /// The link's variant the redirect chose (its index), or `NO_VARIANT`.
    variant: u8,
}

/// A click as the redirect hands it over.
pub struct ClickArgs<'a> {
    pub link_id: &'a str,
    pub user_agent: &'a [u8],
    pub referrer: &'a [u8],
    pub utm_source: Option<&'a str>,
    pub via_qr: bool,
    pub ip: &'a str,
    pub timestamp: f64,
    /// A trusted proxy's country header (checked here: two ASCII letters, else ignored).
    pub country: Option<&'a str>,
    /// The link's variant the visitor was sent to (its index), if the link has variants.
    pub variant: Option<u8>,
}

/// Characters of a client address kept: an IPv6 address with a zone is under 64. Behind a trusted proxy the address
/// is what `X-Forwarded-For` said, which can be anything up to the header's size; it only feeds the visitor hash.
pub const MAX_IP: usize = 64;

fn cut_chars(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text; // no more characters than bytes: nothing to cut, and no walk over it on the serving thread
    }
    text.char_indices().nth(max).map_or(text, |(end, _)| &text[..end])
}

fn latin1(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) if bytes.is_ascii() => text.into(),
        _ => bytes.iter().map(|&b| char::from(b)).collect::<String>().into(),
    }
}

impl RawClick {
    pub fn new(args: &ClickArgs<'_>, cuts: Cuts) -> Self {
        let agent = &args.user_agent[..args.user_agent.len().min(cuts.user_agent)];
        let referrer = &args.referrer[..args.referrer.len().min(cuts.referrer)];
        let utm = args.utm_source.map(|u| cut_chars(u, cuts.source));
        let parts: [&[u8]; 5] = [
            args.link_id.as_bytes(),
            agent,
            referrer,
            utm.unwrap_or("").as_bytes(),
            cut_chars(args.ip, MAX_IP).as_bytes(),
        ];
        let mut data = Vec::with_capacity(parts.iter().map(|p| p.len()).sum());
        let mut ends = [0u32; 5];
        for (end, part) in ends.iter_mut().zip(parts) {
            data.extend_from_slice(part);
            *end = u32::try_from(data.len()).unwrap_or(u32::MAX);
        }
        RawClick {
            data: data.into_boxed_slice(),
            ends,
            timestamp: args.timestamp,
            has_utm: utm.is_some(),
            via_qr: args.via_qr,
            country: args.country.and_then(|code| match code.as_bytes() {
                [a, b] if a.is_ascii_alphabetic() && b.is_ascii_alphabetic() => {
                    Some([a.to_ascii_uppercase(), b.to_ascii_uppercase()])
                }
                _ => None,
            }),
            variant: args.variant.unwrap_or(NO_VARIANT),
        }
    }

    /// The country a trusted proxy named, if any.
    pub fn country(&self) -> Option<&str> {
        self.country.as_ref().and_then(|code| std::str::from_utf8(code).ok())
    }

    fn part(&self, index: usize) -> &[u8] {
        let start = if index == 0 { 0 } else { self.ends[index - 1] as usize };
        &self.data[start..self.ends[index] as usize]
    }

    // The link id, utm_source and IP were `str`s when recorded, and cuts fall on character boundaries.
    fn text(&self, index: usize) -> &str {
        std::str::from_utf8(self.part(index)).unwrap_or_default()
    }

    pub fn link_id(&self) -> &str {
        self.text(0)
    }
    pub fn user_agent(&self) -> &[u8] {
        self.part(1)
    }
    pub fn referrer(&self) -> &[u8] {
        self.part(2)
    }
    pub fn utm_source(&self) -> Option<&str> {
        self.has_utm.then(|| self.text(3))
    }
    pub fn ip(&self) -> &str {
        self.text(4)
    }
    pub fn timestamp(&self) -> f64 {
        self.timestamp
    }
    pub fn via_qr(&self) -> bool {
        self.via_qr
    }

    /// Bytes this click holds while queued: its slot, its one allocation and the allocator's share.
    pub fn size(&self) -> usize {
        std::mem::size_of::<Self>() + self.data.len() + ALLOCATION_OVERHEAD
    }

    pub fn day(&self) -> Result<i64, ClickError> {
        epoch_day(self.timestamp)
    }
}

/// What happened to a recorded click.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    Kept,
    /// Kept, and a full batch now waits: time to wake the flusher.
    Ready,
    /// The budget is spent: the click is counted in `dropped` and not kept.
    Dropped,
}

/// Clicks waiting for the flusher, and the bytes of every click not yet written (waiting or taken).
#[derive(Debug)]
pub struct ClickQueue {
    waiting: VecDeque<RawClick>,
    bytes: usize,
    budget: usize,
    batch: usize,
    dropped: u64,
    cuts: Cuts,
}

pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |elapsed| elapsed.as_secs_f64())
}

impl ClickQueue {
    /// `budget` bytes in all; `batch` clicks waiting make a full batch.
    pub fn new(budget: usize, batch: usize, cuts: Cuts) -> Self {
        ClickQueue {
            waiting: VecDeque::new(),
            bytes: 0,
            budget,
            batch: batch.max(1),
            dropped: 0,
            cuts,
        }
    }

    pub fn record(&mut self, args: &ClickArgs<'_>) -> Recorded {
        let click = RawClick::new(args, self.cuts);
        let size = click.size();
        if self.bytes + size > self.budget {
            self.dropped += 1;
            return Recorded::Dropped;
        }
        self.bytes += size;
        self.waiting.push_back(click);
        if self.waiting.len() == self.batch {
            Recorded::Ready
        } else {
            Recorded::Kept
        }
    }

    /// Up to `max` of the oldest clicks; they stay in `bytes` until `release`d or given back.
    pub fn take(&mut self, max: usize) -> Vec<RawClick> {
        let n = max.min(self.waiting.len());
        self.waiting.drain(..n).collect()
    }

    /// Taken clicks that could not be written go back to the front, in their order.
    pub fn give_back(&mut self, clicks: Vec<RawClick>) {
        for click in clicks.into_iter().rev() {
            self.waiting.push_front(click);
        }
    }

    /// Taken clicks that are written (or refused for good) leave the budget.
    pub fn release(&mut self, clicks: &[RawClick]) {
        let size: usize = clicks.iter().map(RawClick::size).sum();
        self.bytes = self.bytes.saturating_sub(size);
    }

    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }
    pub fn bytes(&self) -> usize {
        self.bytes
    }
    pub fn budget(&self) -> usize {
        self.budget
    }
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
    pub fn iter(&self) -> impl Iterator<Item = &RawClick> {
        self.waiting.iter()
    }
}

/// A classified batch, and the JSON array of its links' counters.
#[derive(Debug, Default)]
pub struct Encoded {
    pub batch: ClickBatch,
    /// `[link_id, clicks]` for every link of the batch, sorted by id; bots are not counted (0 is possible).
    pub totals: String,
    /// Distinct links in the batch.
    pub links: usize,
}

/// The distinct epoch days of `clicks`, sorted: the salts `encode` will need.
pub fn days(clicks: &[RawClick]) -> Result<Vec<i64>, ClickError> {
    let mut days = clicks.iter().map(RawClick::day).collect::<Result<Vec<_>, _>>()?;
    days.sort_unstable();
    days.dedup();
    Ok(days)
}

/// Classifies (each distinct user agent once), hashes visitors with the day's salt, and orders the
/// rows by link id and time (`ClickBatch::sort_by_link_and_time`). Sources and referrer hosts are cut to `max_text` characters (the width of their columns).
pub fn encode(clicks: &[RawClick], salts: &HashMap<i64, Vec<u8>>, max_text: usize) -> Result<Encoded, ClickError> {
    encode_placed(clicks, salts, max_text, None)
}

/// Where a click came from: the proxy's country if it named one (with the database's region and city when the
/// database agrees on the country), else the database's place of its address.
fn place_of(click: &RawClick, geo: Option<&GeoDb>) -> Place {
    let found = geo.map(|db| db.place(click.ip())).unwrap_or_default();
    match click.country() {
        Some(named) if found.country.as_deref() != Some(named) => Place {
            country: Some(named.to_owned()),
            ..Place::default()
        },
        _ => found,
    }
}

/// `encode`, each click placed (`place_of`) with `geo` when given: each distinct (address, proxy country) once.
pub fn encode_placed(
    clicks: &[RawClick],
    salts: &HashMap<i64, Vec<u8>>,
    max_text: usize,
    geo: Option<&GeoDb>,
) -> Result<Encoded, ClickError> {
    let mut batch = ClickBatch::with_cuts(max_text, max_text);
    // What clicks sharing a user agent, an origin, or a visitor (day, IP and user agent) have in common is
    // worked out once per batch: classifying, parsing the referrer and hashing were most of the time per click.
    let mut agents: HashMap<&[u8], (Agent, usize)> = HashMap::new();
    let mut origins: HashMap<(&[u8], Option<&str>, bool), Origin> = HashMap::new();
    let mut visitors: HashMap<(i64, usize, &str), Visitor> = HashMap::new();
    let hashers: HashMap<i64, KeyedHasher> = salts.iter().map(|(&day, salt)| (day, KeyedHasher::new(salt))).collect();
    let mut places: HashMap<(&str, Option<&str>), PlaceIds> = HashMap::new();
    for click in clicks {
        let day = click.day()?;
        let hasher = hashers.get(&day).ok_or(ClickError::Salt(day))?;
        let known = agents.len();
        let (agent, agent_no) = *agents
            .entry(click.user_agent())
            .or_insert_with(|| (classify_user_agent(&latin1(click.user_agent())), known));
        let origin = *origins
            .entry((click.referrer(), click.utm_source(), click.via_qr()))
            .or_insert_with(|| {
                let referrer = latin1(click.referrer());
                batch.origin(
                    click.utm_source(),
                    click.via_qr(),
                    (!referrer.is_empty()).then_some(&*referrer),
                )
            });
        let visitor = *visitors
            .entry((day, agent_no, click.ip()))
            .or_insert_with(|| visitor_hash(hasher, click.ip(), &latin1(click.user_agent())));
        let place = *places.entry((click.ip(), click.country())).or_insert_with(|| {
            let found = place_of(click, geo);
            batch.place(found.country.as_deref(), found.region.as_deref(), found.city.as_deref())
        });
        batch.push(click.link_id(), click.timestamp(), agent, origin, visitor, place)?;
        batch.set_variant(click.variant);
    }
    batch.sort_by_link_and_time();
    let counted = batch.link_counts();
    let mut totals = JsonRows::with_capacity(counted.len() * 32);
    for &(link, n) in &counted {
        totals.row().str(link).int(i64::try_from(n).unwrap_or(i64::MAX));
    }
    let links = counted.len();
    let totals = totals.finish();
    Ok(Encoded { batch, totals, links })
}

/// `YYYY-MM-DD HH:MM:SS.ffffff` in UTC (microseconds truncated): the text SQLAlchemy stores for a DateTime in
/// SQLite, and with `+00` what PostgreSQL reads into a `timestamptz`.
pub fn utc_text(timestamp: f64, out: &mut String) {
    let seconds = timestamp.floor();
    let micros = (((timestamp - seconds) * 1e6) as i64).clamp(0, 999_999);
    let seconds = seconds as i64;
    let (days, of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    // Howard Hinnant's days-to-civil, for the proleptic Gregorian calendar.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    if !(0..=9999).contains(&year) {
        let _ = write!(out, "{year:04}-{month:02}-{day:02} ");
    } else {
        digits(out, year, 4);
        out.push('-');
        digits(out, month, 2);
        out.push('-');
        digits(out, day, 2);
        out.push(' ');
    }
    // Written digit by digit: `write!` took most of the time of a row's values (one timestamp a click).
    digits(out, of_day / 3600, 2);
    out.push(':');
    digits(out, of_day % 3600 / 60, 2);
    out.push(':');
    digits(out, of_day % 60, 2);
    out.push('.');
    digits(out, micros, 6);
}

/// `value` (0 ≤ value < 10^width) in exactly `width` decimal digits.
fn digits(out: &mut String, value: i64, width: u32) {
    let mut scale = 10_i64.pow(width - 1);
    while scale > 0 {
        out.push(char::from(b'0' + (value / scale % 10) as u8));
        scale /= 10;
    }
}

/// The batch's click rows in PostgreSQL's `COPY ... FROM STDIN` text format, leaving out links not in `alive`
/// (when given): link_id, clicked_at, device, browser, os, source, referrer host (or NULL), visitor, country, region,
/// city (each or NULL), variant (or NULL).
pub fn copy_text(batch: &ClickBatch, alive: Option<&HashSet<String>>) -> String {
    let mut out = String::with_capacity(batch.len() * 150);
    let rows = batch.rows().zip(batch.places_from(0)).zip(batch.variants_from(0));
    for (((link, timestamp, device, browser, os, source, host, visitor), place), variant) in rows {
        if alive.is_some_and(|alive| !alive.contains(link)) {
            continue;
        }
        copy_field(&mut out, link);
        out.push('\t');
        utc_text(timestamp, &mut out);
        out.push_str("+00");
        for field in [device, browser, os, source] {
            out.push('\t');
            copy_field(&mut out, field);
        }
        out.push('\t');
        match host {
            Some(host) => copy_field(&mut out, host),
            None => out.push_str("\\N"),
        }
        out.push('\t');
        copy_field(&mut out, visitor);
        for part in place {
            out.push('\t');
            match part {
                Some(text) => copy_field(&mut out, text),
                None => out.push_str("\\N"),
            }
        }
        out.push('\t');
        match variant {
            Some(n) => out.push_str(&n.to_string()),
            None => out.push_str("\\N"),
        }
        out.push('\n');
    }
    out
}

fn copy_field(out: &mut String, value: &str) {
    if !value.bytes().any(|b| b == b'\\' || b < 0x20 || b == 0x7f) {
        out.push_str(value);
        return;
    }
    for ch in value.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rollup::{ClickInput, ClickRow};

    const CUTS: Cuts = Cuts {
        user_agent: 8,
        referrer: 6,
        source: 3,
    };

    fn args<'a>(link_id: &'a str, user_agent: &'a [u8], timestamp: f64) -> ClickArgs<'a> {
        ClickArgs {
            link_id,
            user_agent,
            referrer: b"https://news.example.com/",
            utm_source: Some("éééé"),
            via_qr: false,
            ip: "203.0.113.7",
            timestamp,
            country: None,
            variant: None,
        }
    }

    #[test]
    fn clicks_are_cut_when_recorded() {
        let click = RawClick::new(&args("lnk_a", b"Mozilla/5.0 (X11)", 1.0), CUTS);
        assert_eq!(click.link_id(), "lnk_a");
        assert_eq!(click.user_agent(), b"Mozilla/");
        assert_eq!(click.referrer(), b"https:");
        assert_eq!(click.utm_source(), Some("ééé"));
        assert_eq!(click.ip(), "203.0.113.7");
        let forwarded = "é".repeat(300_000);
        let click = RawClick::new(
            &ClickArgs {
                ip: &forwarded,
                ..args("lnk_a", b"UA", 1.0)
            },
            CUTS,
        );
        assert_eq!(click.ip(), "é".repeat(MAX_IP));
        assert!(click.size() < 1_000);
    }

    #[test]
    fn the_budget_holds_and_drops_are_counted() {
        let one = RawClick::new(&args("lnk_a", b"UA", 1.0), CUTS).size();
        let mut queue = ClickQueue::new(one * 3, 2, CUTS);
        let outcomes: Vec<Recorded> = (0..5).map(|_| queue.record(&args("lnk_a", b"UA", 1.0))).collect();
        assert_eq!(
            outcomes,
            [
                Recorded::Kept,
                Recorded::Ready,
                Recorded::Kept,
                Recorded::Dropped,
                Recorded::Dropped
            ]
        );
        assert_eq!((queue.waiting(), queue.bytes(), queue.dropped()), (3, one * 3, 2));
        let taken = queue.take(2);
        assert_eq!((queue.waiting(), queue.bytes()), (1, one * 3));
        queue.give_back(taken);
        let taken = queue.take(10);
        queue.release(&taken);
        assert_eq!((queue.waiting(), queue.bytes()), (0, 0));
    }

    #[test]
    fn a_batch_encodes_to_rows_and_totals() {
        let clicks = [
            RawClick::new(&args("lnk_b", b"curl/8.0", 86_400.5), CUTS),
            RawClick::new(&args("lnk_a", b"Mozilla/5.0 Chrome/1", 86_402.0), CUTS),
            RawClick::new(&args("lnk_a", b"Mozilla/5.0 Chrome/1", 86_401.25), CUTS),
        ];
        assert_eq!(days(&clicks), Ok(vec![1]));
        assert_eq!(encode(&clicks, &HashMap::new(), 255).unwrap_err(), ClickError::Salt(1));
        let salts = HashMap::from([(1, b"salt".to_vec())]);
        let encoded = encode(&clicks, &salts, 255).expect("encode");
        assert_eq!((encoded.batch.len(), encoded.links), (3, 2));
        assert_eq!(encoded.totals, r#"[["lnk_a",2],["lnk_b",0]]"#); // bots are not counted
        let copy = copy_text(&encoded.batch, None);
        let order: Vec<&str> = copy.lines().map(|line| &line[..32]).collect();
        assert_eq!(
            order,
            [
                "lnk_a\t1970-01-02 00:00:01.250000",
                "lnk_a\t1970-01-02 00:00:02.000000",
                "lnk_b\t1970-01-02 00:00:00.500000"
            ],
            "rows in the order of the click log's index: (link id, time)"
        );
        assert!(copy.ends_with('\n') && copy.contains("+00\tbot\tcurl\t"), "{copy}");
        assert!(
            copy.lines().all(|line| line.ends_with("\t\\N\t\\N\t\\N")),
            "no place: {copy}"
        );
        let alive = HashSet::from(["lnk_a".to_owned()]);
        assert_eq!(copy_text(&encoded.batch, Some(&alive)).lines().count(), 2);
    }

    #[test]
    fn shared_parts_worked_out_once_give_the_rows_of_one_click_at_a_time() {
        let agents: [&[u8]; 3] = [
            b"curl/8.0",
            b"Mozilla/5.0 (iPhone) Safari/604.1",
            b"Mozilla/\xe9 Chrome/1",
        ];
        let referrers: [&[u8]; 3] = [b"", b"https://www.google.com/search", b"https://news.example.com/\xff"];
        let utms = [None, Some("newsletter"), Some("ééééé")];
        let ips = ["203.0.113.7", "2001:db8::1", "198.51.100.9"];
        let cuts = Cuts {
            user_agent: 512,
            referrer: 1024,
            source: 4,
        };
        let clicks: Vec<RawClick> = (0..200)
            .map(|i| {
                let args = ClickArgs {
                    link_id: ["lnk_a", "lnk_b"][i % 2],
                    user_agent: agents[i % 3],
                    referrer: referrers[i / 3 % 3],
                    utm_source: utms[i / 9 % 3],
                    via_qr: i % 5 == 0,
                    ip: ips[i / 27 % 3],
                    timestamp: 86_000.0 + i as f64 * 7.0, // over two days
                    country: [None, Some("fr"), Some("FRA")][i % 3],
                    variant: [None, Some(1)][i % 2],
                };
                RawClick::new(&args, cuts)
            })
            .collect();
        let salts = HashMap::from([(0, b"day zero".to_vec()), (1, b"day one".to_vec())]);
        let encoded = encode(&clicks, &salts, 3).expect("encode");
        let mut one_by_one = ClickBatch::with_cuts(3, 3);
        for click in &clicks {
            let (agent, referrer) = (latin1(click.user_agent()), latin1(click.referrer()));
            let input = ClickInput {
                link_id: click.link_id(),
                timestamp: click.timestamp(),
                user_agent: &agent,
                referrer: (!referrer.is_empty()).then_some(&*referrer),
                utm_source: click.utm_source(),
                via_qr: click.via_qr(),
                visitor_salt: &salts[&click.day().expect("day")],
                ip: click.ip(),
            };
            one_by_one.add(&input).expect("add");
        }
        one_by_one.sort_by_link_and_time();
        let rows: Vec<ClickRow<'_>> = encoded.batch.rows().collect();
        assert_eq!(rows, one_by_one.rows().collect::<Vec<_>>());
        let countries: Vec<Option<&str>> = encoded.batch.places_from(0).map(|place| place[0]).collect();
        assert!(
            countries.contains(&Some("FR")) && countries.contains(&None),
            "a proxy's country, or none"
        );
        assert!(!countries.contains(&Some("FRA")));
        let variants: Vec<Option<u8>> = encoded.batch.variants_from(0).collect();
        let links = rows.iter().map(|row| row.0);
        assert!(
            links
                .zip(&variants)
                .all(|(link, variant)| (link == "lnk_b") == (*variant == Some(1))),
            "each click keeps its variant through the sort"
        );
        assert!(copy_text(&encoded.batch, None)
            .lines()
            .all(|line| line.ends_with("\t1") || line.ends_with("\\N")));
        let visitors: HashSet<&str> = rows.iter().map(|row| row.7).collect();
        assert_eq!(visitors.len(), 3 * 3 * 2, "one per IP, user agent and day");
        assert_eq!(encoded.batch.rollup(), one_by_one.rollup());
    }

    #[test]
    fn utc_text_matches_the_calendar() {
        for (timestamp, expected) in [
            (0.0, "1970-01-01 00:00:00.000000"),
            (951_782_400.25, "2000-02-29 00:00:00.250000"),
            (1_763_877_000.123_456, "2025-11-23 05:50:00.123456"),
            (-1.5, "1969-12-31 23:59:58.500000"),
            (253_402_300_799.5, "9999-12-31 23:59:59.500000"),
            (-62_135_596_800.0, "0001-01-01 00:00:00.000000"),
            (-62_167_219_200.0, "0000-01-01 00:00:00.000000"),
            (-62_167_219_201.0, "-001-12-31 23:59:59.000000"),
            (253_402_300_800.0, "10000-01-01 00:00:00.000000"),
        ] {
            let mut out = String::new();
            utc_text(timestamp, &mut out);
            assert_eq!(out, expected);
        }
    }

    #[test]
    fn copy_fields_are_escaped() {
        let mut out = String::new();
        copy_field(&mut out, "a\\b\tc\nd\u{1}é");
        assert_eq!(out, "a\\\\b\\tc\\nd\\x01é");
    }
}
