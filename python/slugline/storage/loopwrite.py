"""Small link writes made on the event loop, with no thread hop: `LoopWriter` on SQLite, `PgLoopWriter` on
PostgreSQL.

A link's update is three short statements and a commit (the row read, the row written, the account's version bump
with the change-feed row: `searchfeed.bump`), a create one statement in autocommit (`LoopWriter.write_at_once`; SQLite's
triggers bump the version): little SQLite work in WAL mode, where a commit does not sync the disk. Made on a worker
thread, the same create took many times as much of the worker's time under load: the thread waits for the process's
write lock, then for the GIL after each statement (other threads and the loop hold it meanwhile), all while it holds
the lock every other writer waits for. So a write tries this first, and takes the thread path whenever this cannot
write at once:

- The loop never waits. The file's write lock (`db.WriterLock`, shared by every worker) is taken at once if it is
  free; if not, one thread of the worker's own waits for it (up to `LOCK_WAIT_SECONDS`, then the write goes to the
  thread path) and hands it to the write, which then runs on the loop. Sent to the thread path instead, as every
  write was while another worker wrote, a write held the lock several times as long as one made here holds it (its
  thread waiting for the GIL after each statement): two workers updating made fewer updates than one worker did.
  The file itself is taken with `BEGIN IMMEDIATE` (or by the lone statement) and a busy timeout of 0: a writer that
  does not take the lock (the click flusher) sends the write to the thread path.
- Nothing here syncs the disk. The connection never checkpoints the write-ahead log itself
  (`wal_autocheckpoint=0`); every `CHECKPOINT_EVERY` commits a passive checkpoint runs on a thread instead.
- A write that fails is rolled back whole. A constraint it breaks (a taken slug) raises `Taken`; any other error
  (a full disk, a read-only file) declines it, and the thread path makes it again or gives the 503.

On PostgreSQL the write's statements are awaited on one of the loop reader's connections (`pgwire.PgConnection`), in one
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
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from sqlalchemy import Dialect, Executable
from sqlalchemy.orm import Session

from slugline.common.deadline import within
from slugline.storage.loopread import READ_SECONDS, PgLoopReader, named, plain

if TYPE_CHECKING:
    from slugline.storage.db import WriterLock
    from slugline.storage.pgwire import PgConnection

T = TypeVar("T")
# Runs one statement in the write's transaction: its rows (none for a statement without RETURNING).
Run = Callable[[Executable, dict[str, Any]], Awaitable[Sequence[Any]]]
Work = Callable[[Run], Coroutine[Any, Any, T]]
Statement = tuple[Executable, dict[str, Any]]  # a statement and its values
CHECKPOINT_EVERY = 500  # commits between checkpoints of the log (SQLite's own default is every 1,000 pages)
LOCK_WAIT_SECONDS = 1.0  # a write waits this long for the file's write lock, then goes to the thread path


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
        self._waiter: ThreadPoolExecutor | None = None  # the one thread that waits for the write lock

    def _connection(self) -> sqlite3.Connection | None:
        """The worker's own connection, opened the first time; None if it cannot be opened now (no file descriptor
        left, a file that cannot be opened): the thread path will tell."""
        if self._conn is None:
            try:
                conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=0)
            except sqlite3.Error:
                return None
            try:
                for pragma in ("busy_timeout=0", "foreign_keys=ON", "synchronous=NORMAL", "wal_autocheckpoint=0"):
                    conn.execute(f"PRAGMA {pragma}")
            except sqlite3.Error:
                conn.close()
                return None
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

        def transaction(conn: sqlite3.Connection) -> T:
            conn.execute("BEGIN IMMEDIATE")
            done = drive(work(self._run))
            conn.execute("COMMIT")
            return done

        return await self._made(transaction)

    async def write_at_once(self, statement: Executable, binds: dict[str, Any]) -> Sequence[Any] | None:
        """One statement as its own transaction (the connection is in autocommit), with no BEGIN or COMMIT: under
        load each statement costs a hand-over of the GIL (the driver lets go of it while SQLite works). Its rows;
        None when it cannot be made at once; `Taken` when a constraint refused it."""
        return await self._made(lambda _: drive(self._run(statement, binds)))

    async def _made(self, make: Callable[[sqlite3.Connection], T]) -> T | None:
        """`make(conn)` holding the file's write lock: its result; None (declined) when the lock or the connection
        cannot be had at once, or SQLite refuses with anything but a constraint (busy, read-only, full). A
        transaction `make` leaves open is rolled back."""
        if not await self._locked():
            self.declined += 1
            return None
        try:
            conn = self._connection()
            if conn is None:
                self.declined += 1
                return None
            try:
                done = make(conn)
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

    async def _locked(self) -> bool:
        """The file's write lock, taken at once or waited for on this writer's own thread; False past the wait."""
        if self._writer.acquire_now():
            return True
        if self._waiter is None:
            self._waiter = ThreadPoolExecutor(1, thread_name_prefix="slugline-write-lock")
        waited = self._waiter.submit(self._writer.acquire_by, time.monotonic() + LOCK_WAIT_SECONDS)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(waited), LOCK_WAIT_SECONDS)
        except TimeoutError:  # another worker is still writing: the thread path queues for it
            waited.add_done_callback(self._give_back)  # a lock taken after all is given back
            return False
        except asyncio.CancelledError:  # the request went away
            waited.add_done_callback(self._give_back)
            raise

    def _give_back(self, waited: Future[bool]) -> None:
        if not waited.cancelled() and waited.exception() is None and waited.result():
            self._writer.release()

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
        if self._waiter is not None:
            self._waiter.shutdown(wait=True)
            self._waiter = None
        with self._writer:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class PgLoopWriter:
    """The same writes on PostgreSQL, awaited on the loop reader's connections (`PgLoopReader`: at most its `size`
    per worker and event loop, waited for as a read waits). With none in time, or an error or a `READ_SECONDS` wait
    before the COMMIT, the transaction is rolled back and the write declined (the thread path makes it). A failure
    during the COMMIT raises `CommitUnknown`: the write may have been made, so it is not made again."""

    def __init__(self, reader: PgLoopReader) -> None:
        self.reader = reader
        self.declined = 0

    @property
    def dialect(self) -> Dialect:
        return self.reader.dialect

    async def write(self, work: Work[T]) -> T | None:
        committing = False
        try:
            async with self.reader.connection() as conn:
                if conn is None:
                    self.declined += 1
                    return None
                run = functools.partial(self._run, conn)
                with within(READ_SECONDS):
                    await conn.command(b"BEGIN")
                    try:
                        done = await work(run)
                    except Exception:
                        await _roll_back(conn)
                        raise
                    committing = True
                    await conn.command(b"COMMIT")
                return done
        except psycopg.IntegrityError as exc:
            raise Taken(str(exc)) from exc
        except (psycopg.Error, OSError, TimeoutError) as exc:
            from slugline.storage.pgwire import Unsent  # not imported on SQLite

            if committing and not isinstance(exc, Unsent):  # an unsent COMMIT: the server rolled back on closing
                raise CommitUnknown(str(exc)) from exc
            self.declined += 1
            return None

    async def write_locked(
        self, statement: Executable, binds: dict[str, Any], then: Callable[[Sequence[Any]], Statement]
    ) -> Sequence[Any] | None:
        """A transaction in two round trips: `BEGIN` with `statement` (a locking read), then the statement that
        `then` makes of the rows read, with `COMMIT`. Each pair goes as one query (its values bound in the query's
        text by psycopg); the row stays locked from the read to the commit, as on the thread path.

        The second statement's rows; None when declined (no connection in time, or the read failed: nothing was
        written). Anything `then` raises rolls the transaction back and propagates. In the second round trip, a
        constraint raises `Taken` and any other refusal by the server declines; a lost connection or a
        `READ_SECONDS` wait raises `CommitUnknown`."""
        async with self.reader.connection() as conn:
            if conn is None:
                self.declined += 1
                return None
            try:
                with within(READ_SECONDS):
                    found = await self._send(conn, "BEGIN; ", statement, binds, "")
            except (psycopg.Error, OSError, TimeoutError):
                self.declined += 1
                return None  # the connection is left in its transaction, so it is closed, never reused
            try:
                written, values = then(found)
            except BaseException:
                await _roll_back(conn)
                raise
            try:
                with within(READ_SECONDS):
                    return await self._send(conn, "", written, values, "; COMMIT")
            except (psycopg.Error, OSError, TimeoutError) as exc:
                self._failed_once_sent(exc)
                return None

    async def _send(
        self, conn: PgConnection, before: str, statement: Executable, binds: dict[str, Any], after: str
    ) -> list[tuple[Any, ...]]:
        """`statement` between `before` and `after` as one query, its values in the text: the statement's rows."""
        query = named(self.reader.dialect, statement, frozenset(binds))
        return await conn.script(before + query.sql + after, query.named(binds))

    async def write_at_once(self, statement: Executable, binds: dict[str, Any]) -> Sequence[Any] | None:
        """One statement as its own transaction (the connections are in autocommit): one round trip, with no BEGIN
        or COMMIT of its own; its rows, or None when no connection came in time (declined). An error the server
        answered means nothing was written (a constraint: `Taken`; anything else declines). Once it is sent, a lost
        connection or a `READ_SECONDS` wait leaves it unknown whether it committed: `CommitUnknown`."""
        try:
            async with self.reader.connection() as conn:
                if conn is None:
                    self.declined += 1
                    return None
                with within(READ_SECONDS):
                    return await self._run(conn, statement, binds)
        except (psycopg.Error, OSError, TimeoutError) as exc:
            self._failed_once_sent(exc)
            return None

    def _failed_once_sent(self, exc: Exception) -> None:
        """A failure once the write's COMMIT (or its lone statement) was sent: a constraint raises `Taken`, any other
        refusal by the server wrote nothing (declined); a lost connection or a timeout raises `CommitUnknown`."""
        from slugline.storage.pgwire import Unsent  # not imported on SQLite

        if isinstance(exc, psycopg.IntegrityError):
            raise Taken(str(exc)) from exc
        if isinstance(exc, Unsent) or (isinstance(exc, psycopg.Error) and _refused(exc.sqlstate)):
            self.declined += 1
            return
        raise CommitUnknown(str(exc)) from exc

    async def _run(self, conn: PgConnection, statement: Executable, binds: dict[str, Any]) -> list[Any]:
        query = named(self.reader.dialect, statement, frozenset(binds))
        return await conn.rows(query.sql, query.named(binds))


def _refused(sqlstate: str | None) -> bool:
    """The server answered that it did not run the statement. Not a lost connection (no answer), nor the server
    going away (57P..: shut down, terminated; 58...: system errors; XX...: internal errors), which may come right
    after a COMMIT went through."""
    return sqlstate is not None and not sqlstate.startswith(("57P", "58", "XX"))


async def _roll_back(conn: PgConnection) -> None:
    """Ends a transaction the server still has open (its statement answered); one cut off in flight cannot be
    ended here, and its connection is closed instead."""
    if conn.in_transaction:
        with contextlib.suppress(psycopg.Error, OSError, TimeoutError), within(READ_SECONDS):
            await conn.command(b"ROLLBACK")
