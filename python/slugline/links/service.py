"""Links: create, list (with `q`), read, update, delete — scoped to the caller's account and key.

Each operation is one async function that every interface (REST, MCP, the dashboard) calls: `create_link`,
`list_links`, `get_link`, `update_link`, `delete_link`. Where it runs is its own business. A small read or write is
made on the event loop when the store's loop reader or writer can do it at once (`storage.loopread`,
`storage.loopwrite`); anything else runs on a worker thread. The `*_on_loop` and `*_on_thread` functions are those
two ways, kept public so the tests can prove they give the same answers.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any, cast

import anyio.to_thread
import orjson
from sqlalchemy import (
    CTE,
    BindParameter,
    ColumnElement,
    Row,
    Select,
    Table,
    bindparam,
    exists,
    func,
    insert,
    select,
    true,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from sqlalchemy.sql.dml import ReturningUpdate

from slugline import _core
from slugline.common.caller import Caller
from slugline.common.clock import isoformat, utcnow
from slugline.common.errors import Conflict, Forbidden, Invalid, NotFound, ServiceError
from slugline.common.inputs import LinkCreate, LinkUpdate, ListParams, non_null_fields
from slugline.common.models import Account, Link, LinkRecord
from slugline.common.paging import pagination
from slugline.common.validation import parse, without_nulls
from slugline.common.visibility import HIDDEN_LEVELS, PUBLIC_LEVELS, Visibility
from slugline.limits import rules as limits
from slugline.links import events, lifecycle, meta
from slugline.runtime import Runtime
from slugline.search import feed as searchfeed
from slugline.search.cache import LOOP_FILTER_TEXT
from slugline.search.queries import Matching, Page
from slugline.storage import loopread
from slugline.storage.loopread import LoopReader
from slugline.storage.loopwrite import CommitUnknown, LoopWriter, PgLoopWriter, Run, Taken, drive, session_run
from slugline.storage.sqlhelpers import ids_in, match_ids

NOT_FOUND = "link not found"
PASSWORD_ONLY = "password can only be set on a link whose visibility is 'password'"
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
    *lifecycle.COLUMNS,
)
PLAIN = 11  # the SHOWN columns `_core.link_json_rows` writes; the lifecycle's follow
SHOWN_NAMES = tuple(column.key for column in SHOWN)
_GET = select(*SHOWN).where(Link.id == bindparam("link_id"), Link.account_id == bindparam("account_id"))
_GET_PUBLIC = _GET.where(Link.visibility.in_(PUBLIC_LEVELS))
LinkRow = Row[*tuple[Any, ...]]


def link_dict(link: Link | LinkRecord | LinkRow, base_url: str) -> dict[str, Any]:
    """A link's JSON, from a Link, a LinkRecord or a row of the SHOWN columns."""
    return link_json(tuple(getattr(link, name) for name in SHOWN_NAMES), base_url)


def link_json(row: tuple[Any, ...], base_url: str) -> dict[str, Any]:
    """A link's JSON from a plain row of the SHOWN columns: a driver's (SQLite's gives JSON and timestamps as text,
    PostgreSQL's their values) or SQLAlchemy's."""
    link_id, slug, destination, title, description, note, hashtags, visibility, clicks, created, updated = row[:PLAIN]
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
        **lifecycle.lifecycle_json(tuple(row[PLAIN:]), utcnow()),
    }


def links_json(rows: list[Any], base_url: str) -> list[Any]:
    """`link_json` of each plain row, as the JSON bytes themselves (an `orjson.Fragment`, which orjson writes as
    it is) where the row holds the shapes the readers on the event loop give, written in Rust without a dict per
    link; other rows as `link_json` gives them. Either way the response's bytes are the same."""
    made = _core.link_json_rows([tuple(row[:PLAIN]) for row in rows], base_url)
    now = utcnow()
    return [
        link_json(row, base_url)
        if raw is None
        else orjson.Fragment(raw[:-1] + b"," + orjson.dumps(lifecycle.lifecycle_json(tuple(row[PLAIN:]), now))[1:])
        for row, raw in zip(rows, made, strict=True)
    ]


def plain(answer: dict[str, Any]) -> dict[str, Any]:
    """`answer` with the links `links_json` wrote as JSON bytes parsed back into dicts: for the callers that read an
    answer's values (the dashboard's templates, MCP's output schema) rather than send them as they are."""
    parsed: dict[str, Any] = orjson.loads(orjson.dumps(answer))
    return parsed


def _tags(stored: str | list[str] | None) -> list[str]:
    """Hashtags as SQLite's driver gives them (JSON text) or PostgreSQL's (parsed)."""
    found = orjson.loads(stored) if isinstance(stored, str) else stored
    return list(found or ())


def _moment(stored: str | datetime | None) -> str | None:
    return loopread.iso(stored) if isinstance(stored, str) else isoformat(stored)


