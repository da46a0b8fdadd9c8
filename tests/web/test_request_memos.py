"""What the request path remembers instead of working out per request: the short-URL base of a Host, an address's
rate-limit key, and whether FastAPI's and the MCP SDK's OpenTelemetry hooks are on. Each is bounded and gives the
answer it replaces."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from opentelemetry import trace
from starlette.datastructures import URL

from slugline import app as app_module
from slugline.app import create_api, telemetry
from slugline.compat import is_sdk_tracing
from slugline.limits import rules as limits
from slugline.mcp import McpEndpoint
from slugline.runtime import Runtime
from slugline.settings import Settings
from slugline.web import request
from slugline.web.request import request_base


def scope(host: str | None, scheme: str = "http", server: Any = ("10.0.0.1", 8000)) -> dict[str, Any]:
    headers = [] if host is None else [(b"host", host.encode("latin-1"))]
    return {"type": "http", "scheme": scheme, "server": server, "path": "/x", "query_string": b"", "headers": headers}


@pytest.fixture
def rt(tmp_path: Any) -> Any:
    runtime = Runtime.create(Settings(database_url=f"sqlite:///{tmp_path}/m.db", secret_key="s" * 48))
    yield runtime
    runtime.close()


def test_each_host_gets_its_own_base_and_the_memo_stays_small(rt: Runtime) -> None:
    assert request_base(scope("short.example"), rt) == "http://short.example"
    assert request_base(scope("short.example", "https"), rt) == "https://short.example"
    assert request_base(scope("other.example:8080"), rt) == "http://other.example:8080"
    assert request_base(scope(None), rt) == "http://10.0.0.1:8000"
    assert request_base(scope(None, server=["10.0.0.2", 80]), rt) == "http://10.0.0.2"  # a list, as test clients send
    for odd in ("evil.example/path?q", "a@b.example", "[::1]:80", "", "x" * 300):  # what Starlette's URL makes of it
        url = URL(scope=scope(odd))
        assert request_base(scope(odd), rt) == f"{url.scheme}://{url.netloc}"
    held = len(request._bases)
    request_base(scope("y" * 5000), rt)
    assert len(request._bases) == held, "a Host longer than any name is not remembered"
    for i in range(3 * request.MAX_BASES):  # a client choosing a new Host each time
        assert request_base(scope(f"h{i}.example"), rt) == f"http://h{i}.example"
        assert len(request._bases) <= request.MAX_BASES


def test_a_public_url_is_the_base_whatever_the_host(tmp_path: Any) -> None:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path}/m.db", secret_key="s" * 48, public_url="https://sl.example/"
    )
    runtime = Runtime.create(settings)
    try:
        assert request_base(scope("anything.example"), runtime) == "https://sl.example"
    finally:
        runtime.close()


def test_address_keys_are_remembered_only_for_short_strings() -> None:
    limits._ip_key.cache_clear()
    assert limits.ip_key("2001:db8::1") == limits.ip_key("2001:db8::2") == "2001:db8::/64"
    assert limits.ip_key("::ffff:192.0.2.1") == "192.0.2.1"
    assert limits._ip_key.cache_info().currsize == 3
    forwarded = "x" * 10_000  # a proxy forwards whatever it was sent
    assert limits.ip_key(forwarded) == forwarded
    assert limits._ip_key.cache_info().currsize == 3
    assert limits._ip_key.cache_info().maxsize == 4096


def _mcp_spans(app: FastAPI) -> bool:
    """Whether the app's MCP server wraps each message in the SDK's OpenTelemetry span."""
    [endpoint] = {found for route in app.routes if isinstance(found := getattr(route, "app", None), McpEndpoint)}
    return any(is_sdk_tracing(m) for m in endpoint.server.middleware)


def test_fastapi_telemetry_is_on_only_for_providers_set_up_before_the_app(monkeypatch: pytest.MonkeyPatch) -> None:
    assert telemetry() == {"tracing": False, "metrics": False, "logs": False}
    plain = create_api(Settings(secret_key="s" * 48))
    assert not plain._native_telemetry.enabled() and not _mcp_spans(plain)
    monkeypatch.setattr(trace, "get_tracer_provider", trace.NoOpTracerProvider)  # as an SDK's set-up leaves it
    assert telemetry()["tracing"]
    assert app_module.telemetry() == {"tracing": True, "metrics": False, "logs": False}
    assert _mcp_spans(create_api(Settings(secret_key="s" * 48)))
