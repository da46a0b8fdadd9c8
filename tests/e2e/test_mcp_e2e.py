"""The MCP endpoint of a real `slugline serve --workers 2`, through the official MCP client in both protocol modes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from mcp_types import Tool
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from mcp import Client
from slugline.common.inputs import FILTERS
from tests.support.mcp_client import MODES, TOOL_NAMES, call, call_error, connect
from tests.support.server import ServerFactory, make_account

pytestmark = pytest.mark.anyio


def check_tool_listing(tools: dict[str, Tool]) -> None:
    assert set(tools) == TOOL_NAMES
    for tool in tools.values():
        assert tool.description and len(tool.description) > 40, tool.name
        if tool.name != "get_qr_code":  # image content, no structured output
            assert tool.output_schema and tool.output_schema["type"] == "object", tool.name
        assert tool.input_schema["type"] == "object" and tool.annotations is not None, tool.name
    props = tools["list_links"].input_schema["properties"]
    assert (props["per"]["minimum"], props["per"]["maximum"], props["page"]["minimum"]) == (1, 100, 1)
    assert set(props) == {"q", "page", "per", "sort", "dir", "status", "archived"}
    assert props["sort"]["enum"] == ["created_at", "updated_at", "title", "slug", "clicks"]
    assert props["dir"]["enum"] == ["asc", "desc"]
    create = tools["create_link"].input_schema
    assert create["required"] == ["destination_url"]
    assert create["properties"]["visibility"]["enum"] == ["public", "unlisted", "private", "password"]
    assert set(create["properties"]) == {
        "destination_url",
        "slug",
        "title",
        "description",
        "note",
        "hashtags",
        "visibility",
        "password",
        "expires_at",
        "max_clicks",
        "expired_url",
        "archived",
        "preview",
        "rules",
        "variants",
        "auto_meta",
        "idempotency_key",
    }
    assert tools["update_link"].input_schema["required"] == ["id"]
    update = tools["update_link"].input_schema["properties"]
    assert "auto_meta" not in update and "default" not in update["title"]
    assert update["visibility"]["enum"] == create["properties"]["visibility"]["enum"]  # not null: it cannot be cleared
    assert tools["delete_link"].input_schema["required"] == ["id"]
    analytics = tools["get_analytics"].input_schema["properties"]
    assert set(analytics) == {"link_id", "days", "from", "to", "interval", *FILTERS}
    [days] = [branch for branch in analytics["days"]["anyOf"] if branch.get("type") != "null"]
    assert (days["minimum"], days["maximum"]) == (1, 365)
    interval = analytics["interval"]
    assert (interval["enum"], interval["default"]) == (["hour", "day", "week", "month"], "day")
    assert {"type": "string", "format": "date"} in analytics["from"]["anyOf"]
    assert "lnk_" in analytics["link_id"]["description"]

    def hints(name: str) -> tuple[bool | None, bool | None, bool | None]:
        annotations = tools[name].annotations
        assert annotations is not None, name
        return annotations.read_only_hint, annotations.destructive_hint, annotations.idempotent_hint

    for name in ("get_me", "list_links", "get_analytics", "get_link", "search_links", "get_qr_code", "get_link_clicks"):
        assert hints(name)[0] is True, name
    for name in ("update_link", "delete_link"):
        assert hints(name) == (False, True, True), name
    assert hints("create_link") == (False, False, False)
    assert hints("preview_url") == (True, False, True)


async def test_every_tool_in_both_protocol_modes(start_server: ServerFactory) -> None:
    server = start_server(workers=2)
    keys = make_account(server, "toolsmith")
    for mode in MODES:
        async with connect(server, keys.full, mode) as client:
            assert client.protocol_version in (HANDSHAKE_PROTOCOL_VERSIONS if mode == "legacy" else (mode,))
            check_tool_listing({tool.name: tool for tool in (await client.list_tools()).tools})
            me = await call(client, "get_me")
            assert (me["username"], me["plan"], me["scope"]) == ("toolsmith", "developer", "full")
            made = await call(
                client,
                "create_link",
                {
                    "destination_url": "https://example.org/guide",
                    "slug": f"guide-{len(mode)}",
                    "title": "Café guide",
                    "hashtags": ["#Travel"],
                    "note": "for the team",
                },
            )
            assert made["short_url"] == f"{server.url}/guide-{len(mode)}" and made["hashtags"] == ["travel"]
            page = await call(client, "list_links", {"q": "cafe #travel", "per": 1})
            assert [link["id"] for link in page["data"]] == [made["id"]]
            updated = await call(client, "update_link", {"id": made["id"], "title": None, "visibility": "unlisted"})
            assert (updated["title"], updated["visibility"], updated["note"]) == (None, "unlisted", "for the team")
            assert await call(client, "delete_link", {"id": made["id"]}) == {"deleted": True, "id": made["id"]}
            assert await call_error(client, "delete_link", {"id": made["id"]}) == "link not found"
            assert await call_error(client, "update_link", {"title": "x"}) == (
                "id is required: the link's id (lnk_...), as returned by list_links or create_link"
            )
            assert "destination_url" in await call_error(client, "create_link", {"destination_url": "ftp://x"})


async def test_trailing_slash_path_answers_without_redirect(start_server: ServerFactory) -> None:
    server = start_server()
    keys = make_account(server, "slasher")
    for mode in MODES:
        async with connect(server, keys.full, mode, path="/mcp/") as client:
            assert (await call(client, "get_me"))["username"] == "slasher"


async def test_rest_and_mcp_give_the_same_json(start_server: ServerFactory) -> None:
    server = start_server(workers=2)
    keys = make_account(server, "twin")
    auth = {"Authorization": f"Bearer {keys.full}"}
    async with httpx.AsyncClient(base_url=f"{server.url}/api/v1", headers=auth) as rest:
        for mode in MODES:
            async with connect(server, keys.full, mode) as client:
                await check_parity(rest, client, suffix=str(len(mode)))


async def check_parity(rest: httpx.AsyncClient, client: Client, suffix: str) -> None:
    """One scenario, each step done through one interface and read back through the other."""

    async def get(path: str, **params: Any) -> Any:
        return (await rest.get(path, params=params)).json()

    assert await call(client, "get_me") == await get("/me")
    body = {
        "destination_url": "https://example.org/p",
        "slug": f"twin-{suffix}",
        "title": "Twins",
        "hashtags": ["pair"],
        "visibility": "private",
    }
    made = await call(client, "create_link", body)
    assert await get(f"/links/{made['id']}") == made
    other = (await rest.post("/links", json={**body, "slug": f"twin-b-{suffix}"})).json()
    query = {"q": "#pair", "per": 10, "sort": "slug", "dir": "asc"}
    assert await call(client, "list_links", query) == await get("/links", **query)
    changes = {"title": "Twins, renamed", "hashtags": None, "visibility": "public"}
    via_mcp = await call(client, "update_link", {"id": other["id"], **changes})
    assert via_mcp == await get(f"/links/{other['id']}")
    via_rest = (await rest.put(f"/links/{made['id']}", json=changes)).json()
    listed = await call(client, "list_links", {"q": "renamed"})
    by_id = {link["id"]: link for link in listed["data"]}
    assert by_id == {via_mcp["id"]: via_mcp, via_rest["id"]: via_rest}
    for bad in ({"per": 500}, {"sort": "random"}, {"page": 0}):
        refused = await rest.get("/links", params=bad)
        assert refused.status_code == 422
        assert await call_error(client, "list_links", bad) == refused.json()["error"]
    clash = {"destination_url": "https://example.org/", "slug": f"twin-{suffix}"}
    taken = await rest.post("/links", json=clash)
    assert taken.status_code == 409
    assert await call_error(client, "create_link", clash) == taken.json()["error"]
    assert await call(client, "delete_link", {"id": made["id"]}) == {"deleted": True, "id": made["id"]}
    assert (await rest.delete(f"/links/{other['id']}")).json() == {"deleted": True, "id": other["id"]}
    assert await get(f"/links/{made['id']}") == {"error": "link not found"}
