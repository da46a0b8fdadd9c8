"""The app's own work per request, in process: the ASGI app called directly with a no-op `send`, no server, no socket.

    python benches/inprocess.py [--database-url postgresql://…] [--requests 2000] [--rounds 5] [--only get post]

Prints, per row, the wall time and the process's CPU time per request, each the minimum over the rounds (the
least disturbed round on a shared machine). What the HTTP benches cannot separate shows here: the serving
thread's own cost, and on PostgreSQL the worker's CPU for each round trip. Profile one row with py-spy, e.g.
`py-spy record --format raw -o out.txt -- python benches/inprocess.py --only get`. The `redirect`
rows answer a cached link (`GET` records a click, `HEAD` does not) beside the bare app of `bare_apps.py`; `mcp`
and `mcp_2026` are MCP's `get_me` in the 2025 protocols and in 2026-07-28 (see `http_api.py`). `list_q` and
`search` (`q=rust`) run over `--links` links (10,000 by default), the same ones `http_api.py` makes.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import orjson
import uvloop

import bare_apps
import http_api
from httpbench import own_schema
from slugline.accounts import service as accounts
from slugline.app import create_app
from slugline.runtime import Runtime
from slugline.settings import Settings
from slugline.storage import migrate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's tests, as in benches/abuse.py
from tests.support.helpers import http_scope

App = Callable[[dict[str, Any], Any, Any], Coroutine[Any, Any, None]]
AGENT = b"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"
MCP_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_me", "arguments": {}}}
MCP_CALL_2026 = http_api.MCP_CALL_2026.encode()
MCP_HEADERS_2026 = [(k.lower().encode(), v.encode()) for k, v in http_api.MCP_HEADERS_2026.items()]
ROWS = (
    "me",
    "get",
    "list",
    "list_q",
    "search",
    "mcp",
    "mcp_2026",
    "put",
    "post",
    "redirect",
    "redirect_head",
    "bare_redirect",
)


class Caller:
    """Calls the app as a server would, with one request's scope; the lifespan's state is shared."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.state: dict[str, Any] = {}
        self.sent: list[dict[str, Any]] = []
        self._inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._lifespan: asyncio.Task[None] | None = None

    async def lifespan(self, message: str) -> None:
        """Runs the app's lifespan through `startup` or `shutdown`, as a server does before and after serving."""
        if self._lifespan is None:
            scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": self.state}
            self._lifespan = asyncio.create_task(self.app(scope, self._inbox.get, self._outbox.put))
        await self._inbox.put({"type": f"lifespan.{message}"})
        done = await self._outbox.get()
        if not done["type"].endswith(".complete"):
            raise RuntimeError(f"lifespan {message}: {done}")

    def scope(self, method: str, path: str, headers: list[tuple[bytes, bytes]], query: bytes) -> dict[str, Any]:
        return {**http_scope(method, path, query, [(b"host", b"sl.test"), *headers]), "state": self.state}

    async def call(
        self,
        method: str,
        path: str,
        headers: list[tuple[bytes, bytes]],
        body: bytes = b"",
        query: bytes = b"",
        app: App | None = None,
    ) -> list[dict[str, Any]]:
        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            self.sent.append(message)

        self.sent = []
        await (app or self.app)(self.scope(method, path, headers, query), receive, send)
        return self.sent

    async def json(self, method: str, path: str, headers: list[tuple[bytes, bytes]], body: Any) -> Any:
        sent = await self.call(method, path, [*headers, (b"content-type", b"application/json")], orjson.dumps(body))
        status = sent[0]["status"]
        if status >= 400:
            raise RuntimeError(f"{method} {path}: {status} {sent[1]['body']!r}")
        return orjson.loads(sent[1]["body"])


