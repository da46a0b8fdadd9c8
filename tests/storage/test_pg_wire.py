"""`pgwire.PgConnection`, the loop's PostgreSQL connections driven through libpq: the same values as psycopg's own
cursors give, and a connection the server closed, or whose prepared statements a migration made stale, is never
handed to the next caller."""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import psycopg
import pytest
from sqlalchemy import func, select, text
from sqlalchemy.dialects import postgresql

from slugline.storage.loopread import PgLoopReader, iso
from slugline.storage.loopwrite import CommitUnknown, PgLoopWriter, Run
from slugline.storage.pgwire import PgConnection, Unsent
from tests.support.helpers import POSTGRES_ONLY

T = TypeVar("T")
pytestmark = POSTGRES_ONLY

VALUES = "SELECT %(n)s::bigint, %(t)s::text, %(j)s::json, %(b)s::jsonb, %(w)s::timestamptz, %(none)s::text, 1.5::float8"
BINDS = {
    "n": 2**40,
    "t": "Ünïcode — “quotes” %s \\ back\nslash",
    "j": '{"a": [1, "x"]}',
    "b": '["émoji😀"]',
    "w": datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC),
    "none": None,
}


def run(database_url: str, scenario: Callable[[PgConnection], Awaitable[T]]) -> T:
    async def main() -> T:
        wire = await PgConnection.open(database_url, connect_timeout=3, statement_timeout=3)
        try:
            return await scenario(wire)
        finally:
            wire.close()

    with asyncio.Runner() as runner:
        return runner.run(main())


def test_rows_are_the_values_psycopgs_cursor_gives(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        expected = conn.execute(VALUES, BINDS).fetchall()

    async def scenario(wire: PgConnection) -> list[Any]:
        first = await wire.rows(VALUES, BINDS)  # prepared, then run
        again = await wire.rows(VALUES, BINDS)  # run as prepared
        script = await wire.script("BEGIN; " + VALUES + "; COMMIT", BINDS)  # values in the text
        assert wire.usable
        return [first, again, script]

    found = run(database_url, scenario)
    assert found == [expected] * 3
    assert found[0][0][2] == {"a": [1, "x"]} and found[0][0][3] == ["émoji😀"]


def test_an_error_the_server_answers_raises_and_leaves_the_connection_fit(database_url: str) -> None:
    async def scenario(wire: PgConnection) -> list[Any]:
        with pytest.raises(psycopg.errors.DivisionByZero):
            await wire.rows("SELECT 1 / %(zero)s", {"zero": 0})
        assert wire.usable
        with pytest.raises(psycopg.errors.DivisionByZero):
            await wire.script("BEGIN; SELECT 1 / 0; SELECT 2", {})
        assert not wire.usable and wire.in_transaction  # a failed transaction: rolled back before any reuse
        await wire.command(b"ROLLBACK")
        assert wire.usable
        return await wire.rows("SELECT %(n)s::int + 1", {"n": 1})

    assert run(database_url, scenario) == [(2,)]


def test_text_times_are_the_servers_iso_text_in_utc_whatever_the_urls_zone_and_style(database_url: str) -> None:
    """A loop read shows timestamps by slicing their text (`loopread.iso`), which needs them in UTC."""
    zone_and_style = "options=-cTimeZone%3DAsia/Kolkata%20-cDateStyle%3DGerman"
    elsewhere = database_url + ("&" if "?" in database_url else "?") + zone_and_style
    moments = "SELECT %(w)s::timestamptz, %(whole)s::timestamptz, NULL::timestamptz, %(w)s::timestamp"
    binds = {"w": BINDS["w"], "whole": datetime(2024, 5, 1, 12, tzinfo=UTC)}

    async def scenario(wire: PgConnection) -> tuple[list[Any], list[Any]]:
        return await wire.rows(moments, binds, text_times=True), await wire.rows(moments, binds)

    shown, loaded = run(elsewhere, scenario)
    assert shown == [("2024-05-01 12:00:00.123456+00", "2024-05-01 12:00:00+00", None, "2024-05-01 12:00:00.123456")]
    assert loaded[0][:2] == (BINDS["w"], binds["whole"])  # the same statement, prepared once, loads datetimes
    noon = "2024-05-01T12:00:00Z"
    assert [iso(value) for value in shown[0]] == [noon, noon, None, noon]


def test_a_statement_cut_off_in_flight_leaves_the_connection_unfit(database_url: str) -> None:
    async def scenario(wire: PgConnection) -> bool:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.1):
                await wire.rows("SELECT pg_sleep(5)", {})
        return wire.usable

    assert run(database_url, scenario) is False


def test_a_connection_the_server_closes_while_idle_is_unfit_and_the_loop_does_not_spin(database_url: str) -> None:
    async def scenario(wire: PgConnection) -> tuple[bool, float]:
        (pid,) = (await wire.rows("SELECT pg_backend_pid()", {}))[0]
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        started = time.process_time()
        for _ in range(500):  # up to 5 s for the loop to see the socket close
            if not wire.usable:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)  # a socket left readable and unread would have the loop call back without end
        return wire.usable, time.process_time() - started

    usable, cpu = run(database_url, scenario)
    assert not usable
    assert cpu < 0.15