def visible(caller: Caller, by_ids: bool = False) -> list[ColumnElement[bool]]:
    """The rows a caller may see: its own account's, and only public/unlisted ones for a public key. `by_ids`: the
    statement also names the links' ids, which are the key (`+ 0`: SQLite, without statistics, would otherwise
    walk the account's index for ten ids or more, every link of the account)."""
    account = Link.account_id + 0 if by_ids else Link.account_id
    conds: list[ColumnElement[bool]] = [account == caller.account_id]
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
_INSERT = insert(_LINKS)
COLUMNS = tuple(column.key for column in _LINKS.columns)  # every column, in order: what a create writes, _WHOLE reads
_NEW_ROW = {column.key: bindparam(column.key, type_=column.type) for column in _LINKS.columns}
# What an update writes: every column a client may change (never `clicks`, which the click writer moves meanwhile).
CHANGEABLE = (
    "slug",
    "destination_url",
    "title",
    "description",
    "note",
    "hashtags",
    "visibility",
    "password_hash",
    *lifecycle.CHANGEABLE,
)
# Locked for the update's transaction on PostgreSQL (SQLite has one writer anyway): two updates of one link queue,
# so neither writes back a field the other changed.
_WHOLE = (
    select(_LINKS)
    .where(_LINKS.c.id == bindparam("link_id"), _LINKS.c.account_id == bindparam("account_id"))
    .with_for_update()
)
_WHOLE_PUBLIC = _WHOLE.where(_LINKS.c.visibility.in_(PUBLIC_LEVELS))
_UPDATE = update(_LINKS).where(_LINKS.c.id == bindparam("link"))
# A create is one statement: the link, the account's version bump and the change-feed row; it returns the new
# version. Sent alone in autocommit on the loop: one round trip on PostgreSQL instead of four (BEGIN, the row, the
# bump with its feed row, COMMIT), with the account row, which serializes the account's writes, locked only while
# the statement commits; on SQLite one GIL hand-over instead of five (see docs/benchmarks.md for what it saves).
# PostgreSQL does it with data-modifying CTEs. SQLite has none: its
# trigger `links_created` (migration 0005) writes the feed row at the account's next version before the row goes in,
# `link_changes_bump` (0004) sets the account's version to it, and RETURNING reads that version. A refused insert (a
# taken slug) undoes the triggers' work with it. One row per statement: SQLite computes the RETURNING subquery once
# per statement, so a second row would return the first's version.
_INSERTED = insert(_LINKS).values(_NEW_ROW).returning(_LINKS.c.id, _LINKS.c.account_id).cte("inserted")


def _bumped_and_fed(written: CTE, with_row: bool = False) -> Select[Any]:
    """After the link's write (`written`, a CTE returning its id and account_id, one row or none): the account's
    version bump and the feed row, each only if the link was written; the statement returns the new version (then,
    `with_row`, the link's columns as `written` returns them)."""
    bumped = (
        update(_ACCOUNTS)
        .where(_ACCOUNTS.c.id == bindparam("account_id"), exists(select(written.c.id)))
        .values(links_version=_ACCOUNTS.c.links_version + 1)
        .returning(_ACCOUNTS.c.links_version)
        .cte("bumped")
    )
    fed = (
        insert(searchfeed.CHANGES)
        .from_select(
            ["account_id", "version", "link_id"], select(written.c.account_id, bumped.c.links_version, written.c.id)
        )
        .returning(searchfeed.CHANGES.c.version)
        .cte("fed")
    )
    return select(fed.c.version, *written.c) if with_row else select(fed.c.version)


_CREATE = {
    "postgresql": _bumped_and_fed(_INSERTED),
    "sqlite": insert(_LINKS)
    .values(_NEW_ROW)
    .returning(select(_ACCOUNTS.c.links_version).where(_ACCOUNTS.c.id == bindparam("account_id")).scalar_subquery()),
}


def check_create(caller: Caller, data: Any) -> LinkCreate:
    """A create body, checked: 403 for a level the key may not use, 422 for anything invalid."""
    _guard_visibility(caller, data)
    body = parse(LinkCreate, without_nulls(data))
    if body.visibility == Visibility.PASSWORD and not body.password:
        raise Invalid("password is required when visibility is 'password'")
    if body.visibility != Visibility.PASSWORD and body.password is not None:
        raise Invalid(PASSWORD_ONLY)
    return body


async def create_link(rt: Runtime, caller: Caller, data: Any) -> dict[str, Any]:
    """A new link. With `auto_meta`, its title and description are read from the destination first (explicit fields
    win); when that fails the link is still made, and the answer's `meta_error` says what failed."""
    body = check_create(caller, data)  # 403 and 422 before any fetch
    fetched, failed = await meta.fill(rt, caller, body)
    made = await create_on_loop(rt, caller, body, fetched)
    if made is None:
        made = await anyio.to_thread.run_sync(create_on_thread, rt, caller, data, fetched, body)
    if failed:
        made["meta_error"] = failed
    return made


