"""Small reads answered on the event loop, with no thread hop: `LoopReader` on SQLite, `PgLoopReader` on PostgreSQL.

A primary-key read or a page of 20 rows down an index is little work for SQLite; handing it to a worker thread and
back costs several times that, and SQLAlchemy's connection checkout around it more again (in process, `get_link`
through a pooled connection took many times what it took through a plain cursor; `benches/inprocess.py` measures
the requests). So the hottest reads (`GET /links/{id}`, a page of `GET /links` in creation order, with or without
`q`, and the hits of `/search`) try this first, and go to a thread (the ordinary path) whenever this cannot answer
at once. On SQLite:

- Nothing here ever waits. The connection's busy timeout is 0: in WAL mode readers are not blocked by writers,
  and in the rare moments a reader would be (a checkpoint resetting the log), SQLite says so at once and the
  request takes the thread path, which waits like any other.
- The work is bounded. A statement that runs past `STEP_BUDGET` virtual-machine steps is interrupted (SQLite's
  progress handler), so a shape that would scan or sort a large account is answered from a thread instead.
- It is read-only (`PRAGMA query_only`), one connection per worker process, used by one caller at a time: if two
  event loops in one process meet here (tests), the second takes the thread path.

On PostgreSQL the read is awaited on a psycopg connection driven through libpq in pipeline mode (`pgwire.PgPipeline`,
see `PgLoopReader`): the loop serves other requests meanwhile, and the reads of many requests share a connection,
whose server process answers those that queued up together.

Statements are the services' own SQLAlchemy Core statements, compiled once by the engine's dialect, so both paths
read exactly the same rows.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import math
import sqlite3
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import psycopg
from sqlalchemy import Dialect, Executable, Select
from sqlalchemy.sql.compiler import ExpandedState, SQLCompiler
from sqlalchemy.sql.dml import ValuesBase
from sqlalchemy.sql.elements import ClauseElement
from sqlalchemy.sql.selectable import ReturnsRows

from slugline.common.clock import isoformat
from slugline.common.deadline import within

if TYPE_CHECKING:  # pgwire (libpq through psycopg) is imported by the PostgreSQL reader only, never on SQLite
    from slugline.storage.pgwire import PgConnection, PgPipeline

# Virtual-machine steps one statement may take here before it is interrupted, in ticks of TICK_STEPS. A primary-key
# read takes ~50 and a 100-row page down an index a few thousand; counting or sorting a large account takes hundreds
# of thousands. (SQLite counts a cached statement's steps across its runs, so the first tick of a run may come
# early: a run is allowed one tick more than its budget.)
TICK_STEPS = 1_000
STEP_BUDGET = 20_000
READ_SECONDS = 3  # a read on PostgreSQL that takes longer is given up (and the thread path takes over)
WAIT_SECONDS = 1  # how long a read on PostgreSQL waits for one of the loop's connections before taking a thread
PIPES = 2  # pipelined connections per worker and event loop, for the reads on PostgreSQL (`pgwire.PgPipeline`)
# A page further in than this many rows is read on a connection of its own, not in a pipeline: the rows skipped are
# read and thrown away, and every statement behind it in the pipeline would wait for them.
MAX_PIPED_OFFSET = 1_000
PIPE_RETRY_SECONDS = 1.0  # after a pipeline could not be opened, none is tried for this long (the thread path answers)
STORED_LENGTH = len("2024-05-01 12:00:00.000000")
PG_UTC_LENGTH = len("2024-05-01 12:00:00+00")


@dataclass(frozen=True)
class LoopStatement:
    """A Core statement as the driver's SQL, with its positional parameters named."""

    sql: str
    names: tuple[str, ...]
    fixed: dict[str, Any]  # values the statement itself holds (an IN list, the 1 of `version + 1`)
    # The column types' conversions for the driver (SQLite: a timestamp to its text, JSON to text), by name.
    processors: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    # The conversions of the columns it returns, from the driver's values (SQLite: text to a timestamp, to JSON).
    results: tuple[Callable[[Any], Any] | None, ...] = ()

    def params(self, binds: dict[str, Any]) -> tuple[Any, ...]:
        values = tuple(binds[name] if name in binds else self.fixed[name] for name in self.names)
        if not self.processors:
            return values
        return tuple(
            self.processors[name](value) if name in self.processors else value
            for name, value in zip(self.names, values, strict=True)
        )

    def named(self, binds: dict[str, Any]) -> dict[str, Any]:
        """`binds` for a driver that takes named parameters, with the statement's own values and the conversions."""
        values = {**self.fixed, **binds}
        for name, process in self.processors.items():
            values[name] = process(values[name])
        return values

    def row(self, found: tuple[Any, ...]) -> tuple[Any, ...]:
        """A row as SQLAlchemy would give it (`results` applied)."""
        if not self.results:
            return found
        return tuple(
            value if process is None or value is None else process(value)
            for process, value in zip(self.results, found, strict=True)
        )


