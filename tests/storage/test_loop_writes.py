"""A link's create and update are made on the event loop when they can be at once (`storage.loopwrite`): on SQLite
when the write lock and the file are free, on PostgreSQL when one of the loop's connections is idle; otherwise on a
thread. Both paths must store exactly the same row, and the loop path must decline, never wait, when another writer
holds the lock or the file, and leave nothing behind when it fails."""

from __future__ import annotations

import asyncio
import fcntl
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
import pytest
from sqlalchemy import text
from starlette.testclient import TestClient

from slugline import _core
from slugline.common.caller import Caller
from slugline.common.errors import Conflict, Invalid, NotFound
from slugline.links import events
from slugline.links import service as links
from slugline.runtime import Runtime
from slugline.search import feed as searchfeed
from slugline.storage import loopwrite
from slugline.storage.db import WriterLock, unavailable
from slugline.storage.loopwrite import CommitUnknown, LoopWriter, PgLoopWriter, Run
from slugline.storage.pgwire import PgConnection
from tests.support.helpers import POSTGRES_ONLY, POSTGRES_URL, SQLITE_ONLY, Account
from tests.support.loop import Now

T = TypeVar("T")
BODIES: list[dict[str, Any]] = [
    {"destination_url": "https://example.com/", "title": "Ünïcode — “quotes” \\ back\nslash", "note": "n"},
    {"destination_url": "https://example.com/a?q=1&r=%20#frag", "hashtags": ["émoji😀", "a"], "description": ""},
    {"destination_url": "https://example.com/b", "visibility": "private", "hashtags": []},
    {"destination_url": "https://example.com/c", "visibility": "unlisted", "slug": "my-own-slug"},
]
VARYING = {"id", "slug", "short_url", "created_at", "updated_at"}


@pytest.fixture
def caller(runtime: Runtime, alice: Account) -> Caller:
    with runtime.db.engine.connect() as conn:
        found = conn.execute(text("SELECT id, created_at FROM accounts WHERE username = :u"), {"u": alice.username})
        account_id, moment = found.one()
    return Caller(account_id, alice.username, "developer", "full", moment, "http://sl.test")


@pytest.fixture
def writer(runtime: Runtime) -> LoopWriter | PgLoopWriter:
    assert runtime.db.write_now is not None, "a SQLite file and PostgreSQL get a loop writer"
    return runtime.db.write_now


def _stored(runtime: Runtime, link_id: str) -> dict[str, Any]:
    with runtime.db.engine.connect() as conn:
        row = conn.execute(text("SELECT * FROM links WHERE id = :id"), {"id": link_id}).one()
    return dict(row._mapping)


def _version(runtime: Runtime) -> int:
    with runtime.db.engine.connect() as conn:
        return int(conn.execute(text("SELECT max(links_version) FROM accounts")).scalar_one())


def _count(runtime: Runtime) -> int:
    with runtime.db.engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM links")).scalar_one())


def _feed(runtime: Runtime) -> list[tuple[int, str]]:
    with runtime.db.engine.connect() as conn:
        found = conn.execute(text("SELECT version, link_id FROM link_changes ORDER BY account_id, version"))
        return [(int(version), link_id) for version, link_id in found]


def _same(one: dict[str, Any], other: dict[str, Any]) -> bool:
    return {k: v for k, v in one.items() if k not in VARYING} == {k: v for k, v in other.items() if k not in VARYING}


def _make(runtime: Runtime, caller: Caller, now: Now, body: dict[str, Any]) -> dict[str, Any] | None:
    return now(links.create_on_loop(runtime, caller, links.check_create(caller, body)))


