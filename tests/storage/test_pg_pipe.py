"""`storage.pgwire.PgPipeline`, the loop's pipelined PostgreSQL connections, and the reads `PgLoopReader` sends through
them: many reads in flight on one connection, each answered with its own rows; an error fails its own read only; a
caller that stops waiting leaves the connection fit; a connection lost, or a read past its time, is replaced."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import psycopg
import pytest
from sqlalchemy import bindparam, func, select
from sqlalchemy.dialects import postgresql

from slugline.storage import loopread
from slugline.storage.loopread import PgLoopReader
from slugline.storage.pgwire import MAX_PIPED, PgPipeline, Unsent
from tests.support.helpers import POSTGRES_ONLY

T = TypeVar("T")
pytestmark = POSTGRES_ONLY

ECHO = "SELECT %(n)s::int, pg_backend_pid()"


def run(database_url: str, scenario: Callable[[PgPipeline], Awaitable[T]]) -> T:
    async def main() -> T:
        pipe = await PgPipeline.open(database_url, connect_timeout=3, statement_timeout=3)
        try:
            return await scenario(pipe)
        finally:
            pipe.close()

    with asyncio.Runner() as runner:
        return runner.run(main())


def test_reads_in_flight_together_are_each_answered_with_their_own_rows_by_one_backend(database_url: str) -> None:
    async def scenario(pipe: PgPipeline) -> list[list[Any]]:
        reads = [asyncio.ensure_future(pipe.rows(ECHO, {"n": n})) for n in range(200)]
        await asyncio.sleep(0)  # every one sent before the first answer is read
        assert pipe.waiting == 200
        answers = await asyncio.gather(*reads)
        assert pipe.waiting == 0 and pipe.usable
        return answers

    answers = run(database_url, scenario)
    assert [rows[0][0] for rows in answers] == list(range(200))
    assert len({rows[0][1] for rows in answers}) == 1


def test_an_error_fails_its_own_read_only(database_url: str) -> None:
    async def scenario(pipe: PgPipeline) -> tuple[list[Any], list[Any], bool]:
        before = asyncio.ensure_future(pipe.rows(ECHO, {"n": 1}))
        failing = asyncio.ensure_future(pipe.rows("SELECT 1 / %(zero)s::int", {"zero": 0}))
        unprepared = asyncio.ensure_future(pipe.rows("SELECT * FROM no_such_table WHERE a = %(a)s", {"a": 1}))
        after = asyncio.ensure_future(pipe.rows(ECHO, {"n": 2}))
        with pytest.raises(psycopg.errors.DivisionByZero):
            await failing
        with pytest.raises(psycopg.errors.UndefinedTable):  # its PREPARE failed, and the statement was not run
            await unprepared
        return await before, await after, pipe.usable

    first, last, usable = run(database_url, scenario)
    assert (first[0][0], last[0][0], usable) == (1, 2, True)


def test_a_read_whose_caller_stops_waiting_is_dropped_and_the_connection_stays_fit(database_url: str) -> None:
    async def scenario(pipe: PgPipeline) -> tuple[list[Any], bool]:
        slow = asyncio.ensure_future(pipe.rows("SELECT pg_sleep(0.3), %(n)s::int", {"n": 0}))
        await asyncio.sleep(0.05)
        slow.cancel()
        next_one = await pipe.rows(ECHO, {"n": 7})  # answered after the slow one, whose rows nobody takes
        return next_one, pipe.usable

    rows, usable = run(database_url, scenario)
    assert rows[0][0] == 7 and usable


def test_a_connection_the_server_closes_fails_every_read_in_flight_and_the_loop_does_not_spin(
    database_url: str,
) -> None:
    async def scenario(pipe: PgPipeline) -> tuple[int, bool, float]:
        (pid,) = (await pipe.rows("SELECT pg_backend_pid()", {}))[0]
        reads = [asyncio.ensure_future(pipe.rows("SELECT pg_sleep(2), %(n)s::int", {"n": n})) for n in range(3)]
        await asyncio.sleep(0.1)
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        failed = 0
        for read in reads:
            with pytest.raises(psycopg.OperationalError):
                await read
            failed += 1
        started = time.process_time()
        await asyncio.sleep(0.2)  # a socket left readable and unread would have the loop call back without end
        with pytest.raises(Unsent):
            await pipe.rows(ECHO, {"n": 1})
        return failed, pipe.usable, time.process_time() - started

    failed, usable, cpu = run(database_url, scenario)
    assert failed == 3 and not usable
    assert cpu < 0.15


def test_prepared_statements_a_migration_made_stale_make_the_connection_unfit(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute("CREATE TABLE pipe_probe (a int)")
        admin.execute("INSERT INTO pipe_probe VALUES (1)")

    async def scenario(pipe: PgPipeline) -> bool:
        assert await pipe.rows("SELECT * FROM pipe_probe WHERE a = %(a)s", {"a": 1}) == [(1,)]
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute("ALTER TABLE pipe_probe ADD COLUMN b int")
        with pytest.raises(psycopg.errors.FeatureNotSupported):  # "cached plan must not change result type"
            await pipe.rows("SELECT * FROM pipe_probe WHERE a = %(a)s", {"a": 1})
        return pipe.usable

    assert run(database_url, scenario) is False


def test_a_prepare_that_fails_never_lends_its_name_or_another_statements_to_a_read(database_url: str) -> None:
    """Names are never reused, and one is used only once the server confirmed its PREPARE: a read must never run
    a different statement prepared under a name it took for its own."""
    missing = "SELECT * FROM pipe_missing WHERE a = %(a)s::int"
    other = "SELECT %(n)s::int + 100, 'other'"
    new = "SELECT %(n)s::int + 1000, 'new'"

    async def scenario(pipe: PgPipeline) -> tuple[Any, list[Any], list[Any], bool]:
        assert await pipe.rows(ECHO, {"n": 1})
        outcomes = await asyncio.gather(
            pipe.rows(missing, {"a": 1}), pipe.rows(other, {"n": 1}), return_exceptions=True
        )
        assert isinstance(outcomes[0], psycopg.errors.UndefinedTable)
        twice = await asyncio.gather(pipe.rows(new, {"n": 5}), pipe.rows(new, {"n": 6}))  # the second unprepared
        again = await asyncio.gather(*(pipe.rows(missing, {"a": 1}) for _ in range(2)), return_exceptions=True)
        return outcomes[1], list(twice), list(again), pipe.usable

    prepared, twice, again, usable = run(database_url, scenario)
    assert prepared == [(101, "other")]
    assert twice == [[(1005, "new")], [(1006, "new")]]
    assert all(isinstance(outcome, psycopg.errors.UndefinedTable) for outcome in again) and usable


def test_a_value_that_cannot_be_loaded_fails_its_own_read_only(database_url: str) -> None:
    async def scenario(pipe: PgPipeline) -> tuple[list[Any], bool]:
        return (
            await asyncio.gather(
                pipe.rows("SELECT %(n)s::int, pg_sleep(0.05)", {"n": 1}),
                pipe.rows("SELECT %(j)s::json", {"j": '["\\ud800"]'}),  # PostgreSQL's JSON, not orjson's
                pipe.rows("SELECT 'infinity'::date", {}),  # beyond Python's dates
                pipe.rows(ECHO, {"n": 3}),
                return_exceptions=True,
            ),
            pipe.usable,
        )

    (first, json, date, last), usable = run(database_url, scenario)
    assert isinstance(json, psycopg.DataError) and isinstance(date, psycopg.DataError)
    assert first[0][0] == 1 and last[0][0] == 3 and usable


def test_reads_beyond_the_bound_are_refused_not_queued(database_url: str) -> None:
    async def scenario(pipe: PgPipeline) -> int:
        reads = [asyncio.ensure_future(pipe.rows(ECHO, {"n": n})) for n in range(MAX_PIPED + 5)]
        done = await asyncio.gather(*reads, return_exceptions=True)
        return sum(isinstance(outcome, Unsent) for outcome in done)

    assert run(database_url, scenario) == 5


def _reader(database_url: str) -> PgLoopReader:
    # psycopg's dialect, as the app's engine has (`postgresql.dialect()` is psycopg2's before SQLAlchemy 2.1)
    return PgLoopReader(database_url, postgresql.psycopg.dialect(), size=1)  # type: ignore[no-untyped-call]


PID = select(func.pg_backend_pid())


def test_the_readers_reads_share_a_pipeline_and_a_second_opens_while_the_first_is_busy(database_url: str) -> None:
    reader = _reader(database_url)

    async def scenario() -> tuple[set[int], set[int]]:
        together = await asyncio.gather(*(reader.fetch(PID, {}) for _ in range(20)))
        first = {rows[0][0] for rows in together if rows}
        slow = asyncio.ensure_future(reader.fetch(select(func.pg_sleep(0.5)), {}))
        await asyncio.sleep(0.05)  # the first pipeline is busy with it: a second opens, and the next reads go there
        await reader.fetch(PID, {})
        behind = await asyncio.gather(*(reader.fetch(PID, {}) for _ in range(5)))
        await slow
        await reader.aclose()
        return first, {rows[0][0] for rows in behind if rows}

    first, behind = asyncio.run(scenario())
    assert len(first) == 1 and behind and not behind & first
    assert reader.declined == 0


def test_a_read_past_its_time_is_declined_and_its_pipeline_replaced(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = _reader(database_url)
    monkeypatch.setattr(loopread, "PIPES", 1)

    async def scenario() -> tuple[Any, float, Any, Any]:
        before = await reader.fetch(PID, {})  # the pipeline opens with the server's limit at 3 s
        monkeypatch.setattr(loopread, "READ_SECONDS", 0.2)  # so only the reader's own limit can cut it at 0.2 s
        started = time.monotonic()
        found = await reader.fetch(select(func.pg_sleep(5)), {})
        took = time.monotonic() - started
        after = await reader.fetch(PID, {})
        await reader.aclose()
        return before, took, found, after

    before, took, found, after = asyncio.run(scenario())
    assert found is None and reader.declined == 1  # the thread path answers it
    assert 0.2 <= took < 1  # not the statement's 5 s
    assert after is not None and after != before  # answered at once, on a new connection


def test_a_loop_that_ends_with_a_read_in_flight_is_collected_and_its_connections_closed(database_url: str) -> None:
    reader = _reader(database_url)
    reader.url = database_url + "&application_name=pipe-probe"
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def scenario() -> None:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        await reader.fetch(PID, {})
        slow = asyncio.ensure_future(reader.fetch(select(func.pg_sleep(1)), {}))  # in flight when the loop ends
        await asyncio.sleep(0.05)
        assert not slow.done()

    def backends() -> int:
        with psycopg.connect(database_url, autocommit=True) as admin:
            query = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pipe-probe'"
            return int(admin.execute(query).fetchone()[0])  # type: ignore[index]

    asyncio.run(scenario())
    gc.collect()
    for _ in range(50):
        if not backends():
            break
        time.sleep(0.1)
    assert loops[0]() is None and backends() == 0 and not reader._loops


def test_a_page_far_in_is_read_on_a_plain_connection(database_url: str) -> None:
    reader = _reader(database_url)
    rows = func.generate_series(1, 2000).table_valued("n")
    far = select(func.pg_backend_pid()).select_from(rows).limit(bindparam("limit")).offset(bindparam("offset"))

    async def scenario() -> tuple[Any, Any, Any]:
        near = await reader.fetch(far, {"limit": 1, "offset": 0})
        piped = await reader.fetch(PID, {})
        deep = await reader.fetch(far, {"limit": 1, "offset": loopread.MAX_PIPED_OFFSET + 1})
        await reader.aclose()
        return near, piped, deep

    near, piped, deep = asyncio.run(scenario())
    assert near == piped and deep is not None and deep != near  # the deep page on a backend of its own


def test_after_a_pipeline_cannot_be_opened_none_is_tried_again_for_a_while(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = _reader("postgresql://postgres@127.0.0.1:1/test")  # nothing listens there
    tried: list[str] = []
    real = PgPipeline.open

    async def counted(url: str, connect_timeout: float, statement_timeout: float) -> PgPipeline:
        tried.append(url)
        return await real(url, connect_timeout, statement_timeout)

    monkeypatch.setattr(PgPipeline, "open", counted)

    async def scenario() -> list[Any]:
        return [await reader.fetch(PID, {}) for _ in range(3)]

    assert asyncio.run(scenario()) == [None, None, None] and len(tried) == 1  # declined: the thread path answers
    monkeypatch.setattr(loopread, "PIPE_RETRY_SECONDS", 0)
    assert asyncio.run(scenario()) == [None, None, None] and len(tried) == 4
