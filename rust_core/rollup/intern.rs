//! Interning of the strings of a batch: each stored once, referred to by a u32 id.

use std::collections::HashMap;

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

    pub fn len(&self) -> usize {
        self.names.len()
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
