//! A link's weighted variants (an A/B split of its destination): a visitor is sent to one of them, chosen by a
//! keyed hash of the visitor (address and user agent, the same bytes the click's visitor hash takes) and the link
//! under the day's visitor salt. The same visitor gets the same variant all day on every worker and host (the salt
//! is shared through the database) and a fresh draw the next day (a new salt); nothing about the visitor is kept.

use crate::keys::KeyedHasher;
use serde_json::Value;

/// At most this many variants per link (the API's bound).
pub const MAX_VARIANTS: usize = 10;
/// A variant's weight is 1 to this (its share is its weight over the sum of the link's weights).
pub const MAX_WEIGHT: u64 = 1000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantsError(pub String);

impl std::fmt::Display for VariantsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for VariantsError {}

/// The variants' cumulative weights (the last is the total); destinations are the caller's business.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variants {
    ends: Vec<u64>,
}

impl Variants {
    /// The variants from their JSON (`[{"to": "...", "weight": 3}, ...]`): 2 to `MAX_VARIANTS` of them, each weight
    /// an integer from 1 to `MAX_WEIGHT`.
    pub fn parse(json: &str) -> Result<Self, VariantsError> {
        let parsed: Value =
            serde_json::from_str(json).map_err(|e| VariantsError(format!("variants are not JSON: {e}")))?;
        let list = parsed
            .as_array()
            .ok_or_else(|| VariantsError("variants must be a list".to_owned()))?;
        if !(2..=MAX_VARIANTS).contains(&list.len()) {
            return Err(VariantsError(format!("2 to {MAX_VARIANTS} variants")));
        }
        let mut ends = Vec::with_capacity(list.len());
        let mut total = 0;
        for (n, item) in list.iter().enumerate() {
            let weight = item
                .get("weight")
                .and_then(Value::as_u64)
                .filter(|w| (1..=MAX_WEIGHT).contains(w))
                .ok_or_else(|| {
                    VariantsError(format!(
                        "variants[{n}].weight must be an integer from 1 to {MAX_WEIGHT}"
                    ))
                })?;
            total += weight;
            ends.push(total);
        }
        Ok(Variants { ends })
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The variant for this visitor of `link_id` under the day's `salt`: the keyed hash's first 8 bytes modulo the
    /// total weight (a bias under 2^-50), placed on the cumulative weights.
    pub fn choose(&self, salt: &[u8], link_id: &str, ip: &str, user_agent: &[u8]) -> usize {
        let total = self.ends.last().copied().unwrap_or(1);
        let hex: [u8; 16] =
            KeyedHasher::new(salt).hex_prefix(&[ip.as_bytes(), b"\n", user_agent, b"\n", link_id.as_bytes()]);
        let draw = std::str::from_utf8(&hex)
            .ok()
            .and_then(|text| u64::from_str_radix(text, 16).ok())
            .unwrap_or(0)
            % total;
        self.ends
            .partition_point(|&end| end <= draw)
            .min(self.ends.len().saturating_sub(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_thousand_visitors_split_by_the_weights_and_stick_for_the_day() {
        let variants =
            Variants::parse(r#"[{"to": "a", "weight": 50}, {"to": "b", "weight": 30}, {"to": "c", "weight": 20}]"#)
                .expect("variants");
        let mut counts = [0usize; 3];
        for visitor in 0..10_000 {
            let ip = format!("10.{}.{}.{}", visitor / 65536, visitor / 256 % 256, visitor % 256);
            let chosen = variants.choose(b"today", "link1", &ip, b"agent");
            assert_eq!(
                chosen,
                variants.choose(b"today", "link1", &ip, b"agent"),
                "sticky within the day"
            );
            counts[chosen] += 1;
        }
        for (count, share) in counts.iter().zip([0.5, 0.3, 0.2]) {
            assert!((*count as f64 / 10_000.0 - share).abs() < 0.02, "{counts:?}");
        }
        let moved = (0..1000)
            .filter(|n| {
                let ip = format!("10.0.{}.{}", n / 256, n % 256);
                variants.choose(b"today", "link1", &ip, b"agent")
                    != variants.choose(b"tomorrow", "link1", &ip, b"agent")
            })
            .count();
        assert!(moved > 300, "a new day's salt draws again ({moved} of 1000 moved)");
    }

    #[test]
    fn malformed_variants_are_refused() {
        for bad in [
            "{}",
            "[]",
            r#"[{"to": "a", "weight": 1}]"#,
            r#"[{"to": "a", "weight": 0}, {"to": "b", "weight": 1}]"#,
            r#"[{"to": "a", "weight": 1001}, {"to": "b", "weight": 1}]"#,
            r#"[{"to": "a", "weight": 1.5}, {"to": "b", "weight": 1}]"#,
            r#"[{"to": "a"}, {"to": "b", "weight": 1}]"#,
            "not json",
        ] {
            assert!(Variants::parse(bad).is_err(), "{bad}");
        }
        let many = format!("[{}]", [r#"{"weight": 1}"#; MAX_VARIANTS + 1].join(","));
        assert!(Variants::parse(&many).is_err());
    }
}