async def measure(args: argparse.Namespace, settings: Settings) -> None:
    rt = Runtime.create(settings)
    migrate.upgrade(rt.db.engine)
    made = accounts.register(rt, {"username": "bench", "password": "bench-password"}, plan="pro")
    caller = Caller(create_app(settings, rt))
    await caller.lifespan("startup")
    session = [(b"authorization", f"Bearer {made['token']}".encode())]
    key = (await caller.json("POST", "/api/v1/api-key", session, {"scope": "full"}))["key"]
    auth = [(b"authorization", f"Bearer {key}".encode())]
    link = await caller.json(
        "POST", "/api/v1/links", auth, {"destination_url": "https://example.org/", "slug": "bench"}
    )
    as_json = [*auth, (b"content-type", b"application/json")]
    if {"list_q", "search"} & set(args.only or ROWS):
        for i in range(args.links - 1):  # the same links as http_api.py's
            words = [http_api.WORDS[(i * 7 + k) % len(http_api.WORDS)] for k in range(3)]
            fields = {"destination_url": f"https://example.org/{i}", "title": " ".join(words), "hashtags": words[:2]}
            await caller.json("POST", "/api/v1/links", auth, fields)
    visit = [(b"user-agent", AGENT), (b"referer", b"https://news.example.com/item?id=1")]
    rows: dict[str, tuple[str, str, list[tuple[bytes, bytes]], bytes, bytes, App | None]] = {
        "me": ("GET", "/api/v1/me", auth, b"", b"", None),
        "get": ("GET", f"/api/v1/links/{link['id']}", auth, b"", b"", None),
        "list": ("GET", "/api/v1/links", auth, b"", b"per=20", None),
        "list_q": ("GET", "/api/v1/links", auth, b"", b"q=rust&per=20", None),
        "search": ("GET", "/api/v1/search", auth, b"", b"q=rust", None),
        "mcp": (
            "POST",
            "/mcp",
            [*as_json, (b"accept", b"application/json, text/event-stream")],
            orjson.dumps(MCP_CALL),
            b"",
            None,
        ),
        "mcp_2026": ("POST", "/mcp", [*auth, *MCP_HEADERS_2026], MCP_CALL_2026, b"", None),
        "put": ("PUT", f"/api/v1/links/{link['id']}", as_json, b'{"title": "renamed", "note": "n"}', b"", None),
        "post": ("POST", "/api/v1/links", as_json, b'{"destination_url": "https://example.org/more"}', b"", None),
        "redirect": ("GET", "/bench", visit, b"", b"", None),
        "redirect_head": ("HEAD", "/bench", visit, b"", b"", None),
        "bare_redirect": ("GET", "/bench", visit, b"", b"", bare_apps.redirect),
    }
    for name in args.only or ROWS:
        method, path, headers, body, query, app = rows[name]
        answered = await caller.call(method, path, headers, body, query, app)
        first = answered[0]["status"]
        if name.startswith("mcp") and b"structuredContent" not in answered[1]["body"]:
            raise RuntimeError(f"{name}: {answered[1]['body']!r}")
        wall = cpu = float("inf")
        for _ in range(args.rounds):
            started, used = time.perf_counter(), time.process_time()
            for _ in range(args.requests):
                await caller.call(method, path, headers, body, query, app)
            wall = min(wall, (time.perf_counter() - started) / args.requests * 1e6)
            cpu = min(cpu, (time.process_time() - used) / args.requests * 1e6)
        print(f"{name:14s} {first}  wall {wall:8.2f} µs  cpu {cpu:8.2f} µs per request", flush=True)
    await caller.lifespan("shutdown")
    rt.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", default=None, help="default: a temporary SQLite file")
    parser.add_argument("--requests", type=int, default=2000, help="requests per round (default 2,000)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--links", type=int, default=10_000, help="links in the account for list_q and search")
    parser.add_argument("--only", nargs="*", choices=ROWS, help="rows to run (default: all)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="slugline-inprocess-") as tmp, own_schema(args.database_url) as url:
        settings = Settings(
            database_url=url or f"sqlite:///{Path(tmp) / 'bench.db'}",
            secret_key="bench-" + "s" * 40,
            public_url="http://sl.test",  # the MCP endpoint's Host check
            rate_limit_pro=10**9,  # out of the way
        )
        uvloop.run(measure(args, settings))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
