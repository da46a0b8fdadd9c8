//! Packs answer exactly as the day cubes they were made from, over any of their days and under any filter, and a
//! damaged pack is an error.

use super::delta::{batch_cubes, Owner, ALL};
use super::pack::{pack, DayCube, Packed};
use super::query::{analyse, analyse_with_packs, fitting_totals, top_links, Answer, Filters, PackRow, Row, DIMENSIONS};
use super::*;
use crate::fasthash::IdMap;
use crate::rollup::{ClickBatch, ClickInput};

const AGENTS: [&str; 4] = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0; rv:121.0) Gecko/20100101 Firefox/121.0",
];
const REFERRERS: [Option<&str>; 4] = [
    None,
    Some("https://www.google.com/s"),
    Some("https://t.co/x"),
    Some("https://news.example/a"),
];
const SOURCES: [Option<&str>; 3] = [None, Some("newsletter"), Some("Google")];

/// A pseudo-random number below `n` at each call, the same sequence for the same seed.
pub(super) fn random(seed: u64) -> impl FnMut(usize) -> usize {
    let mut state = seed;
    move |n| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize % n
    }
}

/// The account view's day cubes (day, cube) of `days` days of pseudo-random clicks from many visitors.
fn days(days: i64, seed: u64) -> Vec<(i64, Blobs)> {
    let mut next = random(seed);
    let owners = IdMap::from_iter([(
        "lnk_a".to_owned(),
        Owner {
            account: 1,
            public: true,
        },
    )]);
    let mut out = Vec::new();
    for day in 0..days {
        let mut batch = ClickBatch::new();
        let ips: Vec<String> = (0..40 + next(200))
            .map(|_| format!("10.0.{}.{}", next(4), next(250)))
            .collect();
        for ip in &ips {
            let click = ClickInput {
                link_id: "lnk_a",
                timestamp: (20_000 + day) as f64 * 86_400.0 + next(86_000) as f64,
                user_agent: AGENTS[next(AGENTS.len())],
                referrer: REFERRERS[next(REFERRERS.len())],
                utm_source: SOURCES[next(SOURCES.len())],
                via_qr: false,
                visitor_salt: b"salt",
                ip,
            };
            batch.add(&click).expect("add");
        }
        let cube = &batch_cubes(&batch, &owners)[&(1, ALL.to_owned(), DAY, 20_000 + day)];
        out.push((20_000 + day, cube.encode()));
    }
    out
}

/// Day cubes as `pack` takes them.
fn inputs(days: &[(i64, Blobs)]) -> Vec<DayCube<'_>> {
    days.iter()
        .map(|(d, b)| (*d, b.cube.as_slice(), b.uniques.as_deref(), b.links.as_deref()))
        .collect()
}

fn filters(pairs: &[(&str, &str)]) -> Filters {
    let mut wanted: [Option<String>; DIMENSIONS.len()] = Default::default();
    for &(name, value) in pairs {
        wanted[DIMENSIONS.iter().position(|d| *d == name).expect("dimension")] = Some(value.to_owned());
    }
    Filters(wanted)
}

/// Filters the tests here ask under: none, one dimension, two, a variant that is no number, a value no click has.
const CASES: [&[(&str, &str)]; 8] = [
    &[],
    &[("device", "mobile")],
    &[("browser", "CHROME"), ("os", "android")],
    &[("source", "newsletter")],
    &[("referrer", "t.co")],
    &[("device", "desktop"), ("source", "google")],
    &[("variant", "x")],
    &[("country", "nowhere")],
];

fn by_days(days: &[(i64, Blobs)], first: i64, last: i64, f: &Filters) -> Answer {
    let rows: Vec<Row<'_>> = days
        .iter()
        .filter(|(d, _)| (first..=last).contains(d))
        .map(|(d, b)| Row {
            weight: 1,
            day: *d,
            cube: &b.cube,
            uniques: b.uniques.as_deref(),
            hours: None,
        })
        .collect();
    analyse(&rows, f, false).expect("days")
}

fn same(a: &Answer, b: &Answer) {
    assert_eq!(a.total, b.total);
    assert!((a.visitors - b.visitors).abs() < 1e-9, "{} {}", a.visitors, b.visitors);
    assert_eq!(a.days, b.days);
    assert_eq!(a.breakdowns, b.breakdowns);
}

