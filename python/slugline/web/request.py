"""Reading a request: the client's address, its Bearer token, the base of its short URLs, and a capped body (JSON or
bytes) that must arrive in time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.datastructures import URL
from starlette.types import Message, Receive, Scope

from slugline.common.deadline import within
from slugline.common.errors import BadRequest, PayloadTooLarge, RequestTimeout
from slugline.runtime import Runtime

MAX_BODY = 1 << 20  # bytes of any request body
UNKNOWN_CLIENT = "unknown"  # the ASGI server gave no client address (never the case under Granian)


def client_ip(scope: Scope) -> str:
    """The client's address; behind trusted proxies the app's proxy wrapper has already put the real one here."""
    client = scope.get("client")
    return str(client[0]) if client else UNKNOWN_CLIENT


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def request_base(scope: Scope, rt: Runtime) -> str:
    """The base of the short URLs this request should see: the configured public URL, else where it was sent."""
    if rt.settings.public_url:
        return rt.short_base("")
    server, host = scope.get("server"), header(scope, b"host")
    where = (scope.get("scheme"), None if server is None else tuple(server), host)
    base = _bases.get(where)
    if base is None:
        url = URL(scope=scope)
        base = f"{url.scheme}://{url.netloc}"
        if host is None or len(host) <= MAX_HOST:  # Host is the client's to choose: the memo stays small
            if len(_bases) >= MAX_BASES:
                _bases.clear()
            _bases[where] = base
    return rt.short_base(base)


# Scheme, server address and Host header -> what Starlette's URL makes of them: building a URL object per request
# took 6% of a `GET /me`, and a server sees only a handful of these.
_bases: dict[tuple[Any, Any, str | None], str] = {}
MAX_BASES = 256
MAX_HOST = 255  # characters of a Host worth remembering (a DNS name has at most 253)


async def read_json(scope: Scope, chunks: AsyncIterator[bytes], timeout: float) -> Any:  # noqa: ASYNC109
    """The body as JSON: 400 unless sent as application/json and well-formed, 413 past `MAX_BODY` whatever
    Content-Length claimed, 408 unless it has all arrived within `timeout` seconds."""
    ctype = (header(scope, b"content-type") or "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise BadRequest("the request body must be JSON sent with 'Content-Type: application/json'")
    _check_declared(scope)
    raw = await gather(chunks, timeout)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"malformed JSON: {exc}") from None


async def read_body(scope: Scope, receive: Receive, timeout: float) -> bytes | None:  # noqa: ASYNC109
    """The whole body as bytes, or None if the client left first: 413 past `MAX_BODY` whatever Content-Length
    claimed, 408 unless it has all arrived within `timeout` seconds."""
    _check_declared(scope)
    return await collect(receive, MAX_BODY, timeout)


async def gather(chunks: AsyncIterator[bytes], timeout: float) -> bytes:  # noqa: ASYNC109
    """A body read through Starlette's `request.stream()`: PayloadTooLarge (413) past `MAX_BODY`, RequestTimeout
    (408) unless it has all arrived within `timeout` seconds."""
    raw = bytearray()
    try:
        with within(timeout):
            async for chunk in chunks:
                raw += chunk
                if len(raw) > MAX_BODY:
                    raise _too_large(MAX_BODY)
    except TimeoutError:
        raise body_timeout(timeout) from None
    return bytes(raw)


async def collect(receive: Receive, limit: int, timeout: float) -> bytes | None:  # noqa: ASYNC109
    """A body read straight from ASGI `receive`, or None if the client left first: PayloadTooLarge (413) past
    `limit` bytes, RequestTimeout (408) unless it has all arrived within `timeout` seconds."""
    raw = bytearray()
    try:
        with within(timeout):
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return None
                raw += message.get("body", b"")
                if len(raw) > limit:
                    raise _too_large(limit)
                if not message.get("more_body", False):
                    return bytes(raw)
    except TimeoutError:
        raise body_timeout(timeout) from None


def replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives `body` (read already) as one message, then whatever the client sends next."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def again() -> Message:
        return pending.pop() if pending else await receive()

    return again


def _check_declared(scope: Scope) -> None:
    declared = header(scope, b"content-length") or ""
    if declared.isascii() and declared.isdigit() and (len(declared) > 12 or int(declared) > MAX_BODY):
        raise _too_large(MAX_BODY)


def _too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"the request body must be at most {limit // 1024} KiB")


def body_timeout(timeout: float) -> RequestTimeout:
    return RequestTimeout(f"the request body did not arrive within {timeout:g} s")
