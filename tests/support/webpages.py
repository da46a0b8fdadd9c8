"""A local web server for the metadata fetcher to read: routes answer with canned responses, and every request is
recorded (path and headers), so a test sees exactly what the fetcher sent and where."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import ssl
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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


@contextlib.contextmanager
def html_site(page: bytes) -> Iterator[str]:
    """A threaded server on 127.0.0.1 (any free port) answering every GET with `page` as HTML, for tests that are not
    async (a real server fetching through auto_meta, a browser): yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
