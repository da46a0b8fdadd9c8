"""get_analytics on a real server with real clicks: the REST figures, and nothing of hidden links for a public key."""

from __future__ import annotations

import time
from typing import Any

import anyio
import httpx
import pytest

from tests.support.mcp_client import MODES, call, call_error, connect
from tests.support.server import Server, ServerFactory, make_account

pytestmark = pytest.mark.anyio
BROWSER = {
    "User-Agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"
}


async def wait_for_clicks(rest: httpx.AsyncClient, total: int, deadline: float = 30.0) -> None:
    """Clicks are buffered and written within about a second, by whichever worker served them."""
    end = time.monotonic() + deadline
    while (seen := (await rest.get("/analytics", params={"days": 7})).json()["total_clicks"]) != total:
        assert time.monotonic() < end, f"{seen} of {total} clicks after {deadline}s"
        await anyio.sleep(0.1)


async def test_get_analytics_matches_rest_and_hides_hidden_links(start_server: ServerFactory) -> None:
    server = start_server(workers=2)
    keys = make_account(server, "counter")
    rest_full = httpx.AsyncClient(base_url=f"{server.url}/api/v1", headers={"Authorization": f"Bearer {keys.full}"})
    rest_public = httpx.AsyncClient(base_url=f"{server.url}/api/v1", headers={"Authorization": f"Bearer {keys.public}"})
    async with rest_full, rest_public, httpx.AsyncClient(base_url=server.url, headers=BROWSER) as visitor:
        loud = (
            await rest_full.post("/links", json={"destination_url": "https://example.org/l", "slug": "loud"})
        ).json()
        hush = (
            await rest_full.post(
                "/links", json={"destination_url": "https://example.org/h", "slug": "hush", "title": "Hushed"}
            )
        ).json()
        for path in ("/loud", "/loud", "/hush?utm_source=news", "/hush?utm_source=news", "/hush?utm_source=news"):
            assert (await visitor.get(path)).status_code == 302
        await wait_for_clicks(rest_full, 5)
        await rest_full.put(f"/links/{hush['id']}", json={"visibility": "private"})
        for mode in MODES:
            await check_analytics(server, keys.full, rest_full, mode, total=5)
            public = await check_analytics(server, keys.public, rest_public, mode, total=2)
            assert [link["id"] for link in public["top_links"]] == [loud["id"]]
            assert public["sources"] == [{"source": "direct", "clicks": 2}]


async def check_analytics(server: Server, key: str, rest: httpx.AsyncClient, mode: str, total: int) -> Any:
    queries: list[dict[str, str | int]] = [{"days": 7}, {"days": 7, "source": "news"}, {}]
    async with connect(server, key, mode) as client:
        for query in queries:
            expected = (await rest.get("/analytics", params=query)).json()
            assert await call(client, "get_analytics", query) == expected, query
        figures = await call(client, "get_analytics", {"days": 7})
        assert figures["total_clicks"] == total and len(figures["clicks"]) == 7
        refused = await rest.get("/analytics", params={"days": 0})
        assert refused.status_code == 422
        assert await call_error(client, "get_analytics", {"days": 0}) == refused.json()["error"]
        return figures
