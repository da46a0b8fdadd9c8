"""An account's links as CSV or NDJSON: every column of each link the caller may see (a public-only key never sees
hidden ones), oldest first, with `q` filtering as `GET /links?q=` does. `slugline links import` reads it back.

Read and sent in chunks of `CHUNK_ROWS`, as the click export is (`slugline.analytics.export`): each chunk is one
short query on a worker thread, keyset-paginated on (created_at, id) down the account's index, so a worker holds one
chunk whatever the account's size and nothing stays open between chunks. With `q`, the account's search index gives
each chunk's ids in the same order (by offset: links made meanwhile come after the last one sent).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import AsyncExitStack
from datetime import datetime
from typing import Any, Literal, cast

import anyio.to_thread
from pydantic import Field
from sqlalchemy import Select, Table, select, tuple_

from slugline.analytics.export import MEDIA_TYPES, Export
from slugline.common.caller import Caller
from slugline.common.clock import utcnow
from slugline.common.inputs import ListParams
from slugline.common.models import Link
from slugline.common.validation import parse, without_nulls
from slugline.limits import rules as limits
from slugline.links import files, lifecycle
from slugline.links.service import visible
from slugline.runtime import Runtime
from slugline.search.queries import Page
from slugline.storage.sqlhelpers import ids_in, match_ids

CHUNK_ROWS = 1_000
_LINKS = cast(Table, Link.__table__)
_READ = tuple(_LINKS.c[name] for name in files.STORED)

FILTERS = (
    "q",
    "status",
    "archived",
)  # the list's parameters that choose links (not a page or an order): the export takes these


class LinkExportParams(ListParams):
    """`GET /links`'s filters, and the file's format; its paging and order are not an export's (oldest first)."""

    format: Literal["csv", "ndjson"] = Field(
        default="csv", description="CSV with a header row, or one JSON object a line"
    )


Key = tuple[datetime, str]  # (created_at, id) of the last link sent: where the next chunk starts


async def export_links(rt: Runtime, caller: Caller, data: dict[str, Any]) -> Export:
    """The caller's links (`data`: `LinkExportParams`). Refusals come before the first byte: 422, then 429 when a
    search's query slots stay taken (an export with `q` holds one while it streams)."""
    params = parse(LinkExportParams, without_nulls(data))
    q = (params.q or "").strip()
    slot = AsyncExitStack()
    await slot.enter_async_context(limits.querying(rt, caller.account_id, q))
    chunks = _chunks(rt, caller, params.format, q, _statement(caller, params))
    try:
        head = await anext(chunks)  # before the response starts: a store that does not answer is a 503, not a cut file
    except BaseException:
        await slot.aclose()
        raise
    return Export(MEDIA_TYPES[params.format], f"links.{params.format}", head, chunks, slot)


async def _chunks(rt: Runtime, caller: Caller, fmt: str, q: str, rows_of: Select[Any]) -> AsyncGenerator[bytes]:
    """The body, a chunk per query: the first one even when empty, with the CSV header."""
    render = files.csv_rows if fmt == "csv" else files.ndjson_rows
    head: bytes | None = files.csv_header() if fmt == "csv" else b""
    after: Key | None = None
    sent = 0
    more = True
    while more:
        rows, more = await anyio.to_thread.run_sync(_chunk, rt, caller, rows_of, after, q, sent)
        body = render([files.cells(row, caller.base_url) for row in rows])
        if rows or head is not None:
            yield (head or b"") + body
            head = None
        if rows:
            after = (rows[-1][_CREATED], rows[-1][0])
        sent += CHUNK_ROWS


_CREATED = files.STORED.index("created_at")


def _statement(caller: Caller, params: LinkExportParams) -> Select[Any]:
    """Every link the export may send, in order. Unlike the list, it leaves out no archived link unless `status` or
    `archived` asks it to: a file to move an account with holds all of it."""
    conds = visible(caller)
    if params.status is not None or params.archived is not None:
        conds += lifecycle.status_condition(params.status, params.archived)
    return select(*_READ).where(*conds).order_by(Link.created_at, Link.id).limit(CHUNK_ROWS)


def _chunk(
    rt: Runtime, caller: Caller, stmt: Select[Any], after: Key | None, q: str, sent: int
) -> tuple[Sequence[Any], bool]:
    """One chunk of rows (`files.STORED` columns): after `after`, or with `q` the index's matches from `sent` on;
    and whether more may follow."""
    binds: dict[str, Any] = {"now": utcnow()}  # the time a status filter compares with (`lifecycle.status_condition`)
    with rt.db.engine.connect() as conn:
        if q:
            _, ids = rt.search.use(conn, caller.account_id, Page(q, caller.public_only, False, sent, CHUNK_ROWS))
            if not ids:
                return [], False
            stmt = stmt.where(ids_in(conn.dialect.name, Link.id.expression, "match_ids"))
            binds["match_ids"] = match_ids(conn, ids)
            return conn.execute(stmt, binds).all(), len(ids) == CHUNK_ROWS
        if after is not None:
            stmt = stmt.where(tuple_(Link.created_at, Link.id) > tuple_(*after))
        rows = conn.execute(stmt, binds).all()
        return rows, len(rows) == CHUNK_ROWS
