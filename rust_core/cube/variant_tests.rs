//! The variant as a dimension: counted per click and per visitor, filtered on, kept through encoding and merging,
//! and read as no variant from cubes written before version 3.

use super::delta::{batch_cubes, Owner, ALL};
use super::query::{analyse, Filters, Row, DIMENSIONS};
use super::*;
use crate::codec::Writer;
use crate::fasthash::IdMap;
use crate::rollup::{ClickBatch, UNPLACED};
use crate::useragent::classify_user_agent;

const CHROME: &str =
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36";

/// (visitor, variant): one click each, on day 0 of `lnk_a`, from a desktop Chrome.
fn cubes(clicks: &[(u8, Option<u8>)]) -> IdMap<delta::CubeKey, Cube> {
    let mut batch = ClickBatch::new();
    let agent = classify_user_agent(CHROME);
    for &(visitor, variant) in clicks {
        let origin = batch.origin(None, false, None);
        let mut hash = [b'0'; 32];
        hash[..2].copy_from_slice(format!("{visitor:02x}").as_bytes());
        batch.push("lnk_a", 100.0, agent, origin, hash, UNPLACED).expect("push");
        batch.set_variant(variant.unwrap_or(NO_VARIANT));
    }
    let owners = IdMap::from_iter([(
        "lnk_a".to_owned(),
        Owner {
            account: 1,
            public: true,
        },
    )]);
    batch_cubes(&batch, &owners)
}

fn ask(cube: &[u8], filters: &[(&str, &str)]) -> query::Answer {
    let mut wanted: [Option<String>; DIMENSIONS.len()] = Default::default();
    for &(name, value) in filters {
        let at = DIMENSIONS.iter().position(|d| *d == name).expect("dimension");
        wanted[at] = Some(value.to_owned());
    }
    let row = Row {
        weight: 1,
        day: 0,
        cube,
        uniques: None,
        hours: None,
    };
    analyse(&[row], &Filters(wanted), false).expect("analyse")
}

/// A cube read back from its columns (the per-link counts left out).
fn decoded(b: &Blobs) -> Cube {
    Cube::decode(
        &b.cube,
        b.uniques.as_deref(),
        b.hours.as_deref(),
        None,
        b.sketches.as_deref(),
    )
    .expect("decode")
}

const SPLIT: [(u8, Option<u8>); 5] = [(1, Some(0)), (1, Some(0)), (2, Some(0)), (3, Some(1)), (4, None)];

#[test]
fn clicks_and_visitors_per_variant() {
    let made = cubes(&SPLIT);
    {
        let blobs = made[&(1, "lnk_a".to_owned(), DAY, 0)].encode();
        let all = ask(&blobs.cube, &[]);
        assert_eq!(all.total, 5);
        let split: Vec<_> = [("0", 3), ("1", 1)].map(|(v, n)| (v.to_owned(), n)).into();
        assert_eq!(all.breakdowns[7], split.into_iter().collect());
        assert_eq!(
            all.variant_visitors,
            IdMap::from_iter([(0u8, 2.0), (1u8, 1.0)]).into_iter().collect()
        );
        let one = ask(&blobs.cube, &[("variant", "1")]);
        assert_eq!((one.total, one.visitors), (1, 1.0));
        let zero = ask(&blobs.cube, &[("variant", "0"), ("device", "desktop")]);
        assert_eq!((zero.total, zero.visitors), (3, 2.0));
        for nothing in ["2", "x", "255"] {
            assert_eq!(ask(&blobs.cube, &[("variant", nothing)]).total, 0, "{nothing}");
        }
    }
    let month = made[&(1, "lnk_a".to_owned(), MONTH, 0)].encode();
    assert_eq!(ask(&month.cube, &[("variant", "0")]).total, 3);
}

#[test]
fn account_views_keep_no_variants() {
    // Visitor 1 is sent to variant 0 of one link and to variant 1 of another the same day: one visitor of the account.
    let day = |clicks: &[(u8, Option<u8>)]| cubes(clicks).remove(&(1, "lnk_a".to_owned(), DAY, 0)).expect("day");
    let view = cubes(&[(1, Some(0)), (2, Some(1))])
        .remove(&(1, ALL.to_owned(), DAY, 0))
        .expect("view");
    let made = ask(&view.encode().cube, &[]);
    assert_eq!((made.total, made.visitors), (2, 2.0));
    assert!(made.breakdowns[7].is_empty() && made.variant_visitors.is_empty());
    let mut rebuilt = Cube::default();
    rebuilt.rebuild(&[day(&[(1, Some(0)), (2, Some(1))]), day(&[(1, Some(1))])]);
    let answer = ask(&rebuilt.encode().cube, &[]);
    assert_eq!(
        (answer.total, answer.visitors),
        (3, 2.0),
        "visitor 1 once, whatever their variants"
    );
    assert!(answer.breakdowns[7].is_empty());
    let composed = delta::compose(
        &[
            ("lnk_a".to_owned(), day(&[(1, Some(0))])),
            ("lnk_b".to_owned(), day(&[(1, Some(1))])),
        ],
        true,
    );
    assert_eq!(ask(&composed.encode().cube, &[]).visitors, 1.0);
    let mut moved = Cube::default();
    delta::apply_link(&mut moved, &day(&[(3, Some(2))]), "lnk_a", 1, true);
    let answer = ask(&moved.encode().cube, &[]);
    assert_eq!(answer.total, 1);
    assert!(answer.breakdowns[7].is_empty());
}

