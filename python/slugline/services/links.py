"""Link rules: create, list (with `q`), read, update, delete — scoped to the caller's account and key."""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, cast

import orjson
from sqlalchemy import ColumnElement, Row, Select, Table, bindparam, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from slugline import _core, loopread, searchfeed
from slugline._core import SearchIndex
from slugline.caller import Caller
from slugline.clock import isoformat, utcnow
from slugline.errors import Conflict, Forbidden, Invalid, NotFound
from slugline.loopwrite import Run, Taken, drive, session_run
from slugline.models import Account, Link
from slugline.runtime import Runtime
from slugline.schemas import LinkCreate, LinkUpdate, ListParams, non_null_fields
from slugline.services import events
from slugline.services.paging import pagination
from slugline.services.sqlhelpers import ids_in, match_ids
from slugline.services.validation import parse, without_nulls
from slugline.visibility import HIDDEN_LEVELS, PUBLIC_LEVELS, Visibility

NOT_FOUND = "link not found"
LINK_ID = re.compile(r"lnk_[0-9A-Za-z]{11}")
SLUG_ATTEMPTS = 3  # a generated slug that is taken is drawn again; 62^7 slugs make a second clash unlikely


# The columns a link's JSON shows: reads select just these (Core rows, not ORM objects).
SHOWN = (
    Link.id,
    Link.slug,
    Link.destination_url,
    Link.title,
    Link.description,
    Link.note,
    Link.hashtags,
    Link.visibility,
    Link.clicks,
    Link.created_at,
    Link.updated_at,
)
SHOWN_NAMES = tuple(column.key for column in SHOWN)
_GET = select(*SHOWN).where(Link.id == bindparam("link_id"), Link.account_id == bindparam("account_id"))
_GET_PUBLIC = _GET.where(Link.visibility.in_(PUBLIC_LEVELS))
LinkRow = Row[*tuple[Any, ...]]


def link_dict(link: Link | LinkRow, base_url: str) -> dict[str, Any]:
    """A link's JSON, from a Link or a row of the SHOWN columns."""
    return link_json(tuple(getattr(link, name) for name in SHOWN_NAMES), base_url)


def link_json(row: tuple[Any, ...], base_url: str) -> dict[str, Any]:
    """A link's JSON from a plain row of the SHOWN columns: a driver's (SQLite's gives JSON and timestamps as text,
    PostgreSQL's their values) or SQLAlchemy's."""
    link_id, slug, destination, title, description, note, hashtags, visibility, clicks, created, updated = row
    return {
        "id": link_id,
        "slug": slug,
        "short_url": f"{base_url}/{slug}",
        "destination_url": destination,
        "title": title,
        "description": description,
        "note": note,
        "hashtags": _tags(hashtags),
        "visibility": visibility,
        "clicks": clicks,
        "created_at": _moment(created),
        "updated_at": _moment(updated),
    }


def _tags(stored: str | list[str] | None) -> list[str]:
    """Hashtags as SQLite's driver gives them (JSON text) or PostgreSQL's (parsed)."""
    found = orjson.loads(stored) if isinstance(stored, str) else stored
    return list(found or ())


def _moment(stored: str | datetime | None) -> str | None:
    return loopread.iso(stored) if isinstance(stored, str) else isoformat(stored)


def visible(caller: Caller) -> list[ColumnElement[bool]]:
    """The rows a caller may see: its own account's, and only public/unlisted ones for a public key."""
    conds: list[ColumnElement[bool]] = [Link.account_id == caller.account_id]
    if caller.public_only:
        conds.append(Link.visibility.in_(PUBLIC_LEVELS))
    return conds


def _guard_visibility(caller: Caller, data: Any) -> None:
    wanted = data.get("visibility") if isinstance(data, dict) else None
    if caller.public_only and isinstance(wanted, str) and wanted in HIDDEN_LEVELS:
        raise Forbidden("a public-only key cannot make a link private or password-protected")


