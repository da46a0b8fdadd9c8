"""A store that is down answers 503 `{"error": ...}`, wherever in the app the failure surfaced.

Sits inside Starlette's last-resort handler (which would answer 500) and around the rate-limit middleware, whose
caller lookup reads the database before any FastAPI handler is in play."""

from __future__ import annotations

import logging
from typing import Any

import orjson

from slugline.storage.db import UNAVAILABLE_MESSAGE, unavailable

log = logging.getLogger("slugline")
RETRY_SECONDS = b"1"


class DatabaseGuard:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            if started or not unavailable(exc):
                raise
            log.warning("%s %s: database unavailable (%s)", scope["method"], scope["path"], type(exc).__name__)
            await send_unavailable(send)


async def send_unavailable(send: Any) -> None:
    body = orjson.dumps({"error": UNAVAILABLE_MESSAGE})
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", b"%d" % len(body)),
        (b"retry-after", RETRY_SECONDS),
        (b"cache-control", b"no-store"),
    ]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})
