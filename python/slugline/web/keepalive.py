"""A connection kept usable after an answer that left the request body unread.

Granian (hyper underneath) reads a request body only as the app asks for it. When the app answers first (a 401, 404,
405 or 413 to a POST), hyper reads what it has buffered once the app lets go of the body and closes the connection if
that was not all of it. If the app let go after the response went out, the response carried no `Connection: close`,
and a client that pools connections sends its next request into a socket being closed: "Server disconnected without
sending a response". So when a response starts while the body it answers is still unread, a small body (at most
`DRAIN_BYTES`, arriving within `DRAIN_SECONDS`) is read and dropped first, and the connection stays open; anything
larger gets `Connection: close`, which costs the client a new connection instead of the server reading a body it
refused. The redirect layer calls this for every method but GET and HEAD, which carry no body, so a redirect pays
nothing; a request without a body costs one look through its headers.
"""

from __future__ import annotations

from starlette.types import Message, Receive, Scope, Send

from slugline.common.deadline import within

DRAIN_BYTES = 64 << 10  # of an unread body read to keep the connection; past it the connection is closed
DRAIN_SECONDS = (
    1.0  # a declared body sent at all arrives within milliseconds; a client that stalls loses the connection
)
CLOSE = (b"connection", b"close")


def guard(scope: Scope, receive: Receive, send: Send) -> tuple[Receive, Send]:
    """`receive` and `send` as given for a request without a body (or over HTTP/2, whose streams end on their own),
    else wrapped to drain or close after an early answer."""
    length = declared(scope)
    if length == 0 or scope.get("http_version") == "2":
        return receive, send
    body = _Body(receive, send, length)
    return body.receive, body.send


def declared(scope: Scope) -> int | None:
    """The body's declared length in bytes: 0 when there is none, None when it comes chunked."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value) if value.isdigit() else None
        if name == b"transfer-encoding":
            return None
    return 0


class _Body:
    __slots__ = ("_receive", "_send", "length", "unread")

    def __init__(self, receive: Receive, send: Send, length: int | None) -> None:
        self._receive, self._send, self.length = receive, send, length
        self.unread = True

    async def receive(self) -> Message:
        message = await self._receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            self.unread = False  # all of it, or the client left
        return message

    async def send(self, message: Message) -> None:
        if self.unread and message["type"] == "http.response.start":
            await self._drain()
            if self.unread:
                message = {**message, "headers": [*message.get("headers", ()), CLOSE]}
        await self._send(message)

    async def _drain(self) -> None:
        if self.length is not None and self.length > DRAIN_BYTES:
            return
        seen = 0
        try:
            with within(DRAIN_SECONDS):
                while self.unread and seen <= DRAIN_BYTES:
                    seen += len((await self.receive()).get("body", b""))
        except TimeoutError:
            pass
