"""An export streams: chunk after chunk in keyset order (ties on the instant included), one chunk's rows in memory
whatever the log's size, and one of the account's query slots held until it ends, or until its client leaves."""

from __future__ import annotations

import sqlite3
import time
import tracemalloc
from datetime import timedelta
from typing import Any

import orjson
import pytest
from sqlalchemy import event, select
from sqlalchemy.exc import OperationalError
from starlette.testclient import TestClient

from slugline.accounts import service as accounts
from slugline.analytics import export
from slugline.common.models import Click
from slugline.limits import rules as limits
from slugline.runtime import Runtime
from slugline.storage.db import UNAVAILABLE_MESSAGE
from tests.analytics.test_export import EXPORT, link_export, record
from tests.support.helpers import CHROME, LINKS, SQLITE_ONLY, Account, ClientFactory, click_recorder, create
from tests.support.streams import Streamed, stream_get

CHUNK = 5


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(export, "CHUNK_ROWS", CHUNK)
    monkeypatch.setattr(export, "FIRST_WINDOW", timedelta(seconds=2))


def click(link_id: str, at: float, n: int) -> tuple[str, float, bytes, bytes, str, bool, str]:
    return link_id, at, CHROME.encode(), b"", f"c{n:03d}", False, "198.51.100.7"  # its source names it


def logged(rt: Runtime, link_id: str | None = None) -> list[tuple[str, str]]:
    """(link_id, source) of every click, in the order the export promises: (clicked_at, id)."""
    stmt = select(Click.link_id, Click.source).order_by(Click.clicked_at, Click.id)
    if link_id is not None:
        stmt = stmt.where(Click.link_id == link_id)
    with rt.db.engine.connect() as conn:
        return [(row.link_id, row.source) for row in conn.execute(stmt)]


def rows_of(got: Streamed) -> list[list[tuple[str, str]]]:
    """Each body message's rows, as (link_id, source)."""
    return [
        [(row["link_id"], row["source"]) for row in map(orjson.loads, body.splitlines())] for body in got.bodies if body
    ]


