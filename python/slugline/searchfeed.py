"""The change feed behind the search indexes: one `link_changes` row per `accounts.links_version` bump,
written in the bump's transaction. A worker whose index is at version v reads the rows after v and
refreshes just those links, so another worker's change costs it O(changed links), not a reload."""

from __future__ import annotations

from typing import cast

from sqlalchemy import Connection, Table, bindparam, delete, insert, select
from sqlalchemy.orm import Session

from slugline.loopwrite import Run
from slugline.models import LinkChange

# Rows kept per account. A worker further behind than this (idle, or just started) reloads instead.
KEEP = 1000
# Old rows are pruned on every PRUNE_EVERY-th version, so a write deletes in batches, not one by one.
PRUNE_EVERY = 100


CHANGES = cast(Table, LinkChange.__table__)  # plain Core on the table: no ORM bookkeeping per write
_RECORD = insert(CHANGES)
_PRUNE = delete(CHANGES).where(
    CHANGES.c.account_id == bindparam("account"), CHANGES.c.version <= bindparam("oldest_gone")
)


async def record(run: Run, account_id: int, version: int, link_id: str) -> None:
    """Note that `link_id` changed (saved or deleted) at `version`, in the transaction that bumped it."""
    await run(_RECORD, {"account_id": account_id, "version": version, "link_id": link_id})
    await prune(run, account_id, version)


def prune_due(version: int) -> bool:
    return version % PRUNE_EVERY == 0


async def prune(run: Run, account_id: int, version: int) -> None:
    """Rows too old to keep go, on every `PRUNE_EVERY`-th version (in its transaction, or just after it)."""
    if prune_due(version):
        await run(_PRUNE, {"account": account_id, "oldest_gone": version - KEEP})


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
