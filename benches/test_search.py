"""`q` filtering and `/search` ranking over 100k links: the Rust core against the pure-Python reference.

    python -m pytest benches/test_search.py --benchmark-only --timeout 0

Goals: core ≤ 5 ms p50 for both, at least 20 times the reference; the worst queries (`test_worst_query`, core
only) ≤ 50 ms p50. Compare `median` within a group; the
ratio is also printed in `extra_info` of each core row once both sides have run.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from tests.support import reference

from slugline import _core

LINKS = 100_000
WORDS = (
    "rust python kubernetes docker cloud recipe coffee travel music guitar design typescript database "
    "postgres redis search engine release notes meeting agenda budget roadmap launch marketing video "
    "podcast article tutorial guide handbook policy security privacy analytics dashboard report invoice "
    "crème brûlée café naïve résumé über straße"
).split()
DOMAINS = ("example.com", "docs.example.org", "blog.example.net", "shop.example.io", "news.example.co.uk")
QUERIES = {
    "one-term": "kubernetes",
    "two-terms": "rust guide",
    "prefix": "kube",
    "accented": "CREME brulee",
    "tag+term": "#music guitar",
    "rare": "zanzibar",  # one link: the cost that does not grow with the matches
}


def _text(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def generate(n: int, seed: int = 42) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    links = []
    for i in range(n):
        title = _text(rng, 2, 6).title()
        url = f"https://{rng.choice(DOMAINS)}/{_text(rng, 1, 3).replace(' ', '-')}/{i}"
        tags = sorted({rng.choice(WORDS[:30]) for _ in range(rng.randint(0, 3))})
        links.append(
            {
                "id": f"lnk_{i:011d}",
                "slug": f"s{i:06d}",
                "destination_url": url,
                "title": title,
                "description": _text(rng, 8, 20),
                "note": _text(rng, 0, 10) or None,
                "hashtags": tags,
                "public": rng.random() < 0.8,
            }
        )
    return links


@pytest.fixture(scope="module")
def indexes() -> tuple[_core.SearchIndex, reference.SearchIndex]:
    core, ref = _core.SearchIndex(), reference.SearchIndex()
    rare = {"id": "lnk_rare", "slug": "rare", "destination_url": "https://example.com/", "title": "Zanzibar"}
    for link in [*generate(LINKS), {**rare, "description": None, "note": None, "hashtags": [], "public": True}]:
        core.upsert(**link)
        ref.upsert(**link)
    return core, ref


MEDIANS: dict[tuple[str, str, str], float] = {}


def _record(benchmark: Any, op: str, query_name: str, side: str) -> None:
    MEDIANS[(op, query_name, side)] = benchmark.stats.stats.median
    other = MEDIANS.get((op, query_name, "reference" if side == "core" else "core"))
    if other is not None:
        core_m = MEDIANS[(op, query_name, "core")]
        ref_m = MEDIANS[(op, query_name, "reference")]
        benchmark.extra_info["speedup_vs_reference"] = round(ref_m / core_m, 1)


@pytest.mark.parametrize("query_name", list(QUERIES))
@pytest.mark.parametrize("side", ["reference", "core"])
@pytest.mark.parametrize("op", ["filter", "search"])
def test_query(benchmark: Any, indexes: tuple[Any, Any], op: str, query_name: str, side: str) -> None:
    """`filter` is `GET /links?q=` (ids of every match); `search` is `GET /search` (ranked top 20 of all)."""
    index = indexes[0] if side == "core" else indexes[1]
    query = QUERIES[query_name]
    benchmark.group = f"{op} 100k: {query_name}"
    benchmark.extra_info.update(links=LINKS, query=query)
    args = (query, False) if op == "filter" else (query, 20, False)
    result = benchmark.pedantic(
        getattr(index, op), args=args, rounds=30 if side == "core" else 3, iterations=1, warmup_rounds=1
    )
    assert result if op == "filter" else result[0] > 0
    _record(benchmark, op, query_name, side)


WORST = {
    "26 one-letter terms": " ".join("abcdefghijklmnopqrstuvwxyz"),
    "16 typo terms": "kubernetse postgers databse roadmpa marketign podcats articel tutorail handbok secruity "
    "privacu analytcs dashbaord reprot invocie relase",
    "one 500-char term": "x" * 500,
    "one letter": "s",
    "vowels": "a e i o u",
    "16 three-letter prefixes": "dat pos red kub doc clo rec cof tra mus gui des typ sea eng rel",
}


@pytest.mark.parametrize("query_name", list(WORST))
@pytest.mark.parametrize("op", ["filter", "search"])
def test_worst_query(benchmark: Any, indexes: tuple[Any, Any], op: str, query_name: str) -> None:
    """Queries built to cost the most: many terms, one-letter terms, typos everywhere, a very long term."""
    query = WORST[query_name]
    benchmark.group = f"worst {op} 100k"
    benchmark.extra_info.update(links=LINKS, query=query[:80])
    args = (query, False) if op == "filter" else (query, 20, False)
    benchmark.pedantic(getattr(indexes[0], op), args=args, rounds=30, iterations=1, warmup_rounds=1)
