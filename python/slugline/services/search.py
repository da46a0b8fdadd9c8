"""Ranked search over the caller's links (`GET /search`): the per-account index ranks, the database confirms."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from slugline.caller import Caller
from slugline.models import Link
from slugline.runtime import Runtime
from slugline.schemas import SearchParams
from slugline.services.links import SHOWN, LinkRow, link_dict, visible
from slugline.services.sqlhelpers import id_in
from slugline.services.validation import parse


def search_links(rt: Runtime, caller: Caller, data: Any) -> dict[str, Any]:
    params = parse(SearchParams, data)
    with rt.db.engine.connect() as conn:
        total, hits = rt.search.use(
            conn, caller.account_id, lambda index: index.search(params.q, params.limit, caller.public_only)
        )
        ids = [link_id for link_id, _, _ in hits]
        by_id: dict[str, LinkRow] = {}
        if ids:
            by_id = {
                row.id: row for row in conn.execute(select(*SHOWN).where(*visible(caller), id_in(conn, Link.id, ids)))
            }
    out = [
        {"link": link_dict(by_id[link_id], caller.base_url), "score": round(score, 4), "highlights": marks}
        for link_id, score, marks in hits
        if link_id in by_id
    ]
    return {"query": params.q, "total": total, "hits": out}
