"""cubes stored uncompressed: on PostgreSQL the roll-up cubes' columns are kept out of line without compression
(`STORAGE EXTERNAL`), and the account-wide cubes already written (views `""` and `"p"`) are written again so

A year's account-wide answer reads 365 of the account's day cubes: ~7 MB at 10,000,000 clicks a year. Stored with
PostgreSQL's default (`EXTENDED`: pglz, 2.3x on these) the server decompressed every one of them on every read that
missed the worker's cache: the 365-row read took 24-28 ms, 14-16 ms uncompressed, and a year's first view in process
92 -> 50 ms. The click writer also compressed each cube it rewrote, once a second. The cost is disk: the account-wide
cubes take 2.3x the space (3.0 -> 6.9 MB for that year); a link's own cubes compressed by ~10% and only new ones are
written uncompressed (rewriting them all would be most of the table).

The storage change is a catalog change under a brief lock, tried at most `LOCK_TRIES` times with `LOCK_WAIT` each so
that a long read cannot queue the click writer behind the migration; the rewrite goes `CHUNK` rows a transaction,
so the click writer waits at most one chunk for a row it updates. SQLite is unchanged (it never compresses).

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-27 16:00:00
"""

from collections.abc import Sequence
from typing import Any

from alembic import op
from sqlalchemy.exc import OperationalError

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ("cube", "uniques", "links", "hours", "sketches")
LOCK_WAIT = "2s"
LOCK_TRIES = 30
LOCK_NOT_AVAILABLE = "55P03"
CHUNK = 500
# The next `CHUNK` account-wide cubes after a key, written again (`|| ''` makes a new value, stored as the column's
# storage now says); their keys are returned, the last one is where the next chunk starts.
REWRITE = (
    "WITH chunk AS (SELECT account_id, scope, level, bucket FROM click_cubes WHERE scope IN ('', 'p') "
    "AND (account_id, scope, level, bucket) > (%(account)s, %(scope)s, %(level)s, %(bucket)s) "
    "ORDER BY account_id, scope, level, bucket LIMIT %(chunk)s) "
    "UPDATE click_cubes AS c SET "
    + ", ".join(f"{column} = c.{column} || ''::bytea" for column in COLUMNS)
    + " FROM chunk WHERE (c.account_id, c.scope, c.level, c.bucket) = "
    "(chunk.account_id, chunk.scope, chunk.level, chunk.bucket) "
    "RETURNING c.account_id, c.scope, c.level, c.bucket"
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _set_storage("EXTERNAL")
    with op.get_context().autocommit_block():
        _rewrite_account_cubes()


def downgrade() -> None:
    """The default storage again; cubes stay as written (uncompressed ones read the same)."""
    if op.get_bind().dialect.name != "postgresql":
        return
    _set_storage("EXTENDED")


def _set_storage(storage: str) -> None:
    conn = op.get_bind()
    alter = "ALTER TABLE click_cubes " + ", ".join(f"ALTER COLUMN {c} SET STORAGE {storage}" for c in COLUMNS)
    for _ in range(LOCK_TRIES):
        try:
            with conn.begin_nested():
                op.execute(f"SET LOCAL lock_timeout = '{LOCK_WAIT}'")
                op.execute(alter)
                op.execute("SET LOCAL lock_timeout = DEFAULT")
            return
        except OperationalError as exc:
            if getattr(exc.orig, "sqlstate", None) != LOCK_NOT_AVAILABLE:
                raise
    raise RuntimeError(
        f"click_cubes stayed locked by other sessions for {LOCK_TRIES} tries of {LOCK_WAIT}: nothing was changed; "
        "run the migration again"
    )


def _rewrite_account_cubes() -> None:
    """Chunk by chunk, each in a transaction of its own (the connection is in autocommit: psycopg's `transaction`
    begins and commits one)."""
    driver = op.get_bind().connection.driver_connection
    assert driver is not None
    at: dict[str, Any] = {"account": -1, "scope": "", "level": -1, "bucket": -(2**31), "chunk": CHUNK}
    while True:
        with driver.transaction(), driver.cursor() as cursor:
            done = cursor.execute(REWRITE, at).fetchall()
        if not done:
            return
        last = max(done)
        at = {"account": last[0], "scope": last[1], "level": last[2], "bucket": last[3], "chunk": CHUNK}