def create_on_thread(
    rt: Runtime, caller: Caller, data: Any, fetched: dict[str, str] | None = None, checked: LinkCreate | None = None
) -> dict[str, Any]:
    """`create_link` on a worker thread, after any fetch. `fetched`: auto_meta's title and description.
    `checked`: `data` as `check_create` already gave it (not checked twice)."""
    body = checked or check_create(caller, data)
    password_hash = _core.hash_password(body.password) if body.password else None

    async def insert(link: LinkRecord) -> int | None:
        return _insert(rt, link)

    return drive(_create(rt, caller, body, fetched, password_hash, insert))


async def create_on_loop(
    rt: Runtime, caller: Caller, body: LinkCreate, fetched: dict[str, str] | None = None
) -> dict[str, Any] | None:
    """`create_link` made on the event loop when it can be at once; None: nothing was written, use the thread.
    A link with a password is always made on a thread: hashing the password takes milliseconds of CPU."""
    writer = rt.db.write_now
    if writer is None or body.password:
        return None

    async def insert(link: LinkRecord) -> int | None:
        try:
            version = await _write_new_at_once(writer, link)
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
    insert: Callable[[LinkRecord], Awaitable[int | None]],
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
        link = LinkRecord(
            id=_core.generate_link_id(),
            account_id=caller.account_id,
            clicks=0,
            created_at=now,
            updated_at=now,
            password_hash=password_hash,
            **{"hashtags": [], "slug": _core.generate_slug() if body.slug is None else body.slug, **fields},
        )
        version = await insert(link)
        if version is not None:
            events.link_saved(rt, caller.account_id, version, link, None, wait=wait)
            return link_dict(link, caller.base_url)
        if body.slug is not None:
            break
    raise Conflict(f"slug '{link.slug}' is already taken")


def _insert(rt: Runtime, link: LinkRecord) -> int | None:
    """The account's new links version, or None when the slug is taken."""
    try:
        with rt.db.writing() as session:
            return drive(write_new(rt.db.engine.dialect.name, link, session_run(session)))
    except IntegrityError:
        return None


async def write_new(dialect: str, link: LinkRecord, run: Run) -> int:
    """The create in a transaction of the caller's (on the database `dialect` names): the account's new links
    version. On SQLite the one statement of `_CREATE`. On PostgreSQL the row, then the bump with its feed row:
    `_CREATE` is run only compiled as the loop compiles it (`loopread.named`), since a session would also set every
    account column named like a value of the row (`id`, `created_at`) in the CTE's UPDATE."""
    if dialect == "sqlite":
        version = int((await run(_CREATE[dialect], _values(link)))[0][0])
        await searchfeed.prune(run, link.account_id, version)
        return version
    await run(_INSERT, _values(link))
    return await searchfeed.bump(run, dialect, link.account_id, link.id)


async def _write_new_at_once(writer: LoopWriter | PgLoopWriter, link: LinkRecord) -> int | None:
    """`write_new` as one statement in autocommit, on the loop; None: declined."""
    made = await writer.write_at_once(_CREATE[writer.dialect.name], _values(link))
    if made is None:
        return None
    version = int(made[0][0])
    await _prune(writer, link.account_id, version)
    return version


def _values(link: LinkRecord) -> dict[str, Any]:
    return {name: getattr(link, name) for name in COLUMNS}


async def _prune(writer: LoopWriter | PgLoopWriter, account_id: int, version: int) -> None:
    """The feed's pruning after a write made at once (in its own transaction, when it is due: no BEGIN and COMMIT
    for nothing on the other 99 writes in 100)."""
    if not searchfeed.prune_due(version):
        return
    with contextlib.suppress(CommitUnknown):  # the write is made; rows a failed prune left go with the next one
        await writer.write(functools.partial(searchfeed.prune, account_id=account_id, version=version))


@functools.lru_cache(maxsize=256)
def page_statement(
    dialect: str,
    sort: str,
    direction: str,
    public_only: bool,
    by_ids: bool,
    status: str | None = None,
    archived: bool | None = None,
) -> Select[*tuple[Any, ...]]:
    """The page query for one shape, built once (SQLAlchemy then reuses its compiled form).

    `by_ids`: read the ids bound to `match_ids` by primary key, then sort (the `+ 0` only stops the
    database from walking the account's index instead). `status`, `archived`: the list's lifecycle filter
    (`lifecycle.status_condition`; archived links are left out unless asked for), with the time bound as `now`."""
    order = _order(_LINKS.c, sort, direction)
    conds = _list_where(dialect, public_only, by_ids, status, archived)
    return select(*SHOWN).where(*conds).order_by(*order).limit(bindparam("limit")).offset(bindparam("offset"))


