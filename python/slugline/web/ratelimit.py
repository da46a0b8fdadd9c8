"""Token-bucket limits on every API and MCP call, applied as a raw ASGI middleware so that every response under
/api and /mcp carries the RateLimit-* headers, errors included. The rules are `limits.rules`; the dashboard's
pages draw from the same buckets (`dashboard.session.visitor`).

Every response it wraps also gets `Cache-Control: no-store` (unless the app chose its own): API answers carry one
account's data, which no shared cache may keep.
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.types import Scope

from slugline.limits import rules as limits
from slugline.limits.buckets import Decision
from slugline.runtime import Runtime
from slugline.web.identity import always_anonymous, identify
from slugline.web.request import client_ip

UNLIMITED_PATHS = frozenset(
    {"/api/v1/health", "/api/v1/health/live", "/api/v1/health/ready", "/api/v1/docs", "/api/v1/openapi.json"}
)
UNLIMITED_PREFIX = "/api/v1/docs/assets/"  # the API docs' static files, as the dashboard's are
NO_STORE = (b"cache-control", b"no-store")

Headers = list[tuple[bytes, bytes]]


class RateLimitMiddleware:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not path.startswith(("/api/", "/mcp")):
            await self.app(scope, receive, send)
            return
        extra: Headers = []
        if path not in UNLIMITED_PATHS and not path.startswith(UNLIMITED_PREFIX):
            decision = await self._limit(scope["app"].state.runtime, scope)
            extra = [(k.lower().encode(), v.encode()) for k, v in decision.headers().items()]
            if not decision.allowed:
                body = orjson.dumps({"error": f"rate limit exceeded: retry in {decision.retry_after} s"})
                headers = [(b"content-type", b"application/json"), NO_STORE, *extra]
                await send({"type": "http.response.start", "status": 429, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", ()), *extra]
                if not any(name.lower() == b"cache-control" for name, _ in headers):
                    headers.append(NO_STORE)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)

    @staticmethod
    async def _limit(rt: Runtime, scope: Scope) -> Decision:
        """Draw from the call's buckets (`limits.api_buckets`). A call that draws from its IP's bucket whatever its
        token turns out to be (none, malformed, a session token) draws from it before the token is resolved, so once
        the IP's limit is spent a call costs no thread and no database read. The answers are those of resolving
        first: the same buckets, drawn in the same order, and a 429 comes before a 401 either way."""
        ip = client_ip(scope)
        early = limits.anonymous_bucket(rt, ip) if always_anonymous(scope) else None
        drawn = []
        if early is not None:
            drawn.append(await rt.limiter.hit(*early))
            if not drawn[0].allowed:
                return drawn[0]
        identity = await identify(rt, scope)
        buckets = limits.api_buckets(rt, identity.caller, ip)
        return await limits.draw(rt, [bucket for bucket in buckets if bucket != early], drawn)
