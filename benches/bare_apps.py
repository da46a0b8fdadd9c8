"""The ceilings of our own stack, served by the same Granian (ASGI, uvloop) as `slugline serve`.

- `redirect`: a bare ASGI app answering `/{slug}` from a dict with a 302, keeping a click tuple per redirect
  (what the redirect path must at least do), so its ratio shows what Slugline's own work costs; it knows
  `/bench-0` ... `/bench-{N-1}` too when `BARE_REDIRECT_LINKS` is N.
- `api`: a bare FastAPI app whose routes answer the same JSON Slugline answered, from constants read from the
  file named by `BARE_API_BODIES` (a JSON object: route name -> [status, body]).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import orjson
from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response

# `/bench`, and `/bench-0` ... for the count of links in `BARE_REDIRECT_LINKS` (the slugs the redirect bench makes).
LINKS = {"/bench": b"https://example.org/bench"} | {
    f"/bench-{i}": f"https://example.org/{i}".encode() for i in range(int(os.environ.get("BARE_REDIRECT_LINKS", "0")))
}
CLICKS: list[tuple[str, float, bytes, bytes, str]] = []
MAX_CLICKS = 1_000_000  # then the list starts over: a bound, as every buffer needs one


async def redirect(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    location = LINKS.get(scope["path"])
    if location is None:
        await send({"type": "http.response.start", "status": 404, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})
        return
    agent = referrer = b""
    for name, value in scope["headers"]:
        if name == b"user-agent":
            agent = value
        elif name == b"referer":
            referrer = value
    if len(CLICKS) >= MAX_CLICKS:
        CLICKS.clear()
    CLICKS.append((scope["path"], time.time(), agent, referrer, scope["client"][0]))
    headers = [(b"location", location), (b"cache-control", b"private, no-store"), (b"content-length", b"0")]
    await send({"type": "http.response.start", "status": 302, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


def _api() -> FastAPI:
    source = os.environ.get("BARE_API_BODIES")
    bodies: dict[str, list[Any]] = json.loads(Path(source).read_text()) if source else {}
    app = FastAPI()

    def answer(name: str) -> Response:
        status, body = bodies[name]
        return Response(orjson.dumps(body), status_code=status, media_type="application/json")

    @app.get("/")
    def root() -> Response:
        return Response(b"{}", media_type="application/json")

    @app.get("/api/v1/me")
    def me() -> Response:
        return answer("me")

    @app.get("/api/v1/links/{link_id}")
    def get_link(link_id: str) -> Response:
        return answer("get_link")

    @app.get("/api/v1/links")
    def list_links(q: str | None = None, per: int = 20) -> Response:
        return answer("list_q" if q else "list")

    @app.get("/api/v1/search")
    def search(q: str) -> Response:
        return answer("search")

    @app.post("/api/v1/links")
    def create_link() -> Response:
        return answer("create")

    @app.put("/api/v1/links/{link_id}")
    def update_link(link_id: str) -> Response:
        return answer("update")

    @app.post("/mcp")
    def mcp(request: Request) -> Response:
        # The 2026-07-28 protocol names its version in a header; the 2025 ones send the handshake-era request.
        return answer("mcp_get_me_2026" if "mcp-protocol-version" in request.headers else "mcp_get_me")

    return app


api = _api()
