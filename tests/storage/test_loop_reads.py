"""On SQLite, `GET /links/{id}` and plain `GET /links` are answered on the event loop when that needs no waiting and
little work (`storage.loopread`); otherwise from a thread. Both paths must give exactly the same answers, and the
loop path must decline, not wait or grind, when SQLite is busy or the statement is large."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import orjson
import pytest
from sqlalchemy import create_engine, text
from starlette.testclient import TestClient

from slugline.common.caller import Caller
from slugline.common.errors import NotFound
from slugline.common.inputs import ListParams, SearchParams
from slugline.common.models import Base
from slugline.links import service as links
from slugline.runtime import Runtime
from slugline.search import cache as searchindex
from slugline.search import service as search
from slugline.search.cache import SearchCache
from slugline.storage import loopread
from slugline.storage.loopread import LoopReader
from tests.support.helpers import POSTGRES_ONLY, SQLITE_ONLY, Account, create
from tests.support.loop import Now

T = TypeVar("T")


AWKWARD: list[dict[str, Any]] = [
    {"title": "Ünïcode — “quotes” \\ back\nslash", "hashtags": ["émoji😀", "a"], "note": "n", "description": ""},
    {"visibility": "private", "hashtags": []},
    {"visibility": "unlisted", "title": None},
    {"visibility": "password", "password": "correct horse"},
    {"destination_url": "https://example.com/path?q=1&r=%20#frag"},
]


def _callers(runtime: Runtime, who: Account) -> Iterator[Caller]:
    with runtime.db.engine.connect() as conn:
        found = conn.execute(text("SELECT id, created_at FROM accounts WHERE username = :u"), {"u": who.username})
        account_id, moment = found.one()
    for scope in ("full", "public"):
        yield Caller(account_id, who.username, "developer", scope, moment, "http://sl.test")


@pytest.fixture
def made(client: TestClient, alice: Account) -> list[dict[str, Any]]:
    out = []
    for body in AWKWARD * 3:
        res = create(client, alice, **body)
        assert res.status_code == 201, res.text
        out.append(res.json())
    return out


def test_both_paths_give_the_same_link(runtime: Runtime, alice: Account, made: list[dict[str, Any]], now: Now) -> None:
    reader = runtime.db.now
    assert reader is not None
    for caller in _callers(runtime, alice):
        for link in made:
            try:
                expected: dict[str, Any] | None = links.get_on_thread(runtime, caller, link["id"])
            except NotFound:
                expected = None
            try:
                got = now(links.get_on_loop(runtime, caller, link["id"]))
            except NotFound:
                got = None
            else:
                assert got is not None, "the loop path declined a primary-key read"
            assert got == expected
            if caller.scope == "full":
                assert got == link  # what the create answered, field for field
    assert reader.declined == 0


def test_both_paths_give_the_same_pages(runtime: Runtime, alice: Account, made: list[dict[str, Any]], now: Now) -> None:
    for caller in _callers(runtime, alice):
        for direction in ("asc", "desc"):
            for page in (1, 2, 3, 9):
                data = {"per": 4, "page": page, "dir": direction}
                expected = links.list_on_thread(runtime, caller, data)  # also remembers the total
                got = now(links.list_on_loop(runtime, caller, ListParams.model_validate(data)))
                assert orjson.dumps(got) == orjson.dumps(expected)  # the response's bytes
    # Shapes no index gives in order are left to the thread path.
    assert now(links.list_on_loop(runtime, caller, ListParams(sort="title"))) is None
    assert now(links.list_on_loop(runtime, caller, ListParams(sort="title", q="quotes"))) is None


def test_both_paths_give_the_same_matches_and_hits(
    runtime: Runtime, alice: Account, made: list[dict[str, Any]], now: Now
) -> None:
    for caller in _callers(runtime, alice):
        for query in ("quotes", "example", "émoji", "#a", "nothing-matches-this"):
            params = SearchParams(q=query)
            assert now(search.search_on_loop(runtime, caller, params)) is None  # the index is not loaded yet
            expected = search.search_on_thread(runtime, caller, params.model_dump())  # loads it
            assert orjson.dumps(now(search.search_on_loop(runtime, caller, params))) == orjson.dumps(expected)
            for direction in ("asc", "desc"):
                for page in (1, 2, 5):
                    data = {"q": query, "per": 3, "page": page, "dir": direction}
                    expected = links.list_on_thread(runtime, caller, data)
                    got = now(links.list_on_loop(runtime, caller, ListParams.model_validate(data)))
                    assert orjson.dumps(got) == orjson.dumps(expected)
            runtime.search = SearchCache(runtime.search.budget_bytes)  # forgotten again for the next query
    reader = runtime.db.now
    assert reader is not None and reader.declined == 0


def test_a_large_index_is_searched_on_a_thread(
    runtime: Runtime, alice: Account, made: list[dict[str, Any]], now: Now, monkeypatch: pytest.MonkeyPatch
) -> None:
    caller = next(_callers(runtime, alice))
    params = SearchParams(q="quotes")
    search.search_on_thread(runtime, caller, params.model_dump())  # loads the index: 15 links
    assert now(search.search_on_loop(runtime, caller, params)) is not None
    monkeypatch.setattr(searchindex, "LOOP_LINKS", len(made) - 1)  # one link past the size searched on the loop
    assert now(search.search_on_loop(runtime, caller, params)) is None
    assert now(links.list_on_loop(runtime, caller, ListParams(q="quotes"))) is None
    links.list_on_thread(runtime, caller, {})  # remembers the total
    assert now(links.list_on_loop(runtime, caller, ListParams())) is not None  # no search: no index, on the loop


def test_hits_with_long_text_to_highlight_are_searched_on_a_thread(
    client: TestClient, runtime: Runtime, alice: Account, now: Now
) -> None:
    caller = next(_callers(runtime, alice))
    params = SearchParams(q="needle", limit=100)
    for _ in range(3):
        assert create(client, alice, title="needle short").status_code == 201
    expected = search.search_on_thread(runtime, caller, params.model_dump())  # loads the index
    assert orjson.dumps(now(search.search_on_loop(runtime, caller, params))) == orjson.dumps(expected)
    # An accented note of the longest kind counts 8 x ~4.6 KB: one is highlighted on the loop, two are not.
    note = ("Crème brûlée needle " * 205)[:4096]
    assert create(client, alice, title="needle long", note=note).status_code == 201
    assert now(search.search_on_loop(runtime, caller, params)) is not None
    assert create(client, alice, title="needle long", note=note).status_code == 201
    assert now(search.search_on_loop(runtime, caller, params)) is None
    found = search.search_on_thread(runtime, caller, params.model_dump())
    assert (found["total"], len(found["hits"])) == (5, 5)
    assert all("<mark>needle</mark>" in hit["highlights"]["title"] for hit in found["hits"])


def test_a_q_with_much_text_to_check_is_answered_on_a_thread(
    client: TestClient, runtime: Runtime, alice: Account, now: Now, monkeypatch: pytest.MonkeyPatch
) -> None:
    caller = next(_callers(runtime, alice))
    for note in ("rust book", "rust-book", "a book on rust"):
        assert create(client, alice, title="book", note=note).status_code == 201
    exact = ListParams(q="rust-book")
    expected = links.list_on_thread(runtime, caller, exact.model_dump())  # loads the index
    assert [link["note"] for link in expected["data"]] == ["rust-book"]
    assert orjson.dumps(now(links.list_on_loop(runtime, caller, exact))) == orjson.dumps(expected)
    # "rust-book" is checked in each candidate's text; "rust" needs no text: the index alone answers it.
    monkeypatch.setattr(links, "LOOP_FILTER_TEXT", 10)
    assert now(links.list_on_loop(runtime, caller, exact)) is None
    assert now(links.list_on_loop(runtime, caller, ListParams(q="rust"))) is not None
    assert links.list_on_thread(runtime, caller, exact.model_dump()) == expected


def test_a_search_index_behind_the_accounts_version_is_brought_up_on_a_thread(
    runtime: Runtime, alice: Account, made: list[dict[str, Any]], client: TestClient, now: Now
) -> None:
    caller = next(_callers(runtime, alice))
    params = ListParams(q="quotes")
    links.list_on_thread(runtime, caller, params.model_dump())
    assert now(links.list_on_loop(runtime, caller, params)) is not None
    with runtime.db.engine.begin() as conn:  # another worker's write
        conn.execute(text("UPDATE links SET title = 'quotes too' WHERE visibility = 'private'"))
        conn.execute(text("UPDATE accounts SET links_version = links_version + 1"))
    assert now(links.list_on_loop(runtime, caller, params)) is None
    res = client.get("/api/v1/links", params={"q": "quotes"}, headers=alice.auth())
    assert res.json()["pagination"]["total"] == 6  # 3 of the awkward titles and 3 private links
    assert orjson.loads(orjson.dumps(now(links.list_on_loop(runtime, caller, params)))) == res.json()


def test_a_total_not_remembered_is_counted_on_a_thread(
    runtime: Runtime, alice: Account, made: list[dict[str, Any]], client: TestClient, now: Now
) -> None:
    caller = next(_callers(runtime, alice))
    assert now(links.list_on_loop(runtime, caller, ListParams())) is None  # nothing remembered yet
    assert client.get("/api/v1/links", headers=alice.auth()).json()["pagination"]["total"] == len(made)
    assert now(links.list_on_loop(runtime, caller, ListParams())) is not None
    assert create(client, alice).status_code == 201  # a new version: counted again, on a thread
    assert now(links.list_on_loop(runtime, caller, ListParams())) is None


@SQLITE_ONLY
def test_a_statement_past_its_budget_is_interrupted_and_the_thread_answers(
    runtime: Runtime,
    alice: Account,
    made: list[dict[str, Any]],
    client: TestClient,
    monkeypatch: pytest.MonkeyPatch,
    now: Now,
) -> None:
    reader = runtime.db.now
    assert reader is not None
    monkeypatch.setattr(loopread, "TICK_STEPS", 1)
    monkeypatch.setattr(loopread, "STEP_BUDGET", 5)
    reader.close()  # reopened with the small tick
    caller = next(_callers(runtime, alice))
    links.list_on_thread(runtime, caller, {})
    assert now(links.list_on_loop(runtime, caller, ListParams())) is None
    assert reader.declined >= 1
    res = client.get("/api/v1/links", headers=alice.auth())
    assert res.status_code == 200
    assert [link["id"] for link in res.json()["data"]] == [link["id"] for link in reversed(made)][:20]
    res = client.get(f"/api/v1/links/{made[0]['id']}", headers=alice.auth())
    assert res.json() == made[0]


def test_a_locked_file_is_declined_at_once_not_waited_for(tmp_path: Path) -> None:
    # In WAL mode (the service's) readers are never blocked but for a moment; a file in rollback-journal mode,
    # locked by a writer, shows that the reader never waits for a lock.
    path = tmp_path / "journal.db"
    engine = create_engine(f"sqlite:///{path}")
    Base.metadata.create_all(engine)
    reader = LoopReader(path, engine.dialect)
    stmt = links.page_statement("sqlite", "created_at", "desc", False, False)
    binds = {"account_id": 1, "limit": 5, "offset": 0}
    assert reader.rows(stmt, binds) == []
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    started = time.monotonic()
    assert reader.rows(stmt, binds) is None
    assert time.monotonic() - started < 0.1
    assert reader.declined == 1
    holder.execute("COMMIT")
    assert reader.rows(stmt, binds) == []
    holder.close()
    reader.close()
    engine.dispose()


def test_timestamps_in_any_other_stored_form_are_still_read() -> None:
    assert loopread.iso("2024-05-01 12:00:00.123456") == "2024-05-01T12:00:00Z"
    assert loopread.iso("2024-05-01 12:00:00") == "2024-05-01T12:00:00Z"
    assert loopread.iso("2024-05-01T14:00:00.5+02:00") == "2024-05-01T12:00:00Z"
    # PostgreSQL's text: sliced in UTC, parsed in any other zone.
    assert loopread.iso("2024-05-01 12:00:00+00") == "2024-05-01T12:00:00Z"
    assert loopread.iso("2024-05-01 12:00:59.5+00") == "2024-05-01T12:00:59Z"
    assert loopread.iso("2024-05-01 12:00:00.123456+00") == "2024-05-01T12:00:00Z"
    assert loopread.iso("2024-05-01 17:30:00.5+05:30") == "2024-05-01T12:00:00Z"
    assert loopread.iso("2024-05-01 12:00:00-01") == "2024-05-01T13:00:00Z"
    assert loopread.iso(None) is None


def _wait_for_a_connection(reader: loopread.PgLoopReader, hold: float, wait: float) -> tuple[Any, float, int, int]:
    """With the reader's only connection held for `hold` seconds, a primary-key read: what it gave, how long it
    took, and the connections open and idle afterwards."""

    async def scenario() -> tuple[Any, float, int, int]:
        async with reader.connection() as held:
            assert held is not None
            started = time.monotonic()
            read = asyncio.ensure_future(reader.fetch(links._GET, {"link_id": "x" * 12, "account_id": 1}))
            ended: list[float] = []
            read.add_done_callback(lambda _: ended.append(time.monotonic()))
            await asyncio.sleep(hold)
            assert not read.done() or wait < hold, "the read did not wait for the connection"
        found = await read
        pool = reader._loops[asyncio.get_running_loop()]
        return found, ended[0] - started, pool.open, len(pool.idle)

    reader.size, reader.wait, reader.piped = 1, wait, False  # the plain connections, as deep pages and writes take
    with asyncio.Runner() as runner:
        try:
            return runner.run(scenario())
        finally:
            runner.run(reader.aclose())


@POSTGRES_ONLY
def test_with_every_connection_busy_a_read_waits_on_the_loop_for_the_next_one(runtime: Runtime) -> None:
    reader = runtime.db.now
    assert isinstance(reader, loopread.PgLoopReader)
    found, took, opened, idle = _wait_for_a_connection(reader, hold=0.2, wait=5)
    assert found == [] and reader.declined == 0  # answered on the loop, once the connection came back
    assert 0.2 <= took < 2 and (opened, idle) == (1, 1)


@POSTGRES_ONLY
def test_a_read_that_waits_too_long_for_a_connection_is_declined(runtime: Runtime) -> None:
    reader = runtime.db.now
    assert isinstance(reader, loopread.PgLoopReader)
    found, took, opened, idle = _wait_for_a_connection(reader, hold=0.5, wait=0.1)
    assert found is None and reader.declined == 1  # the thread path answers it
    assert 0.1 <= took < 0.4 and (opened, idle) == (1, 1)


@POSTGRES_ONLY
def test_waiting_reads_cancelled_or_handed_a_closed_connection_lose_no_slot(runtime: Runtime) -> None:
    reader = runtime.db.now
    assert isinstance(reader, loopread.PgLoopReader)
    reader.size, reader.piped = 1, False
    key = {"link_id": "x" * 12, "account_id": 1}

    async def scenario() -> tuple[Any, int, int]:
        async with reader.connection() as held:
            assert held is not None
            gone = asyncio.ensure_future(reader.fetch(links._GET, key))  # cancelled while it waits
            after = asyncio.ensure_future(reader.fetch(links._GET, key))  # waits behind it
            await asyncio.sleep(0.05)
            gone.cancel()
            held.pgconn.finish()  # given back closed: its slot goes to the next caller, who opens another
        found = await after
        pool = reader._loops[asyncio.get_running_loop()]
        return found, pool.open, len(pool.idle)

    with asyncio.Runner() as runner:
        try:
            assert runner.run(scenario()) == ([], 1, 1)
        finally:
            runner.run(reader.aclose())
    assert reader.declined == 0


@POSTGRES_ONLY
def test_a_read_past_its_time_is_declined_and_its_connection_not_reused(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = runtime.db.now
    assert isinstance(reader, loopread.PgLoopReader)
    slow = text("SELECT pg_sleep(5)")
    key = {"link_id": "x" * 12, "account_id": 1}

    async def scenario() -> tuple[Any, float, Any, int]:
        assert await reader.fetch(links._GET, key) == []  # the connection opens with the server's limit at 3 s
        monkeypatch.setattr(loopread, "READ_SECONDS", 0.2)  # so only the reader's own limit can cut it at 0.2 s
        started = time.monotonic()
        found = await reader.fetch(slow, {})  # type: ignore[arg-type]
        took = time.monotonic() - started
        again = await reader.fetch(links._GET, key)
        pool = reader._loops[asyncio.get_running_loop()]
        return found, took, again, pool.open

    reader.size, reader.piped = 1, False
    with asyncio.Runner() as runner:
        try:
            found, took, again, opened = runner.run(scenario())
        finally:
            runner.run(reader.aclose())
    assert found is None and reader.declined == 1  # the thread path answers it
    assert 0.2 <= took < 1  # not the statement's 5 s
    assert again == [] and opened == 1  # the next read had a new connection, in the slot the first one freed


@POSTGRES_ONLY
def test_on_postgresql_a_page_and_its_version_are_one_statement(
    runtime: Runtime, alice: Account, made: list[dict[str, Any]], now: Now, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = runtime.db.now
    assert isinstance(reader, loopread.PgLoopReader)
    caller = next(_callers(runtime, alice))
    fetched: list[Any] = []
    fetch = reader.fetch

    async def counted(statement: Any, binds: dict[str, Any]) -> list[Any] | None:
        fetched.append(statement)
        return await fetch(statement, binds)

    monkeypatch.setattr(reader, "fetch", counted)
    for data in ({"per": 4}, {"per": 4, "q": "quotes"}, {"per": 4, "q": "nothing-matches-this"}):
        expected = links.list_on_thread(runtime, caller, data)  # remembers the total, loads the index
        fetched.clear()
        got = now(links.list_on_loop(runtime, caller, ListParams.model_validate(data)))
        assert orjson.dumps(got) == orjson.dumps(expected)
        assert len(fetched) == 1, "the version and the rows were not read in one round trip"
    with runtime.db.engine.begin() as conn:  # another worker's change: the index is behind the version read
        conn.execute(text("UPDATE accounts SET links_version = links_version + 1"))
    assert now(links.list_on_loop(runtime, caller, ListParams(per=4, q="quotes"))) is None
    assert now(search.search_on_loop(runtime, caller, SearchParams(q="quotes"))) is None


@POSTGRES_ONLY
def test_on_postgresql_page_reads_are_planned_once_per_connection(
    runtime: Runtime, alice: Account, made: list[dict[str, Any]]
) -> None:
    """The server's own choice was to plan the page read (LATERAL, LIMIT, OFFSET) afresh at every run, costing it
    more than the run itself; the loop's connections ask for generic plans."""
    reader = runtime.db.now
    assert isinstance(reader, loopread.PgLoopReader)
    caller = next(_callers(runtime, alice))
    links.list_on_thread(runtime, caller, {"per": 2})  # remembers the total, so the loop answers

    async def scenario() -> list[Any]:
        for page in range(1, 9):  # past the 5 runs after which the server may settle on a generic plan
            assert await links.list_on_loop(runtime, caller, ListParams(per=2, page=1 + page % 2)) is not None
        plans = text("SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE :lateral")
        return await reader.fetch(plans, {"lateral": "%LATERAL%"})  # type: ignore[arg-type,return-value]

    with asyncio.Runner() as runner:
        try:
            assert runner.run(scenario()) == [(8, 0)]
        finally:
            runner.run(reader.aclose())


