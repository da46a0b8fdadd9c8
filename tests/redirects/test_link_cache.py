"""The redirect cache reads ahead: entries hit near the end of their life are read again together, in one SELECT,
dated like any other read; a change racing that read keeps none of it; links nobody asks for run out."""

from __future__ import annotations

import asyncio
import time
import tracemalloc
from typing import Any

import pytest
from sqlalchemy import exc as sa_exc
from starlette.testclient import TestClient

from slugline.redirects import linkcache
from slugline.redirects.linkcache import MISSING, TTL, Entry, LinkCache
from slugline.runtime import Runtime
from tests.support.helpers import Account


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Counted(LinkCache):
    """Counts the SELECTs: one slug at a time, and many at once."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.singles: list[str] = []
        self.many: list[list[str]] = []

    def _select(self, slug: str) -> Any:
        self.singles.append(slug)
        return super()._select(slug)

    def _select_many(self, slugs: list[str]) -> Any:
        self.many.append(sorted(slugs))
        return super()._select_many(slugs)


def _links(client: TestClient, who: Account, n: int) -> list[str]:
    slugs = [f"ahead-{i}" for i in range(n)]
    for slug in slugs:
        made = client.post(
            "/api/v1/links", headers=who.auth(), json={"destination_url": "https://a.example/", "slug": slug}
        )
        assert made.status_code == 201, made.text
    return slugs


async def _read_ahead_done(cache: LinkCache) -> None:
    task = cache._reading_ahead
    assert task is not None, "nothing was read ahead"
    await task


def test_entries_hit_near_their_end_are_read_again_in_one_select(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    slugs = _links(client, alice, 3)
    clock = Clock()
    cache = Counted(runtime.db, clock=clock)

    async def scenario() -> None:
        for slug in [*slugs, "nobody-has-this"]:
            await cache.load(slug)
        assert cache.singles == [*slugs, "nobody-has-this"]
        clock.now += TTL - linkcache.AHEAD / 2  # still fresh, close to the end
        for slug in slugs:
            entry = cache.peek(slug)
            assert isinstance(entry, Entry) and entry.destination == "https://a.example/"
        await _read_ahead_done(cache)
        assert cache.many == [sorted(slugs)]
        clock.now += linkcache.AHEAD  # past the old entries' end: the ones read ahead are still fresh
        assert all(cache.peek(slug) not in (MISSING, None) for slug in slugs)
        assert cache.peek("nobody-has-this") is MISSING  # not asked for near its end: it ran out
        assert len(cache.singles) == 4

    asyncio.run(scenario())


def test_a_read_ahead_sees_deletions_and_keeps_nothing_when_a_change_races_it(
    client: TestClient, alice: Account, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = _links(client, alice, 2)
    clock = Clock()
    cache = Counted(runtime.db, clock=clock)
    runtime.link_hooks.append(cache.invalidate)
    gone = client.get("/api/v1/links", headers=alice.auth()).json()["data"]
    second_id = next(link["id"] for link in gone if link["slug"] == second)

    async def scenario() -> None:
        for slug in (first, second):
            await cache.load(slug)
        assert client.delete(f"/api/v1/links/{second_id}", headers=alice.auth()).status_code in (200, 204)
        assert cache.peek(second) is MISSING  # this worker's own change: dropped at once
        await cache.load(second)  # now cached as unknown
        clock.now += TTL - linkcache.AHEAD / 2
        assert cache.peek(first) is not MISSING and cache.peek(second) is None
        await _read_ahead_done(cache)
        clock.now += linkcache.AHEAD
        assert cache.peek(second) is None and cache.peek(first) not in (MISSING, None)

        # A change committed while a read ahead runs: that read's answers are all thrown away.
        select_many = cache._select_many

        def racing(slugs: list[str]) -> Any:
            found = select_many(slugs)
            cache.invalidate("unrelated-slug")
            return found

        monkeypatch.setattr(cache, "_select_many", racing)
        clock.now += TTL - 1.5 * linkcache.AHEAD  # the entry `first` got ahead is near its end now
        assert cache.peek(first) not in (MISSING, None)
        await _read_ahead_done(cache)
        clock.now += linkcache.AHEAD
        assert cache.peek(first) is MISSING  # nothing kept: the next request reads it on its own

    asyncio.run(scenario())


class Away(LinkCache):
    """A store that can be made to fail every SELECT the way `failure` says."""

    failure: Exception | None = None

    def _select(self, slug: str) -> Any:
        if self.failure is not None:
            raise self.failure
        return super()._select(slug)


def test_in_an_outage_only_an_answer_read_in_the_last_ttl_is_kept(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    [slug] = _links(client, alice, 1)
    clock = Clock()
    cache = Away(runtime.db, clock=clock)
    lost = sa_exc.OperationalError("SELECT", {}, Exception("connection refused"))

    async def load() -> str:
        entry = await cache.load(slug)
        assert isinstance(entry, Entry)
        return entry.destination

    async def scenario() -> None:
        await load()
        cache.failure = lost
        clock.now += TTL * 1.5  # ran out just now: the store went away while the link was in use
        assert await load() == "https://a.example/"
        clock.now += TTL * 0.9  # and the outage goes on: kept again
        assert await load() == "https://a.example/"
        cache.failure = sa_exc.TimeoutError("QueuePool limit reached")  # this worker is busy, the store is not away
        clock.now += TTL * 1.1
        with pytest.raises(sa_exc.TimeoutError):
            await load()
        cache.failure = lost
        clock.now += 3600  # read an hour ago: a change before the outage may have come since
        with pytest.raises(sa_exc.OperationalError):
            await load()

    asyncio.run(scenario())


ASTRAL = "https://e.x/" + "\U0001d54f" * 2036  # 2,048 characters, each percent-encoded to 12 in the Location


def test_the_cache_keeps_within_its_bytes_dropping_the_oldest(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    """An entry counts for its strings: a destination outside the BMP makes a ~33 KB entry, and 100,000 of them were
    3.3 GB under a cap on the number of entries alone."""
    slugs = [f"astral-{i}" for i in range(6)]
    for slug in slugs:
        made = client.post("/api/v1/links", headers=alice.auth(), json={"destination_url": ASTRAL, "slug": slug})
        assert made.status_code == 201, made.text
    [small] = _links(client, alice, 1)
    budget = 80_000  # two of those entries (33 KB each), not three
    clock = Clock()
    cache = LinkCache(runtime.db, clock=clock, max_bytes=budget)
    runtime.link_hooks.append(cache.invalidate)

    async def scenario() -> None:
        entry = await cache.load(slugs[0])
        assert isinstance(entry, Entry) and len(entry.location) > 24_000
        assert cache.bytes > 32_000
        for slug in slugs[1:]:
            clock.now += 0.1
            await cache.load(slug)
            assert cache.bytes <= budget
        assert len(cache) == 2  # room for two: the four read first went, oldest first
        assert [cache.peek(slug) is MISSING for slug in slugs] == [True] * 4 + [False] * 2
        await cache.load(small)  # a small one still fits beside them
        clock.now += TTL  # all three run out; making room drops the oldest of them
        await cache.load(slugs[0])
        assert cache.peek(slugs[0]) is not MISSING and len(cache) == 3 and cache.bytes <= budget
        for slug in (slugs[0], slugs[5], small):
            cache.invalidate(slug)
        assert len(cache) == 0 and cache.bytes == 0  # the count follows every way an entry goes

    asyncio.run(scenario())


def test_an_entry_costs_no_more_than_it_is_counted_at(runtime: Runtime) -> None:
    """`ENTRY_BYTES` and the strings' sizes, what the budget counts, cover what entries really take."""
    cache = LinkCache(runtime.db, max_bytes=1 << 40)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(20_000):  # every string new, as read from the database
            row = (f"lnk_{i:011d}", f"https://example.com/page/{i}", "public".upper().lower(), None)
            cache._store(f"slug-{i}", time.monotonic() + i, linkcache._entry(*row))
        taken = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert taken <= cache.bytes, (taken, cache.bytes)


