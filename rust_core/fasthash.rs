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

impl Hasher for IdHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().unwrap_or_default()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
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

    #[inline]
    fn finish(&self) -> u64 {
        self.0
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
}
