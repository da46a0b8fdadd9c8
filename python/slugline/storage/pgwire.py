"""A psycopg async connection driven straight through its libpq connection, for the event loop's small statements.

Of the worker's CPU that psycopg's async `execute` and `fetchall` spend on a primary-key read, much goes to psycopg's
own machinery around libpq (its lock, its generators, and registering and removing the socket with the event loop
at every wait, each a system call). `PgConnection` sends the same statement through the same libpq connection and
loads the rows with the same psycopg adapters (`Transformer`), so values come back exactly as a cursor gives them (or
timestamps as text, for callers that only show them), without most of that machinery: the socket stays registered
with the loop while the connection lives, and a statement is prepared once per connection and then sent in one
message (`benches/pg_roundtrip.py` measures a round trip's CPU). The session's time zone is UTC.

A `PgConnection` serves one caller at a time (`PgLoopReader` hands it out). A statement cut off while in flight (a lost
connection, a cancelled request, a timeout) leaves it unsound (`usable` is False), as does a transaction left open
or stale prepared statements; it must then be closed, never reused: the server may still be answering. The server
gives up a statement itself after the same time its caller waits (`statement_timeout`), so one cut off does not run
on, unseen, after its connection is closed. An error the server answered outside a transaction leaves it fit; a
statement refused before anything was sent (the server had closed the connection) raises `Unsent`.

A `PgPipeline` is the same connection in libpq's pipeline mode, for reads only: any number of callers at once, each
statement sent at once and answered in order (see its docstring).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import math
import re
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, Self

import orjson
import psycopg
from psycopg import abc, pq
from psycopg.adapt import AdaptersMap, PyFormat, Transformer
from psycopg.conninfo import conninfo_to_dict
from psycopg.errors import error_from_result
from psycopg.types.json import set_json_loads
from psycopg.types.string import TextLoader

MAX_PREPARED = 128  # statements prepared per connection; any further one is sent unprepared
MAX_PIPED = 256  # statements in flight on one `PgPipeline`
# Prepared statements the server has dropped or can no longer run (a migration changed a table under them).
STALE_PREPARED = frozenset({"0A000", "26000"})
ROWS = frozenset({pq.ExecStatus.TUPLES_OK, pq.ExecStatus.SINGLE_TUPLE})
DONE = frozenset({pq.ExecStatus.COMMAND_OK, pq.ExecStatus.EMPTY_QUERY, *ROWS})
IDLE = pq.TransactionStatus.IDLE
TEXT = pq.Format.TEXT
# A placeholder as SQLAlchemy's psycopg dialect writes them (`%(name)s`), or a literal percent sign (`%%`).
PLACEHOLDER = re.compile(r"%(?:\(([^)]+)\)s|(%)|(.|$))", re.DOTALL)


@functools.lru_cache(maxsize=256)
def server_form(sql: str, encoding: str) -> tuple[bytes, tuple[str, ...]]:
    """`sql` with its `%(name)s` placeholders numbered for the server (`$1`, a name used twice is one number), and
    the names in the order of their numbers: what psycopg's server-side cursors send for the same text."""
    order: dict[str, bytes] = {}

    def number(match: re.Match[str]) -> str:
        name, percent, other = match.groups()
        if name is None:
            return _not_placeholder(percent, other, "%")
        if name not in order:
            order[name] = b"$%d" % (len(order) + 1)
        return order[name].decode()

    return PLACEHOLDER.sub(number, sql).encode(encoding), tuple(order)


@functools.lru_cache(maxsize=256)
def client_form(sql: str, encoding: str) -> tuple[bytes, tuple[str, ...]]:
    """`sql` as a template for `bytes % literals` (each `%(name)s` a `%s`, `%%` kept), and the names in order: how
    psycopg's client-side cursors bind values in the text."""
    names: list[str] = []

    def template(match: re.Match[str]) -> str:
        name, percent, other = match.groups()
        if name is None:
            return _not_placeholder(percent, other, "%%")
        names.append(name)
        return "%s"

    return PLACEHOLDER.sub(template, sql).encode(encoding), tuple(names)


def _not_placeholder(percent: str | None, other: str | None, literal: str) -> str:
    if percent is None:
        raise psycopg.ProgrammingError(f"only '%(name)s' placeholders and '%%' are supported, not '%{other}'")
    return literal


