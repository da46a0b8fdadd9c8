"""The identity cache: bounded, trusted for under a second, emptied by this worker's own writes at once, and never
a way for a revoked key, a logged-out session or an old plan to outlive a second in another worker."""

from __future__ import annotations

import threading
import time
import tracemalloc
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from starlette.testclient import TestClient

from slugline import _core
from slugline.accounts import callers
from slugline.accounts import service as accounts
from slugline.accounts.identitycache import IdentityCache
from slugline.common.caller import Caller
from slugline.runtime import Runtime
from slugline.web import identity
from tests.support.helpers import Account, ClientFactory

BORN = datetime(2024, 1, 1, tzinfo=UTC)


def caller(account_id: int, plan: str = "developer") -> Caller:
    return Caller(account_id, f"user{account_id}", plan, "full", BORN, "http://sl.test")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_trust_ends_under_a_second_after_the_read_began() -> None:
    clock = Clock()
    cache = IdentityCache(trust_seconds=0.5, clock=clock)
    ticket = cache.ticket()
    clock.now += 0.2  # the read took a while: trust counts from its start
    cache.put("d1", caller(1), ticket)
    assert cache.get("d1", "http://sl.test") == caller(1)
    clock.now += 0.29
    assert cache.get("d1", "http://sl.test") is not None
    clock.now += 0.01
    assert cache.get("d1", "http://sl.test") is None and len(cache) == 0


def test_a_session_is_not_trusted_past_its_expiry() -> None:
    clock = Clock()
    cache = IdentityCache(trust_seconds=0.5, clock=clock)
    cache.put("d1", caller(1), cache.ticket(), valid_for=0.1)
    clock.now += 0.1
    assert cache.get("d1", "http://sl.test") is None
    cache.put("d2", caller(1), cache.ticket(), valid_for=-1)
    assert len(cache) == 0


def test_a_second_or_more_of_trust_is_refused() -> None:
    with pytest.raises(ValueError):
        IdentityCache(trust_seconds=1.0)


def test_the_cache_never_holds_more_than_its_bound() -> None:
    cache = IdentityCache(max_entries=3)
    for n in range(1000):
        cache.put(f"d{n}", caller(n), cache.ticket())
        assert len(cache) <= 3
    assert [cache.get(f"d{n}", "http://sl.test") is not None for n in (996, 997, 998, 999)] == [False, True, True, True]


def test_a_write_drops_the_accounts_entries_and_any_read_begun_before_it() -> None:
    cache = IdentityCache(clock=lambda: 1000.0)  # no answer runs out of trust mid-test
    cache.put("a", caller(1), cache.ticket())
    cache.put("b", caller(2), cache.ticket())
    before = cache.ticket()
    cache.forget_account(1)
    assert cache.get("a", "http://sl.test") is None and cache.get("b", "http://sl.test") is not None
    cache.put("a", caller(1, plan="free"), before)  # read before the write: its answer may be stale
    assert cache.get("a", "http://sl.test") is None


def test_the_base_url_is_the_requests_own() -> None:
    cache = IdentityCache(clock=lambda: 1000.0)
    cache.put("a", caller(1), cache.ticket())
    found = cache.get("a", "https://other.example")
    assert found is not None and found.base_url == "https://other.example"


def _refused_within(client: TestClient, headers: dict[str, str], status: int, seconds: float) -> float:
    """How long until `client` answers /me with `status`; fails past `seconds`."""
    started = time.monotonic()
    while (answer := client.get("/api/v1/me", headers=headers)).status_code != status:
        assert answer.status_code == 200, answer.text
        assert time.monotonic() - started < seconds, f"still {answer.status_code} after {seconds} s"
        time.sleep(0.02)
    return time.monotonic() - started


