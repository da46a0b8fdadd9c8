"""What happens in this worker after a link change commits: caches learn of it at once."""

from __future__ import annotations

from slugline.common.models import Link, LinkRecord
from slugline.runtime import Runtime


def link_saved(
    rt: Runtime, account_id: int, version: int, link: Link | LinkRecord, old_slug: str | None, wait: bool = True
) -> None:
    """`wait=False` (on the event loop): a search index busy in a thread is left to catch up by itself."""
    rt.search.changed(account_id, version, link, wait=wait)
    for hook in rt.link_hooks:
        hook(link.slug, old_slug)


def link_deleted(rt: Runtime, account_id: int, version: int, link_id: str, slug: str) -> None:
    rt.search.changed(account_id, version, None, removed_id=link_id)
    for hook in rt.link_hooks:
        hook(slug, None)
