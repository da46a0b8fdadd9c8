"""account ids never reused: on SQLite `accounts` is rebuilt with AUTOINCREMENT

Without it SQLite gives a new row the largest id + 1, so once the account with the largest id is deleted
(`slugline accounts delete`) the next one registered would get its id, and every per-worker cache keyed by account id
(link counts, search indexes, resolved tokens) could answer the new account with the deleted one's links. A
PostgreSQL `SERIAL` takes its ids from a sequence that never goes back: nothing to do there.

SQLite cannot add AUTOINCREMENT to a table; the table is made again, by SQLite's own procedure for that
(sqlite.org/lang_altertable.html, "other kinds of table schema changes"): with foreign keys off, since dropping
`accounts` with them on would delete every link, key and session through their ON DELETE CASCADE; in a transaction
of its own; the triggers on `accounts` (0009's `accounts_cubes_deleted`) made again; the foreign keys checked before
it commits. PRAGMA foreign_keys does nothing inside a transaction, so this runs in Alembic's autocommit block, which
commits what the earlier migrations did first. A table that already has AUTOINCREMENT is left as it is, so a run
stopped after the commit and before Alembic records the revision is safe to run again. The downgrade leaves it.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27 07:30:00
"""

from collections.abc import Sequence

from alembic import op
from sqlalchemy import Connection

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = "id, username, password_hash, plan, created_at, links_version"
TABLE = (
    "CREATE TABLE {name} (id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, username VARCHAR(32) NOT NULL, "
    "password_hash VARCHAR(255) NOT NULL, plan VARCHAR(16) NOT NULL, created_at DATETIME NOT NULL, "
    "links_version BIGINT NOT NULL, UNIQUE (username))"
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    with op.get_context().autocommit_block():
        conn = op.get_bind()
        made = conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'accounts'")
        if "AUTOINCREMENT" in str(made.scalar_one()).upper():
            return
        # legacy_alter_table: the rename leaves the other tables' triggers that name `accounts` alone (they name the
        # table that takes the name), where SQLite would otherwise refuse them while `accounts` is gone
        conn.exec_driver_sql("PRAGMA foreign_keys = OFF")
        conn.exec_driver_sql("PRAGMA legacy_alter_table = ON")
        try:
            _remake(conn)
        finally:
            conn.exec_driver_sql("PRAGMA legacy_alter_table = OFF")
            conn.exec_driver_sql("PRAGMA foreign_keys = ON")


def downgrade() -> None:
    """Nothing: the earlier versions work as well on a table with AUTOINCREMENT, and a downgrade run inside a caller's
    transaction could not turn foreign keys off, so making the table again there would cascade its deletion."""


def _remake(conn: Connection) -> None:
    """Steps 2 to 11 of SQLite's procedure, in one transaction: a failure leaves the old table as it was."""
    conn.exec_driver_sql("BEGIN IMMEDIATE")
    try:
        # the triggers and indexes made on `accounts` go with it: kept to be made again (its UNIQUE is in the table)
        kept = conn.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE tbl_name = 'accounts' AND type IN ('trigger', 'index') "
            "AND sql IS NOT NULL ORDER BY type DESC, name"
        ).scalars()
        again = [str(sql) for sql in kept]
        conn.exec_driver_sql(TABLE.format(name="accounts_new"))
        conn.exec_driver_sql(f"INSERT INTO accounts_new ({COLUMNS}) SELECT {COLUMNS} FROM accounts ORDER BY id")
        conn.exec_driver_sql("DROP TABLE accounts")
        conn.exec_driver_sql("ALTER TABLE accounts_new RENAME TO accounts")
        for sql in again:
            conn.exec_driver_sql(sql)
        broken = conn.exec_driver_sql("PRAGMA foreign_key_check").all()
        if broken:
            raise RuntimeError(f"rows whose account is missing after rebuilding accounts: {broken[:5]}")
    except BaseException:
        conn.exec_driver_sql("ROLLBACK")
        raise
    conn.exec_driver_sql("COMMIT")