def test_a_key_revoked_in_one_worker_is_refused_by_another_within_a_second(
    make_client: ClientFactory, make_account: Callable[..., Account]
) -> None:
    one, _ = make_client()
    other, _ = make_client()  # a second worker: its own runtime and caches, the same database
    who = make_account("revoked")
    assert other.get("/api/v1/me", headers=who.auth()).status_code == 200  # now in the other worker's cache
    assert one.delete("/api/v1/api-key", params={"scope": "full"}, headers=who.auth("session")).status_code == 200
    assert one.get("/api/v1/me", headers=who.auth()).status_code == 401  # the worker that wrote: at once
    assert _refused_within(other, who.auth(), 401, 1.0) < 1.0


def test_a_rotated_key_and_a_logged_out_session_stop_working_everywhere(
    make_client: ClientFactory, make_account: Callable[..., Account]
) -> None:
    one, _ = make_client()
    other, _ = make_client()
    who = make_account("rotated")
    for client in (one, other):
        assert client.get("/api/v1/me", headers=who.auth("public")).status_code == 200
        assert client.get("/api/v1/me", headers=who.auth("session")).status_code == 200
    made = one.post("/api/v1/api-key", json={"scope": "public"}, headers=who.auth("session"))
    assert made.status_code == 201
    assert one.get("/api/v1/me", headers=who.auth("public")).status_code == 401
    assert one.get("/api/v1/me", headers={"Authorization": f"Bearer {made.json()['key']}"}).status_code == 200
    assert _refused_within(other, who.auth("public"), 401, 1.0) < 1.0
    assert one.post("/api/v1/auth/logout", headers=who.auth("session")).status_code == 200
    assert one.get("/api/v1/me", headers=who.auth("session")).status_code == 401
    assert _refused_within(other, who.auth("session"), 401, 1.0) < 1.0


def test_a_plan_change_takes_effect_within_a_second(
    make_client: ClientFactory, runtime: Runtime, make_account: Callable[..., Account]
) -> None:
    served, served_rt = make_client()
    who = make_account("downgraded")
    assert served.get("/api/v1/links", headers=who.auth()).status_code == 200
    accounts.set_plan(runtime, who.username, "free")  # as the CLI does: from another process entirely
    assert _refused_within(served, who.auth(), 403, 1.0) < 1.0
    assert served.get("/api/v1/links", headers=who.auth()).status_code == 403
    accounts.set_plan(served_rt, who.username, "pro")  # made in the serving worker: at once
    assert served.get("/api/v1/me", headers=who.auth()).json()["plan"] == "pro"


@pytest.mark.parametrize("good", [True, False])
def test_requests_arriving_while_a_token_is_read_share_that_one_read(
    client: TestClient, runtime: Runtime, alice: Account, monkeypatch: pytest.MonkeyPatch, good: bool
) -> None:
    reads = []
    resolve = callers.resolve
    at_once = identity._at_once
    arrived = threading.Semaphore(0)

    def counted_at_once(*args: Any) -> Any:
        arrived.release()  # each request looks here once before it waits for a read under way
        return at_once(*args)

    def slow_resolve(*args: Any) -> Caller:
        reads.append(time.monotonic())
        for _ in range(16):  # the read lasts until every request has arrived, however slow the machine
            assert arrived.acquire(timeout=10), "not every request arrived"
        return resolve(*args)

    monkeypatch.setattr(identity, "_at_once", counted_at_once)
    monkeypatch.setattr(callers, "resolve", slow_resolve)
    # the token's answer has run out of trust; the clock stands still, so the one read's answer stays trusted
    # however long a loaded machine takes to bring in all sixteen requests (a trust period is half a second)
    runtime.identities = IdentityCache(clock=lambda: 1000.0)
    headers = alice.auth() if good else {"Authorization": f"Bearer {_core.generate_key('full')}"}  # well formed
    with ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(lambda _: client.get("/api/v1/me", headers=headers).status_code, range(16)))
    assert statuses == [200 if good else 401] * 16
    assert len(reads) == 1, f"{len(reads)} database reads for one token"


