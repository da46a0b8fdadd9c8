//! A fast hash for keys the service makes itself: interned string ids, day numbers, link ids (random strings
//! the service generated). Nobody outside can choose such keys to collide, so the standard library's keyed
//! SipHash, which the click writer spent a tenth of its time in, buys nothing for them. Strings that visitors
//! send (sources, referrers, user agents) keep the standard hash.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// The multiply-rotate hash of rustc's `FxHasher`, one machine word at a time.
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl IdHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

#[inline]
fn word(eight: &[u8]) -> u64 {
    u64::from_le_bytes(eight.try_into().unwrap_or_default())
}

#[inline]
fn half(four: &[u8]) -> u32 {
    u32::from_le_bytes(four.try_into().unwrap_or_default())
}

impl Hasher for IdHasher {
    /// Eight bytes at a time; the last word is the last eight bytes, overlapping the one before when the length is
    /// not a multiple of eight, and a shorter input is read as two overlapping halves: no copy of a tail of unknown
    /// length (a link id is 15 bytes: the copy took half of the time of totalling a year's per-link counts). Equal
    /// inputs give equal words; `str` and `[u8]` add their length or an end mark, so lengths never mix.
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let n = bytes.len();
        if n >= 8 {
            let mut at = 0;
            while at + 8 < n {
                self.add(word(&bytes[at..at + 8]));
                at += 8;
            }
            self.add(word(&bytes[n - 8..]));
        } else if n >= 4 {
            self.add(u64::from(half(&bytes[..4])) | u64::from(half(&bytes[n - 4..])) << 32);
        } else if n > 0 {
            self.add(u64::from(bytes[0]) | u64::from(bytes[n / 2]) << 8 | u64::from(bytes[n - 1]) << 16);
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn write_i64(&mut self, i: i64) {
        self.add(i as u64);
    }

    /// Half of MurmurHash3's finaliser: a multiply mixes each bit of its input into the bits above it only, and the
    /// table picks a bucket by the low bits, so without this the last characters of ids alike but for them (as
    /// `lnk_000000001234` to `lnk_000000009999`) would never reach the bucket, and those ids would share a few.
    #[inline]
    fn finish(&self) -> u64 {
        let h = (self.0 ^ (self.0 >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^ (h >> 33)
    }
}

/// A map keyed by ids the service made (see the module's note).
pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;
/// A set of ids the service made.
pub type IdSet<K> = HashSet<K, BuildHasherDefault<IdHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_keys_hash_alike_and_near_ones_apart() {
        let mut map: IdMap<(u8, u32), i64> = IdMap::default();
        for i in 0..10_000u32 {
            *map.entry((1, i)).or_default() += 1;
            *map.entry((1, i)).or_default() += 1;
        }
        assert_eq!(map.len(), 10_000);
        assert!(map.values().all(|&n| n == 2));
        let strings: IdSet<String> = (0..1000).map(|i| format!("lnk_{i:012}")).collect();
        assert_eq!(strings.len(), 1000);
    }

    #[test]
    fn every_byte_of_any_length_counts() {
        use std::hash::BuildHasher;
        let build = BuildHasherDefault::<IdHasher>::default();
        for n in 1..=40 {
            let base: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            let hashes: IdSet<u64> = (0..n)
                .map(|at| {
                    let mut changed = base.clone();
                    changed[at] ^= 0x20;
                    build.hash_one(&changed)
                })
                .chain([build.hash_one(&base)])
                .collect();
            assert_eq!(hashes.len(), n + 1, "a byte of {n} left out");
        }
    }

    #[test]
    fn ids_alike_but_for_their_end_spread_over_the_low_bits() {
        use std::hash::BuildHasher;
        let build = BuildHasherDefault::<IdHasher>::default();
        for width in [11, 12, 15] {
            let buckets: IdSet<u64> = (0..10_000)
                .map(|i| build.hash_one(format!("lnk_{i:0width$}").as_bytes()) & 0x3fff)
                .collect();
            // 10,000 keys thrown at random into 16,384 buckets fill ~7,500 of them
            assert!(buckets.len() > 6_000, "{width}: {} buckets", buckets.len());
        }
    }
}
