"""The dependency seams of `slugline.compat` still hold with the installed versions: each test fails naming the
private name (or SDK behaviour) that changed, and what to do about it."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import inspect

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from mcp.server.mcpserver import MCPServer
from starlette.testclient import TestClient

from slugline import compat


def _version(dist: str) -> str:
    return importlib.metadata.version(dist)


def test_fastapi_still_has_the_private_validation_failed_hook() -> None:
    if importlib.util.find_spec("fastapi.telemetry") is None:
        return  # a FastAPI without telemetry: nothing to record, `validation_failed` does nothing
    broken = (
        f"FastAPI {_version('fastapi')} has telemetry but no {compat.FASTAPI_VALIDATION_FAILED}(exc) any more: "
        "query models' validation failures are no longer recorded. Find where FastAPI records its own "
        "(fastapi/routing.py), update slugline/compat.py, then the upper bound on fastapi in pyproject.toml."
    )
    assert compat._recorded is not None, broken
    assert list(inspect.signature(compat._recorded).parameters) == ["exc"], broken
    compat.validation_failed(RequestValidationError([]))  # outside a request: records nothing, raises nothing


def test_the_mcp_sdk_still_adds_its_tracing_middleware_by_that_name() -> None:
    server = MCPServer("probe")
    found = [m for m in server.middleware if compat.is_sdk_tracing(m)]
    assert len(found) == 1, (
        f"mcp {_version('mcp')}: a new MCPServer's middleware is {server.middleware!r}, with no single "
        f"{compat.MCP_TRACING_MIDDLEWARE}: the SDK's OpenTelemetry opt-out in slugline/compat.py "
        "(`without_sdk_tracing`) no longer finds it; see the SDK's `Server.middleware` comment"
    )
    assert compat.without_sdk_tracing(server.middleware) == [m for m in server.middleware if m not in found]


def test_fastapi_still_records_the_full_route_template_on_the_scope() -> None:
    seen: list[str | None] = []
    inner = APIRouter(prefix="/links")

    @inner.get("/{link_id}")
    def one(link_id: str, request: Request) -> dict[str, str]:
        seen.append(compat.route_template(request.scope))
        return {}

    outer = APIRouter(prefix="/api/v1")
    outer.include_router(inner)
    app = FastAPI()
    app.include_router(outer)
    assert TestClient(app).get("/api/v1/links/lnk_1").status_code == 200
    assert seen == ["/api/v1/links/{link_id}"], (
        f"FastAPI {_version('fastapi')} no longer keeps the full route template at "
        f"scope{list(compat.FASTAPI_ROUTE_CONTEXT)!r}.path_format: JSON log lines and the access log lose their "
        "routers' prefixes. Find where FastAPI's telemetry reads the effective route (fastapi/routing.py), update "
        "`route_template` in slugline/compat.py, then the upper bound on fastapi in pyproject.toml."
    )
