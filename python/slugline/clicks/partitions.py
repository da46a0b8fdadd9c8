"""The click log's monthly partitions on PostgreSQL (migration 0010): made ahead of the clicks, dropped whole once
retention is past them, and a default partition that is kept empty.

COPY puts each click in the partition of its month (UTC); one whose month has none goes to the default partition,
so a click never fails for lack of a partition (a worker clock months off, a month not made yet). Making or dropping
a partition locks the whole click log (ACCESS EXCLUSIVE on the parent and the default partition): each change is a
transaction of its own that waits at most `LOCK_WAIT` for that lock, then gives up until the next pass rather than
hold click batches and reads queued behind it. Months are made `MONTHS_AHEAD` early, so a pass that gives up costs
nothing. Workers take turns through an advisory lock on the table.

Clicks in the default partition are moved into a partition of their month once that month is in reach (no later
than `MONTHS_AHEAD` from now): PostgreSQL refuses a partition over rows the default holds, and scans the default
partition each time one is made, so an empty one keeps that cheap. Those of a month past retention are deleted
there, as their partition would have been dropped; those of months further ahead wait for their month to come near.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, date, datetime

from sqlalchemy import Connection, Engine

MONTHS_AHEAD = 2  # months made before their first click
LOCK_WAIT = "1s"  # how long a change waits for the click log's lock
DEFAULT = "clicks_default"
_MONTHLY = re.compile(r"clicks_y(\d{4})m(\d{2})")
# Whose turn: one key per click log (per schema), held to the end of each change's transaction.
_TURN = "SELECT pg_advisory_xact_lock('clicks'::regclass::oid::bigint)"
_PARTITIONS = (
    "SELECT c.relname FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid "
    "WHERE i.inhparent = 'clicks'::regclass"
)


def month_of(day: date) -> date:
    return day.replace(day=1)


def next_month(month: date) -> date:
    return date(month.year + month.month // 12, month.month % 12 + 1, 1)


def name(month: date) -> str:
    return f"clicks_y{month.year:04d}m{month.month:02d}"


def _bound(month: date) -> str:
    return f"'{month.isoformat()} 00:00:00+00'"


def create(month: date, parent: str = "clicks") -> str:
    """The statement that makes `month`'s partition of `parent` unless it is there."""
    return (
        f"CREATE TABLE IF NOT EXISTS {name(month)} PARTITION OF {parent} "
        f"FOR VALUES FROM ({_bound(month)}) TO ({_bound(next_month(month))})"
    )


def create_default(parent: str = "clicks") -> str:
    return f"CREATE TABLE IF NOT EXISTS {DEFAULT} PARTITION OF {parent} DEFAULT"


def ahead(today: date) -> list[date]:
    """This month and the `MONTHS_AHEAD` after it."""
    months = [month_of(today)]
    for _ in range(MONTHS_AHEAD):
        months.append(next_month(months[-1]))
    return months


def partitioned(conn: Connection) -> bool:
    """Whether the click log is partitioned (false before migration 0010, and on SQLite)."""
    if conn.dialect.name != "postgresql":
        return False
    found = conn.exec_driver_sql("SELECT relkind FROM pg_class WHERE oid = to_regclass('clicks')").scalar()
    return found == "p"


def monthly(conn: Connection) -> list[date]:
    """The months that have a partition, oldest first."""
    found = (_MONTHLY.fullmatch(str(row)) for row in conn.exec_driver_sql(_PARTITIONS).scalars())
    return sorted(date(int(m[1]), int(m[2]), 1) for m in found if m)


def upkeep(engine: Engine, cutoff: datetime | None, today: date) -> Iterator[int]:
    """One pass, a transaction a step: the months ahead made, the default partition emptied, and with a `cutoff`
    the partitions wholly before it dropped. Yields the clicks each step deleted."""
    with engine.connect() as conn:
        if not partitioned(conn):
            return
        made = monthly(conn)
        stray = conn.exec_driver_sql(
            f"SELECT DISTINCT date_trunc('month', clicked_at AT TIME ZONE 'UTC')::date FROM {DEFAULT}"
        ).scalars()
        strays = sorted(stray)
    reach = ahead(today)
    for month in reach:
        if month not in made:  # with the clicks the default partition holds for it, if any
            _change(engine, *(_move(month) if month in strays else (create(month),)))
            yield 0
    for month in strays:
        if cutoff is not None and _end(month) <= cutoff:
            yield _change(engine, f"DELETE FROM {DEFAULT} WHERE {_within(month)}")
        elif month < reach[0]:
            _change(engine, *_move(month))
            yield 0
    for month in made:
        if cutoff is not None and _end(month) <= cutoff:
            with engine.connect() as conn:  # counted first, outside the lock (a month past retention gets no clicks)
                count = int(conn.exec_driver_sql(f"SELECT count(*) FROM clicks WHERE {_within(month)}").scalar_one())
            _change(engine, f"DROP TABLE IF EXISTS {name(month)}")
            yield count


def _end(month: date) -> datetime:
    return datetime.combine(next_month(month), datetime.min.time(), UTC)


def _within(month: date) -> str:
    return f"clicked_at >= {_bound(month)} AND clicked_at < {_bound(next_month(month))}"


def _move(month: date) -> tuple[str, ...]:
    """A month's clicks out of the default partition and into a partition of their own. The click log is locked
    first, so no batch adds to them between the move and the new partition's check of the default."""
    return (
        "LOCK TABLE clicks IN ACCESS EXCLUSIVE MODE",
        "CREATE TEMPORARY TABLE moving_clicks (LIKE clicks) ON COMMIT DROP",
        f"WITH gone AS (DELETE FROM {DEFAULT} WHERE {_within(month)} RETURNING *) "
        "INSERT INTO moving_clicks SELECT * FROM gone",
        create(month),
        "INSERT INTO clicks SELECT * FROM moving_clicks",
    )


def _change(engine: Engine, *statements: str) -> int:
    """`statements` in one transaction that waits at most `LOCK_WAIT` for any lock (PostgreSQL's LockNotAvailable,
    raised as an OperationalError, when it waited that long); the rows the first one changed."""
    with engine.begin() as conn:
        conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{LOCK_WAIT}'")
        conn.exec_driver_sql(_TURN)
        changed = [conn.exec_driver_sql(statement).rowcount for statement in statements]
        return max(changed[0], 0)
