"""get_analytics on a real server with real clicks: the REST figures for every parameter, the account's or one link's,
and nothing of hidden links for a public key."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import httpx
import pytest

from mcp import Client
from tests.support.mcp_client import MODES, call, call_error, connect
from tests.support.server import Server, ServerFactory, make_account

pytestmark = pytest.mark.anyio
TODAY = datetime.now(UTC).date()
PARAMETERS: list[dict[str, str | int]] = [  # each of the new parameters, and filters together (AND, any case)
    {"days": 2, "interval": "hour"},
    {"from": (TODAY - timedelta(days=20)).isoformat(), "interval": "week"},
    {"from": (TODAY - timedelta(days=60)).isoformat(), "to": TODAY.isoformat(), "interval": "month"},
    {"days": 7, "device": "desktop", "browser": "CHROME", "os": "linux"},
    {"days": 7, "device": "mobile"},
    {"days": 7, "referrer": "example.org", "source": "News"},
]
REFUSED: list[dict[str, str | int]] = [
    {"days": 7, "from": TODAY.isoformat()},
    {"days": 8, "interval": "hour"},
    {"device": "phone"},
    {"from": "2026-02-30"},
]
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
            async with connect(server, keys.full, mode) as client:
                hushed = await check_link(client, rest_full, hush["id"], total=3)
                assert hushed["sources"] == [{"source": "news", "clicks": 3}]
            async with connect(server, keys.public, mode) as client:
                await check_link(client, rest_public, loud["id"], total=2)
                for query in ({"link_id": hush["id"]}, {"link_id": hush["id"], "days": 7, "interval": "hour"}):
                    assert await call_error(client, "get_analytics", query) == "link not found", query


async def check_analytics(server: Server, key: str, rest: httpx.AsyncClient, mode: str, total: int) -> Any:
    queries: list[dict[str, str | int]] = [{"days": 7}, {"days": 7, "source": "news"}, {}, *PARAMETERS]
    async with connect(server, key, mode) as client:
        for query in queries:
            expected = (await rest.get("/analytics", params=query)).json()
            assert await call(client, "get_analytics", query) == expected, query
        figures = await call(client, "get_analytics", {"days": 7})
        assert figures["total_clicks"] == total and len(figures["clicks"]) == 7
        refused = await rest.get("/analytics", params={"days": 0})
        assert refused.status_code == 422
        assert await call_error(client, "get_analytics", {"days": 0}) == refused.json()["error"]
        for query in REFUSED:
            refused = await rest.get("/analytics", params=query)
            assert refused.status_code == 422, query
            assert await call_error(client, "get_analytics", query) == refused.json()["error"], query
        return figures


async def check_link(client: Client, rest: httpx.AsyncClient, link_id: str, total: int) -> Any:
    """`link_id` names one link: the tool answers what `GET /links/{id}/analytics` does, for every parameter."""
    for query in ({}, *PARAMETERS):
        expected = (await rest.get(f"/links/{link_id}/analytics", params=query)).json()
        assert await call(client, "get_analytics", {"link_id": link_id, **query}) == expected, query
    figures = await call(client, "get_analytics", {"link_id": link_id, "days": 7, "interval": "hour"})
    assert figures["total_clicks"] == total and len(figures["clicks"]) == 7 * 24
    assert [link["id"] for link in figures["top_links"]] == [link_id]
    assert await call(client, "get_analytics", {"link_id": None, "days": 7}) == await call(
        client, "get_analytics", {"days": 7}
    )  # null: not given, as MCP clients that send every argument do
    assert "link_id" in await call_error(client, "get_analytics", {"link_id": 5})
    return figures
