"""`auto_meta`: a new link's title and description, read from its destination page; never fails a create.

The fetch runs on the event loop, never in a worker thread (where a slow page would hold a thread every other
request needs), under the account's cap on concurrent fetches. What failed is said, not hidden: the create answers
with `meta_error`.
"""

from __future__ import annotations

import logging

from slugline.common.bounds import MAX_DESCRIPTION, MAX_TITLE
from slugline.common.caller import Caller
from slugline.common.inputs import LinkCreate
from slugline.fetch.fetcher import PageMeta, UnsafeURLError, fetch_metadata
from slugline.limits import rules as limits
from slugline.runtime import Runtime

log = logging.getLogger(__name__)
Filled = tuple[dict[str, str], str | None]  # the fields found, and why none were (None: nothing failed)


async def fetch(rt: Runtime, url: str) -> PageMeta:
    """The page's metadata, from the addresses and ports this server may reach (UnsafeURLError otherwise)."""
    return await fetch_metadata(url, allow_networks=rt.fetch_networks(), ports=rt.settings.fetch_port_set())


async def fill(rt: Runtime, caller: Caller, body: LinkCreate) -> Filled:
    """The title and description `body` asks auto_meta for (none when it does not ask, or already has both)."""
    if not body.auto_meta or (body.title and body.description):
        return {}, None
    async with limits.fetching(rt, caller.account_id):
        return await _metadata(rt, body.destination_url)


async def _metadata(rt: Runtime, url: str) -> Filled:
    """Title and description cut to their bounds, or why the page could not be read."""
    try:
        meta = await fetch(rt, url)
    except UnsafeURLError as exc:
        return {}, str(exc)
    except Exception:  # a fetch must never fail the create
        log.exception("auto_meta fetch failed")
        return {}, "the page could not be fetched"
    if not meta.reachable:
        return {}, meta.fetch_error or "the page could not be fetched"
    found = {"title": (meta.title or "")[:MAX_TITLE], "description": (meta.description or "")[:MAX_DESCRIPTION]}
    return {name: value for name, value in found.items() if value}, None