def _list_where(
    dialect: str, public_only: bool, by_ids: bool, status: str | None, archived: bool | None
) -> list[ColumnElement[bool]]:
    account = Link.account_id + 0 if by_ids else Link.account_id
    conds: list[ColumnElement[bool]] = [account == bindparam("account_id")]
    if public_only:
        conds.append(Link.visibility.in_(PUBLIC_LEVELS))
    if by_ids:
        conds.append(ids_in(dialect, Link.id.expression, "match_ids"))
    return conds + lifecycle.status_condition(status, archived)


@functools.lru_cache(maxsize=64)
def count_statement(
    dialect: str, public_only: bool, by_ids: bool, status: str | None, archived: bool | None
) -> Select[Any]:
    """How many links a list shows over all its pages (binds as `page_statement`'s, without limit and offset)."""
    conds = _list_where(dialect, public_only, by_ids, status, archived)
    return select(func.count()).select_from(Link).where(*conds)


def _order(columns: Any, sort: str, direction: str) -> list[ColumnElement[Any]]:
    """ORDER BY `sort` in `direction`, then id the same way, over `columns` (the table's, or a subquery's)."""
    first = columns[sort].asc() if direction == "asc" else columns[sort].desc()
    # Links without a title sort last either way. `NULLS LAST` is written only where a NULL can be: on PostgreSQL a
    # descending order with it cannot walk the account's (account_id, created_at) index backwards, and every page
    # sorted the whole account instead of reading a page down the index.
    if _LINKS.c[sort].nullable:
        first = first.nulls_last()
    return [first, columns.id.asc() if direction == "asc" else columns.id.desc()]


_VERSION = select(Account.links_version).where(Account.id == bindparam("account_id"))


@functools.lru_cache(maxsize=64)
def with_version(statement: Select[Any], order: tuple[str, str] | None) -> Select[Any]:
    """`statement`'s rows (ordered by `order`, a sort and a direction, if given), each led by the account's links
    version, in one statement (PostgreSQL: a LATERAL join); with no rows, one row of the version and NULLs."""
    rows = statement.lateral("page")
    version = _VERSION.subquery("v")
    joined = version.outerjoin(rows, true())
    both = select(version.c.links_version, *rows.c).select_from(joined)
    return both if order is None else both.order_by(*_order(rows.c, *order))


@functools.lru_cache(maxsize=8)
def _by_ids(dialect: str, public_only: bool) -> Select[*tuple[Any, ...]]:
    """The links bound to `match_ids` that the account (bound to `account_id`) may see, by primary key, in no
    order: the callers put them in their search index's order."""
    conds: list[ColumnElement[bool]] = [
        Link.account_id + 0 == bindparam("account_id"),  # `+ 0`: not the account's index, the ids are the key
        ids_in(dialect, Link.id.expression, "match_ids"),
    ]
    if public_only:
        conds.append(Link.visibility.in_(PUBLIC_LEVELS))
    return select(*SHOWN).where(*conds)


# A read of links: statement, values, and the order of its rows (a sort and a direction; None: any order).
Read = tuple[Select[*tuple[Any, ...]], dict[str, Any], tuple[str, str] | None]


async def versioned_now(rt: Runtime, account_id: int, read: Read) -> tuple[int, list[Any]] | None:
    """The account's links version and the rows of `read`, read on the event loop; None: the loop reader cannot
    answer (then take the thread path). On PostgreSQL one statement (`with_version`): one round trip, and the rows
    and the version from one snapshot. On SQLite two reads in one read transaction on the worker's own connection."""
    reader = rt.db.now
    if reader is None:
        return None
    statement, binds, order = read
    if isinstance(reader, LoopReader):
        found = reader.together([(_VERSION, {"account_id": account_id}), (statement, binds)])
        if found is None:
            return None
        versions, rows = found
        return (int(versions[0][0] or 0) if versions else 0), rows
    found = await reader.fetch(with_version(statement, order), binds)
    if not found:
        return None
    return int(found[0][0]), [row[1:] for row in found if row[1] is not None]


def by_ids(dialect: str, caller: Caller, ids: list[str]) -> Read:
    """The read of the links `ids` the caller may see (SHOWN columns), by primary key, in any order."""
    binds = {"account_id": caller.account_id, "match_ids": match_ids(dialect, ids)}
    return _by_ids(dialect, caller.public_only), binds, None


async def list_links(rt: Runtime, caller: Caller, data: Any) -> dict[str, Any]:
    """A page of links (`data`: the query, as a dict or already a `ListParams`). A list filtered with `q` that must
    run on a thread takes one of the account's query slots (`limits.querying`)."""
    params = data if isinstance(data, ListParams) else parse(ListParams, without_nulls(data))
    page = await list_on_loop(rt, caller, params)
    if page is not None:
        return page
    async with limits.querying(rt, caller.account_id, params.q):
        return await anyio.to_thread.run_sync(list_on_thread, rt, caller, params)