@pytest.mark.usefixtures("small_chunks")
def test_rows_past_one_chunk_come_in_order_a_chunk_a_message(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    a, b = (create(client, alice, slug=slug).json()["id"] for slug in ("many-a", "many-b"))
    start = time.time() - 4 * 86400
    tied = [click((a, b)[n % 2], start, n) for n in range(12)]  # more than a chunk at one instant, on two links
    burst = [click(a, start + 10 + n / 1000, 100 + n) for n in range(20)]  # denser than the first window
    sparse = [click(b, start + 2 * 86400 + n * 3600, 200 + n) for n in range(7)]  # windows that must widen
    record(client, [*tied, *burst, *sparse, click(a, time.time(), 300)])

    for path, link_id in ((EXPORT, None), (link_export(a), a), (link_export(b), b)):
        got = stream_get(client, path, alice.full, {"days": "7", "format": "ndjson"})
        assert got.status == 200 and got.finished
        chunks = rows_of(got)
        assert [row for chunk in chunks for row in chunk] == logged(runtime, link_id)
        assert all(1 <= len(chunk) <= CHUNK for chunk in chunks)
    assert len(logged(runtime)) == 40


@SQLITE_ONLY
def test_memory_follows_the_chunk_not_the_log(
    client: TestClient, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same 20,000-row export read in chunks of 500 rows, then in one chunk: the first peaks far lower."""
    link_id = create(client, alice, slug="big").json()["id"]
    recorder = click_recorder(client)
    now = time.time()

    def fill() -> None:  # on the app's event loop, as redirects record them
        for n in range(20_000):
            recorder.record(click(link_id, now - n / 1000, n))

    assert client.portal is not None
    client.portal.call(fill)
    client.portal.call(recorder.flush)  # the worker's own flusher, woken at 10,000 clicks, may write them instead
    assert len(recorder) == 0

    def peak(chunk_rows: int) -> int:
        monkeypatch.setattr(export, "CHUNK_ROWS", chunk_rows)
        sizes: list[int] = []  # each body message's size, the message itself dropped as a server sends it on
        tracemalloc.start()
        try:
            got = stream_get(
                client, EXPORT, alice.full, {"days": "2"}, on_body=lambda got: sizes.append(len(got.bodies.pop()))
            )
            highest = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert got.finished and sum(sizes) > 20_000 * 40
        return highest

    peak(20_000)  # once before measuring: compiled statements and other caches filled
    chunked, whole = peak(500), peak(20_000)
    assert chunked * 8 < whole, (chunked, whole)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def full_account(tc: TestClient, rt: Runtime, name: str) -> tuple[int, str]:
    made = accounts.register(rt, {"username": name, "password": "long enough"}, plan="developer")
    key = tc.post("/api/v1/api-key", json={"scope": "full"}, headers={"Authorization": f"Bearer {made['token']}"})
    return accounts.operator(rt, name).account_id, key.json()["key"]


@SQLITE_ONLY
@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("spec_version", ["2.4", "2.3"])
def test_the_query_slot_is_held_while_streaming_and_given_back_when_the_client_leaves(
    make_client: ClientFactory, spec_version: str
) -> None:
    tc, rt = make_client(query_concurrency=1, busy_wait_seconds=0.05)
    account_id, key = full_account(tc, rt, "exporter")
    link_id = tc.post(LINKS, json={"destination_url": "https://example.org/"}, headers=bearer(key)).json()["id"]
    record(tc, [click(link_id, time.time() - n, n) for n in range(4 * CHUNK)])
    held: list[int] = []

    def note(_: Streamed) -> None:
        held.append(len(rt.gates))  # this account's query slots in use, and nothing else's

    whole = stream_get(tc, EXPORT, key, on_body=note, spec_version=spec_version)
    assert whole.finished and held == [1] * len(whole.bodies) and len(rt.gates) == 0
    held.clear()
    cut = stream_get(tc, EXPORT, key, leave_after=2, on_body=note, spec_version=spec_version)
    assert not cut.finished and held == [1, 1]
    assert len(rt.gates) == 0  # given back at once, not whenever the garbage collector finds the body
    slot = limits.analysing(rt, account_id)  # the account's one slot, taken by something else
    assert tc.portal is not None
    tc.portal.call(slot.__aenter__)
    try:
        busy = tc.get(EXPORT, headers=bearer(key))
        assert busy.status_code == 429 and busy.headers["retry-after"] == "1"
        assert busy.json() == {"error": f"too many {limits.EXPENSIVE} under way for this account: retry in 1 s"}
    finally:
        tc.portal.call(slot.__aexit__, None, None, None)
    assert stream_get(tc, EXPORT, key).finished


@SQLITE_ONLY
@pytest.mark.usefixtures("small_chunks")
def test_a_failing_store_is_a_503_before_the_first_byte_and_a_cut_file_after(make_client: ClientFactory) -> None:
    tc, rt = make_client()
    _, key = full_account(tc, rt, "unlucky")
    link_id = tc.post(LINKS, json={"destination_url": "https://example.org/"}, headers=bearer(key)).json()["id"]
    record(tc, [click(link_id, time.time() - n, n) for n in range(3 * CHUNK)])
    reads_left = [0]  # reads of the click log that succeed before they fail, as a disk that goes bad would

    def fail(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "FROM clicks" in statement:
            if not reads_left[0]:
                # As SQLAlchemy raises a driver's error (which versions before 2.0.3x leave unwrapped when a
                # listener raises it).
                raise OperationalError(statement, None, sqlite3.OperationalError("disk I/O error"))
            reads_left[0] -= 1

    event.listen(rt.db.engine, "before_cursor_execute", fail)
    for path in (EXPORT, link_export(link_id)):
        res = tc.get(path, headers=bearer(key))
        assert (res.status_code, res.json()) == (503, {"error": UNAVAILABLE_MESSAGE})
        assert len(rt.gates) == 0
    reads_left[0] = 1
    sent: list[bytes] = []
    with pytest.raises(OperationalError):
        stream_get(tc, link_export(link_id), key, on_body=lambda got: sent.append(got.bodies[-1]))
    assert len(sent) == 1 and sent[0].count(b"\r\n") == 1 + CHUNK  # the header and one chunk, never a last message
    assert len(rt.gates) == 0