# Built once: building a statement costs more than running it.
# Built once, on the tables (plain Core: no ORM bookkeeping), and run on the session's connection.
_ACCOUNTS, _LINKS = cast(Table, Account.__table__), cast(Table, Link.__table__)
_BUMP = (
    update(_ACCOUNTS)
    .where(_ACCOUNTS.c.id == bindparam("account"))
    .values(links_version=_ACCOUNTS.c.links_version + 1)
    .returning(_ACCOUNTS.c.links_version)
)
_INSERT = insert(_LINKS)
COLUMNS = tuple(column.key for column in _LINKS.columns)  # every column, in order: what _INSERT writes, _WHOLE reads
# What an update writes: every column a client may change (never `clicks`, which the click writer moves meanwhile).
CHANGEABLE = ("slug", "destination_url", "title", "description", "note", "hashtags", "visibility", "password_hash")
# Locked for the update's transaction on PostgreSQL (SQLite has one writer anyway): two updates of one link queue,
# so neither writes back a field the other changed.
_WHOLE = (
    select(_LINKS)
    .where(_LINKS.c.id == bindparam("link_id"), _LINKS.c.account_id == bindparam("account_id"))
    .with_for_update()
)
_WHOLE_PUBLIC = _WHOLE.where(_LINKS.c.visibility.in_(PUBLIC_LEVELS))
_UPDATE = update(_LINKS).where(_LINKS.c.id == bindparam("link"))


async def _bump(run: Run, account_id: int, link_id: str) -> int:
    """The account's next links version, with the change-feed row other workers read, in this transaction."""
    version = int((await run(_BUMP, {"account": account_id}))[0][0])
    await searchfeed.record(run, account_id, version, link_id)
    return version


def check_create(caller: Caller, data: Any) -> LinkCreate:
    """A create body, checked: 403 for a level the key may not use, 422 for anything invalid."""
    _guard_visibility(caller, data)
    body = parse(LinkCreate, without_nulls(data))
    if body.visibility == Visibility.PASSWORD and not body.password:
        raise Invalid("password is required when visibility is 'password'")
    if body.visibility != Visibility.PASSWORD and body.password is not None:
        raise Invalid("password can only be set on a link whose visibility is 'password'")
    return body


def create_link(
    rt: Runtime, caller: Caller, data: Any, fetched: dict[str, str] | None = None, checked: LinkCreate | None = None
) -> dict[str, Any]:
    """`fetched`: auto_meta's title and description (`services.meta` fetches them); explicit fields win.
    `checked`: `data` as `check_create` already gave it (not checked twice)."""
    body = checked or check_create(caller, data)
    password_hash = _core.hash_password(body.password) if body.password else None

    async def insert(link: Link) -> int | None:
        return _insert(rt, link)

    return drive(_create(rt, caller, body, fetched, password_hash, insert))


async def create_link_now(
    rt: Runtime, caller: Caller, body: LinkCreate, fetched: dict[str, str] | None = None
) -> dict[str, Any] | None:
    """`create_link` made on the event loop when it can be (see `slugline.loopwrite`); None: call `create_link`.
    A link with a password is always made on a thread: hashing the password takes milliseconds of CPU."""
    writer = rt.db.write_now
    if writer is None or body.password:
        return None

    async def insert(link: Link) -> int | None:
        try:
            version = await writer.write(functools.partial(_write_new, link))
        except Taken:
            return None
        if version is None:
            raise _Declined
        return version

    try:
        return await _create(rt, caller, body, fetched, None, insert, wait=False)
    except _Declined:
        return None


class _Declined(Exception):
    """The loop writer could not make the write at once (nothing was written)."""