#[test]
fn variants_survive_encoding_and_merging() {
    let made = cubes(&SPLIT);
    let cube = &made[&(1, "lnk_a".to_owned(), DAY, 0)];
    let b = cube.encode();
    let back = decoded(&b);
    assert_eq!(back.combos, cube.combos);
    let mut twice = Cube::default();
    twice.merge(&back, 1);
    twice.merge(&back, 1);
    assert_eq!(ask(&twice.encode().cube, &[("variant", "0")]).total, 6);
    twice.merge(&back, -1);
    assert_eq!(ask(&twice.encode().cube, &[("variant", "1")]).total, 1);
}

/// The `cube` column of a cube that keeps no variants as version 2 wrote it: no variant byte.
fn version_2(cube: &[u8]) -> Vec<u8> {
    let (strings, combos, own) = blob::decode_cube(cube).expect("decode");
    assert!(combos.iter().all(|(d, _)| d.variant == NO_VARIANT));
    let mut w = Writer::default();
    w.byte(2);
    w.uint(strings.len() as u64);
    for s in &strings {
        w.str(s);
    }
    w.uint(combos.len() as u64);
    for (d, n) in &combos {
        w.byte(d.device);
        for s in [d.browser, d.os, d.source, d.referrer, d.country, d.city] {
            w.uint(if s == NONE { 0 } else { u64::from(s) + 1 });
        }
        w.int(*n);
    }
    w.uint(own.len() as u64);
    for (i, v) in &own {
        w.uint(*i as u64);
        w.uint((v * 16.0) as u64);
    }
    w.finish()
}

#[test]
fn cubes_before_version_3_read_as_without_variants() {
    // The clicks of `SPLIT` before variants were kept, as version 2 wrote them.
    let made = cubes(&SPLIT.map(|(visitor, _)| (visitor, None)));
    let old = version_2(&made[&(1, "lnk_a".to_owned(), DAY, 0)].encode().cube);
    let (_, read, _) = blob::decode_cube(&old).expect("version 2");
    assert!(read.iter().all(|(d, _)| d.variant == NO_VARIANT));
    let answer = ask(&old, &[]);
    assert_eq!((answer.total, answer.visitors), (5, 4.0));
    assert!(answer.breakdowns[7].is_empty() && answer.variant_visitors.is_empty());
    assert_eq!(ask(&old, &[("variant", "0")]).total, 0);
    // Merged into a version 3 cube, old clicks stay without a variant beside new ones with theirs.
    let mut merged = Cube::decode(&old, None, None, None, None).expect("decode old");
    merged.merge(&cubes(&[(9, Some(1))])[&(1, "lnk_a".to_owned(), DAY, 0)], 1);
    let answer = ask(&merged.encode().cube, &[]);
    assert_eq!(answer.total, 6);
    assert_eq!(answer.breakdowns[7].get("1"), Some(&1));
}

#[test]
fn a_cube_without_its_variants_is_written_as_version_2_wrote_it() {
    // What the same clicks make with no variant at all, in version 2: to the byte, visitors and sketches included.
    let key = (1, "lnk_a".to_owned(), DAY, 0);
    let plain = cubes(&SPLIT.map(|(visitor, _)| (visitor, None)))[&key].encode();
    let stripped = cubes(&SPLIT)[&key].without_variants().encode_as(VERSION_2);
    assert_eq!(stripped.cube, version_2(&plain.cube));
    let others = |b: &Blobs| (b.uniques.clone(), b.hours.clone(), b.sketches.clone());
    assert_eq!(others(&stripped), others(&plain));
    let answer = ask(&stripped.cube, &[]);
    assert_eq!((answer.total, answer.visitors), (5, 4.0));
    assert!(answer.breakdowns[7].is_empty());
    // Read back, it is the cube it was made from, less its variants.
    let back = decoded(&stripped);
    assert_eq!(back.encode(), plain);
}