def _values(names: Sequence[str], params: Mapping[str, Any]) -> list[Any]:
    try:
        return [params[name] for name in names]
    except KeyError as exc:
        raise psycopg.ProgrammingError(f"query parameter missing: {exc.args[0]}") from None


class ServerQuery:
    """A statement with its values dumped by a connection's adapters, for libpq's extended protocol
    (`PgConnection.rows`, `PgPipeline.rows`): the public `Transformer.dump_sequence` does what psycopg's cursors do."""

    __slots__ = ("formats", "params", "query", "types")

    def __init__(self, tx: abc.Transformer, sql: str, params: Mapping[str, Any]) -> None:
        self.query, names = server_form(sql, tx.encoding)
        self.params = tx.dump_sequence(_values(names, params), [PyFormat.AUTO] * len(names))
        self.types: tuple[int, ...] = tx.types or ()
        self.formats = tx.formats


def client_query(tx: abc.Transformer, sql: str, params: Mapping[str, Any]) -> bytes:
    """A statement with its values quoted in the text by a connection's adapters (`Transformer.as_literal`)."""
    template, names = client_form(sql, tx.encoding)
    return template % tuple(b"NULL" if value is None else tx.as_literal(value) for value in _values(names, params))


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


class _OnLoop:
    """What `PgConnection` and `PgPipeline` share: an open connection whose socket the loop that opened it watches for
    as long as it lives, the adapters that load its rows, and its prepared statements. Made by `open`."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], loop: asyncio.AbstractEventLoop) -> None:
        self.conn = conn  # kept for its adapters, and so that it is not collected while its libpq connection works
        self.pgconn = conn.pgconn
        # Weakly: the loop's connections are kept by a mapping keyed weakly by the loop, and a strong reference here
        # would keep every finished loop, and its connections, for good.
        self._loop = weakref.proxy(loop)
        self._fd = self.pgconn.socket
        self._tx = Transformer(conn)
        self._tx_text_times = Transformer(_TextTimes(conn))
        self._prepared: dict[tuple[bytes, tuple[int, ...]], bytes] = {}  # confirmed by the server
        self._watched = True
        self._writing = False  # a writer registered with the loop until the socket drains
        loop.add_reader(self._fd, self._readable)

    @classmethod
    async def open(cls, url: str, connect_timeout: float, statement_timeout: float) -> Self:
        """A new connection (see `connect`)."""
        return cls(await connect(url, connect_timeout, statement_timeout), asyncio.get_running_loop())

    def _readable(self) -> None:
        raise NotImplementedError

    def _unwatch(self) -> None:
        """The loop stops watching the socket (a connection the server closed stays readable)."""
        if self._watched:
            self._watched = False
            with contextlib.suppress(ReferenceError):  # the loop is gone, and its registrations with it
                if not self._loop.is_closed():
                    self._loop.remove_reader(self._fd)
                    if self._writing:
                        self._loop.remove_writer(self._fd)
            self._writing = False


class PgConnection(_OnLoop):
    """One open connection's statements: `rows` (one statement, its values bound by the server) and `script`
    (several statements in one message, the values in its text). Made by `open`."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(conn, loop)
        self._waiter: asyncio.Future[None] | None = None
        self._busy = False  # a statement in flight, or cut off in flight
        self._retired = False

    @property
    def usable(self) -> bool:
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
        that only show them: a `datetime` in the session's zone, then formatted, costs more than slicing the text
        (`benches/pg_roundtrip.py`, `timestamps`)."""
        converted = ServerQuery(self._tx, sql, params)
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
        query = client_query(self._tx, sql, params)
        self._start()
        self.pgconn.send_query(query)
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


async def connect(url: str, connect_timeout: float, statement_timeout: float) -> psycopg.AsyncConnection[Any]:
    """A new connection, in autocommit and non-blocking. The server gives up any statement running past
    `statement_timeout` seconds, as the caller does: a statement cut off here must not go on running (or waiting for
    a lock) on the server, on a connection already closed and no longer counted, and commit after its caller was told
    it failed."""
    given = conninfo_to_dict(url)
    # In UTC and ISO form, so a timestamp read as text (`rows(..., text_times=True)`) is `2024-05-01 12:00:00.5+00`
    # whatever the server's defaults (a PGTZ in the environment still wins: then it is parsed, not sliced).
    # Generic plans: every statement sent here is keyed by a primary key or an account's own index, whose plan
    # does not change with the values, and the server otherwise planned the page reads (a LATERAL join with
    # LIMIT and OFFSET) afresh at every run, its generic plan costed above the custom ones: planning a page of links
    # cost it more CPU than running it (`benches/pg_roundtrip.py`, `plans`).
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
    return conn


class _Piped:
    """One statement of a pipeline, waiting for its results: its caller's future (None for a `PREPARE`), held
    weakly (the caller's task holds it while it waits, and a future holds its event loop, which must not outlive its
    last user through a statement in flight), the adapters that load its rows, and what came so far."""

    __slots__ = ("answered", "future", "outcome", "preparing", "sent", "tx")

    def __init__(
        self, future: asyncio.Future[list[tuple[Any, ...]]] | None, tx: abc.Transformer | None, sent: float
    ) -> None:
        self.future = None if future is None else weakref.ref(future)
        self.tx = tx
        self.sent = sent  # loop time
        self.outcome = _Outcome()
        self.answered = False  # a result came: the next empty one ends the statement
        self.preparing: tuple[tuple[bytes, tuple[int, ...]], bytes] | None = None  # a PREPARE's statement and name

    def waiter(self) -> asyncio.Future[list[tuple[Any, ...]]] | None:
        """The caller's future, while the caller still waits for it."""
        future = None if self.future is None else self.future()
        return None if future is None or future.done() else future


