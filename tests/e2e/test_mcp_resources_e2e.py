"""MCP resources and prompts of a real `slugline serve`, through the official client in both protocol modes: they
answer what the tools and REST answer, and a public-only key sees no hidden link through any of them."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import TextContent

from mcp import Client
from tests.support.mcp_client import MODES, call, connect
from tests.support.server import ServerFactory, make_account

pytestmark = pytest.mark.anyio


async def _read(client: Client, uri: str) -> Any:
    result = await client.read_resource(uri)
    [content] = result.contents
    assert content.mime_type == "application/json", content
    return json.loads(getattr(content, "text", ""))


async def _prompt(client: Client, name: str) -> str:
    result = await client.get_prompt(name)
    [message] = result.messages
    assert message.role == "user" and isinstance(message.content, TextContent)
    return message.content.text


async def test_resources_and_prompts_answer_as_the_tools_do(start_server: ServerFactory) -> None:
    server = start_server()
    keys = make_account(server, "curator")
    auth = {"Authorization": f"Bearer {keys.full}"}
    async with httpx.AsyncClient(base_url=f"{server.url}/api/v1", headers=auth) as rest:
        made = []
        for name in ("alpha", "bravo", "charlie"):
            body = {"destination_url": f"https://example.org/{name}", "title": f"Item {name}"}
            answer = await rest.post("/links", json=body)
            assert answer.status_code == 201, answer.text
            made.append(answer.json())
        for mode in MODES:
            async with connect(server, keys.full, mode) as client:
                templates = {t.name: t for t in (await client.list_resource_templates()).resource_templates}
                assert templates["link"].uri_template == "slugline://links/{link_id}"
                assert templates["links"].uri_template == "slugline://links{?q,page}"
                assert all(t.description and t.mime_type == "application/json" for t in templates.values())
                for link in made:
                    got = await _read(client, f"slugline://links/{link['id']}")
                    assert (
                        got
                        == (await rest.get(f"/links/{link['id']}")).json()
                        == await call(client, "get_link", {"id": link["id"]})
                    )
                page = await _read(client, "slugline://links")
                assert page == (await rest.get("/links", params={"per": 100})).json()
                assert [link["id"] for link in page["data"]] == [link["id"] for link in reversed(made)]
                found = await _read(client, "slugline://links?q=item%20bravo")
                assert [link["id"] for link in found["data"]] == [made[1]["id"]]
                assert (await _read(client, "slugline://links?page=2"))["data"] == []
                with pytest.raises(MCPError) as missing:
                    await client.read_resource("slugline://links/lnk_00000000000")
                assert "link not found" in str(missing.value)

                prompts = {p.name: p for p in (await client.list_prompts()).prompts}
                assert set(prompts) == {"weekly_performance", "tidy_links"}
                assert all(p.title and p.description for p in prompts.values())
                weekly = await _prompt(client, "weekly_performance")
                figures = json.loads(weekly[weekly.index("{") :])
                assert figures == (await rest.get("/analytics", params={"days": 7})).json()
                tidy = await _prompt(client, "tidy_links")
                assert "preview_url" in tidy and "delete_link" in tidy
                assert json.loads(tidy[tidy.index("{") :]) == page


async def test_a_public_key_sees_no_hidden_link_through_resources_or_prompts(start_server: ServerFactory) -> None:
    server = start_server()
    keys = make_account(server, "guarded")
    async with connect(server, keys.full, MODES[-1]) as owner:
        hidden = await call(owner, "create_link", {"destination_url": "https://example.org/h", "visibility": "private"})
        secret = await call(
            owner,
            "create_link",
            {"destination_url": "https://example.org/p", "visibility": "password", "password": "open sesame"},
        )
        shown = await call(owner, "create_link", {"destination_url": "https://example.org/s"})
        assert (await _read(owner, f"slugline://links/{hidden['id']}"))["id"] == hidden["id"], "the owner sees it"
        assert len((await _read(owner, "slugline://links"))["data"]) == 3
    for mode in MODES:
        async with connect(server, keys.public, mode) as client:
            for link in (hidden, secret):
                with pytest.raises(MCPError) as refused:
                    await client.read_resource(f"slugline://links/{link['id']}")
                assert "link not found" in str(refused.value)
            assert [link["id"] for link in (await _read(client, "slugline://links"))["data"]] == [shown["id"]]
            assert [link["id"] for link in (await _read(client, "slugline://links?q=example"))["data"]] == [shown["id"]]
            tidy = await _prompt(client, "tidy_links")
            assert hidden["id"] not in tidy and secret["id"] not in tidy and shown["id"] in tidy
            weekly = await _prompt(client, "weekly_performance")
            assert hidden["id"] not in weekly and secret["id"] not in weekly