def _plain_value(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


def _compiled(dialect: Dialect, statement: Executable, bound: frozenset[str]) -> tuple[SQLCompiler, ExpandedState]:
    # `column_keys`: an INSERT or UPDATE given no values takes them from these names, as `execute` would (given to a
    # SELECT, they would be taken for the values of the DML in its CTEs, which name theirs).
    keys = sorted(bound) if isinstance(statement, ValuesBase) else None
    compiled = cast(SQLCompiler, cast(ClauseElement, statement).compile(dialect=dialect, column_keys=keys))
    return compiled, compiled.construct_expanded_state(dict.fromkeys(bound))


@functools.lru_cache(maxsize=128)
def plain(dialect: Dialect, statement: Executable, bound: frozenset[str]) -> LoopStatement:
    """`statement` for the driver, given the names the caller binds (the rest, IN lists, are expanded here)."""
    compiled, expanded = _compiled(dialect, statement, bound)
    names = tuple(expanded.positiontup or ())
    fixed = {
        name: _plain_value(value)
        for name, value in zip(names, expanded.positional_parameters, strict=True)
        if name not in bound
    }
    return LoopStatement(expanded.statement, names, fixed, *_conversions(dialect, compiled, bound))


def _conversions(
    dialect: Dialect, compiled: SQLCompiler, bound: frozenset[str]
) -> tuple[dict[str, Callable[[Any], Any]], tuple[Callable[[Any], Any] | None, ...]]:
    """The column types' conversions of the bound values, and of the columns returned (none when all are None), by
    SQLAlchemy's public type API: each type's implementation for the dialect (`dialect_impl`) and its
    `bind_processor` and `result_processor`, as the engine's own execution takes them. Computed once per statement
    and set of names (`plain` and `named` remember them), so a read pays nothing for them."""
    processors: dict[str, Callable[[Any], Any]] = {}
    for name in bound:
        bind = compiled.binds.get(name)
        if bind is not None and (process := bind.type.dialect_impl(dialect).bind_processor(dialect)) is not None:
            processors[name] = process
    statement = compiled.statement
    returned = statement.exported_columns if isinstance(statement, ReturnsRows) else ()
    results = tuple(column.type.dialect_impl(dialect).result_processor(dialect, None) for column in returned)
    return processors, results if any(results) else ()


@functools.lru_cache(maxsize=128)
def named(dialect: Dialect, statement: Executable, bound: frozenset[str]) -> LoopStatement:
    """`plain` for drivers that take named parameters (psycopg): `names` is empty, `fixed` holds the IN lists."""
    compiled, expanded = _compiled(dialect, statement, bound)
    fixed = {name: _plain_value(value) for name, value in expanded.parameters.items() if name not in bound}
    return LoopStatement(expanded.statement, (), fixed, *_conversions(dialect, compiled, bound))


class LoopReader:
    """One read-only connection to the SQLite file, for reads that must not wait."""

    def __init__(self, path: Path, dialect: Dialect) -> None:
        self.path = path
        self.dialect = dialect
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self.declined = 0  # reads handed to a thread because this could not answer at once (for tests)
        self._ticks = 0

    def _tick(self) -> bool:
        self._ticks += 1
        return self._ticks > STEP_BUDGET // TICK_STEPS  # True interrupts the statement

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=0)
            conn.execute("PRAGMA busy_timeout=0")
            conn.execute("PRAGMA query_only=ON")
            conn.set_progress_handler(self._tick, TICK_STEPS)
            self._conn = conn
        return self._conn

    def rows(self, statement: Select[*tuple[Any, ...]], binds: dict[str, Any]) -> list[Any] | None:
        """The statement's rows, or None when they cannot be had at once (then read them on a thread)."""
        if not self._lock.acquire(blocking=False):
            self.declined += 1
            return None
        try:
            query = plain(self.dialect, statement, frozenset(binds))
            self._ticks = 0
            return self._connection().execute(query.sql, query.params(binds)).fetchall()
        except sqlite3.Error:  # busy, interrupted past its budget, or anything else: the thread path will tell
            self.declined += 1
            return None
        finally:
            self._lock.release()

    async def fetch(self, statement: Select[*tuple[Any, ...]], binds: dict[str, Any]) -> list[Any] | None:
        """`rows`, for callers that also take the PostgreSQL reader (which waits for its answers)."""
        return self.rows(statement, binds)

    def together(self, reads: Sequence[tuple[Select[*tuple[Any, ...]], dict[str, Any]]]) -> list[list[Any]] | None:
        """The rows of several statements from one snapshot of the file (one read transaction), so a write that
        commits between them cannot show in one and not the other; None as for `rows`."""
        if not self._lock.acquire(blocking=False):
            self.declined += 1
            return None
        conn = None
        try:
            conn = self._connection()
            self._ticks = 0  # one budget for them all
            conn.execute("BEGIN")
            found = []
            for statement, binds in reads:
                query = plain(self.dialect, statement, frozenset(binds))
                found.append(conn.execute(query.sql, query.params(binds)).fetchall())
            return found
        except sqlite3.Error:
            self.declined += 1
            return None
        finally:
            if conn is not None and conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")  # nothing was written: the end of the snapshot
            self._lock.release()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class _Connections:
    """One event loop's connections: each is registered with the loop that opened it."""

    def __init__(self) -> None:
        self.idle: list[PgConnection] = []
        self.open = 0
        self.closed = False  # the reader closed this loop's connections: any given back from now on is closed
        # Callers waiting for a connection, first come first served: each is handed one as it is given back (or
        # None, a slot freed by a closed connection, which the caller then opens itself).
        self.waiting: collections.deque[asyncio.Future[PgConnection | None]] = collections.deque()
        # Each opened when first needed: while it opens, a weak reference to the task opening it (a task holds its
        # loop, and this loop's connections must not keep it from being collected, see `PgLoopReader._pool`; the
        # loop keeps the task while it runs), then the pipeline itself.
        self.pipes: list[PgPipeline | weakref.ref[asyncio.Task[PgPipeline]] | None] = [None] * PIPES
        self.failed_at = -math.inf  # when a pipeline last could not be opened (monotonic clock)

    def least_busy(self) -> tuple[PgPipeline | None, int | None, asyncio.Task[PgPipeline] | None]:
        """The open pipeline with room whose oldest read in flight is the most recent, a free slot, and one being
        opened (each None if there is none); pipelines no longer usable are closed, and their slots freed."""
        best: PgPipeline | None = None
        free: int | None = None
        opening: asyncio.Task[PgPipeline] | None = None
        for index, slot in enumerate(self.pipes):
            if isinstance(slot, weakref.ref):
                task = slot()
                if task is not None and not task.done():
                    opening = task
                    continue
                slot = None if task is None else self.opened(index, task)
                self.pipes[index] = slot
            if slot is not None and not slot.usable:
                slot.close()
                self.pipes[index] = slot = None
            if slot is None:
                free = index if free is None else free
            elif not slot.full and (best is None or slot.busy_since > best.busy_since):
                best = slot
        return best, free, opening

    def opened(self, index: int, task: asyncio.Task[PgPipeline]) -> PgPipeline | None:
        """The slot of a pipeline whose opening ended takes the pipeline (None: it could not be opened)."""
        pipe = None if task.cancelled() or task.exception() is not None else task.result()
        slot = self.pipes[index]
        if not isinstance(slot, weakref.ref) or slot() is not task:  # taken already, or the connections closed
            if pipe is not None and self.closed:
                pipe.close()
            return None
        self.pipes[index] = pipe
        if pipe is None:
            self.failed_at = time.monotonic()
        return pipe

    def close(self) -> None:
        """Closes the idle connections and the pipelines now (the reads in flight on them are declined), and each
        connection in use as it is given back. Also called once the loop is gone (see `PgLoopReader._pool`)."""
        self.closed = True
        for conn in self.idle:
            conn.close()
        self.idle.clear()
        for index, slot in enumerate(self.pipes):
            self.pipes[index] = None
            if isinstance(slot, weakref.ref):  # one being opened
                if (task := slot()) is not None and not task.done():
                    with contextlib.suppress(RuntimeError):  # its loop is closed: it will never open anything
                        task.cancel()
            elif slot is not None:
                slot.close()

    def release(self, conn: PgConnection | None) -> None:
        """A connection given back (None: one closed, so its slot is free), to the first caller still waiting."""
        if self.closed and conn is not None:
            conn.close()
            conn = None
        while self.waiting:
            turn = self.waiting.popleft()
            if not turn.done():
                turn.set_result(conn)
                return
        if conn is None:
            self.open -= 1
        else:
            self.idle.append(conn)


