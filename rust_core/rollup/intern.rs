//! Interning of the strings of a batch and a cheap hasher for its integer keys.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Strings seen in a batch, each stored once.
#[derive(Debug, Default)]
pub struct Interner {
    names: Vec<String>,
    ids: HashMap<String, u32>,
}

impl Interner {
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_owned());
        self.ids.insert(name.to_owned(), id);
        id
    }

    pub fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    /// For each id, the position of its string in sorted order.
    pub fn ranks(&self) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.names.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| self.name(a).cmp(self.name(b)));
        let mut rank = vec![0; order.len()];
        for (position, &id) in order.iter().enumerate() {
            rank[id as usize] = position as u32;
        }
        rank
    }

    pub fn by_rank(&self, rank: &[u32]) -> Vec<u32> {
        let mut ids = vec![0; rank.len()];
        for (id, &r) in rank.iter().enumerate() {
            ids[r as usize] = id as u32;
        }
        ids
    }
}

/// FxHash-style multiply-rotate hashing: plenty for integer keys made inside the batch (not attacker-chosen).
#[derive(Default, Clone, Copy)]
pub struct FastHash(u64);

impl Hasher for FastHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        bytes.iter().for_each(|&b| self.write_u64(u64::from(b)));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }
}

pub type BuildFastHash = BuildHasherDefault<FastHash>;
