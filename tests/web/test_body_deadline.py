"""A request body (JSON, a password form, an OAuth request) must arrive within `body_timeout_seconds` once the
headers are in; a client that sends it slowly, or not at all, gets 408 instead of holding a connection and a worker."""

from __future__ import annotations

import time
from collections.abc import MutableMapping
from typing import Any

import anyio
import pytest
from starlette.testclient import TestClient

from slugline.accounts import service as accounts
from slugline.runtime import Runtime
from tests.support.helpers import LINKS, SQLITE_ONLY, ClientFactory

DEADLINE = 0.3


def _stalled_call(tc: TestClient, path: str, headers: list[tuple[bytes, bytes]]) -> tuple[int, bytes, float]:
    """POST with headers promising a body that never comes; the status, the body and how long the answer took."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        await anyio.sleep(3600)  # the client went quiet
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"sl.test"), (b"content-length", b"100"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("sl.test", 80),
    }

    async def call() -> None:
        with anyio.fail_after(10):  # without a deadline the call would hang: fail the test instead
            await tc.app(scope, receive, send)

    assert tc.portal is not None
    started = time.monotonic()
    tc.portal.call(call)
    took = time.monotonic() - started
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start["status"], b"".join(m.get("body", b"") for m in sent[1:]), took


def _key(tc: TestClient, rt: Runtime) -> bytes:
    token = accounts.register(rt, {"username": "slowpoke", "password": "long enough"}, plan="developer")["token"]
    key = tc.post("/api/v1/api-key", json={"scope": "full"}, headers={"Authorization": f"Bearer {token}"})
    return f"Bearer {key.json()['key']}".encode()


@SQLITE_ONLY
def test_a_json_body_that_never_arrives_is_408(make_client: ClientFactory) -> None:
    tc, rt = make_client(body_timeout_seconds=DEADLINE)
    headers = [(b"authorization", _key(tc, rt)), (b"content-type", b"application/json")]
    status, body, took = _stalled_call(tc, LINKS, headers)
    assert status == 408 and b"did not arrive within 0.3 s" in body and body.startswith(b'{"error":')
    assert took < DEADLINE + 2


@SQLITE_ONLY
def test_a_password_form_that_never_arrives_is_408(make_client: ClientFactory) -> None:
    tc, rt = make_client(body_timeout_seconds=DEADLINE)
    body = {"destination_url": "https://example.org/", "slug": "slowform", "visibility": "password", "password": "pw12"}
    key = _key(tc, rt).decode()
    assert tc.post(LINKS, json=body, headers={"Authorization": key}).status_code == 201
    status, page, took = _stalled_call(tc, "/slowform", [(b"content-type", b"application/x-www-form-urlencoded")])
    assert status == 408 and b"did not arrive" in page and b"<form" in page
    assert took < DEADLINE + 2


@SQLITE_ONLY
def test_an_mcp_body_that_never_arrives_is_408(make_client: ClientFactory) -> None:
    tc, rt = make_client(body_timeout_seconds=DEADLINE, public_url="http://sl.test")
    headers = [
        (b"authorization", _key(tc, rt)),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
    ]
    status, body, took = _stalled_call(tc, "/mcp", headers)
    assert status == 408 and body == b'{"error":"the request body did not arrive within 0.3 s"}'
    assert took < DEADLINE + 2


@SQLITE_ONLY
def test_a_dashboard_form_that_never_arrives_is_408(make_client: ClientFactory) -> None:
    tc, _ = make_client(body_timeout_seconds=DEADLINE)
    status, body, took = _stalled_call(tc, "/app/login", [(b"content-type", b"application/x-www-form-urlencoded")])
    assert status == 408 and body == b'{"error":"the request body did not arrive within 0.3 s"}'
    assert took < DEADLINE + 2


@SQLITE_ONLY
@pytest.mark.parametrize(
    ("path", "ctype"),
    [
        ("/oauth/register", b"application/json"),
        ("/oauth/token", b"application/x-www-form-urlencoded"),
        ("/oauth/revoke", b"application/x-www-form-urlencoded"),
        ("/oauth/authorize", b"application/x-www-form-urlencoded"),
    ],
)
def test_an_oauth_body_that_never_arrives_is_408(make_client: ClientFactory, path: str, ctype: bytes) -> None:
    tc, _ = make_client(body_timeout_seconds=DEADLINE)
    status, body, took = _stalled_call(tc, path, [(b"content-type", ctype)])
    assert status == 408
    assert body == b'{"error":"invalid_request","error_description":"the request body did not arrive within 0.3 s"}'
    assert took < DEADLINE + 2
