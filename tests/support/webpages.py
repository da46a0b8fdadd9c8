"""A local web server for the metadata fetcher to read: routes answer with canned responses, and every request is
recorded (path and headers), so a test sees exactly what the fetcher sent and where."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

LOOPBACK = [ipaddress.ip_network("127.0.0.0/8")]

Route = Callable[[asyncio.StreamWriter], Awaitable[None]]


def respond(status: int, body: bytes = b"", **headers: str) -> Route:
    """A route answering `status` with `body` and the headers (content_type is sent as Content-Type), then closing."""

    async def route(writer: asyncio.StreamWriter) -> None:
        lines = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}", "Connection: close"]
        lines += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        await writer.drain()

    return route


@dataclass
class PageServer:
    host: str
    routes: dict[str, Route] = field(default_factory=dict)
    seen: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    port: int = 0

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line, *rest = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            path = line.split()[1]
            self.seen.append((path, {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in rest if h)}))
            await self.routes.get(path, respond(404))(writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


async def serve_pages(host: str, tls: ssl.SSLContext | None = None) -> AsyncIterator[PageServer]:
    """A server on `host` (any free port) while the caller iterates; `stop` is set as it closes: endless routes end."""
    srv = PageServer(host)
    server = await asyncio.start_server(srv.handle, host, 0, ssl=tls)
    srv.port = server.sockets[0].getsockname()[1]
    async with server:
        yield srv
        srv.stop.set()
