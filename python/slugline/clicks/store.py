"""Writing a classified click batch in one transaction, and the daily visitor salts (SQLite and PostgreSQL)."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterable
from datetime import date, timedelta
from typing import Any, cast

from sqlalchemy import Connection, Table, bindparam, delete, select, text, update
from sqlalchemy.dialects import postgresql, sqlite

from slugline import _core
from slugline.bounds import MAX_BROWSER, MAX_OS, MAX_REFERRER, MAX_SOURCE
from slugline.db import Database
from slugline.models import ClickDaily, Link, VisitorSalt

EPOCH = date(1970, 1, 1).toordinal()
SALTS_KEPT = 3  # days of salts a worker remembers: today, and the days a late batch may still carry
SALT_RETENTION = timedelta(days=1)  # older salts are deleted, so old visitor hashes can never be recomputed
links, daily, salts = (cast(Table, model.__table__) for model in (Link, ClickDaily, VisitorSalt))

# `clicks + 0` for links that only had bot clicks still locks the row (PostgreSQL) or starts the write
# transaction (SQLite), so a link deleted meanwhile is either gone before the check below or waits for us.
_BUMP = update(links).where(links.c.id == bindparam("b_id")).values(clicks=links.c.clicks + bindparam("b_n"))


# Rows go to the driver's executemany exactly as `ClickBatch.rows()` made them; the database turns the unix time
# into the column's type. No per-row Python work: this runs in a thread that shares the GIL with the redirects.
_INSERT_CLICKS = {
    # The text SQLAlchemy itself stores for a DateTime in SQLite: UTC, six-digit microseconds, no offset.
    "sqlite": "INSERT INTO clicks (link_id, clicked_at, device, browser, os, source, referrer, visitor) VALUES (?1, "
    "strftime('%Y-%m-%d %H:%M:%S', CAST(?2 AS INTEGER), 'unixepoch') || "
    "printf('.%06d', CAST((?2 - CAST(?2 AS INTEGER)) * 1000000 AS INTEGER)), "
    f"?3, substr(?4, 1, {MAX_BROWSER}), substr(?5, 1, {MAX_OS}), substr(?6, 1, {MAX_SOURCE}), "
    f"substr(?7, 1, {MAX_REFERRER}), ?8)",
    "postgresql": "INSERT INTO clicks (link_id, clicked_at, device, browser, os, source, referrer, visitor) VALUES "
    f"(%s, to_timestamp(%s), %s, left(%s, {MAX_BROWSER}), left(%s, {MAX_OS}), left(%s, {MAX_SOURCE}), "
    f"left(%s, {MAX_REFERRER}), %s)",
}


def day_of(epoch_day: int) -> date:
    return date.fromordinal(EPOCH + epoch_day)


def upsert_insert(conn: Connection) -> Callable[[Any], Any]:
    return postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert


class SaltBook:
    """Each day's visitor salt, made once by whichever worker needs it first and shared through the database."""

    def __init__(self) -> None:
        self._known: dict[int, bytes] = {}
        self._lock = threading.Lock()

    def get(self, db: Database, days: Iterable[int]) -> dict[int, bytes]:
        with self._lock:
            missing = [day for day in days if day not in self._known]
            if missing:
                with db.engine.begin() as conn:
                    for day in missing:
                        self._known[day] = _salt(conn, day)
                for old in sorted(self._known)[:-SALTS_KEPT]:
                    del self._known[old]
            return dict(self._known)


def _salt(conn: Connection, epoch_day: int) -> bytes:
    when = day_of(epoch_day)
    stmt = upsert_insert(conn)(salts).values(day=when, salt=secrets.token_bytes(32))
    conn.execute(stmt.on_conflict_do_nothing(index_elements=["day"]))
    # Older salts go, so yesterday's visitor hashes can never be recomputed and linked to today's.
    conn.execute(delete(salts).where(salts.c.day < when - SALT_RETENTION))
    salt: bytes = conn.execute(select(salts.c.salt).where(salts.c.day == when)).scalar_one()
    return salt


def reachable(db: Database) -> bool:
    """Whether the database answers at all: tells a refused row from an outage."""
    try:
        with db.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception:
        return False
    return True


def write_batch(db: Database, batch: _core.ClickBatch) -> int:
    """Click rows, link counters (bots excluded) and daily roll-ups, all or nothing; returns rows written.

    Clicks of links deleted since the redirect are dropped, never failing the batch."""
    rollup = batch.rollup()
    totals = dict(batch.link_totals())
    ids = sorted({row[0] for row in rollup})  # one lock order for every worker: no deadlocks
    with db.engine.begin() as conn:
        conn.execute(_BUMP, [{"b_id": link_id, "b_n": totals.get(link_id, 0)} for link_id in ids])
        alive = set(conn.execute(select(links.c.id).where(links.c.id.in_(ids))).scalars())
        rows = batch.rows()
        if len(alive) < len(ids):
            rows = [row for row in rows if row[0] in alive]
        if not rows:
            return 0
        conn.exec_driver_sql(_INSERT_CLICKS[conn.dialect.name], rows)
        stmt = upsert_insert(conn)(daily)
        stmt = stmt.on_conflict_do_update(
            index_elements=["link_id", "day", "device", "source"],
            set_={"clicks": daily.c.clicks + stmt.excluded.clicks},
        )
        conn.execute(
            stmt,
            [
                {
                    "link_id": link_id,
                    "day": day_of(day),
                    "device": device,
                    "source": source[:MAX_SOURCE],
                    "clicks": count,
                }
                for link_id, day, device, source, count in rollup
                if link_id in alive
            ],
        )
    return len(rows)
