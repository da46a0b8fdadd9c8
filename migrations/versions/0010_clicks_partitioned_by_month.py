"""clicks partitioned by month: on PostgreSQL the raw click log is a table partitioned by `clicked_at`, one
partition a month (UTC) and a default one, so retention drops whole months (`slugline.clicks.partitions`)

The log is converted while click batches, link deletions and reads go on. The partitioned table is made under
another name with the same columns, defaults (the same id sequence) and key, with a partition for every month that
has clicks, this month and the next two. Two statement triggers on the old table then copy into it every batch of
clicks added and every deletion (a link's deletion deletes its clicks), and the old rows are copied in the key's
order (no index leads with the time: month by month would read the whole table each month), `CHUNK` at a time,
each chunk a transaction of its own that locks its links against deletion (`FOR KEY SHARE`) so that a link deleted
meanwhile leaves no clicks behind; clicks whose link was gone before (0006 dropped the foreign key) are copied as
they are. Last, one short transaction takes the old table's lock
(waiting at most `LOCK_WAIT` a try, `SWAP_TRIES` times, so a long export cannot queue every batch behind it), swaps
the names, gives the id sequence to the new table and drops the old one. Clicks of batches still writing come
through the triggers, which is why the catch-up is not "rows since the last id copied": ids come from
per-connection caches of 1,000 (0008), in no order across workers.

A failed run leaves the new table and the triggers behind: the next run drops them first, as does this one when
the swap never gets its lock. The function behind the trigger that deletes a link's clicks (0006) names the table,
not its OID, and goes on working; nothing else depends on it (0009's triggers are on `links` and `accounts`). SQLite
is unchanged. The downgrade copies the clicks back into a plain table
inside its transaction, writes stopped meanwhile.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26 23:30:00
"""

from collections.abc import Sequence
from datetime import UTC, date, datetime

