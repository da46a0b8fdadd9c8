"""Token-bucket limits on every API and MCP call, applied as a raw ASGI middleware so that every response under
/api and /mcp carries the RateLimit-* headers, errors included. The rules are `services.limits`."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.types import Scope

from slugline.runtime import Runtime
from slugline.services import limits
from slugline.web.identity import identify
from slugline.web.request import client_ip

UNLIMITED_PATHS = frozenset({"/api/v1/health", "/api/v1/docs", "/api/v1/openapi.json", "/api/v1/docs/oauth2-redirect"})


class RateLimitMiddleware:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in UNLIMITED_PATHS or not path.startswith(("/api/", "/mcp")):
            await self.app(scope, receive, send)
            return
        rt: Runtime = scope["app"].state.runtime
        identity = await identify(rt, scope)
        bucket, per_minute = limits.api_bucket(rt.settings, identity.caller, identity.digest, client_ip(scope))
        decision = await rt.limiter.hit(bucket, per_minute)
        extra = [(k.lower().encode(), v.encode()) for k, v in decision.headers().items()]
        if not decision.allowed:
            body = orjson.dumps({"error": f"rate limit exceeded: retry in {decision.retry_after} s"})
            await send(
                {
                    "type": "http.response.start",
                    "status": 429,
                    "headers": [(b"content-type", b"application/json"), *extra],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)