def list_on_thread(rt: Runtime, caller: Caller, data: Any) -> dict[str, Any]:
    """`list_links` on a worker thread: a read on a Core connection, so no ORM session or object is made.

    With `q`, the account's search index gives the matches and their number, and, sorted by creation time, the
    page itself (the index orders by creation time, then id, as the database does); other sorts read the matches
    by primary key and sort them in the database. Without `q`, the number is counted once per version of the
    account's links (every link write bumps it) and remembered."""
    params = data if isinstance(data, ListParams) else parse(ListParams, without_nulls(data))
    binds: dict[str, Any] = {
        "account_id": caller.account_id,
        "limit": params.per,
        "offset": (params.page - 1) * params.per,
    }
    searching = bool(params.q and params.q.strip())
    life = (params.status, params.archived)
    if params.status not in (None, lifecycle.ARCHIVED):
        binds["now"] = utcnow()
    # With `q`, a transaction: the search index may load through a server-side cursor.
    with rt.db.engine.connect() if searching else rt.db.reading() as conn:
        dialect = conn.dialect.name
        version = conn.scalar(_VERSION, {"account_id": caller.account_id}) or 0
        # The search index knows nothing of links' states. A list filtered by state, or searched in an account with
        # archived links (left out unless asked for), takes every match from it; the database then keeps those the
        # list shows, counts them (every time: states change with the time and the clicks) and sorts them.
        filtered = params.lifecycle() or (searching and archived_count(rt, conn, caller, version) > 0)
        if searching:
            ask = Matching(params.q or "", caller.public_only) if filtered else _matches(caller, params)
            total, ids = rt.search.use(conn, caller.account_id, ask)
            if params.sort == "created_at" and not filtered:
                binds["offset"] = 0
            binds["match_ids"] = match_ids(conn, ids)
        if filtered:
            total = conn.scalar(count_statement(dialect, caller.public_only, searching, *life), binds) or 0
        elif not searching:
            counted = rt.link_counts.get(caller.account_id, caller.public_only, version)
            if counted is None:
                counted = conn.scalar(count_statement(dialect, caller.public_only, False, None, None), binds) or 0
                rt.link_counts.put(caller.account_id, caller.public_only, version, counted)
            total = counted
        stmt = page_statement(dialect, params.sort, params.dir, caller.public_only, searching, *life)
        data_out = [link_dict(row, caller.base_url) for row in conn.execute(stmt, binds)] if total else []
    return {"data": data_out, "pagination": pagination(params.page, params.per, total)}


def archived_count(rt: Runtime, conn: Any, caller: Caller, version: int) -> int:
    """How many of the links the caller sees are archived, counted once per version of the account's links."""
    counted = rt.archived_counts.get(caller.account_id, caller.public_only, version)
    if counted is None:
        stmt = count_statement(conn.dialect.name, caller.public_only, False, lifecycle.ARCHIVED, None)
        counted = conn.scalar(stmt, {"account_id": caller.account_id}) or 0
        rt.archived_counts.put(caller.account_id, caller.public_only, version, counted)
    return counted


def _matches(caller: Caller, params: ListParams) -> Page | Matching:
    """What to ask the search index: the page itself when sorted by creation time, else every match (the database
    sorts those)."""
    query = params.q or ""
    if params.sort == "created_at":
        offset = (params.page - 1) * params.per
        return Page(query, caller.public_only, params.dir == "desc", offset, params.per)
    return Matching(query, caller.public_only)


async def list_on_loop(rt: Runtime, caller: Caller, params: ListParams) -> dict[str, Any] | None:
    """`list_links` answered on the event loop when it can be: a page in creation order (the account's index, or
    with `q` the search index, gives it) and the total already at hand (remembered for the account's current links
    version, or the search index held at that version). None: use the thread."""
    reader = rt.db.now
    if reader is None or params.sort != "created_at" or params.lifecycle():
        return None
    rows: list[Any]
    if params.q and params.q.strip():
        held = rt.search.held(caller.account_id)
        if held is None:
            return None
        index_version, index = held
        offset = (params.page - 1) * params.per
        found = index.filter_page(
            params.q,
            public_only=caller.public_only,
            newest_first=params.dir == "desc",
            offset=offset,
            limit=params.per,
            max_text=LOOP_FILTER_TEXT,
        )
        if found is None:  # long texts to check: a thread reads them, with the GIL released
            return None
        total, ids = found
        got = await versioned_now(rt, caller.account_id, by_ids(reader.dialect.name, caller, ids))
        if got is None or got[0] > index_version:  # the index is behind: the thread path brings it up
            return None
        if rt.archived_counts.get(caller.account_id, caller.public_only, got[0]) != 0:
            return None  # archived matches (or not known yet) to leave out: the database does it (`list_on_thread`)
        rows = got[1]
        at = {link_id: n for n, link_id in enumerate(ids)}  # read by primary key: back in the index's order
        rows.sort(key=lambda row: at[row[0]])
    else:
        binds = {"account_id": caller.account_id, "limit": params.per, "offset": (params.page - 1) * params.per}
        stmt = page_statement(reader.dialect.name, "created_at", params.dir, caller.public_only, False)
        got = await versioned_now(rt, caller.account_id, (stmt, binds, ("created_at", params.dir)))
        if got is None:
            return None
        version, rows = got
        counted = rt.link_counts.get(caller.account_id, caller.public_only, version)
        if counted is None:
            return None
        total = counted
    data = links_json(rows, caller.base_url)
    return {"data": data, "pagination": pagination(params.page, params.per, total)}


