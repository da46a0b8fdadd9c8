"""Migration 0010 on PostgreSQL: a click log with clicks in several months becomes one partitioned by month, with every
row as it was, while click batches and link deletions go on; and afterwards clicks land, deletions take them,
retention drops whole months, and analytics answer as before."""

from __future__ import annotations

import importlib.util
import threading
import time as clock
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, time, timedelta
from types import ModuleType
from typing import Any

import pytest
from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, create_engine, text
from starlette.testclient import TestClient

from slugline.accounts import service as accounts
from slugline.app import create_app
from slugline.clicks import partitions, retention
from slugline.common.clock import utcnow
from slugline.runtime import Runtime
from slugline.storage import migrate
from slugline.storage.db import normalize_url
from tests.clicks.test_retention import analytics, record
from tests.support.helpers import BASE_URL, Account, create, make_settings

ROWS = "SELECT id, link_id, clicked_at, device, browser, os, source, referrer, visitor FROM clicks ORDER BY id"
# Every click in the partition of its month, and how many each holds.
WHERE = "SELECT tableoid::regclass::text, count(*) FROM clicks GROUP BY 1"
MISPLACED = (
    "SELECT count(*) FROM clicks WHERE tableoid::regclass::text "
    """<> to_char(clicked_at AT TIME ZONE 'UTC', '"clicks_y"YYYY"m"MM')"""
)


# Later migrations that add columns and tables today's code reads and writes with links and clicks (0012's lifecycle,
# 0015's webhook outbox, which the click writer looks at, 0016's rules, 0017's click places, 0018's variants, 0019's
# cube epochs, which the click writer raises when it changes a past day's cubes):
# applied by hand on the 0009 schema, so the app can serve it (the click log is what these tests are about), and left
# out of the upgrades the tests make.
LATER_LINK_COLUMNS = ("0012", "0015", "0016", "0017", "0018", "0019")
BEFORE_THEM = "0011"


