"""A psycopg async connection driven straight through its libpq connection, for the event loop's small statements.

psycopg's async `execute` and `fetchall` cost ~200 µs of the worker's CPU for a primary-key read on this project's
machines, of which ~100 µs is psycopg's own machinery around libpq (its lock, its generators, and registering and
removing the socket with the event loop at every wait, each a system call). `Wire` sends the same statement through
the same libpq connection and loads the rows with the same psycopg adapters (`Transformer`), so values come back
exactly as a cursor gives them (or timestamps as text, for callers that only show them), in about half that: the
socket stays registered with the loop while the connection lives, and a statement is prepared once per connection
and then sent in one message. The session's time zone is UTC.

A `Wire` serves one caller at a time (`PgLoopReader` hands it out). A statement cut off while in flight (a lost
connection, a cancelled request, a timeout) leaves it unsound (`sound` is False), as does a transaction left open
or stale prepared statements; it must then be closed, never reused: the server may still be answering. The server
gives up a statement itself after the same time its caller waits (`statement_timeout`), so one cut off does not run
on, unseen, after its connection is closed. An error the server answered outside a transaction leaves it fit; a
statement refused before anything was sent (the server had closed the connection) raises `Unsent`.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Mapping
from typing import Any

import orjson
import psycopg
from psycopg import abc, pq
from psycopg._queries import PostgresClientQuery, PostgresQuery  # how psycopg's cursors turn values into a query
from psycopg.adapt import AdaptersMap, Transformer
from psycopg.conninfo import conninfo_to_dict
from psycopg.errors import error_from_result
from psycopg.types.json import set_json_loads
from psycopg.types.string import TextLoader

MAX_PREPARED = 128  # statements prepared per connection; any further one is sent unprepared
# Prepared statements the server has dropped or can no longer run (a migration changed a table under them).
STALE_PREPARED = frozenset({"0A000", "26000"})
ROWS = frozenset({pq.ExecStatus.TUPLES_OK, pq.ExecStatus.SINGLE_TUPLE})
DONE = frozenset({pq.ExecStatus.COMMAND_OK, pq.ExecStatus.EMPTY_QUERY, *ROWS})
IDLE = pq.TransactionStatus.IDLE
TEXT = pq.Format.TEXT


class Unsent(psycopg.InterfaceError):
    """The statement was not sent: the connection was not fit for it (closed by the server, or busy). Nothing of it
    reached the server."""


class _Outcome:
    """What the results of one message came to: the rows of the last that has any, and the first error."""

    __slots__ = ("error", "rows")

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.error: psycopg.Error | None = None


class _TextTimes:
    """A connection's adapters, with timestamps loaded as the text the server sends."""

    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self.connection = conn
        self.adapters = AdaptersMap(conn.adapters)
        for name in ("timestamptz", "timestamp"):
            self.adapters.register_loader(name, TextLoader)


