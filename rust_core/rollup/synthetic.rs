//! Deterministic pseudo-random click batches for benchmarks and tests (the `testing` feature). They skip
//! the classification and hashing of `ClickBatch::add`, so a benchmark of the roll-up measures only the roll-up.

use super::{Click, ClickBatch, SECONDS_PER_DAY, VISITOR_HEX_CHARS};
use crate::useragent::Device;
use std::fmt;

/// The shape asked of a synthetic batch cannot be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntheticError(&'static str);

impl fmt::Display for SyntheticError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "synthetic batch: {}", self.0)
    }
}

impl std::error::Error for SyntheticError {}

impl ClickBatch {
    /// `n` clicks over `links` links and `days` days, already classified; the same `seed` gives the same batch.
    pub fn synthetic(n: usize, links: usize, days: usize, seed: u64) -> Result<Self, SyntheticError> {
        const SOURCES: [&str; 8] = [
            "direct",
            "qr",
            "google.com",
            "t.co",
            "newsletter",
            "facebook.com",
            "reddit.com",
            "x.com",
        ];
        const AGENTS: [(Device, &str, &str); 5] = [
            (Device::Desktop, "Chrome", "Windows"),
            (Device::Mobile, "Safari", "iOS"),
            (Device::Mobile, "Chrome", "Android"),
            (Device::Tablet, "Safari", "iPadOS"),
            (Device::Bot, "Googlebot", "Other"),
        ];
        if links == 0 || days == 0 {
            return Err(SyntheticError("links and days must be at least 1"));
        }
        let mut batch = Self::new();
        let link_ids: Vec<u32> = (0..links)
            .map(|i| batch.strings.intern(&format!("lnk_{i:011}")))
            .collect();
        let sources: Vec<u32> = SOURCES.iter().map(|s| batch.strings.intern(s)).collect();
        let mut state = seed ^ 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            // splitmix64
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        const START: f64 = 1_767_225_600.0; // 2026-01-01T00:00:00Z
        batch.clicks.reserve(n);
        for _ in 0..n {
            let r = next();
            let timestamp = START + (r % (days as u64 * 86_400)) as f64;
            let (device, browser, os) = AGENTS[(r >> 40) as usize % AGENTS.len()];
            let source = sources[(r >> 48) as usize % sources.len()];
            let mut visitor = [b'0'; VISITOR_HEX_CHARS];
            let hex = format!("{:016x}{:016x}", next(), r);
            visitor.copy_from_slice(hex.as_bytes());
            batch.clicks.push(Click {
                link: link_ids[(next() % links as u64) as usize],
                timestamp,
                day: (timestamp / SECONDS_PER_DAY).floor() as i64,
                device,
                browser,
                os,
                source,
                referrer_host: (source > sources[1]).then_some(source),
                visitor,
                place: super::UNPLACED,
                variant: super::NO_VARIANT,
            });
        }
        Ok(batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_batches_are_deterministic() {
        let a = ClickBatch::synthetic(10_000, 50, 7, 42).expect("batch");
        let b = ClickBatch::synthetic(10_000, 50, 7, 42).expect("batch");
        assert_eq!(a.rollup(), b.rollup());
        assert_eq!(a.rollup().iter().map(|r| r.4).sum::<u64>(), 10_000);
        assert!(a.rollup().iter().all(|r| (20_454..20_461).contains(&r.1)));
        assert!(ClickBatch::synthetic(1, 0, 1, 0).is_err());
    }
}