def test_both_paths_store_the_same_link(
    runtime: Runtime,
    caller: Caller,
    writer: LoopWriter | PgLoopWriter,
    client: TestClient,
    alice: Account,
    now: Now,
) -> None:
    for body in BODIES:
        on_loop = _make(runtime, caller, now, body)
        assert on_loop is not None, "the loop path declined a create it could make at once"
        loop_row = _stored(runtime, on_loop["id"])
        if "slug" in body:
            client.delete(f"/api/v1/links/{on_loop['id']}", headers=alice.auth())
        on_thread = links.create_on_thread(runtime, caller, body)
        assert _same(on_loop, on_thread)
        assert client.get(f"/api/v1/links/{on_thread['id']}", headers=alice.auth()).json() == on_thread
        thread_row = _stored(runtime, on_thread["id"])
        assert _same(loop_row, thread_row)
        # Timestamps stored in the same form (SQLite keeps text, as SQLAlchemy writes it).
        assert type(loop_row["created_at"]) is type(thread_row["created_at"])
        if isinstance(loop_row["created_at"], str):
            assert len(loop_row["created_at"]) == len(thread_row["created_at"])
        if "slug" not in body:
            assert client.get(f"/api/v1/links/{on_loop['id']}", headers=alice.auth()).json() == on_loop
    assert writer.declined == 0
    # Each write moved the account's version once and left its change-feed row: other workers' indexes follow.
    with runtime.db.engine.connect() as conn:
        feed = conn.execute(text("SELECT version FROM link_changes ORDER BY version")).scalars().all()
    assert feed == list(range(1, _version(runtime) + 1))


def test_the_search_index_learns_of_a_loop_create(
    runtime: Runtime, caller: Caller, client: TestClient, alice: Account, now: Now
) -> None:
    assert client.get("/api/v1/links", params={"q": "zebra"}, headers=alice.auth()).json()["data"] == []
    builds = runtime.search.builds
    made = _make(runtime, caller, now, {"destination_url": "https://z.test/", "title": "zebra"})
    assert made is not None
    found = client.get("/api/v1/links", params={"q": "zebra"}, headers=alice.auth()).json()["data"]
    assert [link["id"] for link in found] == [made["id"]]
    assert runtime.search.builds == builds  # updated in place, not rebuilt


def test_a_taken_slug_is_refused_and_nothing_is_written(runtime: Runtime, caller: Caller, now: Now) -> None:
    links.create_on_thread(runtime, caller, {"destination_url": "https://example.com/", "slug": "taken-one"})
    written = _count(runtime), _version(runtime), _feed(runtime)
    with pytest.raises(Conflict, match="taken-one"):
        _make(runtime, caller, now, {"destination_url": "https://e.test/", "slug": "taken-one"})
    assert (_count(runtime), _version(runtime), _feed(runtime)) == written  # the bump and feed row undone too
    with pytest.raises(Conflict, match="taken-one"):  # the thread path
        links.create_on_thread(runtime, caller, {"destination_url": "https://e.test/", "slug": "taken-one"})
    assert (_count(runtime), _version(runtime), _feed(runtime)) == written
    assert _make(runtime, caller, now, {"destination_url": "https://e.test/"}) is not None  # the connection is fine
    assert (_count(runtime), _version(runtime), len(_feed(runtime))) == (
        written[0] + 1,
        written[1] + 1,
        len(written[2]) + 1,
    )


def test_a_generated_slug_that_is_taken_is_drawn_again(
    runtime: Runtime, caller: Caller, monkeypatch: pytest.MonkeyPatch, now: Now
) -> None:
    links.create_on_thread(runtime, caller, {"destination_url": "https://example.com/", "slug": "clash01"})
    drawn = iter(["clash01", "fresh01"])
    monkeypatch.setattr(_core, "generate_slug", lambda: next(drawn))
    made = _make(runtime, caller, now, {"destination_url": "https://e.test/"})
    assert made is not None and made["slug"] == "fresh01"
    assert _count(runtime) == 2


def test_a_write_that_fails_half_way_leaves_nothing(
    runtime: Runtime, caller: Caller, writer: LoopWriter | PgLoopWriter, now: Now
) -> None:
    link = links.create_on_thread(runtime, caller, {"destination_url": "https://example.com/"})
    version, dialect = _version(runtime), runtime.db.engine.dialect.name

    async def half(run: Run) -> None:
        await searchfeed.bump(run, dialect, caller.account_id, link["id"])
        raise RuntimeError("half way")

    async def bump(run: Run) -> int:
        return await searchfeed.bump(run, dialect, caller.account_id, link["id"])

    with pytest.raises(RuntimeError, match="half way"):
        now(writer.write(half))
    assert _version(runtime) == version
    assert now(writer.write(bump)) == version + 1
    assert _version(runtime) == version + 1
    assert _stored(runtime, link["id"])["clicks"] == 0