def test_an_oversized_host_is_not_kept_with_the_entry() -> None:
    """The base URL comes from the Host header, the client's to choose: 10,000 entries of 400 KB would be 4 GB."""
    cache = IdentityCache()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(20):
            huge = f"http://{'h' * 400_000}{n}"
            cache.put(f"d{n}", replace(caller(n), base_url=huge), cache.ticket())
            found = cache.get(f"d{n}", huge)
            assert found is not None and found.base_url == huge  # each request still sees its own base
        del huge, found
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(cache) == 20 and kept < 100_000, kept
    found = cache.get("d0", "http://sl.test")
    assert found is not None and found.base_url == "http://sl.test"


def test_entries_cost_no_more_than_they_are_counted_at() -> None:
    """`ANSWER_BYTES`, `REFUSAL_BYTES` and the strings' sizes, what the byte budget counts, cover what entries take."""
    cache = IdentityCache(max_entries=1 << 30, max_bytes=1 << 40)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(20_000):  # every string and datetime new, as read from the database
            read = Caller(
                n, f"user{n:06d}", "developer".upper().lower(), "full", datetime.now(UTC), f"https://h{n}.test"
            )
            cache.put(f"{n:064x}", read, cache.ticket())
            cache.refuse(f"{n:063x}r", "invalid or revoked API key".upper().lower(), cache.ticket())
        taken = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(cache) == 20_000 and taken <= cache.bytes == cache.stats().bytes, (taken, cache.bytes)


def test_the_byte_budget_bounds_answers_and_refusals_each() -> None:
    cache = IdentityCache(max_bytes=20_000)
    for n in range(1000):
        cache.put(f"d{n}", replace(caller(n), base_url=f"http://{'h' * 400}.test"), cache.ticket())
        cache.refuse(f"r{n}", "invalid or revoked API key", cache.ticket())
        assert cache.bytes <= 2 * 20_000
    assert 10 < len(cache) < 30 and cache.stats().evictions > 900  # answers of ~1 KB: a score of them fit
    assert cache.get("d999", "http://sl.test") is not None and cache.get("d0", "http://sl.test") is None
    assert cache.refusal("r999") is not None and cache.refusal("r0") is None
    held = cache.bytes
    cache.forget_account(999)  # its answer's bytes go with it
    assert cache.get("d999", "http://sl.test") is None and cache.stats().bytes == cache.bytes < held


def test_a_refusal_is_remembered_for_the_trust_period_within_its_own_bound() -> None:
    clock = Clock()
    cache = IdentityCache(max_entries=3, trust_seconds=0.5, clock=clock)
    ticket = cache.ticket()
    clock.now += 0.2
    cache.refuse("gone", "invalid or revoked API key", ticket)
    assert cache.refusal("gone") == "invalid or revoked API key"
    clock.now += 0.3  # trusted from when the read began
    assert cache.refusal("gone") is None
    cache.put("good", caller(1), cache.ticket())
    for n in range(1000):  # refused tokens do not push answers out, nor grow past the bound
        cache.refuse(f"r{n}", "invalid or revoked API key", cache.ticket())
    assert cache.get("good", "http://sl.test") is not None
    assert [cache.refusal(f"r{n}") is not None for n in (996, 997, 998, 999)] == [False, True, True, True]


def test_past_the_bound_the_oldest_tenth_goes_at_once_and_the_youngest_stay() -> None:
    cache = IdentityCache(max_entries=100)
    for n in range(100):
        cache.put(f"d{n}", caller(n), cache.ticket())
    assert len(cache) == 100
    cache.put("d100", caller(100), cache.ticket())
    assert len(cache) == 90
    kept = [n for n in range(101) if cache.get(f"d{n}", "http://sl.test") is not None]
    assert kept == list(range(11, 101))
    cache.put("d11", caller(11), cache.ticket())  # stored again: now the youngest
    for n in range(101, 112):
        cache.put(f"d{n}", caller(n), cache.ticket())
    assert cache.get("d11", "http://sl.test") is not None
    assert cache.get("d12", "http://sl.test") is None
