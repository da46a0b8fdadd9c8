//! Deterministic pseudo-random batches for benchmarks.

use super::{Click, ClickBatch, ClickError, SECONDS_PER_DAY, VISITOR_HEX_CHARS};
use crate::agent::Device;

impl ClickBatch {
    /// A deterministic pseudo-random batch for benchmarks: `n` clicks over `links` links and `days` days,
    /// already classified (no user-agent parsing or hashing cost).
    pub fn synthetic(n: usize, links: usize, days: usize, seed: u64) -> Result<Self, ClickError> {
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
            return Err(ClickError::Synthetic("links and days must be at least 1"));
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
            });
        }
        Ok(batch)
    }
}