class PgLoopReader:
    """The same small reads on PostgreSQL, awaited on the event loop: the loop serves other requests while the
    server answers, and no worker thread or pooled connection is held.

    The reads go through `PIPES` pipelined connections per worker and event loop (`pgwire.PgPipeline`), opened as needed
    and kept: each read is sent at once on the one whose oldest read in flight is the most recent (an idle one
    first), and the server answers the reads that queued up together. A page more than `MAX_PIPED_OFFSET` rows in,
    and the loop's writes (`loopwrite`), take one of at most `size` plain connections (`PgConnection`) instead, one
    caller at a time. With all of those busy a read
    waits on the loop for the next one given back, for at most `WAIT_SECONDS` (a wait costs the loop nothing, where
    the thread path would hold a thread and a pooled connection, and check the connection first); after that it is
    declined and takes the thread path. A read that fails or takes longer than `READ_SECONDS` is declined too, and
    its connection closed (a pipeline's with it: every read behind one past its time would wait for it too); the
    thread path then answers, or gives the 503 a database that is away earns."""

    def __init__(self, url: str, dialect: Dialect, size: int, wait: float = WAIT_SECONDS) -> None:
        self.url = url
        self.dialect = dialect
        self.size = size
        self.wait = wait
        self.piped = True  # reads go through the pipelines (False: on the plain connections, as deep pages do)
        self.declined = 0
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Connections] = weakref.WeakKeyDictionary()

    async def _connection(self, pool: _Connections) -> PgConnection | None:
        while pool.idle:
            kept = pool.idle.pop()
            if kept.usable:
                return kept
            kept.close()  # the server closed it while it was idle (a restart, an idle timeout, a terminated backend)
            pool.open -= 1
        if pool.open < self.size:
            pool.open += 1
            return await self._open(pool)
        if not pool.open or self.wait <= 0:
            return None
        turn: asyncio.Future[PgConnection | None] = asyncio.get_running_loop().create_future()
        pool.waiting.append(turn)
        try:
            async with asyncio.timeout(self.wait):
                conn = await turn
        except BaseException as exc:  # the wait ran out, or the request was cancelled
            if not turn.cancel() and not turn.cancelled():
                pool.release(turn.result())  # handed one just as the wait ended: it goes to the next caller
            if isinstance(exc, TimeoutError):
                return None
            raise
        return conn if conn is not None else await self._open(pool)

    async def _open(self, pool: _Connections) -> PgConnection:
        """A new connection in a slot already counted in `pool.open`; the slot is freed if it cannot be opened."""
        from slugline.storage.pgwire import PgConnection

        try:
            return await PgConnection.open(self.url, connect_timeout=READ_SECONDS, statement_timeout=READ_SECONDS)
        except BaseException:
            pool.release(None)
            raise

    def _pool(self) -> _Connections:
        loop = asyncio.get_running_loop()
        pool = self._loops.get(loop)
        if pool is None:
            pool = self._loops[loop] = _Connections()
            weakref.finalize(loop, pool.close)  # a loop that ends without `aclose` (a test's, a thread's) closes them
        return pool

    async def _pipe(self, pool: _Connections) -> PgPipeline | None:
        """The pipeline with room whose oldest read in flight is the most recent (an idle one first); a further one
        is opened, and waited for, when every open one is busy (not within `PIPE_RETRY_SECONDS` of a failure)."""
        best, free, opening = pool.least_busy()
        if best is not None and (not best.waiting or free is None or opening is not None):
            return best
        if free is not None and opening is None and time.monotonic() - pool.failed_at >= PIPE_RETRY_SECONDS:
            from slugline.storage.pgwire import PgPipeline

            opening = asyncio.get_running_loop().create_task(
                PgPipeline.open(self.url, connect_timeout=READ_SECONDS, statement_timeout=READ_SECONDS)
            )
            opening.add_done_callback(functools.partial(pool.opened, free))
            pool.pipes[free] = weakref.ref(opening)
        if opening is None:
            return best
        try:  # an idle one in a few milliseconds, rather than behind reads of unknown length
            return await asyncio.shield(opening)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            return best  # the opening was cancelled, not this read: the reader's connections were closed
        except (psycopg.Error, OSError):
            if best is None:
                raise
            return best

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[PgConnection | None]:
        """One of this event loop's connections (None: none came in time), given back afterwards if it is idle and
        usable, closed otherwise (see `PgConnection.usable`): a statement cut off (a lost connection, a timeout, a
        cancelled request) leaves it in an unknown state, and it is never reused."""
        pool = self._pool()
        try:
            conn = await self._connection(pool)
        except (psycopg.Error, OSError):  # none could be opened: nothing was sent, the thread path will tell
            conn = None
        if conn is None:
            yield None
            return
        try:
            yield conn
        finally:
            if conn.usable:
                pool.release(conn)
            else:  # closed at once, without waiting: a cancelled request must not wait on the server
                conn.close()
                pool.release(None)

    async def fetch(self, statement: Select[*tuple[Any, ...]], binds: dict[str, Any]) -> list[Any] | None:
        """The statement's rows, or None when they cannot be had now (then read them on a thread). Timestamps come
        as text, as SQLite's do (see `iso`)."""
        query = named(self.dialect, statement, frozenset(binds))
        if self.piped and binds.get("offset", 0) <= MAX_PIPED_OFFSET:
            return await self._fetch_piped(query.sql, query.named(binds))
        found = None
        try:
            async with self.connection() as conn:
                if conn is not None:
                    with within(READ_SECONDS):
                        found = await conn.rows(query.sql, query.named(binds), text_times=True)
        except (psycopg.Error, OSError, TimeoutError):
            pass
        if found is None:
            self.declined += 1
        return found

    async def _fetch_piped(self, sql: str, values: dict[str, Any]) -> list[Any] | None:
        pool = self._pool()
        pipe: PgPipeline | None = None
        found = None
        try:
            pipe = await self._pipe(pool)  # an opening is bounded by its own connect timeout
            if pipe is not None:
                with within(READ_SECONDS):
                    found = await pipe.rows(sql, values, text_times=True)
        except TimeoutError:
            if pipe is not None:  # every read behind this one would wait for it as long: they take the thread path
                pipe.close()
        except (psycopg.Error, OSError):
            pass
        if found is None:
            self.declined += 1
        return found

    async def aclose(self) -> None:
        """Closes this event loop's idle connections and pipelines, and each connection in use as it is given
        back."""
        pool = self._loops.pop(asyncio.get_running_loop(), None)
        if pool is not None:
            pool.close()

    def close(self) -> None:
        """Forgets the connections (they close when their event loop is collected, or when the process ends)."""
        self._loops.clear()


def iso(text: str | None) -> str | None:
    """A timestamp as SQLAlchemy stores it in SQLite (`YYYY-MM-DD HH:MM:SS.ffffff`, UTC) or as PostgreSQL sends it
    in UTC (`YYYY-MM-DD HH:MM:SS[.f…]+00`), in the API's form, the same as `clock.isoformat` gives for the parsed
    value; by slicing, where parsing was a third of a link's JSON."""
    if text is None:
        return None
    size = len(text)
    sqlite = size == STORED_LENGTH and text[19] == "."
    postgres = size >= PG_UTC_LENGTH and text.endswith("+00") and (size == PG_UTC_LENGTH or text[19] == ".")
    if (sqlite or postgres) and text[10] == " " and text[13] == ":" and text[16] == ":":
        return f"{text[:10]}T{text[11:19]}Z"
    return isoformat(datetime.fromisoformat(text))
