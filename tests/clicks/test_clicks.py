"""Click recording against a real store (SQLite file, PostgreSQL schema): control characters never reach a row,
and a batch the database keeps refusing cannot hold back the clicks after it."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Iterator
from datetime import date
from typing import Any

import pytest
from sqlalchemy import create_engine, event, select, text
from sqlalchemy.exc import OperationalError
from starlette.testclient import TestClient

from slugline import _core
from slugline.clicks import buffer, store
from slugline.clicks.buffer import MAX_BATCH_FAILURES, ClickRecorder, RawClick
from slugline.clicks.cubes import BY_AGENT, BY_ORIGIN, BY_PLACE
from slugline.clicks.store import write_batch
from slugline.common.bounds import MAX_REFERRER, MAX_SOURCE
from slugline.common.clock import as_utc
from slugline.common.models import Click, ClickCube
from slugline.runtime import Runtime
from slugline.storage.db import normalize_url
from tests.support.helpers import POSTGRES_ONLY, POSTGRES_URL, Account

CHROME = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
)


def make_link(client: TestClient, who: Account, slug: str) -> str:
    res = client.post(
        "/api/v1/links", headers=who.auth(), json={"destination_url": "https://example.org/", "slug": slug}
    )
    assert res.status_code == 201, res.text
    link_id: str = res.json()["id"]
    return link_id


def stored(rt: Runtime, link_id: str) -> list[tuple[str, str | None]]:
    """In the order they were clicked: on PostgreSQL ids come from a sequence each connection caches a range of, so
    two writes on two pooled connections need not be numbered in their order."""
    with rt.db.engine.connect() as conn:
        rows = conn.execute(
            text("SELECT source, referrer FROM clicks WHERE link_id = :id ORDER BY clicked_at, id"), {"id": link_id}
        )
        return [(source, referrer) for source, referrer in rows]


def counter(rt: Runtime, link_id: str) -> int:
    with rt.db.engine.connect() as conn:
        clicks: int = conn.execute(text("SELECT clicks FROM links WHERE id = :id"), {"id": link_id}).scalar_one()
        return clicks


def test_control_characters_in_utm_source_and_referrer_are_dropped(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    link_id = make_link(client, alice, "ctl")
    visits = [
        ("?utm_source=%00", None),
        ("?utm_source=%00News%01Letter%7F", None),
        ("?utm_source=%C2%85%00", "https://exa\x00mple.com/p\x00"),
        ("", "https://\x00\x01/"),
    ]
    for query, referrer in visits:
        headers = {b"user-agent": CHROME.encode(), **({b"referer": referrer.encode("latin-1")} if referrer else {})}
        res = client.get(f"/ctl{query}", headers=headers, follow_redirects=False)
        assert res.status_code == 302
    end = time.monotonic() + 10
    while len(stored(runtime, link_id)) < len(visits):
        assert time.monotonic() < end, "the clicks were never written"
        time.sleep(0.05)
    assert sorted(stored(runtime, link_id), key=str) == sorted(
        [("direct", None), ("newsletter", None), ("example.com", "example.com"), ("direct", None)], key=str
    )
    stats = client.get("/api/v1/analytics", params={"days": 1}, headers=alice.auth()).json()
    assert {s["source"]: s["clicks"] for s in stats["sources"]} == {"direct": 2, "newsletter": 1, "example.com": 1}
    assert {r["referrer"]: r["clicks"] for r in stats["referrers"]}["example.com"] == 1  # what is left of the host


def refuse_source(rt: Runtime, source: str) -> None:
    """Make the database itself refuse click rows with this source."""
    with rt.db.engine.begin() as conn:
        if conn.dialect.name == "sqlite":
            conn.execute(
                text(
                    f"CREATE TRIGGER refuse_source BEFORE INSERT ON clicks WHEN NEW.source = '{source}' "
                    "BEGIN SELECT RAISE(ABORT, 'source refused'); END"
                )
            )
        else:
            conn.execute(text(f"ALTER TABLE clicks ADD CONSTRAINT refuse_source CHECK (source <> '{source}')"))


def click(link_id: str, utm: str | None = None) -> RawClick:
    return (link_id, time.time(), CHROME.encode(), b"", utm, False, "198.51.100.7")


def test_a_refused_batch_falls_back_to_row_by_row(
    client: TestClient, alice: Account, runtime: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = make_link(client, alice, "first"), make_link(client, alice, "second")
    refuse_source(runtime, "poison")

    async def scenario() -> list[int]:
        recorder = ClickRecorder(runtime)
        for utm in ("a", "poison", "b", None):
            recorder.record(click(first, utm))
        written = []
        for _ in range(MAX_BATCH_FAILURES):  # the batch fails whole, then its rows go one at a time
            written.append(await recorder.flush())
        assert len(recorder) == 0
        recorder.record(click(second, "later"))
        written.append(await recorder.flush())  # later clicks are not held back
        return written

    with caplog.at_level(logging.INFO, logger="slugline.clicks"):
        written = asyncio.run(scenario())
    assert written == [0] * (MAX_BATCH_FAILURES - 1) + [3, 1]
    assert [source for source, _ in stored(runtime, first)] == ["a", "b", "direct"]
    assert stored(runtime, second) == [("later", None)]
    assert (counter(runtime, first), counter(runtime, second)) == (3, 1)  # the dropped click is not counted
    assert "dropped 1 of 4 clicks" in caplog.text


def test_a_backlog_goes_out_in_writes_of_click_flush_max_each_in_index_order(
    client: TestClient, alice: Account, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [make_link(client, alice, f"spread-{i}") for i in range(3)]
    sizes: list[int] = []

    def counted(db: Any, encoded: _core.EncodedClicks) -> int:
        sizes.append(len(encoded))
        return write_batch(db, encoded)

    monkeypatch.setattr(buffer, "write_batch", counted)

    async def scenario() -> int:
        recorder = ClickRecorder(runtime)
        recorder._max = 1000  # click_flush_max
        now = time.time()
        for i in range(2500):  # newest first, links interleaved
            link_id, _, agent, referrer, utm, qr, ip = click(ids[i % 3])
            recorder.record((link_id, now - i / 1000, agent, referrer, utm, qr, ip))
        return await recorder.flush()

    assert asyncio.run(scenario()) == 2500
    assert sizes == [1000, 1000, 500]
    with runtime.db.engine.connect() as conn:
        rows = [
            (link_id, as_utc(at))
            for link_id, at in conn.execute(
                select(Click.link_id, Click.clicked_at).where(Click.link_id.in_(ids)).order_by(Click.id)
            )
        ]
    assert len(rows) == 2500
    for start in (0, 1000, 2000):  # each write's rows went in by link, then time
        assert rows[start : start + 1000] == sorted(rows[start : start + 1000])


def test_a_flush_writes_what_waited_when_it_began(
    client: TestClient, alice: Account, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    link_id = make_link(client, alice, "steady")
    sizes: list[int] = []

    async def scenario() -> tuple[int, int]:
        recorder = ClickRecorder(runtime)

        def arriving(db: Any, encoded: _core.EncodedClicks) -> int:
            sizes.append(len(encoded))
            for _ in range(5):  # redirects go on while a batch is written
                recorder.record(click(link_id))
            return write_batch(db, encoded)

        monkeypatch.setattr(buffer, "write_batch", arriving)
        for _ in range(10):
            recorder.record(click(link_id))
        return await recorder.flush(), len(recorder)

    assert asyncio.run(scenario()) == (10, 5)  # the five that came meanwhile wait for the next flush
    assert sizes == [10]


def test_an_unreachable_database_drops_nothing(
    client: TestClient, alice: Account, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    link_id = make_link(client, alice, "outage")
    real_connect, real_begin = runtime.db.engine.connect, runtime.db.engine.begin

    def down(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("database is down")

    async def scenario() -> list[int]:
        recorder = ClickRecorder(runtime)
        recorder.salts.get(runtime.db, {int(time.time() // 86400)})  # today's salt, before the outage
        for utm in ("x", "y"):
            recorder.record(click(link_id, utm))
        monkeypatch.setattr(runtime.db.engine, "connect", down)
        monkeypatch.setattr(runtime.db.engine, "begin", down)
        written = [await recorder.flush() for _ in range(MAX_BATCH_FAILURES + 2)]
        assert len(recorder) == 2  # kept through the outage, even past the row-by-row fallback
        monkeypatch.setattr(runtime.db.engine, "connect", real_connect)
        monkeypatch.setattr(runtime.db.engine, "begin", real_begin)
        written.append(await recorder.flush())
        return written

    assert asyncio.run(scenario()) == [0] * (MAX_BATCH_FAILURES + 2) + [2]
    assert [source for source, _ in stored(runtime, link_id)] == ["x", "y"]


@contextlib.contextmanager
def writes_refused(rt: Runtime) -> Iterator[None]:
    """The store answers reads but refuses every write for a while: a full SQLite file, or PostgreSQL's clicks table
    held by maintenance (`LOCK TABLE`, as `VACUUM FULL` takes) past the connections' lock timeout."""
    engine = rt.db.engine
    sqlite = engine.dialect.name == "sqlite"
    if sqlite:
        with engine.connect() as conn:
            pages = conn.exec_driver_sql("PRAGMA page_count").scalar_one()
    statement = f"PRAGMA max_page_count={pages}" if sqlite else "SET lock_timeout = '200ms'"

    def limit(dbapi_conn: Any, _record: Any) -> None:
        cursor = dbapi_conn.cursor()
        cursor.execute(statement)
        cursor.close()
        dbapi_conn.commit()  # a SET in a transaction rolled back later would be undone with it

    event.listen(engine, "connect", limit)
    engine.dispose()  # every connection from now on is limited
    with contextlib.ExitStack() as stack:
        if not sqlite:
            held = stack.enter_context(engine.connect())
            stack.enter_context(held.begin())
            held.execute(text("LOCK TABLE clicks IN ACCESS EXCLUSIVE MODE"))  # held until the block ends
        try:
            yield
        finally:
            event.remove(engine, "connect", limit)
    engine.dispose()  # the maintenance is over (and `held` given back first)


