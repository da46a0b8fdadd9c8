"""Writing a classified click batch in one transaction, and the daily visitor salts (SQLite and PostgreSQL)."""

from __future__ import annotations

import functools
import secrets
import threading
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any, cast

import orjson
from sqlalchemy import Connection, Table, delete, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError

from slugline import _core
from slugline.clicks import cubes
from slugline.common.bounds import MAX_REFERRER, MAX_SOURCE
from slugline.common.clock import day_date
from slugline.common.models import VisitorSalt
from slugline.common.visibility import PUBLIC_LEVELS
from slugline.storage.db import Database
from slugline.webhooks import clicks as webhooks

SALTS_KEPT = 3  # days of salts a worker remembers: today, and the days a late batch may still carry
SALT_RETENTION = timedelta(days=1)  # older salts are deleted, so old visitor hashes can never be recomputed
salts = cast(Table, VisitorSalt.__table__)

# The small statements of a write take one JSON array made by `Clicks.encode` and run over all of it inside the
# database. `[link_id, counted]` per link; the links still there come back, with their account and visibility.
_BUMP = {
    "sqlite": "UPDATE links SET clicks = clicks + t.n FROM "
    "(SELECT value ->> 0 AS id, value ->> 1 AS n FROM json_each(?)) AS t WHERE links.id = t.id "
    "RETURNING links.id, links.account_id, links.visibility",
    "postgresql": "UPDATE links SET clicks = links.clicks + t.n FROM "
    "(SELECT e ->> 0 AS id, (e ->> 1)::bigint AS n FROM json_array_elements(%s::json) AS e) AS t "
    "WHERE links.id = t.id RETURNING links.id, links.account_id, links.visibility",
}
# PostgreSQL locks the batch's links first, in id order, so two workers' batches cannot deadlock; and a link deleted
# meanwhile either waits for this batch (then its trigger deletes the batch's rows too) or is gone before the lock
# is granted (then no row names it): the click log has no foreign key there (migration 0006).
# The links of the oldest pending cube moves are locked with them (`slugline.clicks.cubes`).
_LOCK = "SELECT id FROM links WHERE id IN (SELECT json_array_elements_text(%s::json)) ORDER BY id FOR UPDATE"
# The click rows, the one part that grows with the batch, go the cheapest way each database has: COPY on
# PostgreSQL; on SQLite multi-row INSERTs of `ROWS_PER_INSERT` rows whose values Rust made (repeated strings
# shared), so the driver binds them without Python code per click and the GIL changes hands once per statement.
_COLUMNS = "link_id, clicked_at, device, browser, os, source, referrer, visitor, country, region, city, variant"
_COPY = f"COPY clicks ({_COLUMNS}) FROM STDIN"
ROWS_PER_INSERT = 250
ROW_VALUES = _COLUMNS.count(",") + 1  # values of a row in `EncodedClicks.values`'s lists


@functools.cache
def _insert_rows(rows: int) -> str:
    return f"INSERT INTO clicks ({_COLUMNS}) VALUES " + ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * rows)


MAX_TEXT = min(MAX_SOURCE, MAX_REFERRER)  # what Rust cuts sources and referrer hosts to


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
    when = day_date(epoch_day)
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


def write_batch(db: Database, encoded: _core.EncodedClicks) -> int:
    """Link counters (bots excluded), click rows and roll-up cubes of one encoded batch, all or nothing, with the
    oldest pending cube moves; returns the click rows written. Clicks of links deleted since the redirect are
    dropped, never failing the batch."""
    if not len(encoded):
        return 0
    with db.engine.begin() as conn:
        dialect = conn.dialect.name
        pending: list[str] = []
        if dialect == "postgresql":
            pending = cubes.pending_links(conn)
            batch_links = [link for link, _ in orjson.loads(encoded.totals)]
            conn.exec_driver_sql(_LOCK, (orjson.dumps(sorted({*batch_links, *pending})).decode(),))
        # First on SQLite: the transaction takes the write lock before anything else, and the links still there
        # come back, so no row can name a link deleted meanwhile (its deletion waits for this transaction).
        alive = conn.exec_driver_sql(_BUMP[dialect], (encoded.totals,)).all()
        if dialect != "postgresql":
            pending = cubes.pending_links(conn)
        owners = {link: (int(account), visibility in PUBLIC_LEVELS) for link, account, visibility in alive}
        moves = cubes.claim_moves(conn, sorted({*owners, *pending}))
        cubes.lock_accounts(conn, {account for account, _ in owners.values()} | {m[1] for m in moves})
        cubes.make_moves(conn, moves)
        if not alive:
            return 0
        kept = None if len(alive) == encoded.links else set(owners)
        written = _insert_clicks(conn, encoded, kept)
        cubes.add_batch(conn, encoded, owners)
        webhooks.clicks_written(conn, encoded, owners)  # the batch's `link.clicked` messages, in its transaction
    return written


def make_pending_moves(db: Database) -> int:
    """The oldest pending cube moves, made in a transaction of their own (a worker with no clicks to write)."""
    with db.reading() as conn:  # most of the time there are none: no write transaction for that
        if conn.exec_driver_sql("SELECT 1 FROM cube_moves LIMIT 1").first() is None:
            return 0
    with db.engine.begin() as conn:
        return cubes.make_pending_moves(conn)


def _insert_clicks(conn: Connection, encoded: _core.EncodedClicks, kept: set[str] | None) -> int:
    """The click rows, straight to the driver on the transaction's own connection. Its errors are raised as
    SQLAlchemy's, as the other statements' are, so that a full disk or a lock wait past its timeout is told apart
    from a refused row (`db.unavailable`): the clicks then wait, rather than being dropped one by one."""
    dbapi: Any = conn.dialect.loaded_dbapi
    driver: Any = conn.connection.driver_connection
    cursor = driver.cursor()
    try:
        if conn.dialect.name == "postgresql":
            with cursor.copy(_COPY) as copy:
                copy.write(encoded.copy_text(kept))
            return int(cursor.rowcount)
        written = 0
        for values in encoded.values(kept, ROWS_PER_INSERT):
            cursor.execute(_insert_rows(len(values) // ROW_VALUES), values)
            written += len(values) // ROW_VALUES
        return written
    except dbapi.Error as exc:
        statement = _COPY if conn.dialect.name == "postgresql" else _insert_rows(1)
        raise DBAPIError.instance(statement, None, exc, dbapi.Error, dialect=conn.dialect) from exc
    finally:
        cursor.close()
