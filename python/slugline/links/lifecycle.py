"""A link's lifecycle: when it ends (`expires_at`, `max_clicks`), what it then does (`expired_url`, else 410 Gone),
`archived`, and the `status` every answer carries; with them, the columns of a link's answer that follow its plain
ones, among them its redirect `rules` (`common.rules`).

The status is not stored: it is read off the row at the time asked, in one order of precedence (archived, expired,
limit_reached, active), by `status` for answers and by `status_condition` for `GET /links?status=`, so the two cannot
disagree. The click limit is counted by the redirect itself with `take_click`: one conditional UPDATE, so that with
any number of workers and hosts exactly `max_clicks` visitors get through.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

import anyio.to_thread
import orjson
from sqlalchemy import ColumnElement, Table, and_, bindparam, false, not_, or_, true, update

from slugline.common.clock import as_utc, isoformat
from slugline.common.models import Link, LinkRecord
from slugline.storage.db import Database
from slugline.storage.loopwrite import CommitUnknown

ACTIVE, EXPIRED, LIMIT_REACHED, ARCHIVED = "active", "expired", "limit_reached", "archived"

_LINKS = cast(Table, Link.__table__)
# The columns of a link's JSON that are its lifecycle (after `links.service.SHOWN`'s others), and those an update sets.
COLUMNS = (
    Link.expires_at,
    Link.max_clicks,
    Link.clicks_used,
    Link.expired_url,
    Link.archived,
    Link.preview,
    Link.rules,
    Link.variants,
)
CHANGEABLE = ("expires_at", "max_clicks", "expired_url", "archived", "preview", "rules", "variants")
SHOWN_FIELDS = (*CHANGEABLE, "status")  # the lifecycle's fields in a link's JSON, in its order (`lifecycle_json`)
# One more visitor through a limited link, if one is left: the new count, or no row when it is used up. Exact under
# any concurrency: each UPDATE of the row waits for the one before it (PostgreSQL's row lock; SQLite's one writer)
# and re-checks `clicks_used < max_clicks` on the row as that one left it.
_TAKE = (
    update(_LINKS)
    .where(_LINKS.c.id == bindparam("link"), _LINKS.c.clicks_used < _LINKS.c.max_clicks)
    .values(clicks_used=_LINKS.c.clicks_used + 1)
    .returning(_LINKS.c.clicks_used)
)


def moment(stored: str | datetime | None) -> datetime | None:
    """A stored timestamp as an aware UTC datetime: drivers give text (SQLite's, PostgreSQL's on the loop) or
    datetimes (naive from SQLite through SQLAlchemy)."""
    if stored is None:
        return None
    if isinstance(stored, str):
        stored = datetime.fromisoformat(stored + ":00" if stored[-3] in "+-" else stored)
    return as_utc(stored)


def status(now: datetime, expires_at: datetime | None, max_clicks: int | None, clicks_used: int, archived: bool) -> str:
    if archived:
        return ARCHIVED
    if expires_at is not None and expires_at <= now:
        return EXPIRED
    if max_clicks is not None and clicks_used >= max_clicks:
        return LIMIT_REACHED
    return ACTIVE


def status_condition(wanted: str | None, archived: bool | None) -> list[ColumnElement[bool]]:
    """The rows a list keeps for `?status=` and `?archived=` (both unset: every link but archived ones); the current
    time is bound as `now`."""
    c = Link
    not_archived = c.archived == false()
    expired = and_(c.expires_at.is_not(None), c.expires_at <= bindparam("now"))
    used_up = and_(c.max_clicks.is_not(None), c.clicks_used >= c.max_clicks)
    conds: list[ColumnElement[bool]] = []
    if archived is not None:
        conds.append(c.archived == (true() if archived else false()))
    elif wanted != ARCHIVED:
        conds.append(not_archived)
    if wanted == ARCHIVED:
        conds.append(c.archived == true())
    elif wanted == EXPIRED:
        conds.append(expired)
    elif wanted == LIMIT_REACHED:
        conds += [not_(expired), used_up]
    elif wanted == ACTIVE:
        conds += [not_archived, not_(or_(expired, used_up))]
    return conds


def _take_on_thread(db: Database, link_id: str) -> bool:
    with db.writing() as session:
        return session.execute(_TAKE, {"link": link_id}).first() is not None


async def take_click(db: Database, link_id: str) -> bool:
    """Whether one more visitor may go through the limited link (and it is counted): on the event loop when the
    store's writer can make it at once, else on a thread. A write whose commit is unknown (the connection lost once
    it was sent) counts as refused: a limit is never exceeded, though such a visitor may have used a place."""
    writer = db.write_now
    if writer is not None:
        try:
            rows = await writer.write_at_once(_TAKE, {"link": link_id})
        except CommitUnknown:
            return False
        if rows is not None:
            return bool(rows)
    return await anyio.to_thread.run_sync(_take_on_thread, db, link_id)  # declined: nothing was written


def typed(link: LinkRecord) -> LinkRecord:
    """`link` as read by any reader (text from the loop's), with its lifecycle values as an update writes them."""
    link.expires_at = moment(link.expires_at)
    link.archived = bool(link.archived)
    if isinstance(link.preview, str):
        link.preview = orjson.loads(link.preview)
    if isinstance(link.rules, str):
        link.rules = orjson.loads(link.rules)
    if isinstance(link.variants, str):
        link.variants = orjson.loads(link.variants)
    return link


def lifecycle_json(row: tuple[Any, ...], now: datetime) -> dict[str, Any]:
    """The lifecycle fields of a link's JSON from the LIFECYCLE columns of its row."""
    expires, max_clicks, used, expired_url, archived, preview, *rest = row
    rules = rest[0] if rest else None  # a webhook message kept before migration 0016 has no rules
    variants = rest[1] if len(rest) > 1 else None  # nor one kept before 0018 variants
    expires_at = moment(expires)
    if isinstance(preview, str):
        preview = orjson.loads(preview)
    if isinstance(rules, str):
        rules = orjson.loads(rules)
    if isinstance(variants, str):
        variants = orjson.loads(variants)
    return {
        "expires_at": isoformat(expires_at),
        "max_clicks": max_clicks,
        "expired_url": expired_url,
        "archived": bool(archived),
        "preview": preview,
        "rules": rules or None,
        "variants": variants or None,
        "status": status(now, expires_at, max_clicks, used or 0, bool(archived)),
    }