async def _create(
    rt: Runtime,
    caller: Caller,
    body: LinkCreate,
    fetched: dict[str, str] | None,
    password_hash: str | None,
    insert: Callable[[Link], Awaitable[int | None]],
    wait: bool = True,
) -> dict[str, Any]:
    """Makes the link with `insert` (the account's new links version, or None when the slug is taken), drawing a
    generated slug again when it is taken."""
    fields = body.model_dump(exclude={"auto_meta", "password"}, exclude_none=True)
    for name, value in (fetched or {}).items():
        if not fields.get(name):
            fields[name] = value
    for _ in range(SLUG_ATTEMPTS):
        now = utcnow()
        link = Link(
            id=_core.generate_link_id(),
            account_id=caller.account_id,
            clicks=0,
            created_at=now,
            updated_at=now,
            password_hash=password_hash,
            **{"hashtags": [], **fields},
        )
        if body.slug is None:
            link.slug = _core.generate_slug()
        version = await insert(link)
        if version is not None:
            events.link_saved(rt, caller.account_id, version, link, None, wait=wait)
            return link_dict(link, caller.base_url)
        if body.slug is not None:
            break
    raise Conflict(f"slug '{link.slug}' is already taken")


def _insert(rt: Runtime, link: Link) -> int | None:
    """The account's new links version, or None when the slug is taken."""
    try:
        with rt.db.writing() as session:
            return drive(_write_new(link, session_run(session)))
    except IntegrityError:
        return None


async def _write_new(link: Link, run: Run) -> int:
    await run(_INSERT, {name: getattr(link, name) for name in COLUMNS})
    return await _bump(run, link.account_id, link.id)


@functools.lru_cache(maxsize=64)
def page_statement(
    dialect: str, sort: str, direction: str, public_only: bool, by_ids: bool
) -> Select[*tuple[Any, ...]]:
    """The page query for one shape, built once (SQLAlchemy then reuses its compiled form).

    `by_ids`: read the ids bound to `match_ids` by primary key, then sort (the `+ 0` only stops the
    database from walking the account's index instead)."""
    column = getattr(Link, sort)
    order = (
        [column.asc().nulls_last(), Link.id.asc()]
        if direction == "asc"
        else [column.desc().nulls_last(), Link.id.desc()]
    )
    account = Link.account_id + 0 if by_ids else Link.account_id
    conds: list[ColumnElement[bool]] = [account == bindparam("account_id")]
    if public_only:
        conds.append(Link.visibility.in_(PUBLIC_LEVELS))
    if by_ids:
        conds.append(ids_in(dialect, Link.id.expression, "match_ids"))
    return select(*SHOWN).where(*conds).order_by(*order).limit(bindparam("limit")).offset(bindparam("offset"))


_VERSION = select(Account.links_version).where(Account.id == bindparam("account_id"))


def list_links(rt: Runtime, caller: Caller, data: Any) -> dict[str, Any]:
    """A page of links; a read on a Core connection, so no ORM session or object is made.

    With `q`, the account's search index gives the matches and their number, and, sorted by creation time, the
    page itself (the index orders by creation time, then id, as the database does); other sorts read the matches
    by primary key and sort them in the database. Without `q`, the number is counted once per version of the
    account's links (every link write bumps it) and remembered."""
    params = parse(ListParams, without_nulls(data))
    binds: dict[str, Any] = {
        "account_id": caller.account_id,
        "limit": params.per,
        "offset": (params.page - 1) * params.per,
    }
    searching = bool(params.q and params.q.strip())
    # With `q`, a transaction: the search index may load through a server-side cursor.
    with rt.db.engine.connect() if searching else rt.db.reading() as conn:
        if searching:
            total, ids = rt.search.use(conn, caller.account_id, lambda index: _matches(index, caller, params))
            if params.sort == "created_at":
                binds["offset"] = 0
            binds["match_ids"] = match_ids(conn, ids)
        else:
            version = conn.scalar(_VERSION, {"account_id": caller.account_id}) or 0
            counted = rt.link_counts.get(caller.account_id, caller.public_only, version)
            if counted is None:
                counted = conn.scalar(select(func.count()).select_from(Link).where(*visible(caller))) or 0
                rt.link_counts.put(caller.account_id, caller.public_only, version, counted)
            total = counted
        stmt = page_statement(conn.dialect.name, params.sort, params.dir, caller.public_only, searching)
        data_out = [link_dict(row, caller.base_url) for row in conn.execute(stmt, binds)] if total else []
    return {"data": data_out, "pagination": pagination(params.page, params.per, total)}


