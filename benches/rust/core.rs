//! Criterion benchmarks of the hot paths (run with `cargo bench`).

use criterion::{criterion_group, criterion_main, Criterion};
use slugline_core::rollup::ClickBatch;
use slugline_core::search::{Link, SearchIndex};
use slugline_core::{keys, useragent};
use std::hint::black_box;

const WORDS: &[&str] = &[
    "rust",
    "python",
    "tutorial",
    "guide",
    "book",
    "recipe",
    "news",
    "video",
    "music",
    "travel",
    "design",
    "startup",
    "release",
    "notes",
    "kitchen",
    "garden",
    "review",
    "podcast",
    "weekly",
    "report",
    "summit",
    "conference",
    "budget",
    "planning",
    "marketing",
    "launch",
    "crème",
    "brûlée",
    "café",
    "straße",
    "database",
    "postgres",
    "search",
    "engine",
    "mobile",
    "desktop",
    "browser",
    "privacy",
    "security",
    "cloud",
    "server",
    "workshop",
    "analytics",
    "growth",
    "hiring",
    "remote",
    "office",
    "holiday",
    "photo",
    "gallery",
    "festival",
    "ticket",
    "career",
    "learning",
    "course",
    "lesson",
    "chapter",
    "example",
    "pattern",
    "feature",
    "roadmap",
    "summary",
];
const DOMAINS: &[&str] = &[
    "example.com",
    "docs.rs",
    "github.com",
    "youtube.com",
    "news.ycombinator.com",
    "blog.dev",
];

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn words(&mut self, min: usize, max: usize) -> String {
        let n = min + self.below(max - min + 1);
        (0..n)
            .map(|_| WORDS[self.below(WORDS.len())])
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn synthetic_index(n: usize) -> SearchIndex {
    let mut rng = Rng(0x5EED);
    let mut index = SearchIndex::new();
    for i in 0..n {
        let slug = format!("{:07x}", rng.next() & 0xFFF_FFFF);
        let domain = DOMAINS[rng.below(DOMAINS.len())];
        let link = Link {
            destination_url: format!(
                "https://{domain}/{}/{}-{:x}",
                WORDS[rng.below(WORDS.len())],
                slug,
                rng.next() % 99_999
            ),
            title: Some(rng.words(2, 6)),
            description: Some(rng.words(6, 18)),
            note: (i % 3 == 0).then(|| rng.words(1, 8)),
            hashtags: (0..rng.below(4)).map(|_| WORDS[rng.below(20)].to_owned()).collect(),
            slug,
        };
        index.upsert(&format!("lnk_{i:011}"), link, i % 5 != 0);
    }
    index
}

fn bench_keys(c: &mut Criterion) {
    let key = keys::generate_key("full").expect("key");
    c.bench_function("key_kind", |b| b.iter(|| keys::key_kind(black_box(&key))));
    c.bench_function("hash_key", |b| {
        b.iter(|| keys::hash_key(black_box(b"server secret"), black_box(&key)))
    });
}

fn bench_search(c: &mut Criterion) {
    let index = synthetic_index(100_000);
    let mut group = c.benchmark_group("search_100k");
    for query in ["kitchen", "python tutorial", "crème", "#rust guide", "docs.rs"] {
        group.bench_function(format!("filter/{query}"), |b| {
            b.iter(|| index.filter(black_box(query), false))
        });
    }
    for query in ["kitchen", "python tutorial", "tutorail", "#rust guide", "gui"] {
        group.bench_function(format!("search/{query}"), |b| {
            b.iter(|| index.search(black_box(query), 20, false))
        });
    }
    group.finish();
}

fn bench_clicks(c: &mut Criterion) {
    let agents = [
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    ];
    for (name, ua) in ["iphone", "chrome", "googlebot"].into_iter().zip(agents) {
        c.bench_function(&format!("classify_user_agent/{name}"), |b| {
            b.iter(|| useragent::classify_user_agent(black_box(ua)))
        });
    }
    let batch = ClickBatch::synthetic(1_000_000, 10_000, 30, 7).expect("batch");
    let mut group = c.benchmark_group("clicks");
    group.sample_size(10);
    group.bench_function("rollup_1m", |b| b.iter(|| batch.rollup().len()));
    group.finish();
}

criterion_group!(benches, bench_keys, bench_search, bench_clicks);
criterion_main!(benches);
