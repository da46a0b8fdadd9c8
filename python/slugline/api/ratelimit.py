"""Token-bucket limits on every API call: per key by plan, per IP for anonymous callers.

A raw ASGI middleware, so every response under /api/v1 and /mcp carries the RateLimit-* headers,
errors included. It reads only the key's plan (cached a few seconds) and leaves auth to the routers.
"""

from __future__ import annotations

import time
from typing import Any

import anyio.to_thread
import orjson

from slugline import _core
from slugline.services import accounts
from slugline.services.runtime import Runtime

Scope = dict[str, Any]
UNLIMITED_PATHS = frozenset({"/api/v1/health", "/api/v1/docs", "/api/v1/openapi.json", "/api/v1/docs/oauth2-redirect"})
_PLAN_TTL = 5.0


def client_ip(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" else None
    return None


class RateLimitMiddleware:
    def __init__(self, app: Any) -> None:
        self.app = app
        self._plans: dict[str, tuple[float, str | None]] = {}

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in UNLIMITED_PATHS or not path.startswith(("/api/", "/mcp")):
            await self.app(scope, receive, send)
            return
        rt: Runtime = scope["app"].state.runtime
        bucket, per_minute = await self._identify(rt, scope)
        decision = await rt.limiter.hit(bucket, per_minute)
        extra = [(k.lower().encode(), v.encode()) for k, v in decision.headers().items()]
        if not decision.allowed:
            body = orjson.dumps({"error": f"rate limit exceeded: retry in {decision.retry_after} s"})
            await send({"type": "http.response.start", "status": 429,
                        "headers": [(b"content-type", b"application/json"), *extra]})
            await send({"type": "http.response.body", "body": body})
            return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)

    async def _identify(self, rt: Runtime, scope: Scope) -> tuple[str, int]:
        limits = rt.settings
        token = bearer(scope)
        if token and _core.key_kind(token) is not None:
            digest = _core.hash_key(rt.secret, token)
            plan = await self._plan(rt, token, digest)
            if plan == "pro":
                return f"key:{digest[:32]}", limits.rate_limit_pro
            if plan == "developer":
                return f"key:{digest[:32]}", limits.rate_limit_developer
            if plan == "free":
                return f"key:{digest[:32]}", limits.rate_limit_anonymous
        return f"ip:{client_ip(scope)}", limits.rate_limit_anonymous

    async def _plan(self, rt: Runtime, token: str, digest: str) -> str | None:
        now = time.monotonic()
        cached = self._plans.get(digest)
        if cached is not None and cached[0] > now:
            return cached[1]
        plan = await anyio.to_thread.run_sync(accounts.plan_for_token, rt, token)
        if len(self._plans) > 10_000:
            self._plans.clear()
        self._plans[digest] = (now + _PLAN_TTL, plan)
        return plan
