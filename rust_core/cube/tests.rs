use super::delta::{apply_link, batch_cubes, Owner, ALL, PUBLIC};
use super::query::{analyse, top_links, Filters, LinkTotals, Row};
use super::*;
use crate::fasthash::IdMap;
use crate::rollup::{ClickBatch, ClickInput};

const CHROME: &str =
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36";
const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1";

fn batch(clicks: &[(&str, f64, &str, Option<&str>, &str)]) -> ClickBatch {
    let mut batch = ClickBatch::new();
    for &(link_id, timestamp, user_agent, referrer, ip) in clicks {
        let click = ClickInput {
            link_id,
            timestamp,
            user_agent,
            referrer,
            utm_source: None,
            via_qr: false,
            visitor_salt: b"salt",
            ip,
        };
        batch.add(&click).expect("add");
    }
    batch
}

fn owners() -> IdMap<String, Owner> {
    IdMap::from_iter([
        (
            "lnk_a".to_owned(),
            Owner {
                account: 1,
                public: true,
            },
        ),
        (
            "lnk_h".to_owned(),
            Owner {
                account: 1,
                public: false,
            },
        ),
    ])
}

fn row(cube: &Cube, weight: i64, day: i64) -> (Blobs, i64, i64) {
    (cube.encode(), weight, day)
}

fn ask(rows: &[(Blobs, i64, i64)], filters: &Filters) -> query::Answer {
    let rows: Vec<Row<'_>> = rows
        .iter()
        .map(|(b, weight, day)| Row {
            weight: *weight,
            day: *day,
            cube: &b.cube,
            uniques: b.uniques.as_deref(),
            hours: b.hours.as_deref(),
        })
        .collect();
    analyse(&rows, filters, true).expect("analyse")
}

fn sample() -> IdMap<delta::CubeKey, Cube> {
    let g = Some("https://www.google.com/x");
    batch_cubes(
        &batch(&[
            ("lnk_a", 3600.5, CHROME, g, "1.1.1.1"),
            ("lnk_a", 7300.0, CHROME, None, "1.1.1.1"),
            ("lnk_h", 7300.0, IPHONE, g, "2.2.2.2"),
            ("lnk_h", 7400.0, "curl/8", None, "3.3.3.3"),
            ("lnk_gone", 7400.0, CHROME, None, "4.4.4.4"),
        ]),
        &owners(),
    )
}

#[test]
fn a_batch_fills_each_view_and_level_and_leaves_bots_out() {
    let cubes = sample();
    let key = |scope: &str, level| (1, scope.to_owned(), level, 0);
    assert_eq!(cubes.len(), 8); // two links, all and public; each a day and a month
    assert_eq!(cubes[&key(ALL, DAY)].total(), 3);
    assert_eq!(cubes[&key(PUBLIC, DAY)].total(), 2);
    assert_eq!(cubes[&key("lnk_h", MONTH)].total(), 1);
    assert_eq!(cubes[&key(ALL, MONTH)].links["lnk_a"], 2);
    assert!(cubes[&key("lnk_a", DAY)].links.is_empty());
    let all = ask(&[row(&cubes[&key(ALL, DAY)], 1, 0)], &Filters::default());
    assert_eq!((all.total, all.visitors), (3, 2.0));
    assert_eq!(all.hours[&1], 1);
    assert_eq!(all.hours[&2], 2);
    assert_eq!(all.breakdowns[3]["google.com"], 2);
    assert_eq!(all.breakdowns[4].get("google.com"), Some(&2));
}

#[test]
fn filters_combine_and_pick_the_visitor_key() {
    let cubes = sample();
    let all = row(&cubes[&(1, ALL.to_owned(), DAY, 0)], 1, 0);
    let filter = |f: [Option<&str>; 5]| {
        let mut all: [Option<String>; 8] = Default::default();
        for (to, from) in all.iter_mut().zip(f) {
            *to = from.map(str::to_owned);
        }
        Filters(all)
    };
    let google = ask(
        std::slice::from_ref(&all),
        &filter([None, None, None, Some("google.com"), None]),
    );
    assert_eq!((google.total, google.visitors), (2, 2.0));
    let both = ask(
        std::slice::from_ref(&all),
        &filter([Some("mobile"), None, None, Some("google.com"), None]),
    );
    assert_eq!((both.total, both.visitors), (1, 1.0));
    let chrome = ask(
        std::slice::from_ref(&all),
        &filter([None, Some("chrome"), None, None, None]),
    );
    assert_eq!((chrome.total, chrome.visitors), (2, 1.0));
    let none = ask(&[all], &filter([None, None, None, None, Some("bing.com")]));
    assert_eq!((none.total, none.visitors), (0, 0.0));
}