def find_link(session: Session, caller: Caller, link_id: str) -> Link:
    if not LINK_ID.fullmatch(link_id):  # not an id we could have made: no query (and no NUL sent to the database)
        raise NotFound(NOT_FOUND)
    link = session.scalar(select(Link).where(Link.id == link_id, *visible(caller)))
    if link is None:
        raise NotFound(NOT_FOUND)
    return link


async def get_link(rt: Runtime, caller: Caller, link_id: str) -> dict[str, Any]:
    """One link the caller may see; 404 for any other id."""
    found = await get_on_loop(rt, caller, link_id)
    return found if found is not None else await anyio.to_thread.run_sync(get_on_thread, rt, caller, link_id)


def link_named(rt: Runtime, caller: Caller, name: str) -> str:
    """The id of the caller's link whose id, else slug, is `name` (the command line and MCP's get_link take either);
    404 for any other name. Blocking: on a worker thread when called from the event loop."""
    if "\x00" in name:  # no link is named so, and PostgreSQL refuses NUL in text
        raise NotFound(NOT_FOUND)
    with rt.db.session() as session:
        found = None
        if LINK_ID.fullmatch(name):
            found = session.scalar(select(Link.id).where(Link.id == name, *visible(caller)))
        found = found or session.scalar(select(Link.id).where(Link.slug == name, *visible(caller)))
    if found is None:
        raise NotFound(NOT_FOUND)
    return found


def get_on_thread(rt: Runtime, caller: Caller, link_id: str) -> dict[str, Any]:
    if not LINK_ID.fullmatch(link_id):
        raise NotFound(NOT_FOUND)
    stmt = _GET_PUBLIC if caller.public_only else _GET
    with rt.db.reading() as conn:
        row = conn.execute(stmt, _link_binds(caller, link_id)).first()
    if row is None:
        raise NotFound(NOT_FOUND)
    return link_dict(row, caller.base_url)


async def get_on_loop(rt: Runtime, caller: Caller, link_id: str) -> dict[str, Any] | None:
    """`get_link` answered on the event loop when it can be; None: use the thread."""
    reader = rt.db.now
    if reader is None or not LINK_ID.fullmatch(link_id):
        return None
    rows = await reader.fetch(_GET_PUBLIC if caller.public_only else _GET, _link_binds(caller, link_id))
    if rows is None:
        return None
    if not rows:
        raise NotFound(NOT_FOUND)
    return link_json(rows[0], caller.base_url)


def _link_binds(caller: Caller, link_id: str) -> dict[str, Any]:
    """The bind values that name one link of the caller's account."""
    return {"link_id": link_id, "account_id": caller.account_id}


async def update_link(rt: Runtime, caller: Caller, link_id: str, data: Any) -> dict[str, Any]:
    """The link with the fields `data` sends changed (null clears a text field or the hashtags)."""
    updated = await update_on_loop(rt, caller, link_id, data)
    return (
        updated if updated is not None else await anyio.to_thread.run_sync(update_on_thread, rt, caller, link_id, data)
    )


def update_on_thread(rt: Runtime, caller: Caller, link_id: str, data: Any) -> dict[str, Any]:
    if not LINK_ID.fullmatch(link_id):
        raise NotFound(NOT_FOUND)
    try:
        with rt.db.writing() as session:
            dialect = rt.db.engine.dialect.name
            link, old_slug, version = drive(write_change(caller, link_id, data, dialect, session_run(session)))
    except IntegrityError:
        raise Conflict(f"slug '{data.get('slug')}' is already taken") from None
    events.link_saved(rt, caller.account_id, version, link, old_slug)
    return link_dict(link, caller.base_url)


async def update_on_loop(rt: Runtime, caller: Caller, link_id: str, data: Any) -> dict[str, Any] | None:
    """`update_link` made on the event loop when it can be; None: nothing was written, use the thread.
    A new password is always set on a thread: hashing it takes milliseconds of CPU."""
    writer = rt.db.write_now
    if writer is None or not LINK_ID.fullmatch(link_id) or (isinstance(data, dict) and data.get("password")):
        return None
    try:
        if (alone := _fields_alone(caller, data)) is not None:
            changed = await _set_at_once(writer, caller, link_id, *alone)
        elif isinstance(writer, PgLoopWriter):
            changed = await _change_at_once(writer, caller, link_id, data)
        else:
            changed = await writer.write(functools.partial(write_change, caller, link_id, data, writer.dialect.name))
    except Taken:
        raise Conflict(f"slug '{data.get('slug')}' is already taken") from None
    if changed is None:
        return None
    link, old_slug, version = changed
    events.link_saved(rt, caller.account_id, version, link, old_slug, wait=False)
    return link_dict(link, caller.base_url)


