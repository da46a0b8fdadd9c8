"""The raw click log of an account, or of one of its links, as CSV or NDJSON: every click of a period (bots included,
as device `bot`), oldest first, scoped like the rest of analytics (a public-only key never sees hidden links).

Read and sent in chunks of `CHUNK_ROWS`, so a worker holds one chunk whatever the log's size. Each chunk is one short
query on a worker thread, keyset-paginated on (clicked_at, id): nothing stays open between chunks, so a slow download
keeps no snapshot alive (PostgreSQL's vacuum) and no read transaction in the way of a checkpoint (SQLite's WAL).

What it costs. One link's clicks come off the click log's index (link_id, clicked_at) in order (on PostgreSQL the
primary key (link_id, clicked_at, id)): each chunk is one range scan that stops after its rows. An account's clicks
have no index in time order across links (one more index would cost every click write), so a chunk probes the index
of each of the account's visible links over a window of time, and sorts what it found. The window follows the
traffic: after a full chunk it spans the time that chunk took, after one that was not full it doubles, so a query
reads about a chunk's rows. An account export costs the period's rows, plus one index probe per link and window.
Filters are not indexed: the clicks they leave out are read all the same.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any, Self

import anyio
import anyio.to_thread
from sqlalchemy import Row, Select, func, select, tuple_

from slugline.analytics._formats import COLUMNS, Cells, csv_header, csv_rows, ndjson_rows
from slugline.common.caller import Caller
from slugline.common.clock import as_utc, isoformat
from slugline.common.inputs import ExportParams
from slugline.common.models import Click, Link
from slugline.common.validation import parse, without_nulls
from slugline.limits import rules as limits
from slugline.links.service import find_link, visible
from slugline.runtime import Runtime

CHUNK_ROWS = 2_000
FIRST_WINDOW = timedelta(hours=1)  # of an account export; it widens quickly where clicks are sparse
MIN_WINDOW = timedelta(milliseconds=1)  # a chunk's clicks may all share one instant; a window never shrinks to none
MEDIA_TYPES = {"csv": "text/csv", "ndjson": "application/x-ndjson"}
# What a chunk selects: the id (the keyset's tie-break, not sent), then COLUMNS in order.
SELECTED = (Click.id, *(Link.slug if name == "slug" else getattr(Click, name) for name in COLUMNS))

Key = tuple[datetime, int]  # (clicked_at, id) of the last row sent: where the next chunk starts
Render = Callable[[Sequence[Cells]], bytes]


@dataclass
class Export:
    """An export under way: its media type, its file name and its body, as chunks of bytes (the first one already
    read). It holds one of the account's query slots until it is closed (`aclose`, or `async with`), however it ends:
    read to the end, given up by its client, or failed."""

    media_type: str
    filename: str
    first: bytes
    rest: AsyncGenerator[bytes]
    slot: AsyncExitStack

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.first
        async for chunk in self.rest:
            yield chunk

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):  # a cancelled request gives its slot back all the same
            try:
                await self.rest.aclose()
            finally:
                await self.slot.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()


async def export_clicks(rt: Runtime, caller: Caller, data: dict[str, Any], link_id: str | None = None) -> Export:
    """The clicks of `data`'s period (`ExportParams`) that pass its filters: the account's, or with `link_id` one
    link's. Refusals come before the first byte: 404 for a link the caller may not see, 422, then 429 when the
    account's query slots stay taken (the export holds one while it streams, its work growing with the traffic)."""
    if link_id is not None:
        link_id = await anyio.to_thread.run_sync(_visible_link, rt, caller, link_id)
    params = parse(ExportParams, without_nulls(data))
    first, last = params.period()
    start = datetime.combine(first, time.min, tzinfo=UTC)
    end = datetime.combine(last + timedelta(days=1), time.min, tzinfo=UTC)
    slot = AsyncExitStack()
    await slot.enter_async_context(limits.analysing(rt, caller.account_id))
    chunks = _chunks(rt, _statement(caller, params, link_id), params.format, start, end, windowed=link_id is None)
    try:
        head = await anext(chunks)  # before the response starts: a store that does not answer is a 503, not a cut file
    except BaseException:
        await slot.aclose()
        raise
    filename = f"clicks-{first.isoformat()}-{last.isoformat()}.{params.format}"
    return Export(MEDIA_TYPES[params.format], filename, head, chunks, slot)


def _visible_link(rt: Runtime, caller: Caller, link_id: str) -> str:
    with rt.db.session() as session:
        return find_link(session, caller, link_id).id


def _statement(caller: Caller, params: ExportParams, link_id: str | None) -> Select[*tuple[Any, ...]]:
    """Every row the export may send, in order; each chunk adds its window, its keyset and its limit."""
    conds = [*visible(caller)]  # checked again by every chunk: a link hidden meanwhile stops being sent
    conds += [
        Click.variant == int(value) if name == "variant" else func.lower(getattr(Click, name)) == value
        for name, value in params.filters().items()
    ]
    if link_id is not None:
        conds.append(Click.link_id == link_id)
    return select(*SELECTED).join(Link, Link.id == Click.link_id).where(*conds).order_by(Click.clicked_at, Click.id)


async def _chunks(
    rt: Runtime, rows: Select[*tuple[Any, ...]], fmt: str, start: datetime, end: datetime, windowed: bool
) -> AsyncGenerator[bytes]:
    """The body, a chunk per query: the first one even when empty, with the CSV header. Without `windowed` every query
    runs to the period's end (one link's clicks come off its index in order)."""
    render: Render = csv_rows if fmt == "csv" else ndjson_rows
    head: bytes | None = csv_header() if fmt == "csv" else b""
    floor, width = start, FIRST_WINDOW if windowed else end - start
    after: Key | None = None
    while floor < end:
        until = min(floor + width, end)
        body, count, last = await anyio.to_thread.run_sync(_chunk, rt, rows, render, after, floor, until)
        if count or head is not None:
            yield (head or b"") + body
            head = None
        if last is None:  # every click before `until` is sent
            floor, width = until, width * 2
        else:  # more wait before `until`: the next window spans the time this chunk took
            after = last
            width = max(last[0] - floor, MIN_WINDOW) if windowed else width
            floor = last[0]


def _chunk(
    rt: Runtime, rows: Select[*tuple[Any, ...]], render: Render, after: Key | None, floor: datetime, until: datetime
) -> tuple[bytes, int, Key | None]:
    """One chunk's rows from `floor` (after `after`) to before `until`, rendered; and the key of its last row when it
    is full (more rows may follow before `until`), else None."""
    stmt = rows.where(Click.clicked_at >= floor, Click.clicked_at < until)
    if after is not None:
        stmt = stmt.where(tuple_(Click.clicked_at, Click.id) > tuple_(*after))
    with rt.db.engine.connect() as conn:
        found = conn.execute(stmt.limit(CHUNK_ROWS)).all()
    body = render([_cells(row) for row in found])
    full = len(found) == CHUNK_ROWS
    return body, len(found), (as_utc(found[-1].clicked_at), found[-1].id) if full else None


def _cells(row: Row[*tuple[Any, ...]]) -> Cells:
    _, at, *rest = row
    return isoformat(at) or "", *rest
