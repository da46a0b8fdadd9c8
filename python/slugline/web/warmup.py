"""A new worker pays for its first request before it serves: the work a code path does once per process.

A fresh worker's first analytics request took 30-45 ms where the second took 6-10, for the same data: FastAPI
builds each included router's routes on the first request that passes through it, and the service path's first call
compiles its statements, validates its first parameters and opens its first connection. `warm_up` does that work
in the lifespan, before the worker takes requests, on a request that matches no route and on service calls for an
account that does not exist. It reads no account's data and leaves nothing in the worker's caches: the service calls
run on a copy of the runtime with caches of their own (the database, and so its compiled statements, shared).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread
from fastapi import FastAPI
from starlette.types import Message

from slugline import _core
from slugline.accounts import callers
from slugline.accounts.identitycache import IdentityCache
from slugline.analytics import toplinks
from slugline.analytics.cache import AnswerCache
from slugline.analytics.service import analytics_on_thread, get_analytics
from slugline.common.caller import Caller
from slugline.common.errors import ServiceError
from slugline.common.inputs import ListParams
from slugline.common.validation import parse
from slugline.links.counts import LinkCounts
from slugline.links.service import get_on_loop, list_on_loop, list_on_thread
from slugline.runtime import Runtime
from slugline.search.cache import SearchCache

log = logging.getLogger("slugline")

NOBODY = -1  # an account id no database gives (ids start at 1)
BASE = "http://warm-up"
NOBODY_CALLER = Caller(NOBODY, "", "pro", "full", datetime(2026, 1, 1, tzinfo=UTC), BASE)
# The questions a dashboard or client asks first: a month, a week by the hour, a filter, a page of links.
ANALYTICS = ({"days": 30}, {"days": 7, "interval": "hour"}, {"days": 30, "device": "mobile"})
UNMATCHED = "/\x00warm-up"  # no route takes it, so the router passes every included router's routes


async def warm_up(app: FastAPI, rt: Runtime) -> None:
    """Build the routes and run the commonest service paths once; a failure is logged and the worker serves anyway
    (its first requests are then slower, nothing else)."""
    try:
        await _route_unmatched(app)
        ghost = _ghost(rt)
        await anyio.to_thread.run_sync(_services, ghost)
        # An account's figures and top links read at once, on two threads and connections.
        await get_analytics(ghost, NOBODY_CALLER, dict(ANALYTICS[0]))
        # The reads a page of links or a link answered on the event loop makes (none is answered for nobody).
        await list_on_loop(ghost, NOBODY_CALLER, parse(ListParams, {}))
        with contextlib.suppress(ServiceError):
            await get_on_loop(ghost, NOBODY_CALLER, "lnk_warmup000")
    except Exception:
        log.warning("warming up the worker failed; it serves anyway", exc_info=True)


async def _route_unmatched(app: FastAPI) -> None:
    """One request through the router alone (no middleware: no rate limit, log or metric sees it), answered 404."""
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": UNMATCHED,
        "raw_path": UNMATCHED.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [],
        "client": None,
        "server": None,
        "state": {},
    }

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        return None

    await app.router(scope, receive, send)


def _ghost(rt: Runtime) -> Runtime:
    """The worker's runtime with caches of its own, thrown away after the warm-up (the database shared)."""
    return dataclasses.replace(
        rt,
        search=SearchCache(1 << 20),
        analytics=AnswerCache(1 << 20),
        identities=IdentityCache(),
        link_counts=LinkCounts(),
        archived_counts=LinkCounts(),
    )


def _services(ghost: Runtime) -> None:
    """Each path once, for an account that does not exist, on a runtime whose caches are thrown away after."""
    with contextlib.suppress(ServiceError):  # refused, as it must be: the key's lookup was the point
        callers.authenticate(ghost, f"Bearer {_core.generate_key('full')}", BASE)
    for question in ANALYTICS:
        analytics_on_thread(ghost, NOBODY_CALLER, dict(question))
    with ghost.db.session() as session:  # top links' titles: nobody has links with clicks to rank
        toplinks.titles(session, NOBODY_CALLER, ["lnk_warmup000"])
    list_on_thread(ghost, NOBODY_CALLER, {})
