"""Ranked search (`GET /search`) and the public lookup of one slug (`GET /public/{slug}`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from slugline import _core
from slugline.errors import NotFound
from slugline.models import Link
from slugline.schemas import SearchParams
from slugline.services.links import NOT_FOUND, link_dict, visible
from slugline.services.runtime import Caller, Runtime, isoformat
from slugline.services.search import PUBLIC_LEVELS
from slugline.services.sqlhelpers import id_in
from slugline.services.validation import parse


def search_links(rt: Runtime, caller: Caller, data: Any) -> dict[str, Any]:
    params = parse(SearchParams, data)
    with rt.db.session() as session:
        total, hits = rt.search.use(session, caller.account_id,
                                    lambda index: index.search(params.q, params.limit, caller.public_only))
        ids = [link_id for link_id, _, _ in hits]
        by_id: dict[str, Link] = {}
        if ids:
            by_id = {link.id: link for link in session.scalars(select(Link).where(*visible(caller),
                                                                                   id_in(session, Link.id, ids)))}
    out = [{"link": link_dict(by_id[link_id], caller.base_url), "score": round(score, 4), "highlights": marks}
           for link_id, score, marks in hits if link_id in by_id]
    return {"query": params.q, "total": total, "hits": out}


def public_link(rt: Runtime, slug: str, base_url: str) -> dict[str, Any]:
    """What anyone may know of a slug: never the note, never a password link's destination."""
    if _core.slug_error(slug) is not None:
        raise NotFound(NOT_FOUND)
    with rt.db.session() as session:
        link = session.scalar(select(Link).where(Link.slug == slug))
    if link is None or link.visibility == "private":
        raise NotFound(NOT_FOUND)
    short_url = f"{base_url}/{link.slug}"
    if link.visibility not in PUBLIC_LEVELS:
        return {"slug": link.slug, "short_url": short_url, "visibility": link.visibility, "requires_password": True}
    return {"slug": link.slug, "short_url": short_url, "destination_url": link.destination_url, "title": link.title,
            "description": link.description, "hashtags": list(link.hashtags or ()), "visibility": link.visibility,
            "created_at": isoformat(link.created_at)}