def test_making_room_keeps_the_newest_and_the_order_stays_small(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the cap every store drops the oldest entry; stores of a slug already kept, and invalidations, leave pairs
    behind in the eviction order, which is made again before they outnumber the entries."""
    monkeypatch.setattr(linkcache, "MAX_ENTRIES", 100)
    cache = LinkCache(runtime.db, max_bytes=1 << 40)
    entry = linkcache._entry("lnk_00000000001", "https://example.com/", "public", None)
    for i in range(5_000):
        cache._store(f"slug-{i}", 1e9 + i, entry)
        assert len(cache._order) <= 2 * len(cache) + 64
    assert set(cache._entries) == {f"slug-{i}" for i in range(4_900, 5_000)}
    for i in range(5_000):  # the same slug again and again, and invalidations
        cache._store("slug-4999", 2e9 + i, entry)
        cache.invalidate(f"slug-{4_900 + i % 50}")
        assert len(cache._order) <= 2 * len(cache) + 64
    assert "slug-4999" in cache._entries and len(cache) == 50
    cache._store("new", 3e9, entry)
    assert "new" in cache._entries and len(cache) == 51


def test_an_answer_read_before_a_change_is_not_stored_after_it(runtime: Runtime) -> None:
    """`invalidate` runs in other threads: the generation is checked under the lock that stores, so an answer whose
    read began before the change can never be stored once the change has dropped the slug."""
    cache = LinkCache(runtime.db, max_bytes=1 << 40)
    entry = linkcache._entry("lnk_00000000001", "https://example.com/old", "public", None)
    began = cache._generation
    cache.invalidate("slug")  # the change commits while the SELECT is under way
    cache._store("slug", 1e9, entry, began)
    assert len(cache) == 0 and cache.bytes == 0
    cache._store("slug", 1e9, entry, cache._generation)
    assert len(cache) == 1
