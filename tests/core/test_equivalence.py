"""The Rust core agrees with the pure-Python reference (tests/support/reference.py) on generated inputs."""

from __future__ import annotations

import random
from typing import Any

import pytest

from slugline import _core
from tests.support import reference

WORDS = [
    "rust",
    "Rust",
    "python",
    "Pythonic",
    "tutorial",
    "guide",
    "book",
    "books",
    "crème",
    "Brûlée",
    "CAFÉ",
    "straße",
    "naïve",
    "déjà",
    "vu",
    "kitchen",
    "garden",
    "release",
    "notes",
    "NEWS",
    "weekly",
    "2024",
    "v1.2",
    "c++",
    "e-mail",
    "über",
    "Ångström",
    "İstanbul",
    "résumé",
    "ﬁle",
    "№5",
    "x",
    "ab",
    "data",
]
DOMAINS = ["example.com", "docs.rs", "www.github.com", "m.youtube.com", "news.ycombinator.com", "café.example"]
TAGS = ["rust", "python", "books", "dessert", "news", "café", "straße", "go", "rust-lang"]


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def _links(rng: random.Random, n: int) -> list[dict[str, Any]]:
    links = []
    for i in range(n):
        slug = rng.choice([f"s{i}", f"{rng.choice(WORDS).lower()}-{i}", f"Link_{i}"])
        url = f"https://{rng.choice(DOMAINS)}/{rng.choice(WORDS)}/{i}?ref={rng.choice(WORDS)}"
        title = _text(rng, 1, 5) if rng.random() < 0.9 else None
        description = _text(rng, 3, 12) if rng.random() < 0.6 else None
        note = _text(rng, 1, 6) if rng.random() < 0.3 else None
        tags = rng.sample(TAGS, rng.randint(0, 3))
        links.append(
            {
                "id": f"lnk_{i:04d}",
                "slug": slug,
                "destination_url": url,
                "title": title,
                "description": description,
                "note": note,
                "hashtags": tags,
                "public": rng.random() < 0.7,
            }
        )
    return links


def _queries(rng: random.Random, n: int) -> list[str]:
    def term() -> str:
        word = rng.choice(WORDS + TAGS)
        kind = rng.random()
        if kind < 0.15:
            return "#" + rng.choice([*TAGS, "rus", "Café"])
        if kind < 0.3 and len(word) > 2:
            return word[: rng.randint(1, len(word) - 1)]  # prefix
        if kind < 0.45 and len(word) >= 5:
            i = rng.randrange(len(word) - 1)
            return word[:i] + word[i + 1] + word[i] + word[i + 2 :]  # transposition typo
        if kind < 0.55 and len(word) >= 5:
            return word[:-1]  # deletion
        if kind < 0.6:
            return rng.choice(["ust", "ycombinator.com", "#", "-", "/", "docs.rs", "ref=", "s1"])
        return word

    return [" ".join(term() for _ in range(rng.randint(1, 3))) for _ in range(n)] + ["", "   ", "#"]


@pytest.fixture(scope="module")
def indexes() -> tuple[_core.SearchIndex, reference.SearchIndex]:
    rng = random.Random(20261121)
    core, ref = _core.SearchIndex(), reference.SearchIndex()
    for link in _links(rng, 400):
        core.upsert(**link)
        ref.upsert(**link)
    for removed in ("lnk_0003", "lnk_0100"):
        assert core.remove(removed) and ref.remove(removed)
    return core, ref


@pytest.mark.parametrize("public_only", [False, True])
def test_filter_matches_reference(indexes: tuple[_core.SearchIndex, reference.SearchIndex], public_only: bool) -> None:
    core, ref = indexes
    for query in _queries(random.Random(1), 300):
        assert sorted(core.filter(query, public_only)) == sorted(ref.filter(query, public_only)), query


@pytest.mark.parametrize("public_only", [False, True])
def test_search_matches_reference(indexes: tuple[_core.SearchIndex, reference.SearchIndex], public_only: bool) -> None:
    core, ref = indexes
    for query in _queries(random.Random(2), 300):
        core_total, core_hits = core.search(query, 1000, public_only)
        ref_total, ref_hits = ref.search(query, 1000, public_only)
        assert core_total == ref_total, query
        assert {h[0] for h in core_hits} == {h[0] for h in ref_hits}, query
        assert [h[0] for h in core_hits] == [h[0] for h in ref_hits], query
        assert [h[1] for h in core_hits] == pytest.approx([h[1] for h in ref_hits]), query


def test_normalize_matches_reference() -> None:
    samples = (
        WORDS
        + TAGS
        + ["Crème Brûlée", "ǅungla", "ΣΊΣΥΦΟΣ", "ﬀ ﬃ", "Ⅻ", "e\u0301", "\uff26\uff35\uff2c\uff2c", "\u0130i\u0307"]
    )
    for text in samples:
        assert _core.normalize(text) == reference.normalize(text), text


