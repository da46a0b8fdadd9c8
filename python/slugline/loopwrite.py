"""Small link writes made on the event loop, with no thread hop: `LoopWriter` on SQLite, `PgLoopWriter` on
PostgreSQL.

A link's create is three short statements and a commit (the row, the account's version bump, the change-feed row):
~100 µs of SQLite work in WAL mode, where a commit does not sync the disk. Made on a worker thread, the same create
took ~3.7 ms of the worker's time under load: the thread waits for the process's write lock, then for the GIL after
each statement (other threads and the loop hold it meanwhile), all while it holds the lock every other writer waits
for. So a create tries this first, and takes the thread path whenever this cannot write at once:

- Nothing here ever waits. The file's write lock (`db.WriterLock`, shared by every worker) is taken only if it is
  free, and the file itself with `BEGIN IMMEDIATE` and a busy timeout of 0: a writer in another thread or process
  sends the write to the thread path, which queues like any other.
- Nothing here syncs the disk. The connection never checkpoints the write-ahead log itself
  (`wal_autocheckpoint=0`); every `CHECKPOINT_EVERY` commits a passive checkpoint runs on a thread instead.
- A write that fails is rolled back whole. A constraint it breaks (a taken slug) raises `Taken`; any other error
  (a full disk, a read-only file) declines it, and the thread path makes it again or gives the 503.

On PostgreSQL the write's statements are awaited on one of the loop reader's psycopg async connections, in one
transaction (see `PgLoopWriter`): the loop serves other requests meanwhile.

A write is a coroutine function given a `Run` (one statement, its rows). The services write each transaction once,
for every path: here it is awaited; on a thread, and on SQLite's connection (which never waits), `drive` runs it to
its end at once. Statements are the services' own SQLAlchemy Core statements, compiled by the engine's dialect
(`loopread.plain` and `named`), with the column types' conversions, so every path writes the same values.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sqlite3
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from sqlalchemy import Dialect, Executable
from sqlalchemy.orm import Session

from slugline.loopread import READ_SECONDS, PgLoopReader, named, plain

if TYPE_CHECKING:
    from slugline.db import WriterLock

T = TypeVar("T")
# Runs one statement in the write's transaction: its rows (none for a statement without RETURNING).
Run = Callable[[Executable, dict[str, Any]], Awaitable[Sequence[Any]]]
Work = Callable[[Run], Coroutine[Any, Any, T]]
CHECKPOINT_EVERY = 500  # commits between checkpoints of the log (SQLite's own default is every 1,000 pages)


def session_run(session: Session) -> Run:
    """A `Run` on the session's connection, in its transaction (the thread path's): it never waits."""
    conn = session.connection()

    async def run(statement: Executable, binds: dict[str, Any]) -> Sequence[Any]:
        result = conn.execute(statement, binds)
        return result.all() if result.returns_rows else ()

    return run


def drive(write: Coroutine[Any, Any, T]) -> T:
    """Runs a write whose statements never wait (a session's, SQLite's) to its end, with no event loop."""
    try:
        write.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    write.close()
    raise RuntimeError("a write waited where nothing may wait")


class CommitUnknown(Exception):
    """The connection failed while its COMMIT was under way: the write may have been made. Answered like a store
    that is away (503), never made again on another path."""


class Taken(Exception):
    """A unique or foreign-key constraint refused the write; nothing was written."""


class LoopWriter:
    """One read-write connection to the SQLite file, for writes that must not wait."""

    def __init__(self, path: Path, dialect: Dialect, writer: WriterLock) -> None:
        self.path = path
        self.dialect = dialect
        self._writer = writer  # the file's write lock (`Database.writing` queues on it)
        self._conn: sqlite3.Connection | None = None
        self._commits = 0
        self._checkpointing = False
        self.checkpointed = 0  # frames of the log the last checkpoint copied into the file (for tests)
        self.declined = 0  # writes handed to a thread because this could not make them at once (for tests)

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=0)
            for pragma in ("busy_timeout=0", "foreign_keys=ON", "synchronous=NORMAL", "wal_autocheckpoint=0"):
                conn.execute(f"PRAGMA {pragma}")
            self._conn = conn
        return self._conn

    async def _run(self, statement: Executable, binds: dict[str, Any]) -> list[Any]:
        query = plain(self.dialect, statement, frozenset(binds))
        assert self._conn is not None
        found = self._conn.execute(query.sql, query.params(binds)).fetchall()
        return [query.row(row) for row in found] if query.results else found

    async def write(self, work: Work[T]) -> T | None:
        """`work(run)` in one transaction, committed: its result; None when the write cannot be made at once (then
        make it on a thread). `Taken` when a constraint refused it."""
        if not self._writer.acquire_now():
            self.declined += 1
            return None
        try:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
                done = drive(work(self._run))
                conn.execute("COMMIT")
            except sqlite3.IntegrityError as exc:
                raise Taken(str(exc)) from exc
            except sqlite3.Error:  # busy, read-only, full: the thread path will tell
                self.declined += 1
                return None
            finally:
                if conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
        finally:
            self._writer.release()
        self._commits += 1
        if self._commits % CHECKPOINT_EVERY == 0:
            self._checkpoint_soon()
        return done

    def _checkpoint_soon(self) -> None:
        """A passive checkpoint on a thread: copies what it can of the log into the file, waiting for no one."""
        if self._checkpointing:
            return
        self._checkpointing = True
        try:
            asyncio.get_running_loop().run_in_executor(None, self._checkpoint)
        except RuntimeError:  # no running loop (a direct call): here, then
            self._checkpoint()

    def _checkpoint(self) -> None:
        try:
            with contextlib.closing(sqlite3.connect(self.path, timeout=0)) as conn:
                self.checkpointed = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[2]
        except sqlite3.Error:
            pass  # the next one, or any other connection's automatic checkpoint, will do it
        finally:
            self._checkpointing = False

    def close(self) -> None:
        with self._writer:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class PgLoopWriter:
    """The same writes on PostgreSQL, awaited on the loop reader's connections (`PgLoopReader`): at most its
    `size` per worker and event loop, never queued for. With none idle, or an error or a `READ_SECONDS` wait before
    the COMMIT, the transaction is rolled back and the write declined (the thread path makes it). A failure during
    the COMMIT raises `CommitUnknown`: the write may have been made, so it is not made again."""

    def __init__(self, reader: PgLoopReader) -> None:
        self.reader = reader
        self.declined = 0

    async def write(self, work: Work[T]) -> T | None:
        committing = False
        try:
            async with self.reader.connection() as conn:
                if conn is None:
                    self.declined += 1
                    return None
                run = functools.partial(self._run, conn)
                async with asyncio.timeout(READ_SECONDS), conn.transaction():
                    done = await work(run)
                    committing = True  # the block's end sends the COMMIT
                return done
        except psycopg.IntegrityError as exc:
            raise Taken(str(exc)) from exc
        except (psycopg.Error, OSError, TimeoutError) as exc:
            if committing:
                raise CommitUnknown(str(exc)) from exc
            self.declined += 1
            return None

    async def _run(self, conn: psycopg.AsyncConnection[Any], statement: Executable, binds: dict[str, Any]) -> list[Any]:
        query = named(self.reader.dialect, statement, frozenset(binds))
        cursor = await conn.execute(query.sql, query.named(binds), prepare=True)
        return await cursor.fetchall() if cursor.description is not None else []
