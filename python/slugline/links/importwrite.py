"""The import's new links, written a chunk at a time (`slugline.links.importer`): one multi-row statement for the
links instead of one statement per link, which is what an import of a million links spends its time on.

The change feed stays exact: every link still takes its own links version, in file order, and the chunk's last
`searchfeed.KEEP` links their feed rows, so a worker that is a few versions behind refreshes just those links, and one
that is further behind reloads (as it would after as many single creates). The account's version is bumped by the
chunk's size in one UPDATE, which locks the account row for the transaction as a single create's bump does, and the
feed rows go in with one more statement (on SQLite the per-row triggers of migrations 0004 and 0005, which would do
it a row at a time, are dropped inside the transaction: `_quiet`). PostgreSQL takes the rows through psycopg 3's COPY
(`Cursor.copy`), its fastest way in; SQLite through one prepared `executemany`. The slugs and ids were looked up
first, so a clash can only come from a concurrent writer, and it refuses the whole transaction. Old feed rows are
pruned once per chunk.

Webhooks: each new link gets a link.created message for every endpoint of the account that wants it, in the chunk's
transaction, from the trigger of migration 0015. When the account has no such endpoint (the transaction looks first)
the trigger is kept from running for each row for nothing: dropped inside the transaction on SQLite, whose one write
lock the transaction already holds (so no endpoint can be added meanwhile), and skipped by its WHEN on PostgreSQL
(migration 0020). There an endpoint another transaction adds while the chunk is written gets no message for it, as
it would get none for the links a per-row trigger had written before that endpoint committed.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

import orjson
from sqlalchemy import JSON, Table, text, update
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from slugline.common.models import Account, Link, LinkRecord
from slugline.links import service as links
from slugline.search import feed as searchfeed
from slugline.storage import quiettriggers

_LINKS = cast(Table, Link.__table__)
_ACCOUNTS = cast(Table, Account.__table__)
_JSON_AT = tuple(n for n, name in enumerate(links.COLUMNS) if isinstance(_LINKS.c[name].type, JSON))
_COPY_LINKS = f"COPY links ({', '.join(links.COLUMNS)}) FROM STDIN"
_INSERT_SQLITE = f"INSERT INTO links ({', '.join(links.COLUMNS)}) VALUES ({', '.join('?' for _ in links.COLUMNS)})"
_VALUES = operator.attrgetter(*links.COLUMNS)
_TRIGGERS = (
    "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN ('links_created', 'link_changes_bump')"
)
_FEED_SQLITE = "INSERT INTO link_changes (account_id, version, link_id) VALUES (?, ?, ?)"
# Whether the webhook trigger of a create would write anything for the account's links (its own condition).
_SUBSCRIBED = (
    "SELECT 1 FROM webhook_endpoints e WHERE e.account_id = ? AND e.enabled AND e.events LIKE '%,link.created,%'"
)
_WEBHOOK_TRIGGER = "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name = 'links_webhook_created'"
# PostgreSQL's webhook trigger of a create skips the account's rows for the rest of the transaction (migration 0020).
_QUIET_PG = quiettriggers.naming(quiettriggers.IMPORTING)
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
        with _quiet(session, account_id):
            conn = session.connection()
            conn.exec_driver_sql(_INSERT_SQLITE, [_sqlite_row(conn.dialect, link) for link in made])
            fed = [tuple(_fed(account_id, last, made, n).values()) for n in _kept(last, made)]
            conn.exec_driver_sql(_FEED_SQLITE, fed)
    else:
        if session.execute(text(_SUBSCRIBED.replace("?", ":account")), {"account": account_id}).first() is None:
            session.execute(_QUIET_PG, {"account": str(account_id)})
        _copy(session, _COPY_LINKS, (_pg_row(link) for link in made))
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
def _quiet(session: Session, account_id: int) -> Iterator[None]:
    """SQLite's per-row triggers of a create (migrations 0004 and 0005: a feed row and a version bump for each link,
    three quarters of a row's cost) dropped for the statements inside, and made again as they were, all in the
    transaction: no other connection ever sees them gone (SQLite's DDL is transactional; an error undoes it). The
    webhook trigger (0015, made again by 0016 and 0018) goes too when no endpoint of the account wants link.created:
    it would write nothing for any of the links, and none can be added meanwhile (the transaction holds SQLite's one
    write lock since its first statement). Otherwise it stays, and writes each link's messages."""
    conn = session.connection()
    found = list(conn.exec_driver_sql(_TRIGGERS).all())
    if conn.exec_driver_sql(_SUBSCRIBED, (account_id,)).first() is None:
        found += conn.exec_driver_sql(_WEBHOOK_TRIGGER).all()
    for name, _ in found:
        conn.exec_driver_sql(f'DROP TRIGGER "{name}"')
    yield
    for _, sql in found:
        conn.exec_driver_sql(sql)


def _sqlite_row(dialect: Dialect, link: LinkRecord) -> tuple[Any, ...]:
    """The link's values as the driver takes them, each through its column type's own conversion (what SQLAlchemy
    would do per row, at a fraction of its bookkeeping)."""
    values = list(_VALUES(link))
    for at, convert, none in _converters(dialect):
        value = values[at]
        values[at] = none if value is None else convert(value)
    return tuple(values)


@functools.cache
def _converters(dialect: Dialect) -> tuple[tuple[int, Callable[[Any], Any], Any], ...]:
    """(position, conversion, what it makes of None) of each column that has a conversion (worked out once: most
    columns have none, most of an imported link's values are None, and a JSON column's None is its JSON text `null`)."""
    found: list[tuple[int, Callable[[Any], Any], Any]] = []
    for at, name in enumerate(links.COLUMNS):
        convert = _LINKS.c[name].type.dialect_impl(dialect).bind_processor(dialect)
        if convert is not None:
            found.append((at, _by_tags(convert) if name == "hashtags" else convert, convert(None)))
    return tuple(found)


def _by_tags(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`convert` of a hashtags list, kept for the last few thousand lists: an import's links share a few tag sets,
    and the JSON encoder was a tenth of a row's Python time."""

    @functools.lru_cache(maxsize=4096)
    def known(tags: tuple[str, ...]) -> Any:
        return convert(list(tags))

    return lambda tags: known(tuple(tags))


def _pg_row(link: LinkRecord) -> list[Any]:
    """The link's values as COPY takes them: JSON columns as their JSON text, None as JSON's null as SQLAlchemy
    writes it (psycopg adapts the rest)."""
    values = list(_VALUES(link))
    for at in _JSON_AT:
        values[at] = orjson.dumps(values[at]).decode()
    return values


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