def _matches(index: SearchIndex, caller: Caller, params: ListParams) -> tuple[int, list[str]]:
    """How many links match `q`, and the ids to read: the page itself when sorted by creation time, else all."""
    query = params.q or ""
    if params.sort == "created_at":
        newest_first = params.dir == "desc"
        offset = (params.page - 1) * params.per
        return index.filter_page(
            query, public_only=caller.public_only, newest_first=newest_first, offset=offset, limit=params.per
        )
    ids = index.filter(query, caller.public_only)
    return len(ids), ids


async def version_now(rt: Runtime, account_id: int) -> int | None:
    """The account's links version read on the event loop, or None when the loop reader cannot answer."""
    reader = rt.db.now
    versions = await reader.fetch(_VERSION, {"account_id": account_id}) if reader is not None else None
    if versions is None:
        return None
    return int(versions[0][0] or 0) if versions else 0


async def rows_now(rt: Runtime, caller: Caller, ids: list[str]) -> list[tuple[Any, ...]] | None:
    """The rows (SHOWN columns) of the links `ids` the caller may see, read on the event loop; None: cannot."""
    if not ids:
        return []
    reader = rt.db.now
    if reader is None:
        return None
    dialect = reader.dialect.name
    binds = {"account_id": caller.account_id, "limit": len(ids), "offset": 0, "match_ids": match_ids(dialect, ids)}
    return await reader.fetch(page_statement(dialect, "created_at", "desc", caller.public_only, True), binds)


async def list_links_now(rt: Runtime, caller: Caller, params: ListParams) -> dict[str, Any] | None:
    """`list_links` answered on the event loop when it can be: a page in creation order (the account's index, or
    with `q` the search index, gives it) and the total already at hand (remembered for the account's current links
    version, or the search index held at that version). None: call `list_links`."""
    reader = rt.db.now
    if reader is None or params.sort != "created_at":
        return None
    version = await version_now(rt, caller.account_id)
    if version is None:
        return None
    rows: list[Any] | None
    if params.q and params.q.strip():
        index = rt.search.current(caller.account_id, version)
        if index is None:
            return None
        total, ids = _matches(index, caller, params)
        rows = await rows_now(rt, caller, ids)
        if rows is not None:  # read by primary key: back in the index's order
            at = {link_id: n for n, link_id in enumerate(ids)}
            rows.sort(key=lambda row: at[row[0]])
    else:
        counted = rt.link_counts.get(caller.account_id, caller.public_only, version)
        if counted is None:
            return None
        total, rows = counted, []
        if total:
            binds = {"account_id": caller.account_id, "limit": params.per, "offset": (params.page - 1) * params.per}
            stmt = page_statement(reader.dialect.name, "created_at", params.dir, caller.public_only, False)
            rows = await reader.fetch(stmt, binds)
    if rows is None:
        return None
    data = [link_json(row, caller.base_url) for row in rows]
    return {"data": data, "pagination": pagination(params.page, params.per, total)}


def find_link(session: Session, caller: Caller, link_id: str) -> Link:
    if not LINK_ID.fullmatch(link_id):  # not an id we could have made: no query (and no NUL sent to the database)
        raise NotFound(NOT_FOUND)
    link = session.scalar(select(Link).where(Link.id == link_id, *visible(caller)))
    if link is None:
        raise NotFound(NOT_FOUND)
    return link


def get_link(rt: Runtime, caller: Caller, link_id: str) -> dict[str, Any]:
    if not LINK_ID.fullmatch(link_id):
        raise NotFound(NOT_FOUND)
    stmt = _GET_PUBLIC if caller.public_only else _GET
    with rt.db.reading() as conn:
        row = conn.execute(stmt, _key(caller, link_id)).first()
    if row is None:
        raise NotFound(NOT_FOUND)
    return link_dict(row, caller.base_url)