#[test]
fn merging_round_trips_and_taking_a_link_out_undoes_it() {
    let cubes = sample();
    let account = &cubes[&(1, ALL.to_owned(), DAY, 0)];
    let blobs = account.encode();
    let back = Cube::decode(
        &blobs.cube,
        blobs.uniques.as_deref(),
        blobs.hours.as_deref(),
        blobs.links.as_deref(),
        blobs.sketches.as_deref(),
    )
    .expect("decode");
    assert_eq!(back.encode(), blobs);
    let mut doubled = Cube::default();
    doubled.merge(&back, 1);
    doubled.merge(&back, 1);
    assert_eq!(doubled.total(), 6);
    assert_eq!(ask(&[row(&doubled, 1, 0)], &Filters::default()).visitors, 2.0);
    let mut without = back;
    apply_link(
        &mut without,
        &cubes[&(1, "lnk_h".to_owned(), DAY, 0)],
        "lnk_h",
        -1,
        true,
    );
    let left = ask(&[row(&without, 1, 0)], &Filters::default());
    assert_eq!((left.total, left.visitors), (2, 1.0));
    assert_eq!(without.links.keys().collect::<Vec<_>>(), ["lnk_a"]);
    let rows = [
        (1, without.encode().links.expect("links")),
        (-1, blobs.links.expect("links")),
    ];
    let rows: Vec<(i64, &[u8])> = rows.iter().map(|(w, b)| (*w, b.as_slice())).collect();
    assert_eq!(top_links(&rows, 10).expect("top"), []);
}

#[test]
fn damaged_columns_are_errors() {
    let blobs = sample()[&(1, ALL.to_owned(), DAY, 0)].encode();
    for cut in 0..blobs.cube.len() {
        assert!(Cube::decode(&blobs.cube[..cut], None, None, None, None).is_err());
    }
    let uniques = blobs.uniques.expect("uniques");
    assert!(Cube::decode(&blobs.cube, Some(&uniques[..uniques.len() - 1]), None, None, None).is_err());
    assert!(Cube::decode(&[9], None, None, None, None).is_err());
}

#[test]
fn combinations_of_kept_values_fold_past_their_own_cap() {
    let mut cube = Cube::default();
    let sources: Vec<u32> = (0..150).map(|i| cube.strings.intern(&format!("s{i}"))).collect();
    let referrers: Vec<u32> = (0..150)
        .map(|i| cube.strings.intern(&format!("r{i}.example")))
        .collect();
    for &source in &sources {
        for &referrer in &referrers {
            let d = Dims {
                device: 0,
                browser: NONE,
                os: NONE,
                source,
                referrer,
                country: NONE,
                city: NONE,
                variant: NO_VARIANT,
            };
            let here = cube.admit(d);
            *cube.combos.entry(here).or_default() += 1;
        }
    }
    assert_eq!(cube.total(), 150 * 150);
    // Every value is within MAX_VALUES, yet the 22,500 pairs fold past MAX_COMBOS: into (other, other).
    assert_eq!(cube.combos.len(), MAX_COMBOS + 1);
    let other = cube.strings.intern(OTHER);
    let folded = cube
        .combos
        .iter()
        .find(|(d, _)| d.source == other)
        .map(|(d, &n)| (d.referrer, n));
    assert_eq!(folded, Some((other, 150 * 150 - MAX_COMBOS as i64)));
}