SYNC = None  # a synchronization point in `PgPipeline._pending`


class PgPipeline(_OnLoop):
    """One connection in libpq's pipeline mode, shared by every reader of an event loop: each statement is sent as
    soon as it is asked for, with its own synchronization point (an error fails that statement only), without
    waiting for those before it to be answered. The server then runs the statements that queued up meanwhile back
    to back and answers them together: one server process, woken once for many reads, where a connection per read
    woke one per read (see `benches/pg_roundtrip.py`, row `in flight`). Results come back in the order sent and go
    to each caller's future.

    A statement is prepared the first time it is sent, and its name used only once the server has confirmed the
    PREPARE (a statement sent again meanwhile goes unprepared); names are never reused. A caller that stops waiting
    (a cancelled request) leaves its statement to be answered and dropped; the connection stays fit. A connection
    lost, or prepared statements made stale, fail every statement in flight, and `usable` is False from then on: the
    owner opens another. At most `MAX_PIPED` statements wait at once (`Unsent` beyond: the caller takes another
    path). Made by `open`."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(conn, loop)
        self.pgconn.enter_pipeline_mode()
        self._preparing: dict[tuple[bytes, tuple[int, ...]], bytes] = {}  # sent, not yet confirmed
        self._names = 0  # names given so far: each is new
        self._pending: collections.deque[_Piped | None] = collections.deque()
        self._waiting = 0
        self._failed: psycopg.Error | None = None  # what failed before the next synchronization point
        self._broken = False

    @property
    def usable(self) -> bool:
        return self._watched and not self._broken and self.pgconn.status == pq.ConnStatus.OK

    @property
    def waiting(self) -> int:
        """Callers' statements sent and not yet answered."""
        return self._waiting

    @property
    def full(self) -> bool:
        """`MAX_PIPED` statements wait already: another is refused (`Unsent`)."""
        return self._waiting >= MAX_PIPED

    @property
    def busy_since(self) -> float:
        """When the oldest statement still in flight was sent (loop time); infinity when none is. The statements
        are answered in order: the later this is, the sooner a statement sent now is answered."""
        for piped in self._pending:
            if piped is not None:
                return piped.sent
        return math.inf

    def close(self) -> None:
        """Closed at once; every statement in flight fails."""
        try:
            self._fail(psycopg.OperationalError("the connection was closed"))
        finally:
            self.pgconn.finish()

    async def rows(self, sql: str, params: Mapping[str, Any], text_times: bool = False) -> list[tuple[Any, ...]]:
        """As `PgConnection.rows`: one statement, prepared on this connection the first time it is sent; its rows."""
        if not self.usable or self._waiting >= MAX_PIPED:
            raise Unsent("the connection is not fit for another statement")
        converted = ServerQuery(self._tx, sql, params)
        key = (converted.query, tuple(converted.types))
        name = self._prepared.get(key)
        pgconn = self.pgconn
        loop = self._loop
        future: asyncio.Future[list[tuple[Any, ...]]] = loop.create_future()
        piped = _Piped(future, self._tx_text_times if text_times else self._tx, loop.time())
        room = len(self._prepared) + len(self._preparing) < MAX_PREPARED
        try:
            if name is None and key not in self._preparing and room:
                self._names += 1
                name = self._preparing[key] = b"sl_%d" % self._names
                pgconn.send_prepare(name, converted.query, param_types=converted.types)
                preparing = _Piped(None, None, piped.sent)
                preparing.preparing = (key, name)
                self._pending.append(preparing)
            if name is None:
                pgconn.send_query_params(converted.query, converted.params, converted.types, converted.formats, TEXT)
            else:
                pgconn.send_query_prepared(name, converted.params, converted.formats, TEXT)
            self._pending.append(piped)
            self._waiting += 1
            pgconn.pipeline_sync()  # and sends what it can of the buffer
            self._pending.append(SYNC)
            if pgconn.flush():
                self._write_later()
        except psycopg.Error as exc:  # the connection is gone: what is in flight with it
            future.cancel()  # raised here, not through the future
            self._fail(exc)
            raise
        return await future

    def _write_later(self) -> None:
        if not self._writing:
            self._writing = True
            self._loop.add_writer(self._fd, self._writable)

    def _writable(self) -> None:
        try:
            if self.pgconn.flush():
                return
        except psycopg.Error as exc:
            self._fail(exc)
        self._writing = False
        with contextlib.suppress(ReferenceError):
            self._loop.remove_writer(self._fd)

    def _readable(self) -> None:
        pgconn = self.pgconn
        pending = self._pending
        try:
            pgconn.consume_input()
            while not pgconn.is_busy():
                result = pgconn.get_result()
                head = pending[0] if pending else None
                if result is None:  # the end of a statement's results, or nothing more yet
                    if head is None or not head.answered:
                        break
                    pending.popleft()
                    self._finish(head)
                elif result.status == pq.ExecStatus.PIPELINE_SYNC:
                    if head is not None:  # a statement missing its end: the pipeline is not what was sent
                        raise psycopg.OperationalError("the server's answers are out of step")
                    pending.popleft()
                    self._failed = None
                elif head is None:
                    raise psycopg.OperationalError("an answer to nothing sent")
                else:
                    head.answered = True
                    self._take(head, result)
        except psycopg.Error as exc:
            self._fail(exc)

    def _take(self, piped: _Piped, result: pq.abc.PGresult) -> None:
        status = result.status
        if piped.outcome.error is not None:
            pass
        elif status in ROWS and piped.tx is not None:
            if piped.waiter() is not None:  # nobody waits any more: not loaded
                try:
                    piped.tx.set_pgresult(result)
                    piped.outcome.rows = piped.tx.load_rows(0, result.ntuples, tuple)
                except Exception as exc:  # a value the adapters refuse: this statement's failure, no other's
                    piped.outcome.error = exc if isinstance(exc, psycopg.Error) else _unloadable(exc)
        elif status == pq.ExecStatus.PIPELINE_ABORTED:  # not run: its PREPARE failed
            piped.outcome.error = self._failed or psycopg.OperationalError("not run: the statement before it failed")
        elif status not in DONE:
            piped.outcome.error = self._failed = error_from_result(result)

    def _finish(self, piped: _Piped) -> None:
        error = piped.outcome.error
        if piped.preparing is not None:
            key, name = piped.preparing
            self._preparing.pop(key, None)
            if error is None:
                self._prepared[key] = name
            return
        if error is not None and error.sqlstate in STALE_PREPARED:
            self._broken = True  # every prepared statement is suspect: the owner opens another connection
        self._waiting -= 1
        future = piped.waiter()
        if future is None:
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(piped.outcome.rows)

    def _fail(self, exc: psycopg.Error) -> None:
        """The connection is done for: every statement in flight fails with `exc`, and the loop stops watching its
        socket (a connection the server closed stays readable)."""
        self._broken = True
        self._waiting = 0
        while self._pending:
            piped = self._pending.popleft()
            future = None if piped is None else piped.waiter()
            if future is not None and not future.get_loop().is_closed():
                future.set_exception(exc)
        self._unwatch()


def _unloadable(exc: Exception) -> psycopg.Error:
    error = psycopg.DataError(f"a value could not be loaded: {type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error