async def get_link_now(rt: Runtime, caller: Caller, link_id: str) -> dict[str, Any] | None:
    """`get_link` answered on the event loop when it can be (see `slugline.loopread`); None: call `get_link`."""
    reader = rt.db.now
    if reader is None or not LINK_ID.fullmatch(link_id):
        return None
    rows = await reader.fetch(_GET_PUBLIC if caller.public_only else _GET, _key(caller, link_id))
    if rows is None:
        return None
    if not rows:
        raise NotFound(NOT_FOUND)
    return link_json(rows[0], caller.base_url)


def _key(caller: Caller, link_id: str) -> dict[str, Any]:
    return {"link_id": link_id, "account_id": caller.account_id}


def update_link(rt: Runtime, caller: Caller, link_id: str, data: Any) -> dict[str, Any]:
    if not LINK_ID.fullmatch(link_id):
        raise NotFound(NOT_FOUND)
    try:
        with rt.db.writing() as session:
            link, old_slug, version = drive(_change(caller, link_id, data, session_run(session)))
    except IntegrityError:
        raise Conflict(f"slug '{data.get('slug')}' is already taken") from None
    events.link_saved(rt, caller.account_id, version, link, old_slug)
    return link_dict(link, caller.base_url)


async def update_link_now(rt: Runtime, caller: Caller, link_id: str, data: Any) -> dict[str, Any] | None:
    """`update_link` made on the event loop when it can be (see `slugline.loopwrite`); None: call `update_link`.
    A new password is always set on a thread: hashing it takes milliseconds of CPU."""
    writer = rt.db.write_now
    if writer is None or not LINK_ID.fullmatch(link_id) or (isinstance(data, dict) and data.get("password")):
        return None
    try:
        changed = await writer.write(functools.partial(_change, caller, link_id, data))
    except Taken:
        raise Conflict(f"slug '{data.get('slug')}' is already taken") from None
    if changed is None:
        return None
    link, old_slug, version = changed
    events.link_saved(rt, caller.account_id, version, link, old_slug, wait=False)
    return link_dict(link, caller.base_url)


async def _change(caller: Caller, link_id: str, data: Any, run: Run) -> tuple[Link, str, int]:
    """The update's transaction: (the link as changed, its slug before, the account's new links version). Core on
    the tables, no ORM bookkeeping: `link` is never added to a session."""
    found = await run(_WHOLE_PUBLIC if caller.public_only else _WHOLE, _key(caller, link_id))
    if not found:
        raise NotFound(NOT_FOUND)
    link = Link(**dict(zip(COLUMNS, found[0], strict=True)))
    old_slug = link.slug
    _guard_visibility(caller, data)
    body = parse(LinkUpdate, data)
    sent = body.model_fields_set
    if not sent:
        raise Invalid("the update body is empty: send at least one field to change")
    if bad := non_null_fields(data):
        raise Invalid(f"{bad[0]} cannot be null")
    _apply_password(link, body, sent)
    for name in sent - {"password"}:
        value = getattr(body, name)
        setattr(link, name, [] if name == "hashtags" and value is None else value)
    link.updated_at = utcnow()
    changes = {name: getattr(link, name) for name in CHANGEABLE}
    await run(_UPDATE, {"link": link_id, "updated_at": link.updated_at, **changes})
    return link, old_slug, await _bump(run, caller.account_id, link.id)


def _apply_password(link: Link, body: LinkUpdate, sent: set[str]) -> None:
    target = body.visibility if "visibility" in sent else link.visibility
    if target == Visibility.PASSWORD:
        if body.password:
            link.password_hash = _core.hash_password(body.password)
        elif not link.password_hash:
            raise Invalid("password is required when visibility is 'password'")
    elif "password" in sent:
        raise Invalid("password can only be set on a link whose visibility is 'password'")
    else:
        link.password_hash = None


def delete_link(rt: Runtime, caller: Caller, link_id: str) -> dict[str, Any]:
    with rt.db.writing() as session:
        link = find_link(session, caller, link_id)
        slug = link.slug
        session.delete(link)
        session.flush()
        version = drive(_bump(session_run(session), caller.account_id, link_id))
    events.link_deleted(rt, caller.account_id, version, link_id, slug)
    return {"deleted": True, "id": link_id}
