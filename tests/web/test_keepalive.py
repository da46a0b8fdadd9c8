"""An answer that comes before the request body is read leaves the connection usable: a small body is read and
dropped first, a larger one (or one that stalls) gets `Connection: close`; GET, HEAD and bodiless requests pass
through untouched. Through the redirect layer, which applies it; the real server is in tests/e2e/test_keepalive.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from slugline.redirects.layer import RedirectLayer
from slugline.web import keepalive

pytestmark = pytest.mark.anyio
Message = dict[str, Any]


def _scope(method: str, headers: list[tuple[bytes, bytes]], http_version: str = "1.1") -> dict[str, Any]:
    return {
        "type": "http",
        "method": method,
        "path": "/api/v1/anything",
        "headers": headers,
        "http_version": http_version,
    }


def _chunks(*sizes: int, stall: bool = False) -> tuple[Callable[[], Any], list[int]]:
    """A client's body in chunks of these sizes (then, if `stall`, nothing more); and the chunks handed out so far."""
    given: list[int] = []

    async def receive() -> Message:
        if len(given) == len(sizes):
            await anyio.sleep(3600 if stall else 0)
            return {"type": "http.disconnect"}
        given.append(sizes[len(given)])
        more = stall or len(given) < len(sizes)
        return {"type": "http.request", "body": b"x" * given[-1], "more_body": more}

    return receive, given


async def _answer(scope: dict[str, Any], receive: Any, read_first: bool = False) -> tuple[list[Message], list[Any]]:
    """A 404 from the app behind the layer, after reading the body only if `read_first`; what was sent, and the
    `receive` the app was given."""
    sent: list[Message] = []
    seen: list[Any] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(receive)
        while read_first and (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 404, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"{}"})

    async def send(message: Message) -> None:
        sent.append(message)

    with anyio.fail_after(10):
        await RedirectLayer(app)(scope, receive, send)
    return sent, seen


def _headers(sent: list[Message]) -> list[tuple[bytes, bytes]]:
    return list(next(m for m in sent if m["type"] == "http.response.start")["headers"])


async def test_a_large_unread_body_closes_the_connection_without_reading_it() -> None:
    size = keepalive.DRAIN_BYTES + 1
    receive, given = _chunks(size)
    sent, _ = await _answer(_scope("POST", [(b"content-length", str(size).encode())]), receive)
    assert keepalive.CLOSE in _headers(sent) and given == []


async def test_a_small_unread_body_is_read_and_the_connection_kept() -> None:
    receive, given = _chunks(1000, 2000, 3000)
    sent, _ = await _answer(_scope("PUT", [(b"content-length", b"6000")]), receive)
    assert keepalive.CLOSE not in _headers(sent) and given == [1000, 2000, 3000]


async def test_a_chunked_body_past_the_drain_bound_closes_the_connection() -> None:
    sizes = [16 << 10] * 8  # twice DRAIN_BYTES, its length not declared
    receive, given = _chunks(*sizes)
    sent, _ = await _answer(_scope("POST", [(b"transfer-encoding", b"chunked")]), receive)
    assert keepalive.CLOSE in _headers(sent) and sum(given) <= keepalive.DRAIN_BYTES + sizes[0]


async def test_a_small_body_that_stalls_closes_the_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keepalive, "DRAIN_SECONDS", 0.1)
    receive, given = _chunks(10, stall=True)
    sent, _ = await _answer(_scope("PATCH", [(b"content-length", b"500")]), receive)
    assert keepalive.CLOSE in _headers(sent) and given == [10]


async def test_a_body_the_app_read_keeps_the_connection() -> None:
    receive, given = _chunks(keepalive.DRAIN_BYTES, keepalive.DRAIN_BYTES)
    length = str(2 * keepalive.DRAIN_BYTES).encode()
    sent, _ = await _answer(_scope("POST", [(b"content-length", length)]), receive, read_first=True)
    assert keepalive.CLOSE not in _headers(sent) and len(given) == 2


@pytest.mark.parametrize(
    ("method", "headers", "version"),
    [
        ("GET", [(b"content-length", b"100000")], "1.1"),  # GET and HEAD are never looked at: no body expected
        ("HEAD", [], "1.1"),
        ("POST", [], "1.1"),
        ("DELETE", [(b"content-length", b"0")], "1.1"),
        ("POST", [(b"content-length", b"100000")], "2"),  # an HTTP/2 stream ends on its own
    ],
)
async def test_requests_without_a_body_to_mind_pass_through_untouched(
    method: str, headers: list[tuple[bytes, bytes]], version: str
) -> None:
    receive, given = _chunks(100_000)
    sent, seen = await _answer(_scope(method, headers, version), receive)
    assert seen == [receive] and keepalive.CLOSE not in _headers(sent) and given == []
