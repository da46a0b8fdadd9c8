"""An account whose search index does not fit the worker's budget is answered by a scan over slices of its links,
with the same answers as its whole index would give, and without building that index on every request."""

from __future__ import annotations

import datetime as dt
import random
import threading
from typing import Any

import pytest
from sqlalchemy import insert, text

from slugline.common.clock import utcnow
from slugline.common.errors import RateLimited
from slugline.common.models import Account, Link
from slugline.runtime import Runtime
from slugline.search import cache as searchcache
from slugline.search.cache import SearchCache
from slugline.search.queries import Matching, Page, Query, Ranked

WORDS = ["apple", "apricot", "banana", "berry", "cherry", "grape", "lemon", "lime", "mango", "melon", "peach", "pear"]
LINKS = 700


def _fill(runtime: Runtime, links: int = LINKS) -> int:
    """An account with `links` links of a few fruit words each; every third pair made in the same microsecond, so
    pages must break ties by id across slices too."""
    rng = random.Random(5)
    start = utcnow().replace(microsecond=0) - dt.timedelta(days=1)
    with runtime.db.session() as session:
        account = Account(username="scanned", password_hash="x", plan="pro", created_at=start, links_version=0)
        session.add(account)
        session.flush()
        rows: list[dict[str, Any]] = []
        for i in range(links):
            made = start + dt.timedelta(microseconds=(i // 3) * 7)
            rows.append(
                {
                    "id": f"lnk_{rng.randrange(16**7):07x}{i:04d}",
                    "account_id": account.id,
                    "slug": f"fruit-{i}",
                    "destination_url": f"https://shop.example/{rng.choice(WORDS)}/{i}",
                    "title": " ".join(rng.sample(WORDS, 3)),
                    "note": " ".join(rng.choices(WORDS, k=6)),
                    "hashtags": rng.sample(["fresh", "dried", "local"], 2),
                    "visibility": "public" if i % 4 else "private",
                    "clicks": 0,
                    "created_at": made,
                    "updated_at": made,
                }
            )
        session.execute(insert(Link), rows)
        session.execute(text("DELETE FROM link_changes WHERE account_id = :id"), {"id": account.id})
        session.execute(text("UPDATE accounts SET links_version = 1 WHERE id = :id"), {"id": account.id})
        return int(account.id)


def _ask(runtime: Runtime, cache: SearchCache, account_id: int, query: Query[Any]) -> Any:
    with runtime.db.engine.connect() as conn:
        return cache.use(conn, account_id, query)


QUERIES: list[Query[Any]] = [
    Ranked("pear", 25, public_only=False),
    Ranked("lemon #fresh", 40, public_only=True),
    Ranked("mango", 1_000, public_only=False),
    Ranked("shop", 10, public_only=False),  # every link ties on score: the order is by id
    Page("melon", public_only=False, newest_first=True, offset=0, limit=50),
    Page("melon", public_only=False, newest_first=True, offset=95, limit=50),
    Page("berry", public_only=True, newest_first=False, offset=130, limit=100),
    Page("", public_only=False, newest_first=False, offset=650, limit=100),
    Page("kiwi", public_only=False, newest_first=True, offset=0, limit=20),  # matches nothing
    Matching("cherry lime", public_only=False),
]


def test_a_scan_answers_as_the_whole_index_does(runtime: Runtime) -> None:
    account_id = _fill(runtime)
    whole = SearchCache()
    scanned = SearchCache(budget_bytes=20_000)  # slices of 2,500 bytes: a few links each
    for query in QUERIES:
        expected, got = _ask(runtime, whole, account_id, query), _ask(runtime, scanned, account_id, query)
        if isinstance(query, Matching):
            expected, got = (expected[0], sorted(expected[1])), (got[0], sorted(got[1]))
        assert got == expected, query
        assert expected[0] or query == QUERIES[-2], "the query found something"
    assert whole.builds == 1 and whole.scans == 0
    assert scanned.builds == 0 and scanned.scans == len(QUERIES) and not scanned.held_bytes
    assert scanned.slices >= 20 * len(QUERIES), "every query read many slices"


def test_an_oversized_index_is_not_built_for_every_request(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    account_id = _fill(runtime)
    cache = SearchCache(budget_bytes=20_000)
    built = []
    build = cache._build

    def counted(*args: Any) -> Any:
        built.append(args)
        return build(*args)

    monkeypatch.setattr(cache, "_build", counted)
    for _ in range(5):
        assert _ask(runtime, cache, account_id, Ranked("pear", 5, public_only=False))[0] > 0
    assert len(built) == 1, "tried once, then scanned"
    assert cache.scans == 5 and cache.held_bytes == 0
    assert "scanning it instead" in caplog.text

    monkeypatch.setattr(searchcache, "OVERSIZED_RETRY_SECONDS", 0.0)
    _ask(runtime, cache, account_id, Ranked("pear", 5, public_only=False))
    assert len(built) == 2, "tried again once the wait is over (its links may have gone)"


def test_scans_beyond_the_workers_cap_are_told_to_come_back(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    account_id = _fill(runtime, 100)
    cache = SearchCache(budget_bytes=1_000)
    monkeypatch.setattr(searchcache, "SCAN_WAIT_SECONDS", 0.2)
    release = threading.Event()
    held = threading.Barrier(searchcache.SCANS + 1)

    class Stuck:
        newest_first = False

        def run(self, index: Any) -> None:
            raise AssertionError("the account is scanned")

        def scan(self, slices: Any) -> None:
            held.wait()
            release.wait(10)

    threads = [
        threading.Thread(target=_ask, args=(runtime, cache, account_id, Stuck())) for _ in range(searchcache.SCANS)
    ]
    for thread in threads:
        thread.start()
    held.wait(10)
    try:
        with pytest.raises(RateLimited) as refused:
            _ask(runtime, cache, account_id, Ranked("pear", 5, public_only=False))
        assert refused.value.headers == {"Retry-After": str(searchcache.SCAN_RETRY_AFTER)}
    finally:
        release.set()
        for thread in threads:
            thread.join()
    assert _ask(runtime, cache, account_id, Ranked("pear", 5, public_only=False))[0] > 0