#[test]
fn a_pack_answers_as_its_days_over_any_range_and_filter() {
    let days = days(31, 7);
    let input = inputs(&days);
    let (cube, uniques, links) = pack(&input).expect("pack");
    let stored: usize = days
        .iter()
        .map(|(_, b)| b.cube.len() + b.uniques.as_ref().map_or(0, Vec::len))
        .sum();
    assert!(
        cube.len() + uniques.as_ref().map_or(0, Vec::len) < stored,
        "a pack is smaller than its days"
    );
    for case in CASES {
        let f = filters(case);
        for (first, last) in [
            (20_000, 20_030),
            (20_003, 20_017),
            (20_010, 20_010),
            (19_990, 20_001),
            (20_031, 20_040),
        ] {
            let packed = PackRow {
                weight: 1,
                first,
                last,
                cube: &cube,
                uniques: uniques.as_deref(),
            };
            let answer = analyse_with_packs(&[], &[packed], &f, false).expect("pack");
            same(&by_days(&days, first, last, &f), &answer);
        }
    }
    // Its per-link counts are its days' added up.
    let day_links: Vec<(i64, &[u8])> = days
        .iter()
        .filter_map(|(_, b)| b.links.as_deref().map(|l| (1, l)))
        .collect();
    assert_eq!(day_links.len(), days.len());
    let pack_links = links.expect("links");
    assert_eq!(
        top_links(&[(1, &pack_links)], 10).expect("pack"),
        top_links(&day_links, 10).expect("days")
    );
    let everything = by_days(&days, 20_000, 20_030, &filters(&[]));
    assert!(everything.total > 1_000 && everything.visitors > 500.0);
    assert!(everything.breakdowns[3].len() >= 3 && everything.breakdowns[4].len() >= 3);
}

#[test]
fn packs_and_day_rows_add_up_split_over_threads_and_weighted() {
    let days = days(62, 11);
    let (march, april) = days.split_at(31);
    let packed: Vec<Packed> = [march, april]
        .iter()
        .map(|part| pack(&inputs(part)).expect("pack"))
        .collect();
    // The first month from its pack, the second's first 20 days from its pack and the rest from day rows, and
    // the whole taken out again with weight -1 from day rows: nothing is left.
    let packs: Vec<PackRow<'_>> = packed
        .iter()
        .zip([(20_000, 20_030), (20_031, 20_050)])
        .map(|((c, u, _), (first, last))| PackRow {
            weight: 1,
            first,
            last,
            cube: c,
            uniques: u.as_deref(),
        })
        .collect();
    let rest: Vec<Row<'_>> = days
        .iter()
        .map(|(d, b)| (d, b, if *d > 20_050 { 1 } else { 0 }))
        .chain(days.iter().map(|(d, b)| (d, b, -1)))
        .filter(|&(_, _, w)| w != 0)
        .map(|(d, b, weight)| Row {
            weight,
            day: *d,
            cube: &b.cube,
            uniques: b.uniques.as_deref(),
            hours: None,
        })
        .collect();
    for case in [&[][..], &[("source", "newsletter")][..]] {
        let f = filters(case);
        let nothing = analyse_with_packs(&rest, &packs, &f, false).expect("analyse");
        assert_eq!(nothing.total, 0);
        assert!(nothing.visitors.abs() < 1e-9);
        assert!(nothing.days.values().all(|&n| n == 0));
        let positive = &rest[..rest.iter().position(|r| r.weight < 0).expect("taken out")];
        let all = analyse_with_packs(positive, &packs, &f, false).expect("analyse");
        same(&by_days(&days, 20_000, 20_061, &f), &all);
    }
}

#[test]
fn damaged_or_doubled_packs_are_errors() {
    let days = days(3, 3);
    let input = inputs(&days);
    let twice = [input.clone(), input.clone()].concat();
    assert!(pack(&twice).is_err());
    let (cube, uniques, _) = pack(&input).expect("pack");
    let ask = |cube: &[u8], uniques: Option<&[u8]>| {
        let p = PackRow {
            weight: 1,
            first: 0,
            last: i64::MAX,
            cube,
            uniques,
        };
        analyse_with_packs(&[], &[p], &filters(&[("source", "newsletter")]), false)
    };
    assert!(ask(&cube, uniques.as_deref()).is_ok());
    for cut in [1, cube.len() / 2, cube.len() - 1] {
        assert!(ask(&cube[..cut], uniques.as_deref()).is_err(), "cut at {cut}");
    }
    let mut wrong = cube.clone();
    wrong[0] = 9; // an unknown version
    assert!(ask(&wrong, uniques.as_deref()).is_err());
    let u = uniques.expect("visitors by source");
    assert!(ask(&cube, Some(&u[..u.len() / 2])).is_err());
}

