"""The MCP tools that mirror the rest of the API (get_link, search_links, get_qr_code, get_link_clicks, preview_url),
against a real `slugline serve --workers 2`, through the official MCP client in both protocol modes: each answers
what its REST route answers for the same request, and refuses what it refuses."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest
from mcp_types import Tool

from mcp import Client
from tests.support.mcp_client import MODES, call, call_error, connect
from tests.support.server import Server, ServerFactory, api, clicks_of, make_account
from tests.support.webpages import html_site

pytestmark = pytest.mark.anyio
PAGE = b"""<html><head><title>Plain title</title><meta property="og:title" content="Harbour lights">
<meta name="description" content="Where the boats come in"><link rel="icon" href="/fav.png"></head></html>"""
NEW_TOOLS = ("get_link", "search_links", "get_qr_code", "get_link_clicks", "preview_url")
ID_REQUIRED = "id is required: the link's id (lnk_...), as returned by list_links or create_link"
ONE_NAME = "give exactly one of id, slug or short_url"


def check_new_tools(tools: dict[str, Tool]) -> None:
    for name in NEW_TOOLS:
        tool = tools[name]
        assert tool.title and tool.description and len(tool.description) > 80, name
        assert tool.annotations is not None and tool.annotations.read_only_hint is True, name
        assert tool.input_schema["type"] == "object" and tool.input_schema["additionalProperties"] is False, name
        if name == "get_qr_code":
            assert tool.output_schema is None  # an image for the model, not data
        else:
            assert tool.output_schema and tool.output_schema["type"] == "object", name
    assert set(tools["get_link"].input_schema["properties"]) == {"id", "slug", "short_url"}
    assert "required" not in tools["get_link"].input_schema
    assert tools["search_links"].input_schema["required"] == ["q"]
    assert tools["search_links"].input_schema["properties"]["limit"]["maximum"] == 100
    qr = tools["get_qr_code"].input_schema
    assert qr["required"] == ["id"] and set(qr["properties"]) == {"id", "format", "size", "margin"}
    assert qr["properties"]["format"]["enum"] == ["png", "svg"]
    clicks = tools["get_link_clicks"].input_schema
    assert clicks["required"] == ["id"] and set(clicks["properties"]) == {"id", "page", "per"}
    assert tools["preview_url"].input_schema["required"] == ["url"]
    preview = tools["preview_url"].annotations
    assert preview is not None and preview.open_world_hint is True
    assert tools["get_link"].annotations is not None and tools["get_link"].annotations.open_world_hint is False
    assert "link not found" in (tools["get_link"].description or "")


def two_links_one_clicked(server: Server, key: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two links about lighthouses, the first one clicked three times, its clicks stored."""
    with api(server, key) as http:
        made = http.post(
            "/links",
            json={
                "destination_url": "https://example.org/harbour",
                "slug": "harbour",
                "title": "Lighthouse keeping",
                "hashtags": ["sea"],
            },
        ).json()
        other = http.post(
            "/links", json={"destination_url": "https://example.org/light", "title": "Lighthouses of Brittany"}
        ).json()
        for params in ({}, {"utm_source": "newsletter"}, {"src": "qr"}):
            httpx.get(made["short_url"], params=params, headers={"User-Agent": "Mozilla/5.0 (X11; Linux x86_64)"})
        clicks_of(http, made["id"], 3)
    return made, other


async def test_new_tools_answer_what_rest_answers(start_server: ServerFactory) -> None:
    server = start_server(workers=2)
    keys = make_account(server, "mirror")
    auth = {"Authorization": f"Bearer {keys.full}"}
    made, other = two_links_one_clicked(server, keys.full)
    with html_site(PAGE) as site:
        async with httpx.AsyncClient(base_url=f"{server.url}/api/v1", headers=auth, timeout=30) as rest:
            for mode in MODES:
                async with connect(server, keys.full, mode) as client:
                    check_new_tools({tool.name: tool for tool in (await client.list_tools()).tools})
                    await check_answers(rest, client, made, other, site)
                    await check_refusals(rest, client, made)