def migration(revision: str = "0010") -> ModuleType:
    path = next((migrate.migrations_dir() / "versions").glob(f"{revision}_*.py"))
    spec = importlib.util.spec_from_file_location(f"migration_{revision}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextmanager
def at_0009(pg_url: str) -> Iterator[Runtime]:
    """A runtime on a database at revision 0009; apps made on it do not check the schema."""
    rt = Runtime.create(make_settings(pg_url))
    try:
        migrate.upgrade(rt.db.engine, "0009")
        with rt.db.engine.begin() as conn, Operations.context(MigrationContext.configure(conn)):
            for revision in LATER_LINK_COLUMNS:
                migration(revision).upgrade()
        yield rt
    finally:
        rt.close()


def app(rt: Runtime) -> TestClient:
    return TestClient(create_app(rt.settings, rt), base_url=BASE_URL)


def account(rt: Runtime, client: TestClient) -> Account:
    made = accounts.register(rt, {"username": "morgan", "password": "correct horse"}, plan="developer")
    session = {"Authorization": f"Bearer {made['token']}"}
    full = client.post("/api/v1/api-key", json={"scope": "full"}, headers=session).json()["key"]
    return Account("morgan", "correct horse", made["token"], full, "")


def back(month: date, months: int) -> date:
    for _ in range(months):
        month = (month - timedelta(days=1)).replace(day=1)
    return month


def where(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        assert conn.execute(text(MISPLACED)).scalar_one() == 0
        return {str(table): int(count) for table, count in conn.execute(text(WHERE))}


@pytest.mark.postgres
def test_0010_partitions_the_click_log_by_month(pg_url: str) -> None:
    this = partitions.month_of(utcnow().date())
    months = [back(this, n) for n in (5, 3, 1)]
    first, last = (datetime.combine(day, time(), UTC) for day in (months[0], this - timedelta(days=1)))
    with at_0009(pg_url) as rt:
        with app(rt) as client:
            mo = account(rt, client)
            links = [create(client, mo, slug=f"month-{n}").json()["id"] for n in range(2)]
            for n, month in enumerate(months, start=1):  # 2, 4 and 6 clicks in three months, 2 this month
                for link in links:
                    record(rt, link, datetime.combine(month + timedelta(days=9), time(12), UTC), n)
            record(rt, links[0], utcnow(), 2)
            figures = analytics(client, mo, first, last)
            assert figures["total_clicks"] == 12
        with rt.db.engine.connect() as conn:
            rows = conn.execute(text(ROWS)).all()
        assert migrate.upgrade(rt.db.engine, "0010") == (("0009",), ("0010",))
        with rt.db.engine.connect() as conn:
            assert conn.execute(text(ROWS)).all() == rows
            assert partitions.partitioned(conn)
            assert partitions.monthly(conn) == sorted({*months, *partitions.ahead(this)})
        assert where(rt.db.engine) == {
            partitions.name(m): n for m, n in zip([*months, this], [2, 4, 6, 2], strict=True)
        }
        with app(rt) as client:
            assert analytics(client, mo, first, last) == figures
            record(rt, links[1], utcnow(), 3)  # the click writer's COPY, into this month's partition
            assert where(rt.db.engine)[partitions.name(this)] == 5
            assert sum(retention.prune(rt.db, 40)) == 6  # the two oldest months, whole
            with rt.db.engine.connect() as conn:
                assert partitions.monthly(conn) == [months[2], *partitions.ahead(this)]
            assert analytics(client, mo, first, last) == figures
            assert client.delete(f"/api/v1/links/{links[0]}", headers=mo.auth()).status_code == 200
            assert where(rt.db.engine) == {partitions.name(months[2]): 3, partitions.name(this): 3}


FILL = (
    "INSERT INTO clicks (link_id, clicked_at, device, browser, os, source, referrer, visitor) "
    "SELECT :link, now() - n * interval '1 minute', 'desktop', 'Chrome', 'Linux', 'direct', NULL, 'v' "
    "FROM generate_series(1, :n) AS n"
)
# This test's schema only: the database is shared with other tests that run 0010 at the same time.
OUR_COPY_TRIGGERS = (
    "SELECT count(*) FROM pg_trigger AS t JOIN pg_class AS c ON c.oid = t.tgrelid "
    "WHERE t.tgname LIKE 'clicks_copy_%' AND c.relnamespace = current_schema()::regnamespace"
)
BLOCKED_BY = "SELECT query, query_start FROM pg_stat_activity WHERE :pid = ANY(pg_blocking_pids(pid))"


@pytest.mark.postgres
def test_clicks_written_and_links_deleted_while_0010_copies_are_kept_right(pg_url: str) -> None:
    """The copy waits on a link locked elsewhere, past one link's clicks and before another's: meanwhile both links
    are deleted, and a link the copy has passed gets new clicks. None of the deleted links' clicks survive, the new
    ones are all there (only the triggers could have copied them)."""
    chunk: int = migration().CHUNK
    engine = create_engine(normalize_url(pg_url))
    failed: list[BaseException] = []

    with at_0009(pg_url) as rt, app(rt) as client:
        mo = account(rt, client)
        fresh, copied, held, later = sorted(create(client, mo, slug=f"c{n}").json()["id"] for n in range(4))
        with engine.begin() as conn:  # in the key's order: a chunk of `copied`'s clicks, one of `held`'s, then 10
            for link, clicks in ((copied, chunk), (held, chunk), (later, 10)):
                conn.execute(text(FILL), {"link": link, "n": clicks})
        with engine.connect() as holder:
            holder.execute(text("SELECT id FROM links WHERE id = :id FOR UPDATE"), {"id": held})
            pid = holder.execute(text("SELECT pg_backend_pid()")).scalar_one()
            migration_thread = upgrading(engine, failed)
            assert "FOR KEY SHARE" in _blocked(engine, pid)[0]
            for link in (copied, later):
                assert client.delete(f"/api/v1/links/{link}", headers=mo.auth()).status_code == 200
            record(rt, fresh, utcnow(), 3)
            holder.commit()
        migration_thread.join(60)
    assert not migration_thread.is_alive() and not failed, failed
    with engine.connect() as conn:
        assert partitions.partitioned(conn)
        counts = {link: n for link, n in conn.execute(text("SELECT link_id, count(*) FROM clicks GROUP BY 1"))}
        triggers = conn.execute(text(OUR_COPY_TRIGGERS)).scalar()
    assert counts == {held: chunk, fresh: 3} and triggers == 0
    engine.dispose()


@pytest.mark.postgres
def test_0010_swaps_when_a_long_reader_lets_go_waiting_a_moment_each_try(pg_url: str) -> None:
    """A transaction that read the click log (a long export) holds the swap back: each try waits `LOCK_WAIT` (so
    click batches queue behind it no longer), and the next try takes the lock once the reader is done."""
    engine = create_engine(normalize_url(pg_url))
    migrate.upgrade(engine, "0009")
    failed: list[BaseException] = []

    with engine.connect() as reader:
        reader.execute(text("SELECT count(*) FROM clicks"))
        pid = reader.execute(text("SELECT pg_backend_pid()")).scalar_one()
        migration_thread = upgrading(engine, failed)
        statement, first_try = _blocked(engine, pid)
        assert statement == "LOCK TABLE clicks IN ACCESS EXCLUSIVE MODE"
        assert _blocked(engine, pid, after=first_try)[0] == statement  # tried again
        reader.commit()
    migration_thread.join(30)
    assert not migration_thread.is_alive() and not failed, failed
    with engine.connect() as conn:
        assert partitions.partitioned(conn)
    engine.dispose()


def upgrading(engine: Engine, failed: list[BaseException]) -> threading.Thread:
    """`slugline migrate` to the head (but `LATER_LINK_COLUMNS`), in a thread; what it raised goes to `failed`."""

    def upgrade() -> None:
        try:
            migrate.upgrade(engine, BEFORE_THEM)
        except BaseException as exc:
            failed.append(exc)

    thread = threading.Thread(target=upgrade)
    thread.start()
    return thread


def _blocked(engine: Engine, pid: Any, after: Any = None) -> tuple[str, Any]:
    """The statement another session waits on `pid` with, and when it started (later than `after`), within 10 s."""
    deadline = clock.monotonic() + 10
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as watching:
        while clock.monotonic() < deadline:
            found = watching.execute(text(BLOCKED_BY), {"pid": pid}).first()
            if found is not None and (after is None or found[1] > after):
                return str(found[0]), found[1]
            clock.sleep(0.02)
    raise AssertionError(f"nothing waited on session {pid}")