#[test]
fn fitting_totals_are_the_totals_analyse_gives_per_group_weighted_and_split() {
    let days = days(90, 5);
    // Three groups of days (more rows than one thread takes), one of them with a day taken out again.
    let groups: [(i64, std::ops::Range<usize>); 3] = [(7, 0..40), (8, 40..85), (9, 85..90)];
    for case in CASES {
        let f = filters(case);
        let mut rows: Vec<(i64, i64, &[u8])> = Vec::new();
        for (group, range) in &groups {
            rows.extend(days[range.clone()].iter().map(|(_, b)| (*group, 1, b.cube.as_slice())));
        }
        rows.push((8, -1, days[41].1.cube.as_slice()));
        let got = fitting_totals(&rows, &f).expect("totals");
        for (group, range) in &groups {
            let mut want = by_days(&days, days[range.start].0, days[range.end - 1].0, &f).total;
            if *group == 8 {
                want -= by_days(&days, days[41].0, days[41].0, &f).total;
            }
            assert_eq!(got.get(group).copied().unwrap_or(0), want, "{case:?} group {group}");
        }
    }
    let all = fitting_totals(&[(1, 1, days[0].1.cube.as_slice())], &filters(&[])).expect("one");
    assert!(all[&1] > 0);
    assert!(fitting_totals(&[(1, 1, &days[0].1.cube[..5])], &filters(&[])).is_err());
}

/// A link's month of pseudo-random combinations over every dimension, places and variants included.
fn month_with_places(seed: u64) -> Cube {
    let mut next = random(seed);
    let mut cube = Cube::default();
    let names = [
        "chrome",
        "firefox",
        "android",
        "ios",
        "google",
        "newsletter",
        "t.co",
        "DE",
        "FR",
        "Berlin",
        "Paris",
    ];
    let ids: Vec<u32> = names.iter().map(|s| cube.strings.intern(s)).collect();
    let pick = |i: usize, of: &[usize]| {
        if i == of.len() {
            NONE
        } else {
            ids[of[i]]
        }
    };
    for _ in 0..400 {
        let d = Dims {
            device: next(5) as u8,
            browser: pick(next(2), &[0, 1]),
            os: pick(next(2), &[2, 3]),
            source: pick(next(3), &[4, 5, 6]),
            referrer: pick(next(3), &[4, 6]),
            country: pick(next(3), &[7, 8]),
            city: pick(next(3), &[9, 10]),
            variant: [0, 1, NO_VARIANT][next(3)],
        };
        *cube.combos.entry(d).or_insert(0) += 1 + next(9) as i64;
    }
    cube
}

#[test]
fn projections_total_what_the_month_does_under_the_filters_they_keep() {
    let month = month_with_places(11);
    let full = month.encode().cube;
    let agent: &[&[(&str, &str)]] = &[
        &[],
        &[("device", "mobile")],
        &[("browser", "CHROME"), ("os", "android")],
        &[("device", "desktop"), ("os", "ios")],
    ];
    let origin: &[&[(&str, &str)]] = &[
        &[("source", "newsletter")],
        &[("referrer", "t.co")],
        &[("device", "desktop"), ("source", "google"), ("referrer", "google")],
        &[("source", "nowhere")],
    ];
    let place: &[&[(&str, &str)]] = &[
        &[("country", "de")],
        &[("city", "paris"), ("device", "tablet")],
        &[("country", "fr"), ("city", "berlin")],
    ];
    for (level, cases) in [(BY_AGENT, agent), (BY_ORIGIN, origin), (BY_PLACE, place)] {
        let projected = month.encode_projection(level);
        assert!(
            projected.len() < full.len(),
            "level {level}: {} of {} bytes",
            projected.len(),
            full.len()
        );
        for case in cases {
            let f = filters(case);
            assert_eq!(f.projection(), Some(level), "{case:?}");
            let want = fitting_totals(&[(1, 3, full.as_slice())], &f).expect("month");
            let got = fitting_totals(&[(1, 3, projected.as_slice())], &f).expect("projection");
            assert_eq!(got, want, "level {level} {case:?}");
            if !case.iter().any(|(_, v)| *v == "nowhere") {
                assert!(
                    want.get(&1).is_some_and(|&n| n > 0),
                    "{case:?} fits nothing: the case tests nothing"
                );
            }
        }
    }
    for case in [
        &[("source", "google"), ("city", "paris")][..],
        &[("browser", "chrome"), ("country", "de")],
        &[("os", "ios"), ("referrer", "t.co")],
        &[("variant", "1")],
    ] {
        assert_eq!(filters(case).projection(), None, "{case:?}");
    }
    // A filter on a dimension a projection leaves out fits nothing there: the reader must not ask it.
    let by_place = month.encode_projection(BY_PLACE);
    let none = fitting_totals(&[(1, 1, by_place.as_slice())], &filters(&[("browser", "chrome")])).expect("read");
    assert_eq!(none.get(&1).copied().unwrap_or(0), 0);
}
