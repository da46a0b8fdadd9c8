"""The /mcp endpoint at the HTTP layer: Host/Origin checks, then the API key, then the Content-Type, then the body
(at most 1 MiB, all of it within `SLUGLINE_BODY_TIMEOUT_SECONDS`: 413 and 408 as on the REST API), then the
stateless MCP transport (a plain request of a 2025 protocol through `exchange`, the SDK's kernel in this task).

DNS-rebinding protection: a request's Host must be the host of `SLUGLINE_PUBLIC_URL` (any port) or a loopback name
(127.0.0.1, localhost, [::1]); a browser Origin, when sent, must be the public URL's origin or a loopback origin.
Anything else gets 421 (Host) or 403 (Origin). So a server reached by a real host name needs `SLUGLINE_PUBLIC_URL`
set to it; without that setting only loopback names are accepted. The REST API is not affected.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from slugline.accounts import service as accounts
from slugline.common.errors import ServiceError
from slugline.mcp import exchange
from slugline.mcp.context import CALLER_KEY, RUNTIME_KEY
from slugline.mcp.tools import build_server
from slugline.oauth.tokens import resource_metadata_url
from slugline.runtime import Runtime
from slugline.settings import Settings
from slugline.web.identity import identify
from slugline.web.request import MAX_BODY, read_body, replay, request_base
from slugline.web.responses import error

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
# The gate below checks Host and Origin once, before the key; the SDK's transport still checks Content-Type.
UNCHECKED = TransportSecuritySettings(enable_dns_rebinding_protection=False)
REFUSALS = {
    421: "Host '{host}' is not allowed for /mcp: set SLUGLINE_PUBLIC_URL to the URL clients use to reach this server",
    403: "Origin '{origin}' is not allowed for /mcp",
    400: "the MCP endpoint takes JSON-RPC sent with 'Content-Type: application/json'",
}


@dataclass(frozen=True, slots=True)
class AllowedNames:
    """The Host and Origin values /mcp accepts: the public URL's host and the loopback names, each on any port.

    Names compare without regard to case, as DNS does. The SDK's own check is off: this one runs once per request, in
    the gate, before the key is looked at.
    """

    hosts: frozenset[str]
    origins: frozenset[str]

    @classmethod
    def of(cls, settings: Settings) -> AllowedNames:
        hosts = set(LOOPBACK)
        origins = {f"{scheme}://{name}" for scheme in ("http", "https") for name in LOOPBACK}
        if settings.public_url:
            parts = urlsplit(settings.public_url)
            if parts.hostname:
                name = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
                hosts.add(name)
                origins.add(f"{parts.scheme}://{name}")
        return cls(frozenset(hosts), frozenset(origins))

    def host(self, value: str) -> bool:
        """A Host header: an allowed name, alone or with a port."""
        return _named(value.lower(), self.hosts)

    def origin(self, value: str | None) -> bool:
        """An Origin header: absent (not a browser, or same-origin) or an allowed origin, alone or with a port."""
        return not value or _named(value.lower(), self.origins)


def _named(value: str, names: frozenset[str]) -> bool:
    if value in names:
        return True
    name, colon, port = value.rpartition(":")
    return bool(colon) and port.isdigit() and name in names


class McpEndpoint:
    """An ASGI app for /mcp. `serve(rt)` runs the MCP session manager inside the application's lifespan."""

    def __init__(self, settings: Settings, tracing: bool = False) -> None:
        self.allowed = AllowedNames.of(settings)
        self.server = build_server(tracing)
        self.runtime: Runtime | None = None
        self.manager: StreamableHTTPSessionManager | None = None
        self.lifespan_state: Any = None

    @asynccontextmanager
    async def serve(self, rt: Runtime) -> AsyncIterator[None]:
        # A fresh manager per lifespan: a session manager can run only once. Stateless with JSON responses, so any
        # worker answers any request and nothing is kept between requests.
        self.server.streamable_http_app(
            stateless_http=True, json_response=True, transport_security=UNCHECKED, max_request_body_size=MAX_BODY
        )
        manager = self.server.session_manager
        # What the server's lifespan yields, which the manager keeps for its own requests: `exchange.answer` hands it
        # to the kernel as the manager does. Seen on its way through the server's public `lifespan` attribute, which
        # the manager enters once as it starts.
        server, given = manager.app, manager.app.lifespan

        @asynccontextmanager
        async def seen(app: Any) -> AsyncIterator[Any]:
            async with given(app) as state:
                self.lifespan_state = state
                yield state

        server.lifespan = seen
        try:
            async with manager.run():
                server.lifespan = given
                self.runtime, self.manager = rt, manager
                try:
                    yield
                finally:
                    self.runtime = self.manager = self.lifespan_state = None
        finally:
            server.lifespan = given

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        refused = await self._gate(request)
        if refused is not None:
            return await refused(scope, receive, send)
        assert self.manager is not None and self.runtime is not None
        # The body is read here, against the same size cap and deadline as the REST API's: the SDK reads it with
        # neither, so a client trickling its body would hold the request as long as it liked.
        try:
            body = await read_body(scope, receive, self.runtime.settings.body_timeout_seconds)
        except ServiceError as exc:
            return await error(exc.status, exc.message)(scope, receive, send)
        if body is None:  # the client left before sending it all
            return
        receive = replay(body, receive)
        if not await exchange.answer(self.manager, self.lifespan_state, scope, body, receive, send):
            await self.manager.handle_request(scope, receive, send)

    async def _gate(self, request: Request) -> Response | None:
        """Everything checked before the MCP transport sees the request; on success the caller is on the scope."""
        if request.method != "POST":
            # Stateless: no GET stream to open and no session to DELETE, so answer at once rather than hang.
            return error(
                405, "method not allowed: the MCP endpoint is stateless, send JSON-RPC with POST", {"Allow": "POST"}
            )
        if self.runtime is None:
            raise RuntimeError("the MCP endpoint is used outside the application's lifespan")
        headers = request.headers
        host, origin = headers.get("host", ""), headers.get("origin")
        if not self.allowed.host(host):
            return error(421, REFUSALS[421].format(host=host))
        if not self.allowed.origin(origin):
            return error(403, REFUSALS[403].format(origin=origin))
        try:
            # 401 for a missing or invalid key; 403 for a session token or a plan without API access.
            caller = (await identify(self.runtime, request.scope)).require()
            accounts.require_api_key(caller)
        except ServiceError as exc:
            return error(exc.status, exc.message, self._challenge(request, exc))
        if not headers.get("content-type", "").lower().startswith("application/json"):
            return error(400, REFUSALS[400])
        request.scope[CALLER_KEY], request.scope[RUNTIME_KEY] = caller, self.runtime
        return None

    def _challenge(self, request: Request, exc: ServiceError) -> dict[str, str]:
        """A 401 names the Protected Resource Metadata (RFC 9728 §5.1), where an OAuth client starts discovery."""
        if exc.status != 401:
            return dict(exc.headers)
        assert self.runtime is not None
        url = resource_metadata_url(request_base(request.scope, self.runtime))
        sent = 'error="invalid_token", ' if "authorization" in request.headers else ""
        return {**exc.headers, "WWW-Authenticate": f'Bearer {sent}resource_metadata="{url}"'}