# An update made: the link as changed, its slug before, and the account's new links version.
Changed = tuple[LinkRecord, str, int]


async def write_change(caller: Caller, link_id: str, data: Any, dialect: str, run: Run) -> Changed:
    """The update's transaction: (the link as changed, its slug before, the account's new links version). Core on
    the tables, no ORM bookkeeping: `link` is never added to a session. On SQLite the row's write is also the
    version bump and the feed row (`_sqlite_set`)."""
    found = await run(_WHOLE_PUBLIC if caller.public_only else _WHOLE, _link_binds(caller, link_id))
    link, old_slug, changes = _changed(caller, found, data)
    if dialect == "sqlite":
        binds = {"link": link_id, "owner": caller.account_id, **changes}
        version = int((await run(_sqlite_set(frozenset(CHANGEABLE), False), binds))[0][0])
        await searchfeed.prune(run, caller.account_id, version)
        return link, old_slug, version
    await run(_UPDATE, {"link": link_id, **changes})
    return link, old_slug, await searchfeed.bump(run, dialect, caller.account_id, link.id)


def _changed(caller: Caller, found: Sequence[Any], data: Any) -> tuple[LinkRecord, str, dict[str, Any]]:
    """The stored row (`found`: it, or nothing) with the update applied: (the link, its slug before, the columns to
    write). Refuses what the update may not do."""
    if not found:
        raise NotFound(NOT_FOUND)
    link = lifecycle.typed(LinkRecord(**dict(zip(COLUMNS, found[0], strict=True))))
    old_slug = link.slug
    body, sent = check_update(caller, data)
    _apply_password(link, body, sent)
    for name, value in _new_values(body, sent - {"password"}).items():
        setattr(link, name, value)
    link.updated_at = utcnow()
    return link, old_slug, {"updated_at": link.updated_at, **{name: getattr(link, name) for name in CHANGEABLE}}


def check_update(caller: Caller, data: Any) -> tuple[LinkUpdate, set[str]]:
    """An update body, checked (what needs no stored row): it, and the fields it sets."""
    _guard_visibility(caller, data)
    body = parse(LinkUpdate, data)
    sent = body.model_fields_set
    if not sent:
        raise Invalid("the update body is empty: send at least one field to change")
    if bad := non_null_fields(data):
        raise Invalid(f"{bad[0]} cannot be null")
    if {"password", "visibility"} <= sent and body.visibility != Visibility.PASSWORD:  # the schema's if/then
        raise Invalid(PASSWORD_ONLY)
    return body, sent


def _new_values(body: LinkUpdate, names: set[str]) -> dict[str, Any]:
    """The values the update stores for these fields (hashtags cleared with null are stored as an empty list)."""
    values = {name: [] if name == "hashtags" and body.hashtags is None else getattr(body, name) for name in names}
    if values.get("preview") is not None:
        values["preview"] = body.preview.model_dump(exclude_none=True) if body.preview else None
    if values.get("rules") is not None:
        values["rules"] = [rule.model_dump() for rule in body.rules or ()]
    if values.get("variants") is not None:
        values["variants"] = [variant.model_dump() for variant in body.variants or ()]
    return values


# Fields whose new values do not depend on the stored row: an update of only these is made on PostgreSQL's loop in
# one statement, with no lock held while the worker computes (`_set_at_once`). A slug, visibility or password
# change takes the locked path (an old slug to forget, password rules that read the row).
SET_ALONE = frozenset({"destination_url", "title", "description", "note", "hashtags"})


def _set_where(public_only: bool, owner: str = "account_id") -> list[ColumnElement[bool]]:
    conds = [_LINKS.c.id == bindparam("link"), _LINKS.c.account_id == bindparam(owner)]
    if public_only:
        conds.append(_LINKS.c.visibility.in_(PUBLIC_LEVELS))
    return conds


def _set_values(fields: frozenset[str]) -> dict[str, BindParameter[Any]]:
    return {name: bindparam(name, type_=_LINKS.c[name].type) for name in ("updated_at", *sorted(fields))}