#[test]
fn sprayed_sources_fold_into_other_past_the_cap() {
    let mut clicks = Vec::new();
    let sources: Vec<String> = (0..MAX_COMBOS + 500)
        .map(|i| format!("https://spam{i}.example/"))
        .collect();
    for (i, referrer) in sources.iter().enumerate() {
        clicks.push((
            "lnk_a",
            10.0 + i as f64 * 0.001,
            CHROME,
            Some(referrer.as_str()),
            "1.1.1.1",
        ));
    }
    let cubes = batch_cubes(&batch(&clicks), &owners());
    let day = &cubes[&(1, ALL.to_owned(), DAY, 0)];
    // Each click a new source and referrer host: past the first MAX_VALUES, all one combination.
    assert_eq!(day.combos.len(), MAX_VALUES + 1);
    assert_eq!(day.total(), (MAX_COMBOS + 500) as i64);
    let mut stored = Cube::default();
    stored.merge(day, 1);
    stored.merge(day, 1);
    // Which combinations a merge meets first decides which ones fold: never more than the cap and one.
    assert!(stored.combos.len() <= MAX_VALUES + 1);
    let answer = ask(&[row(&stored, 1, 0)], &Filters::default());
    assert_eq!(answer.total, 2 * (MAX_COMBOS + 500) as i64);
    assert!(answer.breakdowns[3][OTHER] >= 1000);
    assert_eq!(answer.visitors, 1.0);
}

#[test]
fn countries_and_cities_are_dimensions_and_old_cubes_read_as_unknown_places() {
    let mut clicks = ClickBatch::new();
    let agent = crate::useragent::classify_user_agent(CHROME);
    for (ip, country, city) in [
        ("a", Some("FR"), Some("Paris")),
        ("b", Some("FR"), None),
        ("c", None, None),
    ] {
        let origin = clicks.origin(None, false, None);
        let place = clicks.place(country, None, city);
        let visitor = [b'0'; 32];
        clicks
            .push("lnk_a", 100.0, agent, origin, visitor, place)
            .expect("push");
        let _ = ip;
    }
    let cubes = batch_cubes(&clicks, &owners());
    let all = row(&cubes[&(1, ALL.to_owned(), DAY, 0)], 1, 0);
    let answer = ask(std::slice::from_ref(&all), &Filters::default());
    assert_eq!(answer.breakdowns[5].get("FR"), Some(&2));
    assert_eq!(answer.breakdowns[6].get("Paris"), Some(&1));
    let mut wanted: [Option<String>; 8] = Default::default();
    wanted[5] = Some("fr".to_owned());
    assert_eq!(ask(std::slice::from_ref(&all), &Filters(wanted)).total, 2);
    // A version 1 cube (no places): the same combinations, every place unknown.
    let mut old = vec![1u8];
    let blob = &all.0.cube;
    let decoded = blob::decode_cube(blob).expect("decode");
    let mut w = crate::codec::Writer::default();
    w.uint(decoded.0.len() as u64);
    for s in &decoded.0 {
        w.str(s);
    }
    w.uint(decoded.1.len() as u64);
    for (d, n) in &decoded.1 {
        w.byte(d.device);
        for s in [d.browser, d.os, d.source, d.referrer] {
            w.uint(if s == NONE { 0 } else { u64::from(s) + 1 });
        }
        w.int(*n);
    }
    w.uint(0);
    old.extend(w.finish());
    let (_, combos, _) = blob::decode_cube(&old).expect("version 1");
    assert_eq!(combos.iter().map(|c| c.1).sum::<i64>(), 3);
    assert!(combos.iter().all(|(d, _)| d.country == NONE && d.city == NONE));
}

