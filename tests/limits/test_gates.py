"""Per-account caps on concurrent expensive work: over the cap a request waits briefly for a slot, then gets 429
with Retry-After; other accounts and cheap requests are not affected."""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from pydantic import ValidationError
from starlette.testclient import TestClient

from slugline.accounts import callers
from slugline.accounts import service as accounts
from slugline.common.errors import RateLimited
from slugline.limits import rules as limits
from slugline.limits.gates import Busy, Gates
from slugline.runtime import Runtime
from slugline.settings import Settings
from tests.support.helpers import BASE_URL, LINKS, SQLITE_ONLY, ClientFactory


@pytest.mark.anyio
async def test_a_gate_admits_cap_holders_then_waits_then_refuses() -> None:
    gates = Gates()
    async with gates.hold("a", 2, 0), gates.hold("a", 2, 0):
        async with gates.hold("b", 2, 0):  # another key has its own slots
            pass
        with pytest.raises(Busy):
            async with gates.hold("a", 2, 0.05):
                pass
    async with gates.hold("a", 2, 0):  # freed on the way out
        assert len(gates) == 1
    assert len(gates) == 0  # no entry is kept for a key nobody holds


@pytest.mark.anyio
async def test_a_waiter_gets_the_slot_that_frees_within_the_wait() -> None:
    gates = Gates()
    order: list[str] = []

    async def holder() -> None:
        async with gates.hold("k", 1, 0):
            await asyncio.sleep(0.05)
            order.append("first done")

    task = asyncio.create_task(holder())
    await asyncio.sleep(0)
    async with gates.hold("k", 1, 2.0):
        order.append("second in")
    await task
    assert order == ["first done", "second in"]


def _account(tc: TestClient, rt: Runtime, name: str) -> tuple[int, dict[str, str]]:
    made = accounts.register(rt, {"username": name, "password": "long enough"}, plan="developer")
    key = tc.post("/api/v1/api-key", json={"scope": "full"}, headers={"Authorization": f"Bearer {made['token']}"})
    caller = callers.authenticate(rt, f"Bearer {key.json()['key']}", "http://sl.test")
    return caller.account_id, {"Authorization": f"Bearer {key.json()['key']}"}


def _hold(tc: TestClient, slot: AbstractAsyncContextManager[Any]) -> None:
    assert tc.portal is not None
    tc.portal.call(slot.__aenter__)


def _release(tc: TestClient, slot: AbstractAsyncContextManager[Any]) -> None:
    assert tc.portal is not None
    tc.portal.call(slot.__aexit__, None, None, None)


@SQLITE_ONLY
def test_searches_over_the_accounts_cap_are_429(make_client: ClientFactory) -> None:
    tc, rt = make_client(query_concurrency=1, busy_wait_seconds=0.05)
    busy_id, busy = _account(tc, rt, "searcher")
    _, other = _account(tc, rt, "neighbour")
    slot = limits.querying(rt, busy_id, "running")  # a search of this account's, still under way
    _hold(tc, slot)
    try:
        for path, params in ((LINKS, {"q": "rust"}), ("/api/v1/search", {"q": "rust"})):
            refused = tc.get(path, params=params, headers=busy)
            assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
            assert refused.json() == {"error": f"too many {limits.EXPENSIVE} under way for this account: retry in 1 s"}
            assert tc.get(path, params=params, headers=other).status_code == 200
        assert tc.get(LINKS, headers=busy).status_code == 200  # a list without q is cheap: no slot needed
    finally:
        _release(tc, slot)
    assert tc.get(LINKS, params={"q": "rust"}, headers=busy).status_code == 200


@SQLITE_ONLY
def test_auto_meta_fetches_over_the_accounts_cap_are_429(make_client: ClientFactory) -> None:
    tc, rt = make_client(fetch_concurrency=1, busy_wait_seconds=0.05)
    busy_id, busy = _account(tc, rt, "fetcher")
    slot = limits.fetching(rt, busy_id)
    _hold(tc, slot)
    try:
        body = {"destination_url": "http://127.0.0.1:9/", "auto_meta": True}
        refused = tc.post(LINKS, json=body, headers=busy)
        assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
        assert "auto_meta fetches" in refused.json()["error"]
        made = tc.post(LINKS, json={**body, "title": "t", "description": "d"}, headers=busy)
        assert made.status_code == 201  # nothing to fetch: no slot needed
        invalid = tc.post(LINKS, json={**body, "slug": "no spaces"}, headers=busy)
        assert invalid.status_code == 422  # validation before any fetch or slot
    finally:
        _release(tc, slot)
    assert tc.post(LINKS, json=body, headers=busy).status_code == 201


@pytest.mark.anyio
async def test_the_busy_error_names_the_wait() -> None:
    gates = Gates()

    class Rt:  # only what limits.fetching reads
        settings = type("S", (), {"fetch_concurrency": 1, "busy_wait_seconds": 0})()

    rt: Any = Rt()
    rt.gates = gates
    async with limits.fetching(rt, 7):
        with pytest.raises(RateLimited) as caught:
            async with limits.fetching(rt, 7):
                pass
    assert caught.value.status == 429 and caught.value.headers == {"Retry-After": "1"}