@functools.lru_cache(maxsize=64)
def _sqlite_set(fields: frozenset[str], public_only: bool) -> ReturningUpdate[Any]:
    """The update of `fields` on SQLite, with the version bump and the feed row, as one statement: the new version,
    then the link's columns as stored. Migration 0007's trigger `links_changed` writes the feed row at the account's
    next version before a row's `updated_at` changes (and 0004's `link_changes_bump` sets the account's version from
    it), and RETURNING reads that version, as `_CREATE` does; one row per statement (by primary key). A refused
    update (a taken slug) undoes the triggers' work with it. The account is bound as `owner`: a session refuses a
    bind named like a column in an UPDATE (the thread path runs this through one)."""
    version = select(_ACCOUNTS.c.links_version).where(_ACCOUNTS.c.id == bindparam("owner")).scalar_subquery()
    changed = update(_LINKS).where(*_set_where(public_only, "owner")).values(_set_values(fields))
    return changed.returning(version, *_LINKS.columns)


@functools.lru_cache(maxsize=64)
def _set_statement(fields: frozenset[str], public_only: bool) -> Select[Any]:
    """The one-statement update of `fields`, with the version bump and the feed row: the new version, then the
    link's columns as stored. `_set_at_once` sets some fields; the locked path sets every CHANGEABLE one, on the row
    its read has locked."""
    changed = (
        update(_LINKS)
        .where(*_set_where(public_only))
        .values(_set_values(fields))
        .returning(*_LINKS.columns)
        .cte("changed")
    )
    return _bumped_and_fed(changed, with_row=True)


def _fields_alone(caller: Caller, data: Any) -> tuple[LinkUpdate, set[str]] | None:
    """The checked body and its fields when `data` sets `SET_ALONE` fields only, validly; None otherwise (a refused
    body is left to the locked path, which answers it in the thread path's order: 404 before 422)."""
    if not isinstance(data, dict) or not data or not data.keys() <= SET_ALONE:
        return None
    try:
        return check_update(caller, data)
    except ServiceError:
        return None


async def _set_at_once(
    writer: LoopWriter | PgLoopWriter, caller: Caller, link_id: str, body: LinkUpdate, sent: set[str]
) -> Changed | None:
    """An update of `SET_ALONE` fields only (`_fields_alone`), in one statement in autocommit (one round trip on
    PostgreSQL, one GIL hand-over on SQLite). None: declined, nothing written."""
    sqlite = writer.dialect.name == "sqlite"
    binds = {"link": link_id, "updated_at": utcnow(), **_new_values(body, sent)}
    binds["owner" if sqlite else "account_id"] = caller.account_id
    setting = _sqlite_set if sqlite else _set_statement
    done = await writer.write_at_once(setting(frozenset(sent), caller.public_only), binds)
    if done is None:
        return None
    if not done:
        raise NotFound(NOT_FOUND)
    version, *row = done[0]
    link = LinkRecord(**dict(zip(COLUMNS, row, strict=True)))
    await _prune(writer, caller.account_id, version)
    return link, link.slug, version


async def _change_at_once(writer: PgLoopWriter, caller: Caller, link_id: str, data: Any) -> Changed | None:
    """`write_change` on PostgreSQL in two round trips (`PgLoopWriter.write_locked`): the row read and locked, then the
    update, the version bump and the feed row in one statement, with the COMMIT. None: declined."""
    made: list[tuple[LinkRecord, str]] = []

    def update_locked_row(found: Sequence[Any]) -> tuple[Select[Any], dict[str, Any]]:
        link, old_slug, changes = _changed(caller, found, data)
        made.append((link, old_slug))
        return _set_statement(frozenset(CHANGEABLE), False), {
            "link": link_id,
            "account_id": caller.account_id,
            **changes,
        }

    whole = _WHOLE_PUBLIC if caller.public_only else _WHOLE
    done = await writer.write_locked(whole, _link_binds(caller, link_id), update_locked_row)
    if not done:
        return None
    version = int(done[0][0])
    await _prune(writer, caller.account_id, version)
    return *made[0], version


def _apply_password(link: LinkRecord, body: LinkUpdate, sent: set[str]) -> None:
    target = body.visibility if "visibility" in sent else link.visibility
    if target == Visibility.PASSWORD:
        if body.password:
            link.password_hash = _core.hash_password(body.password)
        elif not link.password_hash:
            raise Invalid("password is required when visibility is 'password'")
    elif "password" in sent:
        raise Invalid(PASSWORD_ONLY)
    else:
        link.password_hash = None


async def delete_link(rt: Runtime, caller: Caller, link_id: str) -> dict[str, Any]:
    """Deletes the link and its clicks; its short URL answers 404 from then on."""
    return await anyio.to_thread.run_sync(delete_on_thread, rt, caller, link_id)


def delete_on_thread(rt: Runtime, caller: Caller, link_id: str) -> dict[str, Any]:
    with rt.db.writing() as session:
        link = find_link(session, caller, link_id)
        slug = link.slug
        session.delete(link)
        session.flush()
        version = drive(searchfeed.bump(session_run(session), rt.db.engine.dialect.name, caller.account_id, link_id))
    events.link_deleted(rt, caller.account_id, version, link_id, slug)
    return {"deleted": True, "id": link_id}
