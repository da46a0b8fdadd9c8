"""MCP's link tools with a link's lifecycle: create_link, update_link, get_link and list_links take and answer
expires_at, max_clicks, expired_url, archived, preview and status as REST does."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from slugline.settings import Settings
from tests.support.helpers import BASE_URL, LINKS, Account, make_settings
from tests.support.mcp_calls import listed_tools, tool


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url, public_url=BASE_URL)  # /mcp answers only the names its public URL gives


def test_the_link_tools_carry_the_lifecycle(client: TestClient, alice: Account) -> None:
    made = tool(
        client,
        alice.full,
        "create_link",
        {
            "destination_url": "https://example.org/",
            "expires_at": "2999-01-01T00:00:00Z",
            "max_clicks": 10,
            "expired_url": "https://example.org/over",
            "preview": {"title": "Card"},
        },
    )
    assert (made["status"], made["max_clicks"], made["preview"]) == ("active", 10, {"title": "Card"})
    assert made == client.get(f"{LINKS}/{made['id']}", headers=alice.auth()).json()
    shelved = tool(client, alice.full, "update_link", {"id": made["id"], "archived": True})
    assert (shelved["archived"], shelved["status"]) == (True, "archived")
    assert tool(client, alice.full, "get_link", {"id": made["id"]})["status"] == "archived"
    assert tool(client, alice.full, "list_links", {})["data"] == []
    listed = tool(client, alice.full, "list_links", {"status": "archived"})["data"]
    assert [link["id"] for link in listed] == [made["id"]]


def test_the_tools_publish_the_lifecycle_arguments(client: TestClient, alice: Account) -> None:
    tools = listed_tools(client, alice.full)
    for name in ("create_link", "update_link"):
        props = tools[name]["inputSchema"]["properties"]
        assert {"expires_at", "max_clicks", "expired_url", "archived", "preview"} <= props.keys()
    assert {"status", "archived"} <= tools["list_links"]["inputSchema"]["properties"].keys()