from alembic import op
from sqlalchemy.exc import OperationalError

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NEW = "clicks_partitioned"  # the partitioned table until the swap
OLD = "clicks_unpartitioned"  # the old one, between the swap and its drop
CHUNK = 10_000  # clicks copied per transaction
SWAP_TRIES = 30
LOCK_WAIT = "2s"  # each try of the swap waits this long for the old table's lock
LOCK_NOT_AVAILABLE = "55P03"
COLUMNS = "id, link_id, clicked_at, device, browser, os, source, referrer, visitor"
MIRRORS = (  # trigger and function name, event, transition table, body
    (
        "clicks_copy_added",
        "INSERT",
        "NEW TABLE AS added",
        f"INSERT INTO {NEW} SELECT * FROM added ON CONFLICT DO NOTHING",
    ),
    (
        "clicks_copy_gone",
        "DELETE",
        "OLD TABLE AS gone",
        f"DELETE FROM {NEW} AS n USING gone AS g "
        "WHERE n.link_id = g.link_id AND n.clicked_at = g.clicked_at AND n.id = g.id",
    ),
)
# A chunk: the next `CHUNK` keys, and the links whose clicks among them are copied: those still there, locked
# against deletion until the copy commits, and those that were never there (clicks kept since 0006 dropped the
# foreign key). A link deleted before the lock is granted is neither: its deletion took its clicks.
CHUNK_LINKS = (
    "WITH chunk AS MATERIALIZED (SELECT link_id, clicked_at, id FROM clicks "
    "WHERE (link_id, clicked_at, id) > (%(link)s, %(at)s, %(id)s) "
    f"ORDER BY link_id, clicked_at, id LIMIT {CHUNK}), "
    "alive AS MATERIALIZED (SELECT id FROM links WHERE id IN (SELECT link_id FROM chunk) FOR KEY SHARE) "
    "SELECT link_id, clicked_at, id, ARRAY(SELECT id FROM alive UNION SELECT link_id FROM chunk "
    "WHERE NOT EXISTS (SELECT 1 FROM links WHERE links.id = chunk.link_id)) "
    "FROM chunk ORDER BY link_id DESC, clicked_at DESC, id DESC LIMIT 1"
)
# Read in a snapshot taken once those locks are held, so no row of a link deleted meanwhile is copied.
COPY_CHUNK = (
    f"INSERT INTO {NEW} ({COLUMNS}) SELECT {COLUMNS} FROM clicks "
    "WHERE (link_id, clicked_at, id) > (%(link)s, %(at)s, %(id)s) "
    "AND (link_id, clicked_at, id) <= (%(last_link)s, %(last_at)s, %(last_id)s) AND link_id = ANY(%(links)s) "
    "ON CONFLICT DO NOTHING"
)
SWAP = (
    "LOCK TABLE clicks IN ACCESS EXCLUSIVE MODE",
    f"LOCK TABLE {NEW} IN ACCESS EXCLUSIVE MODE",
    f"ALTER TABLE clicks RENAME TO {OLD}",
    f"ALTER TABLE {OLD} RENAME CONSTRAINT clicks_pkey TO {OLD}_pkey",
    f"ALTER TABLE {NEW} RENAME TO clicks",
    f"ALTER TABLE clicks RENAME CONSTRAINT {NEW}_pkey TO clicks_pkey",
    # ALTER SEQUENCE takes no expression for the sequence's name: it is looked up in a DO block.
    "DO $$ BEGIN EXECUTE format('ALTER SEQUENCE %s OWNED BY clicks.id', "
    f"pg_get_serial_sequence('{OLD}', 'id')); END $$",
    f"DROP TABLE {OLD}",
    *(f"DROP FUNCTION {mirror[0]}()" for mirror in MIRRORS),
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    with op.get_context().autocommit_block():
        _drop_leftovers()
        _make_partitioned()
        for trigger, event, table, body in MIRRORS:
            op.execute(
                f"CREATE FUNCTION {trigger}() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$ "
                f"BEGIN {body}; RETURN NULL; END $$"
            )
            op.execute(
                f"CREATE TRIGGER {trigger} AFTER {event} ON clicks REFERENCING {table} "
                f"FOR EACH STATEMENT EXECUTE FUNCTION {trigger}()"
            )
        _copy_old_clicks()
        op.execute(f"ANALYZE {NEW}")  # the new partitions' statistics, before queries plan on them
    if not _swap():
        with op.get_context().autocommit_block():
            _drop_leftovers()
        raise RuntimeError(
            f"the click log stayed locked by other sessions for {SWAP_TRIES} tries of {LOCK_WAIT} (long exports?): "
            "nothing was changed; run the migration again"
        )


def _drop_leftovers() -> None:
    for trigger, *_ in MIRRORS:
        op.execute(f"DROP TRIGGER IF EXISTS {trigger} ON clicks")
        op.execute(f"DROP FUNCTION IF EXISTS {trigger}()")
    op.execute(f"DROP TABLE IF EXISTS {NEW}")


def _make_partitioned() -> None:
    """The new table with a partition for each month that has clicks (the table read once), this month and the next
    ones the click writer would make, and the default partition."""
    from slugline.clicks import partitions

    conn = op.get_bind()
    op.execute(f"CREATE TABLE {NEW} (LIKE clicks INCLUDING DEFAULTS) PARTITION BY RANGE (clicked_at)")
    op.execute(f"ALTER TABLE {NEW} ADD CONSTRAINT {NEW}_pkey PRIMARY KEY (link_id, clicked_at, id)")
    found = conn.exec_driver_sql(
        "SELECT DISTINCT date_trunc('month', clicked_at AT TIME ZONE 'UTC')::date FROM clicks"
    ).scalars()
    months: set[date] = {*found, *partitions.ahead(datetime.now(UTC).date())}
    for month in sorted(months):
        op.execute(partitions.create(month, NEW))
    op.execute(partitions.create_default(NEW))


def _copy_old_clicks() -> None:
    """Chunk by chunk, each in a transaction of its own (the connection is in autocommit: psycopg's `transaction`
    begins and commits one)."""
    driver = op.get_bind().connection.driver_connection
    assert driver is not None
    at: dict[str, object] = {"link": "", "at": datetime(1, 1, 1, tzinfo=UTC), "id": 0}
    while True:
        with driver.transaction(), driver.cursor() as cursor:
            last = cursor.execute(CHUNK_LINKS, at).fetchone()
            if last is None:
                return
            upto = {"last_link": last[0], "last_at": last[1], "last_id": last[2], "links": last[3]}
            cursor.execute(COPY_CHUNK, at | upto)
        at = {"link": last[0], "at": last[1], "id": last[2]}


def _swap() -> bool:
    """The names swapped under the old table's lock, in the migration's transaction; False when no try got it."""
    conn = op.get_bind()
    for _ in range(SWAP_TRIES):
        try:
            with conn.begin_nested():
                op.execute(f"SET LOCAL lock_timeout = '{LOCK_WAIT}'")
                for statement in SWAP:
                    op.execute(statement)
                op.execute("SET LOCAL lock_timeout = DEFAULT")
            return True
        except OperationalError as exc:
            if getattr(exc.orig, "sqlstate", None) != LOCK_NOT_AVAILABLE:
                raise
    return False


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("LOCK TABLE clicks IN EXCLUSIVE MODE")  # reads go on; writes wait for the copy
    op.execute(f"CREATE TABLE {OLD} (LIKE clicks INCLUDING DEFAULTS)")
    op.execute(f"INSERT INTO {OLD} SELECT * FROM clicks")
    op.execute(f"ALTER TABLE {OLD} ADD CONSTRAINT {OLD}_pkey PRIMARY KEY (link_id, clicked_at, id)")
    op.execute(
        "DO $$ BEGIN EXECUTE format('ALTER SEQUENCE %s OWNED BY " + OLD + ".id', "
        "pg_get_serial_sequence('clicks', 'id')); END $$"
    )
    op.execute("DROP TABLE clicks")
    op.execute(f"ALTER TABLE {OLD} RENAME TO clicks")
    op.execute(f"ALTER TABLE clicks RENAME CONSTRAINT {OLD}_pkey TO clicks_pkey")