class Wire:
    """One open connection's statements: `rows` (one statement, its values bound by the server) and `script`
    (several statements in one message, the values in its text). Made by `open`."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], loop: asyncio.AbstractEventLoop) -> None:
        self.conn = conn  # kept for its adapters, and so that it is not collected while its libpq connection works
        self.pgconn = conn.pgconn
        # Weakly: the loop's pool of connections is kept by a mapping keyed weakly by the loop, and a strong reference
        # here would keep every finished loop, and its connections, for good.
        self._loop = weakref.proxy(loop)
        self._fd = self.pgconn.socket
        self._tx = Transformer(conn)
        self._tx_text_times = Transformer(_TextTimes(conn))
        self._prepared: dict[tuple[bytes, tuple[int, ...]], bytes] = {}
        self._waiter: asyncio.Future[None] | None = None
        self._busy = False  # a statement in flight, or cut off in flight
        self._retired = False
        self._watched = True
        loop.add_reader(self._fd, self._readable)

    @classmethod
    async def open(cls, url: str, connect_timeout: float, statement_timeout: float) -> Wire:
        """A new connection. The server gives up any statement running past `statement_timeout` seconds, as the
        caller does: a statement cut off here must not go on running (or waiting for a lock) on the server, on a
        connection already closed and no longer counted, and commit after its caller was told it failed."""
        given = conninfo_to_dict(url)
        # In UTC and ISO form, so a timestamp read as text (`rows(..., text_times=True)`) is `2024-05-01 12:00:00.5+00`
        # whatever the server's defaults (a PGTZ in the environment still wins: then it is parsed, not sliced).
        # Generic plans: every statement sent here is keyed by a primary key or an account's own index, whose plan
        # does not change with the values, and the server otherwise planned the page reads (a LATERAL join with
        # LIMIT and OFFSET) afresh at every run, its generic plan costed above the custom ones: 0.2 ms of its CPU a
        # page of links, more than running it.
        limit = (
            f"-c statement_timeout={round(statement_timeout * 1000)} -c TimeZone=UTC -c DateStyle=ISO"
            " -c plan_cache_mode=force_generic_plan"
        )
        options = f"{given['options']} {limit}" if given.get("options") else limit
        conn = await psycopg.AsyncConnection.connect(
            url, autocommit=True, connect_timeout=int(connect_timeout), options=options
        )
        set_json_loads(orjson.loads, conn)
        conn.pgconn.nonblocking = 1
        return cls(conn, asyncio.get_running_loop())

    @property
    def sound(self) -> bool:
        """Open, with nothing in flight and outside any transaction: fit for the next caller."""
        return (
            self._watched
            and not self._busy
            and not self._retired
            and self.pgconn.status == pq.ConnStatus.OK
            and self.pgconn.transaction_status == IDLE
        )

    @property
    def in_transaction(self) -> bool:
        """Nothing in flight, and a transaction open (or failed) on the server."""
        return (
            self._watched
            and not self._busy
            and self.pgconn.transaction_status in (pq.TransactionStatus.INTRANS, pq.TransactionStatus.INERROR)
        )

    def close(self) -> None:
        """Closed at once, without waiting for the server (a cancelled request must not wait on it)."""
        self._unwatch()
        self.pgconn.finish()

    async def rows(self, sql: str, params: Mapping[str, Any], text_times: bool = False) -> list[tuple[Any, ...]]:
        """One statement (`%(name)s` placeholders), prepared on this connection the first time it is sent: its rows,
        or none for a statement that returns none. An error the server answered raises psycopg's exception for it.
        With `text_times`, timestamps come as the server's text in UTC (`2024-05-01 12:00:00.5+00`), for callers
        that only show them: a `datetime` in the session's zone, then formatted, cost ~3 µs a value."""
        converted = PostgresQuery(self._tx)
        converted.convert(sql, params)
        key = (converted.query, tuple(converted.types))
        name = self._prepared.get(key)
        if name is None and len(self._prepared) < MAX_PREPARED:
            name = b"sl_%d" % len(self._prepared)
            self._start()
            self.pgconn.send_prepare(name, converted.query, param_types=converted.types)
            await self._results(name, self._tx)
            self._prepared[key] = name
        self._start()
        if name is None:
            self.pgconn.send_query_params(converted.query, converted.params, converted.types, converted.formats, TEXT)
        else:
            self.pgconn.send_query_prepared(name, converted.params, converted.formats, TEXT)
        return await self._results(name, self._tx_text_times if text_times else self._tx)

    async def script(self, sql: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """Several statements sent as one (psycopg binds the values in the text, as its client-side cursors do): the
        rows of the last that returns any. The first error stops the rest, and raises."""
        converted = PostgresClientQuery(self._tx)
        converted.convert(sql, params)
        self._start()
        self.pgconn.send_query(converted.query)
        return await self._results(None, self._tx)

    async def command(self, sql: bytes) -> None:
        """A statement with no values and no rows (`BEGIN`, `COMMIT`, `ROLLBACK`)."""
        self._start()
        self.pgconn.send_query(sql)
        await self._results(None, self._tx)

    def _start(self) -> None:
        if self._busy or not self._watched or self.pgconn.status != pq.ConnStatus.OK:
            raise Unsent("the connection is not fit for another statement")
        self._busy = True

    async def _results(self, prepared: bytes | None, tx: abc.Transformer) -> list[tuple[Any, ...]]:
        """Waits for every result of what was sent; the rows of the last that has any."""
        pgconn = self.pgconn
        sent_at_once = True
        while pgconn.flush():  # a message too large for the socket's buffer: the rest when it drains
            sent_at_once = False
            await self._writable()
        outcome = _Outcome()
        if sent_at_once:  # nothing can have been read yet: no read until the loop sees the socket ready
            await self._readable_soon()
        while not self._take_ready(outcome, tx):
            await self._readable_soon()
        self._busy = False
        if outcome.error is not None:
            if prepared is not None and outcome.error.sqlstate in STALE_PREPARED:
                self._retired = True  # its statements are all suspect: the next caller gets a new connection
            raise outcome.error
        return outcome.rows

    def _take_ready(self, outcome: _Outcome, tx: abc.Transformer) -> bool:
        """One read of what the socket holds, and every result it completed taken; True once the last has come."""
        pgconn = self.pgconn
        pgconn.consume_input()
        while not pgconn.is_busy():
            result = pgconn.get_result()
            if result is None:
                return True
            if result.status in ROWS:
                tx.set_pgresult(result)
                outcome.rows = tx.load_rows(0, result.ntuples, tuple)
            elif result.status not in DONE and outcome.error is None:
                outcome.error = error_from_result(result)
        return False

    async def _readable_soon(self) -> None:
        waiter = self._waiter = self._loop.create_future()
        try:
            await waiter
        finally:
            self._waiter = None

    async def _writable(self) -> None:
        ready = self._loop.create_future()

        def wake() -> None:
            if not ready.done():  # cancelled meanwhile
                ready.set_result(None)

        self._loop.add_writer(self._fd, wake)
        try:
            await ready
        finally:
            self._loop.remove_writer(self._fd)

    def _readable(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)
            return
        # Nobody waits: the server spoke on its own (a notice, or it is closing the connection). Read it, so the
        # socket does not stay readable; a connection that cannot be read is done for.
        try:
            self.pgconn.consume_input()
        except psycopg.Error:
            self._unwatch()

    def _unwatch(self) -> None:
        if self._watched:
            self._watched = False
            with contextlib.suppress(ReferenceError):  # the loop is gone, and its registrations with it
                if not self._loop.is_closed():
                    self._loop.remove_reader(self._fd)
