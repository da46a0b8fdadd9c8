"""The import's new links, written a chunk at a time (`slugline.links.importer`): one multi-row statement for the
links instead of one statement per link, which is what an import of a million links spends its time on.

The change feed stays exact: every link still takes its own links version and feed row, in file order, so a worker
that is a few versions behind refreshes just those links, and one that is further behind reloads (as it would after
as many single creates). On SQLite the triggers of migrations 0004 and 0005 do that per row of the statement (SQLite
has one writer: the version read before the statement is the one they count up from). On PostgreSQL the account's
version is bumped by the chunk's size in one UPDATE, which locks the account row for the transaction as a single
create's bump does, and the feed rows go in with one more statement. PostgreSQL takes the rows through psycopg 3's
COPY (`Cursor.copy`), its fastest way in; the slugs and ids were looked up first, so a clash can only come from a
concurrent writer, and it refuses the whole transaction. Old feed rows are pruned once per chunk.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

import orjson
from sqlalchemy import JSON, Table, insert, update
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from slugline.common.models import Account, Link, LinkRecord
from slugline.links import service as links
from slugline.search import feed as searchfeed

_LINKS = cast(Table, Link.__table__)
_ACCOUNTS = cast(Table, Account.__table__)
_JSON = frozenset(column.key for column in _LINKS.columns if isinstance(column.type, JSON))
_COPY_LINKS = f"COPY links ({', '.join(links.COLUMNS)}) FROM STDIN"
_INSERT_SQLITE = f"INSERT INTO links ({', '.join(links.COLUMNS)}) VALUES ({', '.join('?' for _ in links.COLUMNS)})"
_VALUES = operator.attrgetter(*links.COLUMNS)
_TRIGGERS = (
    "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN ('links_created', 'link_changes_bump')"
)
_COPY_FEED = "COPY link_changes (account_id, version, link_id) FROM STDIN"


def write_links(session: Session, account_id: int, made: list[LinkRecord]) -> int:
    """Writes `made` (new links of the account, slugs and ids known to be free) in the session's transaction; the
    links version of the first of them (the next one has the next version, and so on)."""
    if not made:
        return 0
    bump = update(_ACCOUNTS).where(_ACCOUNTS.c.id == account_id)
    bump = bump.values(links_version=_ACCOUNTS.c.links_version + len(made)).returning(_ACCOUNTS.c.links_version)
    if session.get_bind().dialect.name == "sqlite":
        last = int(session.execute(bump).scalar_one())  # first: SQLite's transaction begins with a write
        with _quiet(session):
            conn = session.connection()
            conn.exec_driver_sql(_INSERT_SQLITE, [_sqlite_row(conn.dialect, link) for link in made])
            session.execute(insert(searchfeed.CHANGES), [_fed(account_id, last, made, n) for n in _kept(last, made)])
    else:
        _copy(session, _COPY_LINKS, ([_cell(name, getattr(link, name)) for name in links.COLUMNS] for link in made))
        last = int(session.execute(bump).scalar_one())
        _copy(session, _COPY_FEED, (_fed(account_id, last, made, n).values() for n in _kept(last, made)))
    session.execute(searchfeed.PRUNE, {"account": account_id, "oldest_gone": last - searchfeed.KEEP})
    return last - len(made) + 1


def _kept(last: int, made: list[LinkRecord]) -> range:
    """The links whose feed rows are worth writing: the last `KEEP` (older ones would be pruned at once, and a
    worker that far behind reloads either way)."""
    return range(max(0, len(made) - searchfeed.KEEP), len(made))


def _fed(account_id: int, last: int, made: list[LinkRecord], n: int) -> dict[str, Any]:
    return {"account_id": account_id, "version": last - len(made) + 1 + n, "link_id": made[n].id}


@contextmanager
def _quiet(session: Session) -> Iterator[None]:
    """SQLite's per-row triggers of a create (migrations 0004 and 0005: a feed row and a version bump for each link,
    three quarters of a row's cost) dropped for the statements inside, and made again as they were, all in the
    transaction: no other connection ever sees them gone (SQLite's DDL is transactional; an error undoes it)."""
    conn = session.connection()
    found = conn.exec_driver_sql(_TRIGGERS).all()
    for name, _ in found:
        conn.exec_driver_sql(f'DROP TRIGGER "{name}"')
    yield
    for _, sql in found:
        conn.exec_driver_sql(sql)


def _sqlite_row(dialect: Dialect, link: LinkRecord) -> tuple[Any, ...]:
    """The link's values as the driver takes them, each through its column type's own conversion (what SQLAlchemy
    would do per row, at a fraction of its bookkeeping)."""
    pairs = zip(_converters(dialect), _VALUES(link), strict=True)
    return tuple([convert(value) if convert else value for convert, value in pairs])


@functools.cache
def _converters(dialect: Dialect) -> tuple[Callable[[Any], Any] | None, ...]:
    return tuple(_LINKS.c[name].type.dialect_impl(dialect).bind_processor(dialect) for name in links.COLUMNS)


def _cell(name: str, value: Any) -> Any:
    """A value as COPY takes it: JSON columns as their JSON text, None as JSON's null as SQLAlchemy writes it
    (psycopg adapts the rest)."""
    return orjson.dumps(value).decode() if name in _JSON else value


def _copy(session: Session, statement: str, rows: Any) -> None:
    """`rows` through COPY on the session's own psycopg connection (its transaction)."""
    driver = session.connection().connection.driver_connection
    assert driver is not None  # a connection checked out of the pool has its driver's
    import psycopg  # PostgreSQL's driver, there whenever this runs

    try:
        with driver.cursor() as cursor, cursor.copy(statement) as copy:
            for row in rows:
                copy.write_row(tuple(row))  # older psycopg releases index the row: a sequence, not a view
    except psycopg.errors.IntegrityError as exc:  # as SQLAlchemy raises it: the import tries the batch again
        raise IntegrityError(statement, None, exc) from exc
