"""Small reads answered on the event loop, on SQLite, with no thread hop.

A primary-key read or a page of 20 rows down an index takes SQLite 5-50 µs; handing it to a worker thread and back
costs several times that, and SQLAlchemy's connection checkout around it more again (in process, `get_link` took
208 µs through a pooled connection and 9 µs through a plain cursor). So the hottest reads of `GET /links/{id}` and
`GET /links` try this first, and go to a thread (the ordinary path) whenever this cannot answer at once:

- Nothing here ever waits. The connection's busy timeout is 0: in WAL mode readers are not blocked by writers,
  and in the rare moments a reader would be (a checkpoint resetting the log), SQLite says so at once and the
  request takes the thread path, which waits like any other.
- The work is bounded. A statement that runs past `STEP_BUDGET` virtual-machine steps is interrupted (SQLite's
  progress handler), so a shape that would scan or sort a large account is answered from a thread instead.
- It is read-only (`PRAGMA query_only`), one connection per worker process, used by one caller at a time: if two
  event loops in one process meet here (tests), the second takes the thread path.

Statements are the services' own SQLAlchemy Core statements, compiled once by the engine's dialect, so both paths
read exactly the same rows.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any

from sqlalchemy import Dialect, Select

from slugline.clock import isoformat

# Virtual-machine steps one statement may take here before it is interrupted, in ticks of TICK_STEPS. A primary-key
# read takes ~50 and a 100-row page down an index a few thousand; counting or sorting a large account takes hundreds
# of thousands. (SQLite counts a cached statement's steps across its runs, so the first tick of a run may come
# early: a run is allowed one tick more than its budget.)
TICK_STEPS = 1_000
STEP_BUDGET = 20_000
STORED_LENGTH = len("2024-05-01 12:00:00.000000")


@dataclass(frozen=True)
class Plain:
    """A Core statement as the driver's SQL, with its positional parameters named."""

    sql: str
    names: tuple[str, ...]
    fixed: dict[str, Any]  # values the statement itself holds (an IN list)

    def params(self, binds: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(binds[name] if name in binds else self.fixed[name] for name in self.names)


def _plain_value(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


@functools.lru_cache(maxsize=128)
def plain(dialect: Dialect, statement: Select[*tuple[Any, ...]], bound: frozenset[str]) -> Plain:
    """`statement` for the driver, given the names the caller binds (the rest, IN lists, are expanded here)."""
    expanded = statement.compile(dialect=dialect).construct_expanded_state(dict.fromkeys(bound))
    names = tuple(expanded.positiontup or ())
    fixed = {
        name: _plain_value(value)
        for name, value in zip(names, expanded.positional_parameters, strict=True)
        if name not in bound
    }
    return Plain(expanded.statement, names, fixed)


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

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def iso(text: str | None) -> str | None:
    """A timestamp as SQLAlchemy stores it in SQLite (`YYYY-MM-DD HH:MM:SS.ffffff`, UTC) in the API's form, the
    same as `clock.isoformat` gives for the parsed value; by slicing, where parsing was a third of a link's JSON."""
    if text is None:
        return None
    if len(text) == STORED_LENGTH and text[10] == " " and text[19] == ".":
        return f"{text[:10]}T{text[11:19]}Z"
    return isoformat(datetime.fromisoformat(text))