class _CommitBetween:
    """The reader's connection, with another worker's create committed right after the version is read."""

    def __init__(self, conn: sqlite3.Connection, commit: Any) -> None:
        self.conn, self.commit, self.done = conn, commit, False

    def execute(self, sql: str, *args: Any) -> Any:
        cursor = self.conn.execute(sql, *args)
        if "links_version" in sql and not self.done:
            self.done = True
            rows = cursor.fetchall()  # read before the other writer goes
            self.commit()
            return _Rows(rows)
        return cursor

    @property
    def in_transaction(self) -> bool:
        return self.conn.in_transaction


class _Rows:
    def __init__(self, rows: list[Any]) -> None:
        self.rows = rows

    def fetchall(self) -> list[Any]:
        return self.rows


@SQLITE_ONLY
def test_on_sqlite_the_version_and_the_rows_come_from_one_snapshot(
    runtime: Runtime, client: TestClient, alice: Account, now: Now
) -> None:
    for _ in range(5):
        assert create(client, alice).status_code == 201
    caller = next(_callers(runtime, alice))
    reader = runtime.db.now
    assert isinstance(reader, LoopReader)
    real = reader._connection()

    def another_worker() -> None:
        made = threading.Thread(
            target=links.create_on_thread, args=(runtime, caller, {"destination_url": "https://e.test/"})
        )
        made.start()
        made.join()

    reader._conn = _CommitBetween(real, another_worker)  # type: ignore[assignment]
    statement = links.page_statement("sqlite", "created_at", "desc", False, False)
    binds = {"account_id": caller.account_id, "limit": 20, "offset": 0}
    try:
        got = now(links.versioned_now(runtime, caller.account_id, (statement, binds, ("created_at", "desc"))))
    finally:
        reader._conn = real
    assert got is not None
    version, rows = got
    assert (version, len(rows)) == (5, 5)  # one bump per create: the rows are those of the version read
