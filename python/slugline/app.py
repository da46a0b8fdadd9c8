"""The one module that knows every interface: it assembles the ASGI application Granian serves.

Outside in: the trusted-proxy wrapper (when configured), the redirect layer answering `/{slug}`, then FastAPI with
the rate-limit middleware, the REST API under /api/v1, the MCP endpoint at /mcp and the web dashboard at `/` and
`/app/...`. The lifespan starts the runtime, the MCP session manager and the click flusher in every worker, and
flushes clicks on the way out.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, nullcontext
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.routing import Route

from slugline import __version__
from slugline.api import API_PREFIX, docs, openapi, routers
from slugline.api.oauth import routes as oauth_routes
from slugline.clicks.buffer import recording
from slugline.common.errors import ServiceError, describe_validation
from slugline.dashboard import consent
from slugline.dashboard import install as install_dashboard
from slugline.mcp import McpEndpoint
from slugline.redirects.layer import RedirectLayer
from slugline.runtime import Runtime
from slugline.settings import Settings, get_settings
from slugline.storage import migrate
from slugline.web.logs import RequestLog, access_log
from slugline.web.proxies import behind_proxies
from slugline.web.ratelimit import RateLimitMiddleware
from slugline.web.responses import JSON, error
from slugline.web.unavailable import DatabaseGuard
from slugline.web.warmup import warm_up
from slugline.webhooks.worker import delivering

if TYPE_CHECKING:
    from fastapi.telemetry import TelemetryConfig

log = logging.getLogger("slugline")
HTTP_MESSAGES = {404: "not found", 405: "method not allowed"}
MCP_PATHS = ("/mcp", "/mcp/")  # both answer directly: MCP clients do not follow redirects


def install_error_handlers(app: FastAPI) -> None:
    """Every error, whatever raised it, is `{"error": ...}` with the status the contract names."""

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
    async def http_error(request: Request, exc: HTTPException) -> JSON:
        message = HTTP_MESSAGES.get(exc.status_code) or str(exc.detail)
        headers = dict(exc.headers or {})
        if exc.status_code == 405:  # Starlette names the methods of one route only; a path may have several
            headers["Allow"] = openapi.allowed_methods(request.app, request.url.path) or headers.get("Allow", "")
        return error(exc.status_code, message, headers)

    @app.exception_handler(Exception)
    async def crash(_: Request, exc: Exception) -> JSON:
        log.exception("unhandled error", exc_info=exc)
        return error(500, "internal server error")


def settle_heap() -> None:
    """Move everything alive once the worker has started (modules, routes, schemas, compiled SQL: some 200,000
    objects) out of the garbage collector's sight. Otherwise each full collection walks all of them,
    stalling the event loop for tens of milliseconds, and a request that hops to a thread allocates enough to set
    one off every few hundred requests: that alone halved the REST API's throughput. A worker's own process only:
    tests that build many apps in one process keep collecting normally."""
    gc.collect()
    gc.freeze()


def telemetry() -> TelemetryConfig:
    """FastAPI's OpenTelemetry spans, metrics and logs, each on when its provider is set up before the app is built
    (as `opentelemetry-instrument` and SDK set-up code do). Left to itself FastAPI asks the providers on every
    request whether they have been set up since, which took 3% of a `GET /me`."""
    try:
        from opentelemetry import _logs, metrics, trace
    except ImportError:  # a FastAPI without telemetry
        return {}

    def set_up(provider: object) -> bool:  # the API's stand-ins until an SDK provider is set are all "Proxy..."
        return not type(provider).__name__.lstrip("_").startswith("Proxy")

    return {
        "tracing": set_up(trace.get_tracer_provider()),
        "metrics": set_up(metrics.get_meter_provider()),
        "logs": set_up(_logs.get_logger_provider()),
    }


def create_api(settings: Settings | None = None, runtime: Runtime | None = None) -> FastAPI:
    """FastAPI with the REST API and the MCP endpoint; `runtime` is for tests that share one across apps."""
    settings = settings or get_settings()
    observed = telemetry()
    mcp = McpEndpoint(settings, tracing=bool(observed.get("tracing")))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        rt = runtime or Runtime.create(settings)
        if runtime is None:
            try:
                migrate.require_current(rt.db.engine)
            except migrate.SchemaBehind:
                rt.close()
                raise
        app.state.runtime = rt
        # Threads that run requests' database work (see `Database.threads`).
        anyio.to_thread.current_default_thread_limiter().total_tokens = rt.db.threads
        metrics = getattr(app.state, "metrics", None)  # `slugline.metrics.install`, when metrics are on
        try:
            # The clicks are flushed before the runtime closes, and before the metrics' last fold.
            async with (
                mcp.serve(rt),
                metrics.running(rt) if metrics else nullcontext(),
                recording(rt) as clicks,
                delivering(rt) as deliverer,
            ):
                app.state.clicks = clicks
                app.state.webhooks = deliverer
                if metrics is not None:
                    metrics.watch(clicks, deliverer)
                if runtime is None:
                    await warm_up(app, rt)
                    settle_heap()
                yield
        finally:
            await rt.db.close_loop()
            if runtime is None:
                await rt.aclose()

    app = FastAPI(
        title="Slugline",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,  # `api.docs` serves Swagger UI itself: same-origin files under a strict policy
        redoc_url=None,
        swagger_ui_oauth2_redirect_url=None,
        openapi_url=f"{API_PREFIX}/openapi.json",
        description="Short links with analytics, QR codes and a remote MCP endpoint.",
        telemetry=observed,
        generate_unique_id_function=openapi.operation_id,
    )
    # A Route of an ASGI app takes every method; the endpoint answers the ones MCP does not use itself. First in the
    # list: FastAPI tries routes in order, and each included router it passes costs an MCP call several µs.
    app.router.routes.extend(Route(path, mcp, include_in_schema=False) for path in MCP_PATHS)
    for router in routers():
        app.include_router(router, prefix=API_PREFIX)
    app.include_router(docs.router, prefix=API_PREFIX)
    install_error_handlers(app)
    openapi.install(app, API_PREFIX)
    install_dashboard(app)  # `/` and `/app/...`: pages for people, with HTML error pages of their own
    app.router.routes.extend(oauth_routes())  # discovery metadata and /oauth/..., for MCP clients that sign in
    app.include_router(consent.router)  # the consent and connected-apps pages of that sign-in
    app.add_middleware(RateLimitMiddleware)
    app.add_middleware(DatabaseGuard)  # outside the rate limits: their caller lookup reads the database
    return app


def create_app(settings: Settings | None = None, runtime: Runtime | None = None) -> Any:
    """The API behind the redirect layer, which answers `/{slug}` before FastAPI routing is involved.

    Behind a reverse proxy listed in `trusted_proxies`, the client address (rate limits, visitor hashes) and
    scheme (cookies, short URLs) come from its X-Forwarded-For/-Proto headers (see `web.proxies`), and the request
    id from its X-Request-ID (see `web.logs`).
    """
    settings = settings or get_settings()
    if settings.access_log:
        access_log.setLevel(logging.INFO)
    api = create_api(settings, runtime)
    app = RedirectLayer(api, RequestLog(settings.access_log, settings.log_ips))
    if settings.metrics_on():  # imported only then: prometheus-client reads its multiprocess setting at import
        from slugline.metrics.install import install

        install(api, app, app.requests, settings)
    if not settings.trusted_proxies:
        return app
    return behind_proxies(app, settings.trusted_proxies)