IOS = "AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"
WEBKIT = "AppleWebKit/537.36 (KHTML, like Gecko)"
USER_AGENTS = [
    f"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) {IOS}",
    f"Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) {IOS}",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
    f"Mozilla/5.0 (Windows NT 10.0; Win64; x64) {WEBKIT} Chrome/120.0 Safari/537.36 Edg/120.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14.1; rv:121.0) Gecko/20100101 Firefox/121.0",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 13; SM-X700) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
    f"Mozilla/5.0 (Linux; Android 13; SM-S918B) {WEBKIT} SamsungBrowser/23.0 Chrome/115.0 Mobile Safari/537.36",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36 OPR/106.0",
    "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 6.1; Trident/7.0; rv:11.0) like Gecko",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "facebookexternalhit/1.1",
    "Slackbot-LinkExpanding 1.0",
    "curl/8.4.0",
    "Wget/1.21",
    "python-requests/2.31",
    "Go-http-client/1.1",
    "Mozilla/5.0 (compatible; YandexBot/3.0)",
    "",
    "  ",
    "Something/1.0",
    "Kindle/3.0",
]


def test_user_agents_match_reference() -> None:
    rng = random.Random(3)
    samples = list(USER_AGENTS)
    for _ in range(400):
        ua = rng.choice(USER_AGENTS)
        if ua and rng.random() < 0.5:
            i = rng.randrange(len(ua))
            ua = ua[:i] + rng.choice([" Mobile", " BOT", "Tablet", "é", " Windows", "Spider", ""]) + ua[i:]
        samples.append(ua.upper() if rng.random() < 0.1 else ua)
    for ua in samples:
        assert _core.classify_user_agent(ua) == reference.classify_user_agent(ua), ua


REFERRERS = [
    None,
    "",
    "https://www.google.com/search?q=x",
    "http://m.facebook.com:8080/p",
    "HTTPS://T.CO/abc",
    "https://user:pw@news.ycombinator.com/item?id=1",
    "https://example.com.",
    "http://[::1]:8000/",
    "ftp://example.com",
    "example.com",
    "https://",
    "https://x.com:port/",
    "https://a b.com/",
    "android-app://com.google.android.gm",
    "https://www.",
    "https://münchen.de/",
    "https://x.com:123456/",
    "  https://padded.example/  ",
    "https://www.m.example.com#frag",
    "https://host?x=1",
]


def test_referrers_and_sources_match_reference() -> None:
    for referrer in REFERRERS:
        assert _core.referrer_host(referrer) == reference.referrer_host(referrer), referrer
        for utm in (None, "", "  NewsLetter ", "X" * 100, "Ünïcode"):
            for via_qr in (False, True):
                expected = reference.classify_source(utm, via_qr, referrer)
                assert _core.classify_source(utm, via_qr, referrer) == expected, (utm, via_qr, referrer)


CONTROLLED = ["\x00", "a\x00b", " \x00 News\x1bLetter\x7f ", "\x85\x9f", "\x00" * 10 + "y" * 80]
CONTROLLED_REFERRERS = [
    "https://exa\x00mple.com/p\x00",
    "\x00https://www.news.example\x85:80\x07/",
    "https://\x00\x01/",
    "http\x00s://x.example/",
    "https://[::1\x00]:8\x000/",
]


def test_control_characters_are_dropped_like_the_reference() -> None:
    for referrer in [None, *CONTROLLED_REFERRERS]:
        host = _core.referrer_host(referrer)
        assert host == reference.referrer_host(referrer), referrer
        assert host is None or host.isprintable(), referrer
        for utm in [None, *CONTROLLED]:
            source = _core.classify_source(utm, False, referrer)
            assert source == reference.classify_source(utm, False, referrer), (utm, referrer)
            assert source.isprintable() and "\x00" not in source, (utm, referrer)
    assert _core.classify_source("\x00", False, None) == "direct"
    assert _core.classify_source(" \x00 News\x1bLetter\x7f ", False, None) == "newsletter"
    assert _core.referrer_host("https://exa\x00mple.com/") == "example.com"


def test_click_batch_matches_reference() -> None:
    rng = random.Random(4)
    core, ref = _core.ClickBatch(), reference.ClickBatch()
    for _ in range(500):
        click: dict[str, Any] = {
            "link_id": f"lnk_{rng.randrange(20):02d}",
            "timestamp": rng.uniform(1.7e9, 1.7e9 + 5 * 86400),
            "user_agent": rng.choice(USER_AGENTS),
            "referrer": rng.choice(REFERRERS),
            "utm_source": rng.choice([None, None, "newsletter", " Twitter "]),
            "via_qr": rng.random() < 0.1,
            "visitor_salt": b"daily-salt",
            "ip": f"198.51.100.{rng.randrange(256)}",
        }
        core.add(**click)
        ref.add(**click)
    assert core.rows() == ref.rows()
    assert core.rollup() == ref.rollup()
    assert core.link_totals() == ref.link_totals()


