"""Retention of the raw click log (`SLUGLINE_CLICK_LOG_DAYS`): older clicks are deleted, and no figure changes.

Analytics read the roll-up cubes the click writer keeps beside the log (`slugline.clicks.cubes`), never the log
itself; only a link's click list and the exports read its rows, so those are what retention shortens. Each worker's
click writer runs a pass every `PASS_SECONDS`, between its flushes and for at most `STEP_SECONDS` after each one
(`Upkeep`); `slugline clicks prune` runs one pass to its end. A worker's pass also takes away the accounts their
owners deleted (`accounts.deletion.finish_closed`), a bounded transaction a step, and makes the month packs of
closed days that analytics reads (`slugline.clicks.packs`), a pack a step.

SQLite: deleted in transactions of at most `BATCH` rows, each queued on the writer lock like any other write. The
rowid is the one index that finds old clicks cheaply: rows are appended as they are written, so the oldest come
first, and a window of `BATCH` rowids is read straight off the table's own B-tree (the (link_id, clicked_at) index
would take a probe per link). A pass walks the windows from the lowest rowid and ends at the first window with
nothing to delete; a click written late (held in a worker's buffer through an outage) sits behind newer ones and
goes on a later pass, at the latest once it was written `SLUGLINE_CLICK_LOG_DAYS` ago.

PostgreSQL: whole monthly partitions are dropped (`slugline.clicks.partitions`), so nothing is deleted row by row and
nothing is left to vacuum; a pass there also makes the partitions of the months ahead, with or without retention.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Iterator
from datetime import datetime, timedelta

from sqlalchemy import text

from slugline.accounts import deletion
from slugline.clicks import packs, partitions
from slugline.common.clock import utcnow
from slugline.storage.db import Database

log = logging.getLogger("slugline.clicks")

BATCH = 5_000  # clicks deleted per transaction on SQLite
PASS_SECONDS = 300.0  # between the starts of a worker's passes
STEP_SECONDS = 0.25  # of a pass run after each flush: the next flush is never held back for long
_WINDOW = text("SELECT max(id) FROM (SELECT id FROM clicks WHERE id > :after ORDER BY id LIMIT :n)")
_DELETE = text("DELETE FROM clicks WHERE id > :after AND id <= :last AND clicked_at < :cutoff")
_STAMP = "%Y-%m-%d %H:%M:%S.%f"  # how SQLite keeps a time: text, UTC, compared as text


def cutoff(days: int | None, now: datetime) -> datetime | None:
    """Clicks before this are past retention; None keeps every click."""
    return None if days is None else now - timedelta(days=days)


def prune(db: Database, days: int | None, now: datetime | None = None) -> Iterator[int]:
    """One pass over the click log as a series of short transactions; each step yields the clicks it deleted."""
    now = now or utcnow()
    before = cutoff(days, now)
    if db.engine.dialect.name == "postgresql":
        yield from partitions.upkeep(db.engine, before, now.date())
    elif before is not None:
        yield from _sqlite_batches(db, before)


def _sqlite_batches(db: Database, before: datetime) -> Iterator[int]:
    after = 0
    stamp = before.strftime(_STAMP)
    while True:
        with db.writing() as session:
            conn = session.connection()
            last = conn.execute(_WINDOW, {"after": after, "n": BATCH}).scalar()
            if last is None:
                return
            deleted = conn.execute(_DELETE, {"after": after, "last": last, "cutoff": stamp}).rowcount
        if not deleted:
            return
        yield deleted
        after = last


class Upkeep:
    """A worker's passes over the click log, run from its click writer's loop a little at a time."""

    def __init__(self, db: Database, days: int | None, hooks: deletion.Hooks = ()) -> None:
        self._db = db
        self._days = days
        self._hooks = hooks  # the worker's link hooks: told of the links a deleted account's removal takes
        self._steps: Iterator[int] | None = None
        self._deleted = 0  # by the pass under way
        # The first pass one interval after the worker starts: the migration made the months ahead, and a worker
        # restarted over and over does no upkeep at all.
        self._due = time.monotonic() + PASS_SECONDS

    async def step(self) -> None:
        """Carries the pass under way on for up to `STEP_SECONDS`, or starts one when it is due. A failed pass (the
        click log too busy to lock in time, the database away) is logged, and the next one tries again."""
        now = time.monotonic()
        if self._steps is None:
            if now < self._due:
                return
            self._due = now + PASS_SECONDS
            # then the accounts their owners deleted (`accounts.deletion`), then the month packs due
            # (`clicks.packs`): their steps delete no old clicks
            closed = (0 for _ in deletion.finish_closed(self._db, self._hooks))
            packed = (0 for _ in packs.upkeep(self._db))
            self._steps = itertools.chain(prune(self._db, self._days), closed, packed)
        try:
            going = await asyncio.to_thread(self._run, self._steps, now + STEP_SECONDS)
        except Exception as exc:
            first_line = str(exc).split("\n")[0]
            log.warning("click log upkeep stopped until its next pass (%s: %s)", type(exc).__name__, first_line)
            going = False
        if not going:
            if self._deleted:
                log.info("deleted %d clicks older than %d days from the click log", self._deleted, self._days)
            self._steps, self._deleted = None, 0

    def _run(self, steps: Iterator[int], until: float) -> bool:
        """Steps until `until` (in a worker thread); whether the pass has more to do."""
        for deleted in steps:
            self._deleted += deleted
            if time.monotonic() >= until:
                return True
        return False
