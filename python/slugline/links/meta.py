"""`auto_meta`: fill a new link's title and description from its destination; never fails a create.

The fetch runs on the event loop, never in a worker thread (where a slow page would hold a thread every other
request needs), under the account's cap on concurrent fetches; the create itself is made on the loop when it can be
(`slugline.storage.loopwrite`), on a thread otherwise.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio.to_thread

from slugline.common.bounds import MAX_DESCRIPTION, MAX_TITLE
from slugline.common.caller import Caller
from slugline.fetch.fetcher import PageMeta, UnsafeURLError, fetch_metadata
from slugline.limits import rules as limits
from slugline.links import service as links
from slugline.runtime import Runtime

log = logging.getLogger(__name__)


async def fetch(rt: Runtime, url: str) -> PageMeta:
    """The page's metadata, from the addresses and ports this server may reach (UnsafeURLError otherwise)."""
    return await fetch_metadata(url, allow_networks=rt.fetch_networks(), ports=rt.settings.fetch_port_set())


async def create_link(rt: Runtime, caller: Caller, data: Any) -> dict[str, Any]:
    """`links.create_link` for REST and MCP, with the auto_meta fetch done first when the body asks for it."""
    body = links.check_create(caller, data)  # 403 and 422 before any fetch
    filled: dict[str, str] = {}
    if body.auto_meta and not (body.title and body.description):
        async with limits.fetching(rt, caller.account_id):
            filled = await _metadata(rt, body.destination_url)
    made = await links.create_link_now(rt, caller, body, filled)
    if made is not None:
        return made
    return await anyio.to_thread.run_sync(links.create_link, rt, caller, data, filled, body)


async def _metadata(rt: Runtime, url: str) -> dict[str, str]:
    """Title and description cut to their bounds; nothing when the fetch is refused or fails."""
    try:
        meta = await fetch(rt, url)
    except UnsafeURLError as exc:
        log.info("auto_meta skipped: %s", exc)
        return {}
    except Exception:  # a fetch must never fail the create
        log.exception("auto_meta fetch failed")
        return {}
    found = {"title": (meta.title or "")[:MAX_TITLE], "description": (meta.description or "")[:MAX_DESCRIPTION]}
    return {name: value for name, value in found.items() if value}
