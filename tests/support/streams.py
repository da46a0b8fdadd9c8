"""A streamed response as a server receives it: message by message, and a client that may leave halfway.

The test client gathers a streamed body before it answers, and never goes away early; these drive the app the client
runs directly, on its event loop."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import anyio
from starlette.requests import ClientDisconnect
from starlette.testclient import TestClient

from tests.support.helpers import http_scope


@dataclass
class Streamed:
    status: int = 0
    headers: dict[bytes, bytes] = field(default_factory=dict)
    bodies: list[bytes] = field(default_factory=list)  # each body message's bytes, as the app sent them
    finished: bool = False  # the app sent its last body message (more_body false)

    @property
    def body(self) -> bytes:
        return b"".join(self.bodies)


def stream_get(
    client: TestClient,
    path: str,
    token: str,
    params: dict[str, str] | None = None,
    leave_after: int | None = None,
    spec_version: str = "2.4",
    on_body: Callable[[Streamed], None] = lambda _: None,
) -> Streamed:
    """GET `path` with a Bearer `token`, calling `on_body` after each body message. With `leave_after`, the client
    goes away once that many body messages came: under ASGI 2.4 the next send fails with OSError, as a server's
    does; before 2.4 the server reports `http.disconnect` instead (the app's next send is then dropped)."""
    got = Streamed()
    left = anyio.Event()
    headers = [(b"host", b"sl.test"), (b"authorization", f"Bearer {token}".encode())]
    scope = http_scope("GET", path, urlencode(params or {}).encode(), headers)
    scope["asgi"] = {"version": "3.0", "spec_version": spec_version}
    requested = False

    async def receive() -> dict[str, Any]:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await left.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if left.is_set():
            if spec_version >= "2.4":
                raise OSError("the client went away")
            return
        if message["type"] == "http.response.start":
            got.status, got.headers = message["status"], dict(message["headers"])
            return
        got.bodies.append(message.get("body", b""))
        got.finished = not message.get("more_body", False)
        on_body(got)
        if leave_after is not None and len(got.bodies) >= leave_after:
            left.set()

    app: Any = client.app
    assert client.portal is not None  # the client runs the app's lifespan (used as a context manager)
    try:
        client.portal.call(app, scope, receive, send)
    except ClientDisconnect:  # what Starlette raises out of the app after a failed send, for the server to drop
        assert left.is_set()
    return got