async def check_answers(
    rest: httpx.AsyncClient, client: Client, made: dict[str, Any], other: dict[str, Any], site: str
) -> None:
    async def get(path: str, **params: Any) -> Any:
        res = await rest.get(path, params=params)
        assert res.status_code == 200, res.text
        return res.json()

    link = await get(f"/links/{made['id']}")
    for name in (
        {"id": made["id"]},
        {"slug": "harbour"},
        {"short_url": made["short_url"]},
        {"short_url": made["short_url"] + "/?src=qr"},
        {"id": made["id"], "slug": None, "short_url": None},  # clients that send every key
    ):
        assert await call(client, "get_link", name) == link, name
    assert await call(client, "get_link", {"slug": other["slug"]}) == await get(f"/links/{other['id']}")

    for query in ({"q": "lighthouse"}, {"q": "lighthous brittany"}, {"q": "lighthouse", "limit": 1}, {"q": "nothing"}):
        found = await call(client, "search_links", query)
        assert found == await get("/search", **query), query
    found = await call(client, "search_links", {"q": "lighthouse"})
    assert {hit["link"]["id"] for hit in found["hits"]} == {made["id"], other["id"]} and found["total"] == 2
    assert all("<mark>" in "".join(hit["highlights"].values()) for hit in found["hits"])

    for page in ({}, {"per": 2}, {"per": 2, "page": 2}):
        clicks = await call(client, "get_link_clicks", {"id": made["id"], **page})
        assert clicks == await get(f"/links/{made['id']}/clicks", **page), page
    assert (await call(client, "get_link_clicks", {"id": made["id"]}))["pagination"]["total"] == 3
    assert await call(client, "get_link_clicks", {"id": other["id"]}) == await get(f"/links/{other['id']}/clicks")

    images: list[tuple[dict[str, Any], str, bytes]] = [
        ({}, "image/png", b"\x89PNG\r\n\x1a\n"),
        ({"format": "png", "size": 128, "margin": 2}, "image/png", b"\x89PNG\r\n\x1a\n"),
        ({"format": "svg", "size": 300}, "image/svg+xml", b"<"),
    ]
    for params, media_type, magic in images:
        result = await client.call_tool("get_qr_code", {"id": made["id"], **params})
        assert not result.is_error and result.structured_content is None, result.content
        image, text = result.content
        assert image.type == "image" and image.mime_type == media_type, params
        data = base64.b64decode(image.data, validate=True)
        assert data.startswith(magic), params
        served = await rest.get(f"/links/{made['id']}/qr", params=params)
        assert served.headers["content-type"].startswith(media_type) and data == served.content, params
        assert text.type == "text" and made["short_url"] in text.text

    for url in (site + "/page", site + "/"):
        page_info = await call(client, "preview_url", {"url": url})
        assert page_info == await get("/analyze", url=url)
        assert (page_info["title"], page_info["reachable"]) == ("Harbour lights", True)
        assert "fetch_error" not in page_info  # left out of a page that was read, as REST leaves it out
    closed = "http://127.0.0.1:9/"  # nothing listens on the discard port: not reachable, and it says why
    unreachable = await call(client, "preview_url", {"url": closed})
    assert unreachable["reachable"] is False and unreachable["fetch_error"]
    assert unreachable == await get("/analyze", url=closed)


async def check_refusals(rest: httpx.AsyncClient, client: Client, made: dict[str, Any]) -> None:
    async def refused(path: str, status: int, **params: Any) -> str:
        res = await rest.get(path, params=params)
        assert res.status_code == status, res.text
        message: str = res.json()["error"]
        return message

    missing = "lnk_00000000000"
    assert await call_error(client, "get_link", {"id": missing}) == await refused(f"/links/{missing}", 404)
    for name in ({"slug": "no-such-slug"}, {"short_url": "http://127.0.0.1/no-such-slug"}, {"id": "harbour"}):
        assert await call_error(client, "get_link", name) == "link not found", name
    for name in ({}, {"id": made["id"], "slug": "harbour"}, {"slug": "harbour", "short_url": made["short_url"]}):
        assert await call_error(client, "get_link", name) == ONE_NAME, name
    assert await call_error(client, "get_link", {"id": None, "slug": None}) == ONE_NAME
    assert "short_url" in await call_error(client, "get_link", {"short_url": "ftp://host/harbour"})
    assert "short_url" in await call_error(client, "get_link", {"short_url": "https://host/"})
    assert await call_error(client, "get_link", {"slug": "harbour", "colour": "red"}) == "unknown field 'colour'"

    searches: list[dict[str, Any]] = [{"q": ""}, {"q": "x", "limit": 500}, {"q": "x", "limit": 0}]
    for bad in searches:
        message = await call_error(client, "search_links", bad)
        assert message == await refused("/search", 422, **bad), bad
    assert "q" in await call_error(client, "search_links", {})

    images: list[dict[str, Any]] = [{"size": 10}, {"format": "gif"}, {"margin": 99}]
    for bad in images:
        message = await call_error(client, "get_qr_code", {"id": made["id"], **bad})
        assert message == await refused(f"/links/{made['id']}/qr", 422, **bad), bad
    assert await call_error(client, "get_qr_code", {"id": missing}) == "link not found"
    assert await call_error(client, "get_qr_code", {"format": "svg"}) == ID_REQUIRED

    pages: list[dict[str, Any]] = [{"per": 500}, {"page": 0}, {"colour": "red"}]
    for bad in pages:
        message = await call_error(client, "get_link_clicks", {"id": made["id"], **bad})
        assert message == await refused(f"/links/{made['id']}/clicks", 422, **bad), bad
    assert await call_error(client, "get_link_clicks", {"id": missing}) == "link not found"
    assert await call_error(client, "get_link_clicks", {}) == ID_REQUIRED

    for bad in ({"url": "ftp://example.org/"}, {"url": "http://exa mple.org/"}):
        message = await call_error(client, "preview_url", bad)
        assert message == await refused("/analyze", 422, **bad), bad
    assert "url" in await call_error(client, "preview_url", {})