def test_prepared_statements_a_migration_made_stale_retire_the_connection(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute("CREATE TABLE wire_probe (a int)")
        admin.execute("INSERT INTO wire_probe VALUES (1)")

    async def scenario(wire: PgConnection) -> bool:
        assert await wire.rows("SELECT * FROM wire_probe WHERE a = %(a)s", {"a": 1}) == [(1,)]
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute("ALTER TABLE wire_probe ADD COLUMN b int")
        with pytest.raises(psycopg.errors.FeatureNotSupported):  # "cached plan must not change result type"
            await wire.rows("SELECT * FROM wire_probe WHERE a = %(a)s", {"a": 1})
        return wire.usable

    assert run(database_url, scenario) is False


def test_a_statement_larger_than_the_sockets_buffer_is_sent_whole(database_url: str) -> None:
    text = "é" * 4_000_000  # 8 MB: several times what the socket takes at once

    waits: list[None] = []

    async def scenario(wire: PgConnection) -> list[Any]:
        # A small send buffer, so the message cannot go at once however fast the server reads.
        with socket.socket(fileno=os.dup(wire.pgconn.socket)) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        writable = wire._writable

        async def counted() -> None:
            waits.append(None)
            await writable()

        wire._writable = counted  # type: ignore[method-assign]
        return await wire.rows("SELECT length(%(t)s::text), md5(%(t)s::text)", {"t": text})

    with psycopg.connect(database_url, autocommit=True) as conn:
        expected = conn.execute("SELECT length(%(t)s::text), md5(%(t)s::text)", {"t": text}).fetchall()
    assert run(database_url, scenario) == expected == [(4_000_000, expected[0][1])]
    assert waits  # the socket's buffer filled, and the rest went when it drained


def test_the_server_gives_up_a_statement_when_the_caller_does(database_url: str) -> None:
    async def main() -> tuple[list[Any], float]:
        wire = await PgConnection.open(database_url, connect_timeout=3, statement_timeout=0.2)
        try:
            # The URL's own options (the test's schema) are kept beside the timeout.
            settings = await wire.rows("SELECT current_setting('statement_timeout'), current_schema()", {})
            started = time.monotonic()
            with pytest.raises(psycopg.errors.QueryCanceled):
                await wire.rows("SELECT pg_sleep(5)", {})
            assert wire.usable  # the server's answer: the connection is fit
            return settings, time.monotonic() - started
        finally:
            wire.close()

    [(limit, schema)], took = asyncio.run(main())
    assert limit == "200ms" and schema == str(psycopg.conninfo.conninfo_to_dict(database_url)["options"]).split("=")[-1]
    assert took < 2


def _reader(url: str, size: int = 1) -> PgLoopReader:
    return PgLoopReader(url, postgresql.dialect(), size=size)  # type: ignore[no-untyped-call]


PID = select(func.pg_backend_pid())
PLUS_ONE = text("SELECT CAST(:n AS int) + 1")


def test_a_pooled_connection_the_server_closed_is_replaced_not_failed(database_url: str) -> None:
    async def main() -> tuple[Any, Any]:
        reader = _reader(database_url)
        writer = PgLoopWriter(reader)
        [(pid,)] = await reader.fetch(PID, {}) or []
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        await asyncio.sleep(0.3)  # the loop sees the socket close
        try:
            # Nothing was sent on the dead connection: a new one answers (it used to be CommitUnknown, a 503).
            return await writer.write_at_once(PLUS_ONE, {"n": 1}), await reader.fetch(PID, {})
        finally:
            await reader.aclose()

    made, [(pid,)] = asyncio.run(main())
    assert list(made or []) == [(2,)] and pid


def test_a_connection_that_cannot_be_opened_declines_the_write(database_url: str) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # nothing listens there
    writer = PgLoopWriter(_reader(f"postgresql://postgres@127.0.0.1:{port}/test"))

    async def main() -> tuple[Any, Any, Any]:
        async def work(run: Run) -> Any:
            return await run(PLUS_ONE, {"n": 1})

        return (
            await writer.write_at_once(PLUS_ONE, {"n": 1}),
            await writer.write(work),
            await writer.reader.fetch(PID, {}),
        )

    assert asyncio.run(main()) == (None, None, None)  # declined (the thread path answers), never CommitUnknown
    assert writer.declined == 2


def test_a_finished_loops_connections_close(database_url: str) -> None:
    reader = _reader(database_url, size=2)

    def backends() -> int:
        with psycopg.connect(database_url, autocommit=True) as admin:
            query = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'wire-probe'"
            return int(admin.execute(query).fetchone()[0])  # type: ignore[index]

    reader.url = database_url + "&application_name=wire-probe"
    for _ in range(3):
        asyncio.run(reader.fetch(PID, {}))
    gc.collect()
    for _ in range(50):
        if not backends():
            break
        time.sleep(0.1)
    assert backends() == 0 and not reader._loops

    async def in_use_at_close() -> bool:
        async with reader.connection() as conn:
            assert conn is not None
            await reader.aclose()  # closes the idle ones; this one as it is given back
        return conn.usable

    assert asyncio.run(in_use_at_close()) is False


def test_only_an_answer_that_nothing_ran_declines_a_sent_write(database_url: str) -> None:
    writer = PgLoopWriter(_reader(database_url))
    for refused in ("57014", "40001", "25P02", "42P01"):  # canceled (statement timeout), serialization, ...
        writer._failed_once_sent(_error(refused))
    assert writer.declined == 4
    for lost in ("57P01", "57P02", "58030", "XX000", None):  # terminated, crash shutdown, I/O, internal, no answer
        with pytest.raises(CommitUnknown):
            writer._failed_once_sent(_error(lost))
    writer._failed_once_sent(Unsent("not sent"))
    assert writer.declined == 5


def _error(sqlstate: str | None) -> psycopg.Error:
    error = psycopg.errors.lookup(sqlstate)("x") if sqlstate else psycopg.OperationalError("server closed connection")
    assert error.sqlstate == sqlstate
    return error
