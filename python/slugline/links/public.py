"""The public lookup of one slug (`GET /public/{slug}`, no auth): what anyone may know of a short link."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from slugline import _core
from slugline.common.clock import isoformat
from slugline.common.errors import NotFound
from slugline.common.models import Link
from slugline.common.visibility import PUBLIC_LEVELS, Visibility
from slugline.links.service import NOT_FOUND
from slugline.runtime import Runtime


def public_link(rt: Runtime, slug: str, base_url: str) -> dict[str, Any]:
    """Never the note, never a password link's destination; a private link does not exist."""
    if _core.slug_error(slug) is not None:
        raise NotFound(NOT_FOUND)
    with rt.db.session() as session:
        link = session.scalar(select(Link).where(Link.slug == slug))
    if link is None or link.visibility == Visibility.PRIVATE:
        raise NotFound(NOT_FOUND)
    short_url = f"{base_url}/{link.slug}"
    if link.visibility not in PUBLIC_LEVELS:
        return {"slug": link.slug, "short_url": short_url, "visibility": link.visibility, "requires_password": True}
    return {
        "slug": link.slug,
        "short_url": short_url,
        "destination_url": link.destination_url,
        "title": link.title,
        "description": link.description,
        "hashtags": list(link.hashtags or ()),
        "visibility": link.visibility,
        "created_at": isoformat(link.created_at),
    }
