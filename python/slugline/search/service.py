"""Ranked search over the caller's links (`GET /search`): the per-account index ranks, the database confirms."""

from __future__ import annotations

from typing import Any

import anyio.to_thread

from slugline.common.caller import Caller
from slugline.common.inputs import SearchParams
from slugline.common.validation import parse
from slugline.limits import rules as limits
from slugline.links import service as links
from slugline.links.service import LinkRow, link_dict
from slugline.runtime import Runtime
from slugline.search.cache import LOOP_HIGHLIGHT_TEXT
from slugline.search.queries import Ranked


async def search_links(rt: Runtime, caller: Caller, data: Any) -> dict[str, Any]:
    """The caller's links that match `q`, best first, with highlights (`data`: a dict, or already `SearchParams`).
    On the event loop when the account's index is at hand and small work; otherwise on a thread, inside one of the
    account's query slots (`limits.querying`)."""
    params = data if isinstance(data, SearchParams) else parse(SearchParams, data)
    found = await search_on_loop(rt, caller, params)
    if found is not None:
        return found
    async with limits.querying(rt, caller.account_id, params.q):
        return await anyio.to_thread.run_sync(search_on_thread, rt, caller, params)


async def search_on_loop(rt: Runtime, caller: Caller, params: SearchParams) -> dict[str, Any] | None:
    """`search_links` answered on the event loop when the account's index is held at its current version and the
    hits can be read at once (see `slugline.storage.loopread`): the hits are ranked first, then read with the version,
    which must not be newer than the index's. None: use the thread, as when highlighting the hits would take
    the loop more than a millisecond or two (`LOOP_HIGHLIGHT_TEXT`)."""
    reader, held = rt.db.now, rt.search.held(caller.account_id)
    if reader is None or held is None:
        return None
    index_version, index = held
    found = index.search(params.q, params.limit, caller.public_only, max_text=LOOP_HIGHLIGHT_TEXT)
    if found is None:  # long texts to highlight: a thread does it, with the GIL released
        return None
    total, hits = found
    read = links.by_ids(reader.dialect.name, caller, [link_id for link_id, _, _ in hits])
    got = await links.versioned_now(rt, caller.account_id, read)
    if got is None or got[0] > index_version:  # the index is behind: the thread path brings it up
        return None
    rows = got[1]
    by_id = dict(zip((row[0] for row in rows), links.links_json(rows, caller.base_url), strict=True))
    out = [
        {"link": by_id[link_id], "score": round(score, 4), "highlights": marks}
        for link_id, score, marks in hits
        if link_id in by_id
    ]
    return {"query": params.q, "total": total, "hits": out}


def search_on_thread(rt: Runtime, caller: Caller, data: Any) -> dict[str, Any]:
    params = data if isinstance(data, SearchParams) else parse(SearchParams, data)
    with rt.db.engine.connect() as conn:  # a transaction: the index may load through a server-side cursor
        total, hits = rt.search.use(conn, caller.account_id, Ranked(params.q, params.limit, caller.public_only))
        ids = [link_id for link_id, _, _ in hits]
        by_id: dict[str, LinkRow] = {}
        if ids:
            # A few ids: read by primary key (in no order: the index's order is kept below), the account and
            # visibility checked on each row.
            stmt, binds, _ = links.by_ids(conn.dialect.name, caller, ids)
            by_id = {row.id: row for row in conn.execute(stmt, binds)}
    out = [
        {"link": link_dict(by_id[link_id], caller.base_url), "score": round(score, 4), "highlights": marks}
        for link_id, score, marks in hits
        if link_id in by_id
    ]
    return {"query": params.q, "total": total, "hits": out}