def _capped_queries(ref: reference.SearchIndex) -> list[str]:
    """Per link: 16 distinct prefixes of its own words (all match it), then terms that match nothing."""
    queries = []
    for link in list(ref.links.values())[:40]:
        words = reference.words(" ".join(link.normalized[f] for f in reference.FIELDS))
        prefixes = list(dict.fromkeys(w[:n] for w in words for n in range(1, len(w) + 1)))
        if len(prefixes) >= 16:
            queries.append(" ".join([*prefixes[:16], "qqqzzz", "zzzqqq"]))
    return queries


def test_terms_beyond_the_cap_are_ignored(indexes: tuple[_core.SearchIndex, reference.SearchIndex]) -> None:
    core, ref = indexes
    queries = _capped_queries(ref)
    assert len(queries) > 10
    for query in queries:
        assert ref.search(query, 5)[0] > 0 and ref.filter(query), "the 17th and 18th terms would match nothing"
        assert core.search(query, 1000)[0] == ref.search(query, 1000)[0], query
        assert sorted(core.filter(query)) == sorted(ref.filter(query)), query


def test_short_terms_do_not_match_inside_words() -> None:
    core = _core.SearchIndex()
    core.upsert(
        id="l1", slug="x", destination_url="https://example.org/zzabcd", title=None, description=None,
        note=None, hashtags=[], public=True,
    )  # fmt: skip
    assert core.search("zab", 5)[0] == 1, "three characters match inside a URL word"
    assert core.search("ab", 5)[0] == 0, "two do not: they would match nearly every word"
    assert core.filter("ab") == ["l1"], "the q filter still matches any substring"


def test_memory_bytes_counts_what_the_index_holds() -> None:
    index = _core.SearchIndex()
    empty = index.memory_bytes()
    note = " ".join(f"word{i}" for i in range(700))  # 5.6 KB of text, 700 distinct words
    for i in range(50):
        index.upsert(
            id=f"l{i}", slug=f"s{i}", destination_url="https://example.org/", title="t", description=None,
            note=note, hashtags=["tag"], public=True,
        )  # fmt: skip
    grown = index.memory_bytes() - empty
    text = 50 * len(note)
    assert text < grown < 4 * text, (text, grown)
    index.shrink_to_fit()
    assert index.memory_bytes() <= grown + empty


def _tied_index() -> tuple[_core.SearchIndex, reference.SearchIndex, dict[str, int]]:
    """Links that tie: the same text, few creation times, and ids that share their first 8 bytes or begin one
    another (the core orders ties by an id's first 8 bytes, then by the whole id)."""
    rng = random.Random(7)
    ids = [f"shared00{suffix}" for suffix in ("", "a", "b", "-", "ab", "~", "0", "00")] + ["shared0", "s", "t"]
    ids += [f"lnk_{i:04d}" for i in range(40)]
    rng.shuffle(ids)
    core, ref = _core.SearchIndex(), reference.SearchIndex()
    created: dict[str, int] = {}
    for n, link_id in enumerate(ids):
        link: dict[str, Any] = {
            "id": link_id,
            "slug": f"s{n}",
            "destination_url": f"https://example.com/{n}",
            "title": "rust guide" if n % 3 else "rust guide book",
            "description": None,
            "note": None,
            "hashtags": ["rust"],
            "public": True,
        }
        created[link_id] = rng.choice([1_000, 2_000, 3_000])
        core.upsert(**link, created=created[link_id])
        ref.upsert(**link)
    return core, ref, created


def test_search_cut_at_every_limit_among_ties_matches_reference() -> None:
    core, ref, _ = _tied_index()
    for query in ("rust", "rust guide", "book", "#rust guide"):
        for limit in (1, 2, 3, 5, 8, 13, 50):
            core_total, core_hits = core.search(query, limit, False)
            ref_total, ref_hits = ref.search(query, limit, False)
            assert core_total == ref_total, query
            assert [h[0] for h in core_hits] == [h[0] for h in ref_hits], (query, limit)


def test_filter_pages_follow_creation_then_id_among_ties() -> None:
    core, _, created = _tied_index()
    matching = core.filter("rust", False)
    for newest_first in (True, False):
        ordered = sorted(matching, key=lambda link_id: (created[link_id], link_id), reverse=newest_first)
        for offset, limit in ((0, 1), (0, 5), (3, 7), (10, 20), (45, 20), (0, 100)):
            total, page = core.filter_page(
                "rust", public_only=False, newest_first=newest_first, offset=offset, limit=limit
            )
            assert total == len(matching) and page == ordered[offset : offset + limit], (newest_first, offset, limit)
