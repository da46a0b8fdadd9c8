"""The one place that reaches into a dependency past its public API, and the dependency seams that are easy to get
wrong: everything else in Slugline uses public names only.

Why one module at the top of the package, not one per layer: what is left spans the interfaces (the REST API's query
models, the MCP server), and one module is one place to look when a dependency is upgraded. Every private name used
here has an upper bound on its dependency in pyproject.toml, and a test in tests/test_compat.py that fails naming the
break when the dependency changes under it.

- `validation_failed` (FastAPI's private `fastapi.telemetry._api._validation_failed`, fastapi `<0.166`): FastAPI's
  telemetry records a request validation failure it raises itself (its data and the `fastapi.validation.failed` log
  event); `slugline.api.query` raises its own, and records them the same way. FastAPI offers no public call for it.
  Without that function (an older FastAPI, or a newer one that moved it) nothing is recorded and nothing breaks.
- `route_template` (FastAPI's private scope entry `scope["fastapi"]["effective_route_context"]`, fastapi `<0.166`):
  the full template of the route that answered (`/api/v1/links/{link_id}`) for log lines; FastAPI keeps an included
  router's route as declared (without the prefix) and the full template only there, where its own telemetry reads
  it. Without it (a FastAPI that moved it) log lines carry the template without the router's prefix.
- `without_sdk_tracing` (public names only): the MCP SDK's documented opt-out of its per-message OpenTelemetry span
  is "drop it from `server.middleware`"; the middleware's class lives in a private module, so it is recognised by
  its name, not imported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from fastapi.exceptions import RequestValidationError

M = TypeVar("M")

# The names this module relies on, checked by tests/test_compat.py against the installed versions.
FASTAPI_VALIDATION_FAILED = "fastapi.telemetry._api._validation_failed"
MCP_TRACING_MIDDLEWARE = "OpenTelemetryMiddleware"
FASTAPI_ROUTE_CONTEXT = ("fastapi", "effective_route_context")


def _fastapi_validation_failed() -> Callable[[RequestValidationError], None] | None:
    try:
        from fastapi.telemetry._api import _validation_failed
    except ImportError:  # a FastAPI without telemetry, or one that moved it
        return None
    return _validation_failed


_recorded = _fastapi_validation_failed()


def validation_failed(exc: RequestValidationError) -> None:
    """Records a request validation failure the app raises itself as FastAPI's telemetry records its own (when
    FastAPI has telemetry, and it is on for the app serving the request)."""
    if _recorded is not None:
        _recorded(exc)


def is_sdk_tracing(middleware: object) -> bool:
    """`middleware` is the MCP SDK's own OpenTelemetry middleware (on by default in every server)."""
    kind = type(middleware)
    return kind.__name__ == MCP_TRACING_MIDDLEWARE and kind.__module__.split(".")[0] == "mcp"


def without_sdk_tracing(middleware: list[M]) -> list[M]:
    """A server's middleware list without the SDK's OpenTelemetry span per message, its documented opt-out:
    `server.middleware[:] = without_sdk_tracing(server.middleware)`."""
    return [m for m in middleware if not is_sdk_tracing(m)]


def route_template(scope: Mapping[str, Any]) -> str | None:
    """The full path template of the FastAPI route that answered the request of `scope` (prefixes of included routers
    and mounts included), or None where FastAPI did not record one."""
    outer, inner = FASTAPI_ROUTE_CONTEXT
    template = getattr((scope.get(outer) or {}).get(inner), "path_format", None)
    return template if isinstance(template, str) else None
