"""The change feed behind the search indexes: one `link_changes` row per `accounts.links_version` bump,
written in the bump's transaction. A worker whose index is at version v reads the rows after v and
refreshes just those links, so another worker's change costs it O(changed links), not a reload.

The bump and its feed row are one statement (`bump`): each statement of a write costs the worker far more under
load than its own work, since SQLite's driver lets go of the GIL for every one and the server's threads take it.
PostgreSQL bumps in a data-modifying CTE and inserts the feed row from what it returns. SQLite has no such CTE:
the feed row is inserted with the account's next version, and the trigger `link_changes_bump` (migration 0004)
sets the account's version to it in the same statement. SQLite has one writer at a time, so the version read and
the version set cannot interleave with another write.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import Connection, Insert, Select, String, Table, bindparam, delete, insert, select, update
from sqlalchemy import cast as sql_cast
from sqlalchemy.orm import Session

from slugline.common.models import Account, LinkChange
from slugline.storage.loopwrite import Run

# Rows kept per account. A worker further behind than this (idle, or just started) reloads instead.
KEEP = 1000
# Old rows are pruned on every PRUNE_EVERY-th version, so a write deletes in batches, not one by one.
PRUNE_EVERY = 100


CHANGES = cast(Table, LinkChange.__table__)  # plain Core on the table: no ORM bookkeeping per write
_ACCOUNTS = cast(Table, Account.__table__)
PRUNE = delete(CHANGES).where(
    CHANGES.c.account_id == bindparam("account"), CHANGES.c.version <= bindparam("oldest_gone")
)


def _fed(source: Select[Any]) -> Insert:
    """The feed row made of `source`'s (account id, version, link id); the statement returns the version."""
    return insert(CHANGES).from_select(["account_id", "version", "link_id"], source).returning(CHANGES.c.version)


_LINK_ID = sql_cast(bindparam("link_id"), String(15))
_BUMPED = (
    update(_ACCOUNTS)
    .where(_ACCOUNTS.c.id == bindparam("account"))
    .values(links_version=_ACCOUNTS.c.links_version + 1)
    .returning(_ACCOUNTS.c.id, _ACCOUNTS.c.links_version)
    .cte("bumped")
)
_BUMP = {
    "postgresql": _fed(select(_BUMPED.c.id, _BUMPED.c.links_version, _LINK_ID)),
    "sqlite": _fed(
        select(_ACCOUNTS.c.id, _ACCOUNTS.c.links_version + 1, _LINK_ID).where(_ACCOUNTS.c.id == bindparam("account"))
    ),
}


async def bump(run: Run, dialect: str, account_id: int, link_id: str) -> int:
    """The account's next links version, with the feed row saying that `link_id` changed (saved or deleted), in
    one statement of the write's transaction (on the database `dialect` names)."""
    version = int((await run(_BUMP[dialect], {"account": account_id, "link_id": link_id}))[0][0])
    await prune(run, account_id, version)
    return version


def prune_due(version: int) -> bool:
    return version % PRUNE_EVERY == 0


async def prune(run: Run, account_id: int, version: int) -> None:
    """Rows too old to keep go, on every `PRUNE_EVERY`-th version (in its transaction, or just after it)."""
    if prune_due(version):
        await run(PRUNE, {"account": account_id, "oldest_gone": version - KEEP})


def changed_since(
    session: Session | Connection, account_id: int, seen: int, current: int, limit: int = KEEP
) -> tuple[int, set[str]] | None:
    """(newest version, ids of the links changed after version `seen`, up to `current` at least), or None when
    the feed cannot tell (rows pruned, or more than `limit` of them): then only a reload is exact."""
    rows = session.execute(
        select(LinkChange.version, LinkChange.link_id)
        .where(LinkChange.account_id == account_id, LinkChange.version > seen)
        .order_by(LinkChange.version)
        .limit(limit + 1)
    ).all()
    if len(rows) > limit:
        return None
    # Versions come from the account row's bump, one per committed change: a gap means pruned rows.
    if any(version != seen + i + 1 for i, (version, _) in enumerate(rows)):
        return None
    newest = rows[-1][0] if rows else seen
    return (newest, {link_id for _, link_id in rows}) if newest >= current else None