CLICKS = 300


def test_a_store_that_refuses_every_write_drops_nothing(client: TestClient, alice: Account, runtime: Runtime) -> None:
    link_id = make_link(client, alice, "full")

    sources = [f"s{i}" for i in range(CLICKS)]  # more than the free room of a full file's last pages

    async def scenario() -> None:
        recorder = ClickRecorder(runtime)
        recorder.salts.get(runtime.db, {int(time.time() // 86400)})  # today's salt, before the writes stop
        for utm in sources:
            recorder.record(click(link_id, utm))
        with writes_refused(runtime):
            for _ in range(MAX_BATCH_FAILURES + 1):  # the batch, then its clicks one at a time: an outage either way
                await recorder.flush()
            assert len(recorder) > 0 and recorder.dropped == 0  # they wait (a full file may still take a few)
        await recorder.flush()
        assert len(recorder) == 0 and recorder.dropped == 0

    asyncio.run(scenario())
    assert sorted(source for source, _ in stored(runtime, link_id)) == sorted(sources)
    assert counter(runtime, link_id) == CLICKS


def test_clicks_of_a_link_deleted_before_the_flush_are_dropped_and_the_rest_kept(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    kept, gone = make_link(client, alice, "kept"), make_link(client, alice, "gone")
    source = "s" * 400  # cut to the column's width when recorded
    referrer = "https://" + "h" * 300 + ".example/"  # its host is cut to the column's width when written
    at = 1_763_877_000.123456

    async def scenario() -> int:
        recorder = ClickRecorder(runtime)
        for link_id in (kept, gone, kept):
            recorder.record((link_id, at, CHROME.encode(), referrer.encode(), source, False, "198.51.100.7"))
        assert client.delete(f"/api/v1/links/{gone}", headers=alice.auth()).status_code == 200
        return await recorder.flush()

    assert asyncio.run(scenario()) == 2
    classified = _core.classify_source(source[:MAX_SOURCE], False, referrer)
    assert stored(runtime, kept) == [(classified, "h" * MAX_REFERRER)] * 2
    assert counter(runtime, kept) == 2
    with runtime.db.session() as session:
        stamps = session.scalars(select(Click.clicked_at).where(Click.link_id == kept)).all()
        scopes = session.execute(select(ClickCube.scope, ClickCube.level, ClickCube.bucket)).all()
    assert [as_utc(stamp).timestamp() for stamp in stamps] == [pytest.approx(at, abs=1e-6)] * 2
    day = (date(2025, 11, 23) - date(1970, 1, 1)).days
    month = (2025 - 1970) * 12 + 10
    views = [(s, lv, b) for s in ("", "p", kept) for lv, b in ((0, day), (1, month))]
    projections = [(kept, level, month) for level in (BY_AGENT, BY_ORIGIN, BY_PLACE)]  # the link's month's, of its own
    assert sorted(scopes) == sorted(views + projections)
    figures = account_day(runtime, "", day)
    assert (figures["total"], figures["breakdowns"]["source"]) == (2, [(classified, 2)])


def test_a_deleted_links_clicks_are_deleted_with_it(client: TestClient, alice: Account, runtime: Runtime) -> None:
    kept, gone = make_link(client, alice, "stays"), make_link(client, alice, "goes")

    async def scenario() -> int:
        recorder = ClickRecorder(runtime)
        for link_id in (kept, gone, gone):
            recorder.record(click(link_id, "x"))
        return await recorder.flush()

    assert asyncio.run(scenario()) == 3
    day = int(time.time() // 86_400)
    assert account_day(runtime, "", day)["total"] == 3
    assert client.delete(f"/api/v1/links/{gone}", headers=alice.auth()).status_code == 200
    with runtime.db.engine.connect() as conn:
        left = conn.execute(text("SELECT link_id FROM clicks")).scalars().all()
        moves = conn.execute(text("SELECT link_id, kind FROM cube_moves")).all()
    assert (left, [tuple(m) for m in moves]) == ([kept], [(gone, "delete")])

    async def next_batch() -> int:
        recorder = ClickRecorder(runtime)
        recorder.record(click(kept, "x"))
        return await recorder.flush()

    assert asyncio.run(next_batch()) == 1  # the writer takes the deleted link's cubes out of its account's
    with runtime.db.engine.connect() as conn:
        scopes = conn.execute(text("SELECT DISTINCT scope FROM click_cubes")).scalars().all()
        moves = conn.execute(text("SELECT link_id FROM cube_moves")).all()
    assert (sorted(scopes), moves) == (sorted(["", "p", kept]), [])
    assert account_day(runtime, "", day)["total"] == 2


def account_day(runtime: Runtime, scope: str, day: int) -> dict[str, Any]:
    """What the core reads from one stored day cube of an account view."""
    with runtime.db.session() as session:
        row = session.execute(
            select(ClickCube.cube, ClickCube.uniques).where(
                ClickCube.scope == scope, ClickCube.level == 0, ClickCube.bucket == day
            )
        ).one()
    return _core.analyse([(1, day, row[0], row[1], None)], {}, False)


@POSTGRES_ONLY
def test_a_link_deleted_from_another_search_path_takes_its_clicks(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    gone = make_link(client, alice, "elsewhere")

    async def scenario() -> int:
        recorder = ClickRecorder(runtime)
        recorder.record(click(gone, "x"))
        return await recorder.flush()

    assert asyncio.run(scenario()) == 1
    with runtime.db.engine.connect() as conn:
        schema = conn.execute(text("SELECT current_schema()")).scalar_one()
    admin = create_engine(normalize_url(POSTGRES_URL))  # search_path: public
    try:
        with admin.begin() as conn:
            conn.execute(text(f'DELETE FROM "{schema}".links WHERE id = :id'), {"id": gone})
    finally:
        admin.dispose()
    with runtime.db.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM clicks")).scalar_one() == 0


def _orphans(runtime: Runtime) -> int:
    with runtime.db.engine.connect() as conn:
        found = conn.execute(text("SELECT count(*) FROM clicks WHERE link_id NOT IN (SELECT id FROM links)"))
        return int(found.scalar_one())


@POSTGRES_ONLY
def test_a_batch_that_waits_for_a_deletion_writes_none_of_the_deleted_links_rows(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    # The click log has no foreign key on PostgreSQL (migration 0006): the batch's lock on its links is what keeps
    # rows of a deleted link out.
    kept, gone = make_link(client, alice, "waits-kept"), make_link(client, alice, "waits-gone")
    recorder = ClickRecorder(runtime)
    for link_id in (kept, gone, gone):
        recorder.record(click(link_id, "x"))
    written: list[int] = []
    with runtime.db.engine.connect() as deleting:
        with deleting.begin():
            deleting.execute(text("DELETE FROM links WHERE id = :id"), {"id": gone})
            flushing = threading.Thread(target=lambda: written.append(asyncio.run(recorder.flush())))
            flushing.start()
            flushing.join(0.5)
            assert flushing.is_alive(), "the batch waits for the deleted link's lock"
        flushing.join(10)
    assert written == [1] and _orphans(runtime) == 0


@POSTGRES_ONLY
def test_a_deletion_that_waits_for_a_batch_deletes_the_batchs_rows_too(
    client: TestClient, alice: Account, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = make_link(client, alice, "deleted-after")
    copied, go_on = threading.Event(), threading.Event()
    insert = store._insert_clicks

    def held(*args: Any) -> int:  # the batch's rows are in, its transaction (and its locks) still open
        done = insert(*args)
        copied.set()
        go_on.wait(10)
        return done

    monkeypatch.setattr(store, "_insert_clicks", held)
    recorder = ClickRecorder(runtime)
    recorder.record(click(gone, "x"))
    written: list[int] = []
    flushing = threading.Thread(target=lambda: written.append(asyncio.run(recorder.flush())))
    flushing.start()
    assert copied.wait(10)
    deletion = threading.Thread(target=lambda: client.delete(f"/api/v1/links/{gone}", headers=alice.auth()))
    deletion.start()
    deletion.join(0.5)
    assert deletion.is_alive(), "the deletion waits for the batch's lock"
    go_on.set()
    flushing.join(10)
    deletion.join(10)
    assert written == [1] and _orphans(runtime) == 0
    with runtime.db.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM links")).scalar_one() == 0


def test_shutdown_tries_again_after_a_failed_write(
    client: TestClient, alice: Account, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    link_id = make_link(client, alice, "sigterm")
    calls: list[int] = []

    def once_refused(db: Any, encoded: Any) -> int:
        calls.append(len(encoded))
        if len(calls) == 1:  # a passing failure (a dropped connection, a lock), just as the worker stops
            raise OperationalError("COMMIT", {}, Exception("server closed the connection unexpectedly"))
        return write_batch(db, encoded)

    monkeypatch.setattr("slugline.clicks.buffer.write_batch", once_refused)

    async def scenario() -> int:
        async with buffer.recording(runtime) as recorder:
            for utm in ("x", "y"):
                recorder.record(click(link_id, utm))
        return len(recorder)

    assert asyncio.run(scenario()) == 0  # the shutdown flush wrote them on its second try
    assert len(calls) == 2 and counter(runtime, link_id) == 2


def test_flushes_keep_their_interval_from_each_start(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[float] = []

    async def slow_flush(self: ClickRecorder) -> int:
        started.append(time.monotonic())
        await asyncio.sleep(0.3)  # a write taking most of the interval
        return 0

    monkeypatch.setattr(ClickRecorder, "flush", slow_flush)
    recorder = ClickRecorder(runtime)
    recorder._every = 0.4

    async def scenario() -> None:
        task = asyncio.create_task(recorder.run())
        await asyncio.sleep(1.7)
        recorder.stop()
        await task

    asyncio.run(scenario())
    gaps = [later - earlier for earlier, later in itertools.pairwise(started)]
    assert len(started) >= 4 and max(gaps) < 0.6, gaps  # 0.4 s apart, not 0.4 s after each 0.3 s flush ends


def test_a_quarter_of_the_byte_budget_starts_a_write_before_the_second_is_up(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Heavy traffic is written once a second, not every `click_flush_max` clicks; but clicks with long headers
    that fill a quarter of the buffer go out at once, so the rest of it holds what comes during the write."""
    flushed: list[int] = []  # the bytes held when each write began

    async def flush(self: ClickRecorder) -> int:
        flushed.append(self.queue.bytes)
        taken = self.queue.take(len(self.queue))
        self.queue.release(taken)
        return len(taken)

    monkeypatch.setattr(ClickRecorder, "flush", flush)
    recorder = ClickRecorder(runtime)
    recorder._every = 60.0  # the second is never up here
    quarter = recorder.queue.budget // buffer.EARLY_SHARE
    agent, referrer = b"Mozilla/5.0 " + b"a" * 500, b"https://r.example/" + b"p" * 500

    def fill(up_to: int) -> None:
        while recorder.bytes < up_to:
            recorder.record(("lnk_AAAAAAAAAAA", time.time(), agent, referrer, None, False, "203.0.113.9"))

    async def scenario() -> tuple[list[int], list[int]]:
        task = asyncio.create_task(recorder.run())
        fill(quarter - 4096)
        await asyncio.sleep(3 * buffer.EARLY_POLL_SECONDS)
        below = list(flushed)
        fill(quarter)
        await asyncio.sleep(3 * buffer.EARLY_POLL_SECONDS)
        above = list(flushed)
        recorder.stop()
        await task
        return below, above

    below, above = asyncio.run(scenario())
    assert len(recorder.queue.waiting()) == 0 and recorder.dropped == 0
    assert below == []  # some 15,000 clicks wait for the second (the count that starts a write is 100,000)
    assert len(above) == 1 and quarter <= above[0] < quarter + 4096
