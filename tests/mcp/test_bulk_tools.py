"""MCP's create_links: the answer of `POST /links/bulk` for the same links, through the same service function."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from slugline.settings import Settings
from tests.support.helpers import BASE_URL, LINKS, Account, make_settings
from tests.support.mcp_calls import listed_tools
from tests.support.mcp_calls import tool_result as tool


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url, public_url=BASE_URL)  # /mcp answers only the names its public URL gives


def test_create_links_answers_per_item(client: TestClient, alice: Account) -> None:
    client.post(LINKS, json={"destination_url": "https://example.org/", "slug": "taken"}, headers=alice.auth())
    items = [
        {"destination_url": "https://example.org/a", "slug": "mcp-a"},
        {"destination_url": "https://example.org/b", "slug": "taken"},
        {"destination_url": "https://example.org/c", "visibility": "private"},
    ]
    made = tool(client, alice.public, "create_links", {"links": items})["structuredContent"]
    assert [item["status"] for item in made["results"]] == [201, 409, 403]
    assert made["results"][0]["link"]["slug"] == "mcp-a" and made["succeeded"] == 1 and made["failed"] == 2

    refused = tool(client, alice.full, "create_links", {"links": items[1:2] + items[:1], "atomic": True})
    assert refused["isError"] and refused["content"][0]["text"] == "item 0: slug 'taken' is already taken"
    listed = client.get(LINKS, headers=alice.auth()).json()["data"]
    assert sorted(link["slug"] for link in listed) == ["mcp-a", "taken"]


def test_create_links_is_listed_with_its_schema(client: TestClient, alice: Account) -> None:
    found = listed_tools(client, alice.full)["create_links"]
    links = found["inputSchema"]["properties"]["links"]
    assert found["inputSchema"]["required"] == ["links"] and links["maxItems"] == 1000
    assert found["outputSchema"]["type"] == "object" and found["annotations"]["readOnlyHint"] is False
    assert "destination_url" in links["items"]["properties"] and "auto_meta" not in links["items"]["properties"]
