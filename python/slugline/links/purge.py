"""`slugline links purge --expired-before DATE`: removes links that expired before a date, with their clicks.

In batches of `BATCH` links, each its own transaction, oldest expiry first: a purge of millions of links never holds
one long transaction (nor its locks) and can be stopped and run again. Each link is deleted as `DELETE /links/{id}`
deletes it: its clicks go with it (the foreign key on SQLite, 0006's trigger on PostgreSQL), its analytics cubes are
moved out by 0009's trigger, and the account's links version is bumped with a change-feed row, so every worker's
search index and redirect cache learn of it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, select

from slugline.common.models import Link
from slugline.links import events
from slugline.runtime import Runtime
from slugline.search import feed as searchfeed
from slugline.storage.loopwrite import drive, session_run

BATCH = 500

_EXPIRED = (
    select(Link.id, Link.account_id, Link.slug)
    .where(Link.expires_at < bindparam("before"))
    .order_by(Link.expires_at, Link.id)
    .limit(bindparam("limit"))
)
_DELETE = delete(Link).where(Link.id == bindparam("link_id"))


def purge_expired(rt: Runtime, before: datetime, batch: int = BATCH) -> dict[str, Any]:
    """Deletes every link whose `expires_at` is before `before` (UTC), `batch` at a time: how many, in how many
    batches. Blocking: run it on a thread (the command line does)."""
    purged = batches = 0
    dialect = rt.db.engine.dialect.name
    while True:
        done: list[tuple[int, int, str, str]] = []
        with rt.db.writing() as session:
            rows = session.execute(_EXPIRED, {"before": before, "limit": batch}).all()
            run = session_run(session)
            for link_id, account_id, slug in rows:
                session.execute(_DELETE, {"link_id": link_id})
                version = drive(searchfeed.bump(run, dialect, account_id, link_id))
                done.append((account_id, version, link_id, slug))
        for account_id, version, link_id, slug in done:
            events.link_deleted(rt, account_id, version, link_id, slug)
        if not rows:
            return {"purged": purged, "batches": batches, "expired_before": before.isoformat()}
        purged += len(rows)
        batches += 1
