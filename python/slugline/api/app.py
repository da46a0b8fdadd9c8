"""The ASGI application: FastAPI for /api/v1 and the MCP endpoint at /mcp, with every error as {"error": ...}."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from granian.utils.proxies import wrap_asgi_with_proxy_headers
from starlette.exceptions import HTTPException
from starlette.routing import Route

from slugline import __version__
from slugline.api.ratelimit import RateLimitMiddleware
from slugline.api.responses import JSON, error
from slugline.api.v1 import analytics, auth, clicks, health, links, me, public, qr, search
from slugline.clicks import recording
from slugline.errors import ServiceError, describe_validation
from slugline.mcp import McpEndpoint
from slugline.redirect import RedirectLayer
from slugline.services.runtime import Runtime
from slugline.settings import Settings, get_settings

log = logging.getLogger("slugline")
API = "/api/v1"
HTTP_MESSAGES = {404: "not found", 405: "method not allowed"}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def service_error(_: Request, exc: ServiceError) -> JSON:
        return error(exc.status, exc.message, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> JSON:
        errors = list(exc.errors())
        if any(e.get("type") == "json_invalid" for e in errors):
            return error(400, "malformed JSON")
        return error(422, describe_validation(errors))

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, exc: HTTPException) -> JSON:
        message = HTTP_MESSAGES.get(exc.status_code) or str(exc.detail)
        return error(exc.status_code, message, exc.headers)

    @app.exception_handler(Exception)
    async def crash(_: Request, exc: Exception) -> JSON:
        log.exception("unhandled error", exc_info=exc)
        return error(500, "internal server error")


def create_api(settings: Settings | None = None, runtime: Runtime | None = None) -> FastAPI:
    settings = settings or get_settings()

    mcp = McpEndpoint(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        rt = runtime or Runtime.create(settings)
        app.state.runtime = rt
        try:
            async with mcp.serve(rt), recording(rt) as app.state.clicks:  # flushed before the runtime closes
                yield
        finally:
            if runtime is None:
                await rt.aclose()

    app = FastAPI(title="Slugline", version=__version__, lifespan=lifespan, docs_url=f"{API}/docs",
                  redoc_url=None, openapi_url=f"{API}/openapi.json",
                  description="Short links with analytics, QR codes and a remote MCP endpoint.")
    for module in (health, auth, me, links, clicks, qr, analytics, search, public):
        app.include_router(module.router, prefix=API)
    # Both spellings answer directly (MCP clients do not follow redirects); a Route of an ASGI app takes every method.
    app.router.routes.extend(Route(path, mcp, include_in_schema=False) for path in ("/mcp", "/mcp/"))
    install_error_handlers(app)
    app.add_middleware(RateLimitMiddleware)
    return app


def create_app(settings: Settings | None = None, runtime: Runtime | None = None) -> Any:
    """The API behind the redirect layer, which answers `/{slug}` before FastAPI routing is involved.

    Behind a reverse proxy listed in `trusted_proxies`, the client address (rate limits, visitor hashes) and
    scheme (cookies, short URLs) come from its X-Forwarded-For/-Proto headers.
    """
    settings = settings or get_settings()
    app = RedirectLayer(create_api(settings, runtime))
    if not settings.trusted_proxies:
        return app
    proxied = wrap_asgi_with_proxy_headers(app, settings.trusted_proxies)

    async def behind_proxy(scope: Any, receive: Any, send: Any) -> None:  # Granian's wrapper is not `async def`
        await proxied(scope, receive, send)

    return behind_proxy
