"""Many links in one call: create up to `MAX_ITEMS`, make one change to many ids, delete many ids.

Each operation is one function that REST and MCP call (`create_links`, `update_links`, `delete_links`) and one
transaction on a worker thread. A body that breaks the rules of its schema refuses the whole call (422 naming the
item), as any body does; past that, every item is checked before anything is written, so an item that fails writes
nothing and no savepoint is needed: each answers on its own (`index`, `status`, then the link or `error` in the
words a single call uses), unless `atomic` is set, when the first failure refuses the whole call and nothing is
written. Scope rules hold per item: a public-only key can neither create nor touch a hidden link, and a hidden id
answers as not found. Every write goes through the change feed as a single one does, and the caches and the search
index learn of them once the transaction commits. A bulk call draws one rate-limit token per item
(`limits.charge`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio.to_thread
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from slugline import _core
from slugline.common.caller import Caller
from slugline.common.clock import utcnow
from slugline.common.errors import Conflict, Invalid, NotFound, ServiceError
from slugline.common.inputs import LinkCreate
from slugline.common.models import Link, LinkRecord
from slugline.common.validation import parse
from slugline.limits import rules as limits
from slugline.links import events
from slugline.links import service as links
from slugline.links.bulkbodies import MAX_ITEMS as MAX_ITEMS
from slugline.links.bulkbodies import BulkCreate as BulkCreate
from slugline.links.bulkbodies import BulkDelete as BulkDelete
from slugline.links.bulkbodies import BulkUpdate as BulkUpdate
from slugline.links.bulkbodies import Item, Saved, answer, each, failed, refuse
from slugline.runtime import Runtime
from slugline.search import feed as searchfeed
from slugline.storage.loopwrite import drive, session_run


async def create_links(rt: Runtime, caller: Caller, data: Any, ip: str | None = None) -> dict[str, Any]:
    """`data`: `BulkCreate`. The items are checked first, all of them: one that breaks a rule of the create body
    (what the document's schema says, and `auto_meta`, which would hold the call for a fetch per item) refuses the
    call with 422 naming it, before any rate-limit token beyond the call's own is drawn. The other refusals are the
    item's own answer (403, 409)."""
    body = parse(BulkCreate, data)
    checked = await anyio.to_thread.run_sync(_check_all, caller, body)
    await limits.charge(rt, caller, ip, len(body.links))
    return await anyio.to_thread.run_sync(_create_on_thread, rt, caller, body, checked)


def _check_all(caller: Caller, body: BulkCreate) -> list[LinkCreate | ServiceError]:
    checked: list[LinkCreate | ServiceError] = []
    for index, item in enumerate(body.links):
        try:
            made = links.check_create(caller, item)
            if made.auto_meta:
                raise Invalid("auto_meta is not available in a bulk create: set title and description, or create alone")
            checked.append(made)
        except Invalid as exc:
            raise refuse(index, exc) from None
        except ServiceError as exc:
            if body.atomic:
                raise refuse(index, exc) from None
            checked.append(exc)
    return checked


def _create_on_thread(
    rt: Runtime, caller: Caller, body: BulkCreate, checked: list[LinkCreate | ServiceError]
) -> dict[str, Any]:
    hashes = [_core.hash_password(c.password) if isinstance(c, LinkCreate) and c.password else None for c in checked]
    for attempt in range(2):  # a slug taken by a concurrent writer after the check: the whole call is tried again
        try:
            return _write(rt, caller, lambda session: _create_all(rt, caller, session, checked, hashes, body.atomic))
        except IntegrityError:
            if attempt:
                raise Conflict("a slug was taken by another request meanwhile: try again") from None
    raise AssertionError("unreachable")


def _create_all(
    rt: Runtime,
    caller: Caller,
    session: Session,
    checked: list[LinkCreate | ServiceError],
    hashes: list[str | None],
    atomic: bool,
) -> tuple[list[Item], list[Saved]]:
    wanted = [c.slug for c in checked if isinstance(c, LinkCreate) and c.slug is not None]
    taken = _taken(session, wanted)
    results: list[Item] = []
    records: list[tuple[int, LinkRecord]] = []
    for index, item in enumerate(checked):
        refused = item if isinstance(item, ServiceError) else None
        if isinstance(item, LinkCreate):
            if item.slug is not None and item.slug in taken:
                refused = Conflict(f"slug '{item.slug}' is already taken")
            else:
                slug = item.slug if item.slug is not None else _fresh_slug(session, taken)
                taken.add(slug)
                records.append((index, _record(caller, item, slug, hashes[index])))
        if refused is not None:
            if atomic:
                raise refuse(index, refused)
            results.append(failed(index, refused))
    dialect = rt.db.engine.dialect.name
    saved: list[Saved] = []
    for index, link in records:
        version = drive(links.write_new(dialect, link, session_run(session)))
        saved.append((version, link, link.id, None))
        results.append({"index": index, "status": 201, "link": links.link_dict(link, caller.base_url)})
    return sorted(results, key=lambda item: int(item["index"])), saved


def _taken(session: Session, slugs: list[str]) -> set[str]:
    """Which of `slugs` are taken already (a repeat within the call is taken by its first, as the loop goes)."""
    taken: set[str] = set()
    for start in range(0, len(slugs), 500):
        part = slugs[start : start + 500]
        taken.update(session.scalars(select(Link.slug).where(Link.slug.in_(part))))
    return taken


def _fresh_slug(session: Session, taken: set[str]) -> str:
    while True:
        slug = _core.generate_slug()
        if slug not in taken and session.scalar(select(Link.id).where(Link.slug == slug)) is None:
            return slug


def _record(caller: Caller, body: LinkCreate, slug: str, password_hash: str | None) -> LinkRecord:
    """The new link's row, as `links.create_link` makes it."""
    fields = body.model_dump(exclude={"auto_meta", "password", "slug"}, exclude_none=True)
    now = utcnow()
    return LinkRecord(
        id=_core.generate_link_id(),
        account_id=caller.account_id,
        slug=slug,
        clicks=0,
        created_at=now,
        updated_at=now,
        password_hash=password_hash,
        **{"hashtags": [], **fields},
    )


def _write(rt: Runtime, caller: Caller, work: Callable[[Session], tuple[list[Item], list[Saved]]]) -> dict[str, Any]:
    """`work` in one write transaction; then, committed, the caches and the search index learn of its writes."""
    with rt.db.writing() as session:
        results, saved = work(session)
    for version, link, link_id, old_slug in saved:
        if link is None:
            events.link_deleted(rt, caller.account_id, version, link_id, old_slug or "")
        else:
            events.link_saved(rt, caller.account_id, version, link, old_slug)
    return answer(results)


async def update_links(rt: Runtime, caller: Caller, data: Any, ip: str | None = None) -> dict[str, Any]:
    """`data`: `BulkUpdate`. The change itself is checked once, for every item: 403 or 422 refuses the call."""
    body = parse(BulkUpdate, data)
    if "slug" in body.change:
        raise Invalid("change.slug cannot be set in bulk: every link has its own slug")
    links.check_update(caller, body.change)
    await limits.charge(rt, caller, ip, len(body.ids))
    return await anyio.to_thread.run_sync(_update_on_thread, rt, caller, body)


def _update_on_thread(rt: Runtime, caller: Caller, body: BulkUpdate) -> dict[str, Any]:
    dialect = rt.db.engine.dialect.name

    def change(session: Session, index: int, link_id: str) -> tuple[Item, Saved]:
        if not links.LINK_ID.fullmatch(link_id):
            raise NotFound(links.NOT_FOUND)
        link, old_slug, version = drive(links.write_change(caller, link_id, body.change, dialect, session_run(session)))
        done: Saved = (version, link, link.id, old_slug)
        return {"index": index, "status": 200, "link": links.link_dict(link, caller.base_url)}, done

    return _write(rt, caller, lambda session: each(session, body, change))


async def delete_links(rt: Runtime, caller: Caller, data: Any, ip: str | None = None) -> dict[str, Any]:
    """`data`: `BulkDelete`. Each link goes with its clicks, as `DELETE /links/{id}`."""
    body = parse(BulkDelete, data)
    await limits.charge(rt, caller, ip, len(body.ids))
    return await anyio.to_thread.run_sync(_delete_on_thread, rt, caller, body)


def _delete_on_thread(rt: Runtime, caller: Caller, body: BulkDelete) -> dict[str, Any]:
    dialect = rt.db.engine.dialect.name

    def remove(session: Session, index: int, link_id: str) -> tuple[Item, Saved]:
        link = links.find_link(session, caller, link_id)
        slug = link.slug
        session.delete(link)
        session.flush()
        version = drive(searchfeed.bump(session_run(session), dialect, caller.account_id, link_id))
        return {"index": index, "status": 200, "deleted": True, "id": link_id}, (version, None, link_id, slug)

    return _write(rt, caller, lambda session: each(session, body, remove))