@SQLITE_ONLY
def test_a_write_waits_off_the_loop_for_a_writer_of_this_worker_then_goes_to_a_thread(
    runtime: Runtime,
    caller: Caller,
    writer: LoopWriter,
    client: TestClient,
    alice: Account,
    now: Now,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(loopwrite, "LOCK_WAIT_SECONDS", 0.3)
    lock = runtime.db._writer
    assert isinstance(lock, WriterLock)
    body = {"destination_url": "https://example.com/", "title": "queued"}
    with lock:  # a thread of this worker is writing, for longer than a write waits
        made, ticks, waited = _make_while_ticking(runtime, caller, now, body)
    assert made is None and writer.declined == 1 and _count(runtime) == 0
    assert 0.3 <= waited < 2 and ticks >= 10, "the loop served others while the write waited"
    res = client.post("/api/v1/links", json=body, headers=alice.auth())  # the API takes the thread path then
    assert res.status_code == 201

    lock.acquire_by(None)  # a writer that finishes while the write waits: the write is made on the loop
    threading.Timer(0.1, lock.release).start()
    made, _, waited = _make_while_ticking(runtime, caller, now, body)
    # The timer starts before the write does, so on a busy machine the wait can be a little under 0.1 s.
    assert made is not None and writer.declined == 1 and 0.05 <= waited < 0.3


def _make_while_ticking(
    runtime: Runtime, caller: Caller, now: Now, body: dict[str, Any]
) -> tuple[dict[str, Any] | None, int, float]:
    """`_make` on the loop, with a task that counts the loop's turns every 10 ms meanwhile; and the seconds it took."""

    async def both() -> tuple[dict[str, Any] | None, int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticking = asyncio.get_running_loop().create_task(tick())
        try:
            return await links.create_on_loop(runtime, caller, links.check_create(caller, body)), ticks
        finally:
            ticking.cancel()

    started = time.monotonic()
    made, ticks = now(both())
    return made, ticks, time.monotonic() - started


@SQLITE_ONLY
def test_a_writer_of_another_worker_is_waited_for_off_the_loop_and_the_thread_path_queues(
    runtime: Runtime, caller: Caller, writer: LoopWriter, now: Now, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loopwrite, "LOCK_WAIT_SECONDS", 0.3)
    lock = runtime.db._writer
    assert isinstance(lock, WriterLock)
    other = os.open(lock.path, os.O_RDWR | os.O_CREAT)  # another worker's open of the lock file
    fcntl.flock(other, fcntl.LOCK_EX)  # ... writing now, for longer than a write waits
    body = {"destination_url": "https://example.com/"}
    made: list[dict[str, Any]] = []
    try:
        on_loop, ticks, waited = _make_while_ticking(runtime, caller, now, body)
        assert on_loop is None and writer.declined == 1
        assert 0.3 <= waited < 2 and ticks >= 10, "the loop served others while the write waited"
        queued = threading.Thread(target=lambda: made.append(links.create_on_thread(runtime, caller, body)))
        queued.start()
        queued.join(0.5)
        assert queued.is_alive() and not made, "the thread path waits its turn"
    finally:
        fcntl.flock(other, fcntl.LOCK_UN)  # handed over at once
        os.close(other)
    queued.join(5)
    assert len(made) == 1 and _count(runtime) == 1
    # The lock the abandoned wait took after all was given back: the next write is made on the loop.
    assert _make(runtime, caller, now, body) is not None and writer.declined == 1


@SQLITE_ONLY
def test_a_write_whose_request_goes_away_while_it_waits_gives_the_lock_back(
    runtime: Runtime, caller: Caller, writer: LoopWriter, now: Now
) -> None:
    lock = runtime.db._writer
    assert isinstance(lock, WriterLock)
    body = links.check_create(caller, {"destination_url": "https://example.com/"})
    lock.acquire_by(None)  # another writer of this worker

    async def gone() -> None:
        waiting = asyncio.get_running_loop().create_task(links.create_on_loop(runtime, caller, body))
        await asyncio.sleep(0.05)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    now(gone())
    lock.release()  # the wait still under way takes the lock now, for nobody: it must give it back
    time.sleep(0.2)  # ... and has taken it by now
    deadline = time.monotonic() + 2
    while not lock.acquire_now():
        assert time.monotonic() < deadline, "the lock was never given back"
        time.sleep(0.01)
    lock.release()
    assert _count(runtime) == 0


@SQLITE_ONLY
def test_a_file_locked_by_another_process_is_declined_at_once(
    runtime: Runtime, caller: Caller, writer: LoopWriter, now: Now
) -> None:
    path = runtime.settings.sqlite_path()
    assert path is not None
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another worker's write transaction
    body = {"destination_url": "https://example.com/"}
    try:
        started = time.monotonic()
        assert _make(runtime, caller, now, body) is None
        assert time.monotonic() - started < 0.1
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert writer.declined == 1
    assert _make(runtime, caller, now, body) is not None  # and the lock was given back


@SQLITE_ONLY
def test_a_connection_that_cannot_be_opened_declines_the_write(
    runtime: Runtime, caller: Caller, writer: LoopWriter, now: Now, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer.close()  # its connection is opened again on the next write

    def no_descriptors(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(sqlite3, "connect", no_descriptors)
    body = {"destination_url": "https://example.com/"}
    assert _make(runtime, caller, now, body) is None  # declined to the thread path: it used to escape as a 500
    assert writer.declined == 1
    monkeypatch.undo()
    assert _make(runtime, caller, now, body) is not None  # and the lock was given back


@SQLITE_ONLY
def test_the_log_is_checkpointed_on_a_thread(
    runtime: Runtime, caller: Caller, writer: LoopWriter, monkeypatch: pytest.MonkeyPatch, now: Now
) -> None:
    monkeypatch.setattr(loopwrite, "CHECKPOINT_EVERY", 3)
    ran_on: list[int] = []
    checkpoint = writer._checkpoint
    done = threading.Event()

    def watched() -> None:
        ran_on.append(threading.get_ident())
        checkpoint()
        done.set()

    monkeypatch.setattr(writer, "_checkpoint", watched)
    for _ in range(3):
        assert _make(runtime, caller, now, {"destination_url": "https://e.test/"}) is not None
    assert done.wait(5)
    assert len(ran_on) == 1 and ran_on[0] != threading.get_ident()  # not on the loop
    assert writer.checkpointed > 0  # frames of the log copied into the file


@POSTGRES_ONLY
def test_with_no_idle_connection_the_create_goes_to_a_thread(
    runtime: Runtime, caller: Caller, writer: PgLoopWriter, now: Now
) -> None:
    writer.reader.size = 0
    assert _make(runtime, caller, now, {"destination_url": "https://e.test/"}) is None
    assert writer.declined == 1 and _count(runtime) == 0


@POSTGRES_ONLY
def test_a_connection_lost_before_the_commit_declines_and_during_it_is_a_503(
    runtime: Runtime, caller: Caller, writer: PgLoopWriter, now: Now
) -> None:
    version = _version(runtime)

    async def cut(run: Run) -> None:
        (pid,) = (await run(text("SELECT pg_backend_pid()"), {}))[0]
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        await searchfeed.bump(run, "postgresql", caller.account_id, "lnk_x")  # fails: before the COMMIT

    assert now(writer.write(cut)) is None
    assert writer.declined == 1

    async def cut_last(run: Run) -> None:
        await searchfeed.bump(run, "postgresql", caller.account_id, "lnk_x")
        (pid,) = (await run(text("SELECT pg_backend_pid()"), {}))[0]
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))  # the COMMIT is what fails

    with pytest.raises(CommitUnknown) as lost:
        now(writer.write(cut_last))
    assert unavailable(lost.value)  # answered 503, and not made again on a thread
    assert _version(runtime) == version  # (here the server never saw the COMMIT)
    assert _make(runtime, caller, now, {"destination_url": "https://e.test/"}) is not None  # a new connection


CHANGES: list[dict[str, Any]] = [
    {"title": "new “title”", "hashtags": ["x", "émoji😀"]},
    {"title": None, "hashtags": None, "note": None, "description": None},
    {"visibility": "private"},
    {"visibility": "unlisted", "destination_url": "https://example.org/moved?a=1"},
]


def test_both_paths_make_the_same_update(
    runtime: Runtime,
    caller: Caller,
    writer: LoopWriter | PgLoopWriter,
    client: TestClient,
    alice: Account,
    now: Now,
) -> None:
    for change in CHANGES:
        pair = [links.create_on_thread(runtime, caller, BODIES[1]) for _ in range(2)]
        on_loop = now(links.update_on_loop(runtime, caller, pair[0]["id"], change))
        assert on_loop is not None, "the loop path declined an update it could make at once"
        on_thread = links.update_on_thread(runtime, caller, pair[1]["id"], change)
        assert _same(on_loop, on_thread)
        assert on_loop["created_at"] == pair[0]["created_at"] and on_loop["updated_at"] >= pair[0]["updated_at"]
        assert client.get(f"/api/v1/links/{on_loop['id']}", headers=alice.auth()).json() == on_loop
        assert _same(_stored(runtime, on_loop["id"]), _stored(runtime, on_thread["id"]))
    assert writer.declined == 0


def test_a_loop_update_refuses_what_the_thread_refuses_and_writes_nothing(
    runtime: Runtime, caller: Caller, now: Now
) -> None:
    link = links.create_on_thread(runtime, caller, BODIES[0])
    links.create_on_thread(runtime, caller, {"destination_url": "https://example.com/", "slug": "taken-two"})
    version, stored = _version(runtime), _stored(runtime, link["id"])
    refused: list[tuple[str, dict[str, Any], type[Exception]]] = [
        ("lnk_00000000000", {"title": "t"}, NotFound),
        (link["id"], {}, Invalid),
        (link["id"], {"slug": None}, Invalid),
        (link["id"], {"visibility": "password"}, Invalid),  # no password given, none stored
        (link["id"], {"slug": "taken-two"}, Conflict),
    ]
    for link_id, change, error in refused:
        with pytest.raises(error) as on_loop:
            now(links.update_on_loop(runtime, caller, link_id, change))
        with pytest.raises(error) as on_thread:
            links.update_on_thread(runtime, caller, link_id, change)
        assert str(on_loop.value) == str(on_thread.value)
    assert (_version(runtime), _stored(runtime, link["id"])) == (version, stored)


def test_a_new_password_is_set_on_a_thread(runtime: Runtime, caller: Caller, now: Now) -> None:
    link = links.create_on_thread(runtime, caller, BODIES[0])
    change = {"visibility": "password", "password": "correct horse"}
    assert now(links.update_on_loop(runtime, caller, link["id"], change)) is None  # never hashed on the loop
    assert links.update_on_thread(runtime, caller, link["id"], change)["visibility"] == "password"
    hashed = _stored(runtime, link["id"])["password_hash"]
    # A later change that keeps the password needs no hashing: made on the loop, the hash kept.
    kept = now(links.update_on_loop(runtime, caller, link["id"], {"title": "still locked"}))
    assert kept is not None and kept["visibility"] == "password"
    assert _stored(runtime, link["id"])["password_hash"] == hashed


def test_the_search_index_learns_of_a_loop_update(
    runtime: Runtime, caller: Caller, client: TestClient, alice: Account, now: Now
) -> None:
    link = links.create_on_thread(runtime, caller, {"destination_url": "https://z.test/", "title": "zebra"})
    assert len(client.get("/api/v1/links", params={"q": "zebra"}, headers=alice.auth()).json()["data"]) == 1
    assert now(links.update_on_loop(runtime, caller, link["id"], {"title": "okapi"})) is not None
    assert client.get("/api/v1/links", params={"q": "zebra"}, headers=alice.auth()).json()["data"] == []
    found = client.get("/api/v1/links", params={"q": "okapi"}, headers=alice.auth()).json()["data"]
    assert [hit["id"] for hit in found] == [link["id"]]


def _saved_versions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The versions the creates tell this worker's caches of (`events.link_saved`)."""
    told: list[int] = []
    saved = events.link_saved

    def spy(rt: Runtime, account_id: int, version: int, *args: Any, **kwargs: Any) -> None:
        told.append(version)
        saved(rt, account_id, version, *args, **kwargs)

    monkeypatch.setattr(events, "link_saved", spy)
    return told


def _traced(writer: LoopWriter) -> tuple[list[str], Callable[[], list[str]]]:
    """The statements the loop writer's SQLite connection runs from now on, and a function naming their kinds."""
    conn = writer._connection()
    assert conn is not None
    traced: list[str] = []

    def trace(sql: str) -> None:  # a statement is traced again as each of its triggers starts
        if not traced or traced[-1] != sql:
            traced.append(sql)

    conn.set_trace_callback(trace)
    return traced, lambda: [sql.split()[0] for sql in traced]


@SQLITE_ONLY
def test_on_sqlite_a_loop_create_is_one_statement_and_still_prunes_the_feed(
    runtime: Runtime, caller: Caller, writer: LoopWriter, now: Now, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, sent = _traced(writer)
    told = _saved_versions(monkeypatch)
    version = _version(runtime)
    made = _make(runtime, caller, now, {"destination_url": "https://e.test/", "title": "one"})
    assert made is not None and sent() == ["INSERT"]  # no BEGIN, no COMMIT
    assert _version(runtime) == version + 1 and told == [version + 1] and _stored(runtime, made["id"])["title"] == "one"
    assert _feed(runtime)[-1] == (version + 1, made["id"])
    # Through the thread path, in a session's transaction, the same statement.
    other = links.create_on_thread(runtime, caller, {"destination_url": "https://e.test/"})
    assert _version(runtime) == version + 2 and told == [version + 1, version + 2]
    assert _feed(runtime)[-1] == (version + 2, other["id"])
    nxt = searchfeed.PRUNE_EVERY * (version // searchfeed.PRUNE_EVERY + 20)  # a pruning version, next
    with runtime.db.engine.begin() as db:
        db.execute(text("UPDATE accounts SET links_version = :v WHERE id = :a"), {"v": nxt - 1, "a": caller.account_id})
    assert _make(runtime, caller, now, {"destination_url": "https://e.test/"}) is not None
    assert sent() == ["INSERT", "INSERT", "BEGIN", "DELETE", "COMMIT"] and writer.declined == 0
    assert told[-1] == nxt and [version for version, _ in _feed(runtime)] == [nxt]  # the older rows are gone


@SQLITE_ONLY
def test_on_sqlite_an_update_writes_its_row_bump_and_feed_row_in_one_statement(
    runtime: Runtime, caller: Caller, writer: LoopWriter, now: Now, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = links.create_on_thread(runtime, caller, {"destination_url": "https://e.test/", "title": "one"})
    links.create_on_thread(runtime, caller, {"destination_url": "https://e.test/", "slug": "taken-here"})
    traced, sent = _traced(writer)
    told = _saved_versions(monkeypatch)
    version = _version(runtime)
    # Fields that need no stored row: one statement in autocommit.
    changed = now(links.update_on_loop(runtime, caller, link["id"], {"title": "two", "note": "n"}))
    assert changed is not None and changed["title"] == "two" and sent() == ["UPDATE"]
    assert (
        _version(runtime) == version + 1 and told == [version + 1] and _feed(runtime)[-1] == (version + 1, link["id"])
    )
    # A slug: the row read under the write lock, then the same statement.
    changed = now(links.update_on_loop(runtime, caller, link["id"], {"slug": "moved-here"}))
    assert changed is not None and changed["slug"] == "moved-here"
    assert sent() == ["UPDATE", "BEGIN", "SELECT", "UPDATE", "COMMIT"]
    assert _version(runtime) == version + 2 and told[-1] == version + 2 and _feed(runtime)[-1][0] == version + 2
    # The thread path, in a session's transaction, with the same statement.
    assert links.update_on_thread(runtime, caller, link["id"], {"note": "thread"})["note"] == "thread"
    assert (
        _version(runtime) == version + 3 and told[-1] == version + 3 and _feed(runtime)[-1] == (version + 3, link["id"])
    )
    # Refused (a taken slug, on either path; an unknown or hidden link): nothing moves.
    feed = _feed(runtime)
    with pytest.raises(Conflict):
        now(links.update_on_loop(runtime, caller, link["id"], {"slug": "taken-here"}))
    with pytest.raises(Conflict):
        links.update_on_thread(runtime, caller, link["id"], {"slug": "taken-here"})
    with pytest.raises(NotFound):
        now(links.update_on_loop(runtime, caller, "lnk_00000000000", {"title": "x"}))
    private = links.create_on_thread(runtime, caller, {"destination_url": "https://e.test/", "visibility": "private"})
    feed, version = _feed(runtime), _version(runtime)
    public = Caller(caller.account_id, caller.username, caller.plan, "public", caller.created_at, caller.base_url)
    with pytest.raises(NotFound):
        now(links.update_on_loop(runtime, public, private["id"], {"title": "x"}))
    assert (_feed(runtime), _version(runtime)) == (feed, version) and writer.declined == 0
    # Clicks counted on the row are not a change of the link.
    with runtime.db.engine.begin() as db:
        db.execute(text("UPDATE links SET clicks = clicks + 5 WHERE id = :id"), {"id": link["id"]})
    assert (_feed(runtime), _version(runtime)) == (feed, version)
    # A pruning version prunes after the one statement.
    nxt = searchfeed.PRUNE_EVERY * (version // searchfeed.PRUNE_EVERY + 20)
    with runtime.db.engine.begin() as db:
        db.execute(text("UPDATE accounts SET links_version = :v WHERE id = :a"), {"v": nxt - 1, "a": caller.account_id})
    del traced[:]
    assert now(links.update_on_loop(runtime, caller, link["id"], {"title": "three"})) is not None
    assert sent() == ["UPDATE", "BEGIN", "DELETE", "COMMIT"] and told[-1] == nxt
    assert [v for v, _ in _feed(runtime)] == [nxt]


@POSTGRES_ONLY
def test_on_postgresql_a_loop_create_is_one_statement_and_still_prunes_the_feed(
    runtime: Runtime, caller: Caller, writer: PgLoopWriter, now: Now, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[str] = []
    run = writer._run

    async def counted(conn: Any, statement: Any, binds: dict[str, Any]) -> list[Any]:
        sent.append(str(statement).split()[0])
        return await run(conn, statement, binds)

    command = PgConnection.command

    async def counted_command(wire: PgConnection, sql: bytes) -> None:
        sent.append(sql.decode())
        await command(wire, sql)

    monkeypatch.setattr(writer, "_run", counted)
    monkeypatch.setattr(PgConnection, "command", counted_command)
    version = _version(runtime)
    made = _make(runtime, caller, now, {"destination_url": "https://e.test/", "title": "one"})
    assert made is not None and sent == ["WITH"]  # no BEGIN, no COMMIT: one round trip
    assert _version(runtime) == version + 1 and _stored(runtime, made["id"])["title"] == "one"
    with runtime.db.engine.begin() as conn:
        feed = conn.execute(
            text("SELECT version, link_id FROM link_changes WHERE account_id = :a"), {"a": caller.account_id}
        ).all()
        assert (version + 1, made["id"]) in [tuple(row) for row in feed]
        # The next version is a pruning one: rows older than KEEP versions must go.
        nxt = searchfeed.PRUNE_EVERY * (version // searchfeed.PRUNE_EVERY + 20)
        conn.execute(
            text("UPDATE accounts SET links_version = :v WHERE id = :a"), {"v": nxt - 1, "a": caller.account_id}
        )
    assert _make(runtime, caller, now, {"destination_url": "https://e.test/"}) is not None
    assert sent == ["WITH", "WITH", "BEGIN", "DELETE", "COMMIT"] and writer.declined == 0
    with runtime.db.engine.connect() as conn:
        found = conn.execute(
            text("SELECT min(version) FROM link_changes WHERE account_id = :a"), {"a": caller.account_id}
        )
        oldest = found.scalar_one()
    assert oldest == nxt  # the rows of the first create were older than KEEP versions


@POSTGRES_ONLY
def test_a_lone_statement_the_server_refuses_is_declined_and_one_cut_off_is_unknown(
    runtime: Runtime, caller: Caller, writer: PgLoopWriter, now: Now, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert now(writer.write_at_once(text("SELECT 1 / 0"), {})) is None and writer.declined == 1
    with pytest.raises(loopwrite.Taken):
        now(
            writer.write_at_once(
                text("INSERT INTO link_changes (account_id, version, link_id) VALUES (404, 1, 'x')"), {}
            )
        )
    monkeypatch.setattr(loopwrite, "READ_SECONDS", 0.2)
    with pytest.raises(CommitUnknown) as lost:
        now(writer.write_at_once(text("SELECT pg_sleep(5)"), {}))
    assert unavailable(lost.value) and writer.declined == 1
    assert now(writer.write_at_once(text("SELECT 1"), {})) == [(1,)]  # the cut-off connection was not reused


@POSTGRES_ONLY
@pytest.mark.parametrize(
    ("change", "round_trips"),
    [
        ({"title": "kept"}, ["WITH"]),  # fields that need no stored row: one statement
        ({"title": "kept", "visibility": "unlisted"}, ["BEGIN; SELECT", "WITH; COMMIT"]),  # read and locked first
    ],
)
def test_on_postgresql_a_loop_update_takes_its_round_trips_and_waits_for_the_rows_lock(
    runtime: Runtime,
    caller: Caller,
    writer: PgLoopWriter,
    now: Now,
    monkeypatch: pytest.MonkeyPatch,
    change: dict[str, Any],
    round_trips: list[str],
) -> None:
    link = links.create_on_thread(runtime, caller, BODIES[0])
    sent: list[str] = []
    send, run = writer._send, writer._run

    async def counted(conn: Any, before: str, statement: Any, binds: dict[str, Any], after: str) -> list[Any]:
        sent.append(f"{before}{str(statement).split()[0]}{after}")
        return await send(conn, before, statement, binds, after)

    async def counted_alone(conn: Any, statement: Any, binds: dict[str, Any]) -> list[Any]:
        sent.append(str(statement).split()[0])
        return await run(conn, statement, binds)

    monkeypatch.setattr(writer, "_send", counted)
    monkeypatch.setattr(writer, "_run", counted_alone)
    holding, release = threading.Event(), threading.Event()

    def other_writer() -> None:  # another worker's update of the same link, in a transaction it holds open
        with psycopg.connect(writer.reader.url, autocommit=True) as conn, conn.transaction():
            conn.execute("UPDATE links SET note = 'n' WHERE id = %s", (link["id"],))
            holding.set()
            release.wait(5)

    other = threading.Thread(target=other_writer)
    other.start()
    assert holding.wait(5)
    threading.Timer(0.3, release.set).start()
    started = time.monotonic()
    changed = now(links.update_on_loop(runtime, caller, link["id"], change))
    other.join()
    assert changed is not None and time.monotonic() - started >= 0.3  # it waited for the row, as a thread would
    assert sent == round_trips and writer.declined == 0
    stored = _stored(runtime, link["id"])
    assert (stored["title"], stored["note"]) == ("kept", "n")  # neither change lost
    assert changed == links.get_on_thread(runtime, caller, link["id"])  # the answer is the row as stored
    with pytest.raises(Invalid):  # a refusal rolls the transaction back, and the next update goes through
        now(links.update_on_loop(runtime, caller, link["id"], {"visibility": "password"}))
    assert now(links.update_on_loop(runtime, caller, link["id"], {"title": "again"})) is not None