#[test]
fn top_links_sum_every_row_sorted_or_not_and_rank_by_clicks_then_id() {
    use crate::codec::Writer;
    use std::collections::HashMap;
    let mut state = 42u64;
    let mut next = |n: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % n
    };
    let mut rows: Vec<(i64, Vec<u8>)> = Vec::new();
    let mut expected: HashMap<String, i64> = HashMap::new();
    for row in 0..9 {
        let mut entries: Vec<(String, i64)> = (0..200)
            .map(|_| (format!("lnk_{:03}", next(300)), next(50) as i64))
            .collect();
        if row % 3 == 0 {
            entries.sort(); // as the writer writes them; the others unsorted, with repeats
            entries.dedup_by(|a, b| a.0 == b.0);
        }
        let weight = if row == 4 { -1 } else { 1 };
        let mut w = Writer::default();
        w.uint(entries.len() as u64);
        for (link, n) in &entries {
            w.str(link);
            w.int(*n);
            *expected.entry(link.clone()).or_insert(0) += n * weight;
        }
        rows.push((weight, w.finish()));
    }
    let mut ranked: Vec<(String, i64)> = expected.into_iter().filter(|&(_, n)| n > 0).collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let refs: Vec<(i64, &[u8])> = rows.iter().map(|(w, b)| (*w, b.as_slice())).collect();
    assert!(ranked.len() > 100);
    assert_eq!(top_links(&refs, usize::MAX).expect("all"), ranked);
    assert_eq!(top_links(&refs, 25).expect("top"), ranked[..25]);
    assert_eq!(top_links(&refs[..1], 3).expect("one row").len(), 3);
    let kept = LinkTotals::new(&refs).expect("kept");
    assert_eq!(kept.len(), ranked.len());
    for n in [0, 1, 10, LinkTotals::LEADERS, LinkTotals::LEADERS + 1, 200, usize::MAX] {
        assert_eq!(kept.top(n), ranked[..n.min(ranked.len())], "top {n}");
    }
    for (link, clicks) in &ranked {
        assert_eq!(kept.get(link), *clicks);
    }
    assert_eq!(kept.get("lnk_999"), 0); // never clicked
    let mut cut = refs.clone();
    cut[2].1 = &rows[2].1[..rows[2].1.len() - 1];
    assert!(top_links(&cut, 10).is_err());
    assert!(LinkTotals::new(&cut).is_err());
}

#[test]
fn kept_link_totals_leave_out_links_without_clicks_and_rank_few() {
    use crate::codec::Writer;
    let column = |entries: &[(&str, i64)]| {
        let mut w = Writer::default();
        w.uint(entries.len() as u64);
        for (link, n) in entries {
            w.str(link);
            w.int(*n);
        }
        w.finish()
    };
    let (plus, minus) = (column(&[("a", 3), ("b", 2), ("c", 2)]), column(&[("a", 3), ("b", 1)]));
    let kept = LinkTotals::new(&[(1, &plus), (-1, &minus)]).expect("kept");
    assert_eq!(kept.len(), 2); // "a" went back to 0: not a link with clicks
    assert_eq!(kept.top(5), [("c".to_owned(), 2), ("b".to_owned(), 1)]);
    assert_eq!((kept.get("a"), kept.get("b")), (0, 1));
    assert!(LinkTotals::new(&[]).expect("none").is_empty());
    let mut w = Writer::default();
    w.uint(1);
    w.uint(2);
    w.bytes(&[0xff, 0xfe]); // not text: refused, as top links refuses it
    w.int(1);
    assert!(LinkTotals::new(&[(1, &w.finish())]).is_err());
}

#[test]
fn kept_link_totals_with_recent_days_rank_as_all_the_days_together() {
    use crate::codec::Writer;
    let mut next = super::pack_tests::random(99);
    let mut column = |links: u64, most: usize| {
        let entries: Vec<(String, i64)> = (0..links)
            .filter_map(|l| {
                let n = next(most) as i64;
                (n > 0).then(|| (format!("lnk_{l:03}"), n))
            })
            .collect();
        let mut w = Writer::default();
        w.uint(entries.len() as u64);
        for (link, n) in &entries {
            w.str(link);
            w.int(*n);
        }
        w.finish()
    };
    for round in 0..40 {
        // Some rounds with few clicks a link: many ties, ranked by id.
        let closed: Vec<Vec<u8>> = (0..3).map(|_| column(300, if round < 20 { 40 } else { 2 })).collect();
        // Recent days: few links, some of them far past the closed leaders, some never clicked before.
        let recent: Vec<Vec<u8>> = (0..2)
            .map(|_| column(320, if round % 2 == 0 { 5 } else { 90 }))
            .collect();
        let closed_rows: Vec<(i64, &[u8])> = closed.iter().map(|c| (1, c.as_slice())).collect();
        let recent_rows: Vec<(i64, &[u8])> = recent.iter().map(|c| (1, c.as_slice())).collect();
        let kept = LinkTotals::new(&closed_rows).expect("closed");
        let all = LinkTotals::new(&[closed_rows.clone(), recent_rows.clone()].concat()).expect("all");
        for n in [0, 1, 10, 25, 64, 100] {
            assert_eq!(
                kept.top_with(&recent_rows, n).expect("top"),
                all.top(n),
                "round {round}, n {n}"
            );
        }
    }
    let kept = LinkTotals::new(&[]).expect("none");
    assert!(kept.top_with(&[], 10).expect("empty").is_empty());
}
