"""The shared bounded cache: within its entries and bytes, the oldest (or least recently used) out first, nothing
too large for the whole budget kept, nothing read before an invalidation stored after it, and whole under threads."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from slugline.common.bounded import BoundedCache


@pytest.fixture
def switching() -> Iterator[None]:
    """Threads switch every microsecond, so an unguarded step between two others is soon interleaved."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


def _len_size(key: str, value: str) -> int:
    return len(key) + len(value)


@pytest.mark.parametrize("lru", [True, False])
def test_the_entry_budget_holds(lru: bool) -> None:
    cache: BoundedCache[int, int] = BoundedCache(max_entries=3, lru=lru)
    for n in range(1000):
        assert cache.put(n, n)
        assert len(cache) <= 3
    assert [cache.get(n) for n in (996, 997, 998, 999)] == [None, 997, 998, 999]


@pytest.mark.parametrize("lru", [True, False])
def test_the_byte_budget_holds(lru: bool) -> None:
    cache: BoundedCache[str, str] = BoundedCache(max_bytes=100, size=_len_size, lru=lru)
    for n in range(200):
        cache.put(f"k{n:03d}", "v" * (n % 37))
        assert cache.bytes <= 100
        assert cache.bytes == sum(_len_size(key, cache.peek(key) or "") for key in cache.ordered_keys())
    assert cache.peek("k199") == "v" * (199 % 37)  # the youngest is kept
    assert cache.peek("k000") is None


def test_least_recently_used_goes_first() -> None:
    cache: BoundedCache[str, int] = BoundedCache(max_entries=3)
    for key in "abc":
        cache.put(key, 1)
    assert cache.get("a") == 1  # used: now the youngest
    assert cache.peek("b") == 1  # looked at only: still the oldest
    cache.put("d", 1)
    assert cache.ordered_keys() == ["c", "a", "d"]
    assert cache.get("a", lambda _: False) is None  # refused by the caller: neither served nor made younger
    cache.put("e", 1)
    assert cache.ordered_keys() == ["a", "d", "e"]


def test_in_stored_order_reads_do_not_age_and_the_oldest_tenth_goes_at_once() -> None:
    cache: BoundedCache[int, int] = BoundedCache(max_entries=100, lru=False)
    for n in range(100):
        cache.put(n, n)
    assert cache.get(0) == 0  # a read does not make it younger
    cache.put(100, 100)
    assert cache.ordered_keys() == list(range(11, 101))
    cache.put(11, 11)  # stored again: now the youngest
    for n in range(101, 112):
        cache.put(n, n)
    assert cache.peek(11) == 11 and cache.peek(12) is None and len(cache) == 90


@pytest.mark.parametrize("lru", [True, False])
def test_an_entry_larger_than_the_whole_budget_is_not_kept(lru: bool) -> None:
    cache: BoundedCache[str, str] = BoundedCache(max_bytes=50, size=_len_size, lru=lru)
    cache.put("a", "small")
    cache.put("b", "old")
    assert not cache.put("b", "x" * 50)  # replaces the old answer, which goes, but is not kept itself
    assert cache.peek("a") == "small" and cache.peek("b") is None
    assert cache.bytes == _len_size("a", "small") and len(cache) == 1
    assert cache.put("c", "x" * 49)  # exactly the budget: kept, alone
    assert cache.ordered_keys() == ["c"] and cache.bytes == 50


@pytest.mark.parametrize("lru", [True, False])
def test_a_value_read_before_an_invalidation_is_not_stored_after_it(lru: bool) -> None:
    cache: BoundedCache[str, int] = BoundedCache(max_entries=10, lru=lru)
    cache.put("a", 1)
    cache.put("b", 2)
    before = cache.epoch  # a read of "a" begins
    cache.invalidate(lambda key, _: key == "a")  # a write to "a" commits meanwhile
    assert cache.peek("a") is None and cache.peek("b") == 2
    assert not cache.put("a", 1, epoch=before)  # the read's answer predates the write
    assert cache.peek("a") is None
    assert cache.put("a", 3, epoch=cache.epoch)
    assert cache.get("a") == 3


@pytest.mark.usefixtures("switching")
def test_an_invalidation_racing_stores_never_leaves_a_value_read_before_it() -> None:
    """Threads store values read at an epoch while another invalidates: once an invalidation is over, no value read
    before it is held, however the threads interleave."""
    cache: BoundedCache[int, int] = BoundedCache(max_entries=64)
    state = {"written": 0}  # the "database": bumped just before each invalidation
    stop = threading.Event()

    def reader(key: int) -> None:
        while not stop.is_set():
            epoch, seen = cache.epoch, state["written"]
            cache.put(key, seen, epoch=epoch)

    threads = [threading.Thread(target=reader, args=(key,)) for key in range(4)]
    for thread in threads:
        thread.start()
    try:
        for written in range(1, 2000):
            state["written"] = written
            cache.invalidate(lambda _k, _v: True)
            for key in range(4):
                held = cache.peek(key)
                assert held is None or held >= written, (key, held, written)
    finally:
        stop.set()
        for thread in threads:
            thread.join()


def test_an_older_value_does_not_replace_a_newer_one() -> None:
    cache: BoundedCache[str, int] = BoundedCache(max_entries=10)
    cache.put("a", 5)
    assert not cache.put("a", 4, replaces=lambda held: held <= 4)
    assert cache.peek("a") == 5
    assert cache.put("a", 6, replaces=lambda held: held <= 6)
    assert cache.peek("a") == 6


def test_discarding_a_stale_value_leaves_a_newer_one() -> None:
    cache: BoundedCache[str, tuple[int]] = BoundedCache(max_entries=10, lru=False)
    stale = (1,)
    cache.put("a", stale)
    cache.put("a", (2,))  # stored meanwhile by another thread
    cache.discard("a", stale)
    assert cache.peek("a") == (2,)
    cache.discard("a")
    assert cache.peek("a") is None and len(cache) == 0


@pytest.mark.usefixtures("switching")
@pytest.mark.parametrize("lru", [True, False])
def test_concurrent_use_keeps_the_bounds_and_the_byte_count(lru: bool) -> None:
    cache: BoundedCache[str, str] = BoundedCache(max_entries=50, max_bytes=2000, size=_len_size, lru=lru)

    def work(worker: int) -> None:
        for n in range(3000):
            key = f"k{(worker * 7 + n) % 120}"
            if n % 5 == 0:
                cache.discard(key)
            elif n % 3 == 0:
                cache.get(key)
            else:
                cache.put(key, "v" * (n % 60))
            if n % 500 == 0:
                cache.invalidate(lambda k, _v: k.endswith("7"))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(work, range(8)))
    assert len(cache) <= 50 and cache.bytes <= 2000
    assert cache.bytes == sum(_len_size(key, cache.peek(key) or "") for key in cache.ordered_keys())


def test_bounds_are_checked() -> None:
    with pytest.raises(ValueError):
        BoundedCache(max_entries=0)
    with pytest.raises(ValueError):
        BoundedCache(max_bytes=10)  # no size function