@SQLITE_ONLY
def test_an_account_leaves_a_database_thread_for_the_others(make_client: ClientFactory) -> None:
    """However high `query_concurrency` is set, one account's searches hold at most all but one of the worker's
    database threads: another account's request (or /health) always finds one."""
    tc, rt = make_client(query_concurrency=50, busy_wait_seconds=0.05)
    busy_id, busy = _account(tc, rt, "hog")
    _, other = _account(tc, rt, "bystander")
    slots = [limits.querying(rt, busy_id, "running") for _ in range(rt.db.threads - 1)]
    for slot in slots:
        _hold(tc, slot)
    try:
        assert tc.get(LINKS, params={"q": "rust"}, headers=busy).status_code == 429
        assert tc.get(LINKS, params={"q": "rust"}, headers=other).status_code == 200
    finally:
        for slot in slots:
            _release(tc, slot)


@SQLITE_ONLY
def test_the_cap_stays_under_any_number_of_threads(make_client: ClientFactory) -> None:
    _, rt = make_client(db_threads=2, query_concurrency=4)
    assert (rt.db.threads, limits.query_cap(rt)) == (2, 1)
    for one_thread in ({"db_threads": 1}, {"db_pool_size": 1}):  # no cap could leave a thread for anyone else
        with pytest.raises(ValidationError):
            Settings(**one_thread)  # type: ignore[arg-type]


@SQLITE_ONLY
def test_the_dashboards_search_takes_the_same_slot(make_client: ClientFactory) -> None:
    tc, rt = make_client(query_concurrency=1, busy_wait_seconds=0.05)
    made = accounts.register(rt, {"username": "pager", "password": "long enough"}, plan="developer")
    account_id = callers.authenticate(rt, f"Bearer {made['token']}", "http://sl.test").account_id
    tc.cookies.set("slugline_session", made["token"])
    slot = limits.querying(rt, account_id, "running")  # a search of this account's from the API, still under way
    _hold(tc, slot)
    try:
        refused = tc.get("/app/links", params={"q": "rust"})
        assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
        assert f"too many {limits.EXPENSIVE} under way for this account" in refused.text
        assert tc.get("/app/links").status_code == 200  # without q: cheap, no slot needed
    finally:
        _release(tc, slot)
    assert tc.get("/app/links", params={"q": "rust"}).status_code == 200


@SQLITE_ONLY
def test_analytics_and_click_logs_take_the_searches_slots(make_client: ClientFactory) -> None:
    """Their work grows with the account's clicks, not with a page: over the cap they are refused like searches, on
    every surface, and another account's are not."""
    tc, rt = make_client(query_concurrency=1, busy_wait_seconds=0.05, public_url=BASE_URL)
    made = accounts.register(rt, {"username": "analyst", "password": "long enough"}, plan="developer")
    session = {"Authorization": f"Bearer {made['token']}"}
    key = tc.post("/api/v1/api-key", json={"scope": "full"}, headers=session).json()["key"]
    busy = {"Authorization": f"Bearer {key}"}
    busy_id = callers.authenticate(rt, busy["Authorization"], BASE_URL).account_id
    _, other = _account(tc, rt, "neighbour")
    link = tc.post(LINKS, json={"destination_url": "https://example.org/"}, headers=busy).json()["id"]
    tc.cookies.set("slugline_session", made["token"])
    message = f"too many {limits.EXPENSIVE} under way for this account"
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_analytics", "arguments": {}}}
    mcp = {**busy, "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    slot = limits.querying(rt, busy_id, "running")  # a search of this account's, still under way
    _hold(tc, slot)
    try:
        for path in ("/api/v1/analytics", f"{LINKS}/{link}/clicks"):
            refused = tc.get(path, headers=busy)
            assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
            assert refused.json() == {"error": f"{message}: retry in 1 s"}
            assert tc.get(path.replace(link, "lnk_00000000000"), headers=other).status_code in (200, 404)
        assert tc.get("/api/v1/analytics", headers=other).status_code == 200
        tool = tc.post("/mcp", json=call, headers=mcp).json()["result"]
        assert tool["isError"] and message in tool["content"][0]["text"]
        for page in ("/app/analytics", f"/app/links/{link}"):
            refused = tc.get(page)
            assert refused.status_code == 429 and message in refused.text
    finally:
        _release(tc, slot)
    assert tc.get("/api/v1/analytics", headers=busy).status_code == 200
    assert tc.get(f"{LINKS}/{link}/clicks", headers=busy).status_code == 200
    assert tc.post("/mcp", json=call, headers=mcp).json()["result"]["isError"] is False
    assert tc.get("/app/analytics").status_code == 200 and tc.get(f"/app/links/{link}").status_code == 200
