"""Writing a classified click batch in one transaction, and the daily visitor salts (SQLite and PostgreSQL)."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterable
from datetime import date, timedelta
from typing import Any, cast

from sqlalchemy import Connection, Table, delete, select, text
from sqlalchemy.dialects import postgresql, sqlite

from slugline.bounds import MAX_BROWSER, MAX_OS, MAX_REFERRER, MAX_SOURCE
from slugline.db import Database
from slugline.models import VisitorSalt

EPOCH = date(1970, 1, 1).toordinal()
SALTS_KEPT = 3  # days of salts a worker remembers: today, and the days a late batch may still carry
SALT_RETENTION = timedelta(days=1)  # older salts are deleted, so old visitor hashes can never be recomputed
salts = cast(Table, VisitorSalt.__table__)

# Each statement takes one JSON array made by `Clicks.encode` and runs over all of it inside the database: no Python
# work per click in this thread, which shares the GIL with the redirects. `[link_id, counted]` per link:
_BUMP = {
    "sqlite": "UPDATE links SET clicks = clicks + t.n FROM "
    "(SELECT value ->> 0 AS id, value ->> 1 AS n FROM json_each(?)) AS t WHERE links.id = t.id",
    "postgresql": "UPDATE links SET clicks = links.clicks + t.n FROM "
    "(SELECT e ->> 0 AS id, (e ->> 1)::bigint AS n FROM json_array_elements(%s::json) AS e) AS t "
    "WHERE links.id = t.id",
}
# PostgreSQL locks the batch's links first, in id order, so two workers' batches cannot deadlock.
_LOCK = (
    "SELECT id FROM links WHERE id IN (SELECT e ->> 0 FROM json_array_elements(%s::json) AS e) ORDER BY id FOR UPDATE"
)
# `[link_id, unix time, device, browser, os, source, referrer host, visitor]` per click; clicks of links deleted
# since the redirect are left out. SQLite gets the text SQLAlchemy itself stores for a DateTime: UTC, six-digit
# microseconds, no offset.
_INSERT_CLICKS = {
    "sqlite": "INSERT INTO clicks (link_id, clicked_at, device, browser, os, source, referrer, visitor) "
    "SELECT link_id, strftime('%Y-%m-%d %H:%M:%S', CAST(ts AS INTEGER), 'unixepoch') || "
    "printf('.%06d', CAST((ts - CAST(ts AS INTEGER)) * 1000000 AS INTEGER)), "
    f"device, substr(browser, 1, {MAX_BROWSER}), substr(os, 1, {MAX_OS}), substr(source, 1, {MAX_SOURCE}), "
    f"substr(referrer, 1, {MAX_REFERRER}), visitor FROM "
    "(SELECT value ->> 0 AS link_id, value ->> 1 AS ts, value ->> 2 AS device, value ->> 3 AS browser, "
    "value ->> 4 AS os, value ->> 5 AS source, value ->> 6 AS referrer, value ->> 7 AS visitor "
    "FROM json_each(?)) WHERE link_id IN (SELECT id FROM links)",
    "postgresql": "INSERT INTO clicks (link_id, clicked_at, device, browser, os, source, referrer, visitor) "
    f"SELECT e ->> 0, to_timestamp((e ->> 1)::float8), e ->> 2, left(e ->> 3, {MAX_BROWSER}), "
    f"left(e ->> 4, {MAX_OS}), left(e ->> 5, {MAX_SOURCE}), left(e ->> 6, {MAX_REFERRER}), e ->> 7 "
    "FROM json_array_elements(%s::json) WITH ORDINALITY AS c(e, n) "
    "WHERE EXISTS (SELECT 1 FROM links WHERE links.id = e ->> 0) ORDER BY n",
}
# `[link_id, epoch day, device, source, clicks]` per roll-up group; grouped again after the source is cut.
_UPSERT_DAILY = {
    "sqlite": "INSERT INTO click_daily (link_id, day, device, source, clicks) "
    f"SELECT value ->> 0, date((value ->> 1) * 86400, 'unixepoch'), value ->> 2, substr(value ->> 3, 1, {MAX_SOURCE}), "
    "sum(value ->> 4) FROM json_each(?) WHERE value ->> 0 IN (SELECT id FROM links) GROUP BY 1, 2, 3, 4 "
    "ON CONFLICT (link_id, day, device, source) DO UPDATE SET clicks = click_daily.clicks + excluded.clicks",
    "postgresql": "INSERT INTO click_daily (link_id, day, device, source, clicks) "
    f"SELECT e ->> 0, DATE '1970-01-01' + (e ->> 1)::int, e ->> 2, left(e ->> 3, {MAX_SOURCE}), "
    "sum((e ->> 4)::bigint) FROM json_array_elements(%s::json) AS e "
    "WHERE EXISTS (SELECT 1 FROM links WHERE links.id = e ->> 0) GROUP BY 1, 2, 3, 4 "
    "ON CONFLICT (link_id, day, device, source) DO UPDATE SET clicks = click_daily.clicks + excluded.clicks",
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


def write_batch(db: Database, encoded: tuple[str, str, str, int]) -> int:
    """Click rows, link counters (bots excluded) and daily roll-ups of one encoded batch, all or nothing; returns
    the click rows written. Clicks of links deleted since the redirect are dropped, never failing the batch."""
    totals, clicks, rollup, rows = encoded
    if not rows:
        return 0
    with db.engine.begin() as conn:
        dialect = conn.dialect.name
        if dialect == "postgresql":
            conn.exec_driver_sql(_LOCK, (totals,))
        # First, so on SQLite the transaction takes the write lock before it reads which links still exist.
        conn.exec_driver_sql(_BUMP[dialect], (totals,))
        written = conn.exec_driver_sql(_INSERT_CLICKS[dialect], (clicks,)).rowcount
        conn.exec_driver_sql(_UPSERT_DAILY[dialect], (rollup,))
    return int(written)
