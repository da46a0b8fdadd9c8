//! Criterion benchmarks of the hot paths (run with `cargo bench`).

use criterion::{criterion_group, criterion_main, Criterion};
use slugline_core::codec::Writer;
use slugline_core::cube::query::{top_links, LinkTotals};
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

/// A year's per-link count rows of an account with 10,000 links: twelve month packs and a few days, each naming
/// ~9,500 of the links, as a first view of top links reads them.
fn bench_link_counts(c: &mut Criterion) {
    let mut state = 7u64;
    let mut next = |n: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % n
    };
    const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let links: Vec<String> = (0..10_000)
        .map(|_| {
            let id: String = (0..11).map(|_| char::from(BASE62[next(62) as usize])).collect();
            format!("lnk_{id}") // as the service makes them
        })
        .collect();
    let rows: Vec<(i64, Vec<u8>)> = (0..13)
        .map(|_| {
            let mut w = Writer::default();
            let named: Vec<&String> = links.iter().filter(|_| next(20) != 0).collect();
            w.uint(named.len() as u64);
            for link in named {
                w.str(link);
                w.int(1 + next(300) as i64);
            }
            (1, w.finish())
        })
        .collect();
    let rows: Vec<(i64, &[u8])> = rows.iter().map(|(w, b)| (*w, b.as_slice())).collect();
    let mut group = c.benchmark_group("link_counts");
    group.bench_function("top_25_of_a_year", |b| b.iter(|| top_links(black_box(&rows), 25)));
    group.bench_function("kept_a_year", |b| {
        b.iter(|| LinkTotals::new(black_box(&rows)).map(|t| t.len()))
    });
    group.finish();
}

criterion_group!(benches, bench_keys, bench_search, bench_clicks, bench_link_counts);
criterion_main!(benches);
