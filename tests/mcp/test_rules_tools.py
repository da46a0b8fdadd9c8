"""MCP's create_link and update_link take a link's redirect rules, and every link answer carries them, as REST."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from slugline.settings import Settings
from tests.support.helpers import BASE_URL, Account, make_settings
from tests.support.mcp_calls import tool

RULES = [{"if": {"country": ["fr"], "device": ["mobile"]}, "to": "https://example.org/fr"}]


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url, public_url=BASE_URL)


def test_the_link_tools_carry_rules(client: TestClient, alice: Account) -> None:
    made = tool(client, alice.full, "create_link", {"destination_url": "https://example.org/", "rules": RULES})
    assert made["rules"] == [{"if": {"country": ["FR"], "device": ["mobile"]}, "to": "https://example.org/fr"}]
    got = tool(client, alice.full, "get_link", {"id": made["id"]})
    assert got["rules"] == made["rules"]
    cleared = tool(client, alice.full, "update_link", {"id": made["id"], "rules": None})
    assert cleared["rules"] is None


def test_the_tools_describe_rules(client: TestClient, alice: Account) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
        "Authorization": f"Bearer {alice.full}",
    }
    tools = {t["name"]: t for t in client.post("/mcp", json=body, headers=headers).json()["result"]["tools"]}
    for name in ("create_link", "update_link"):
        assert "rules" in tools[name]["inputSchema"]["properties"], name
        assert "rules" in tools[name]["description"], name
        assert "variants" in tools[name]["inputSchema"]["properties"] and "variants" in tools[name]["description"]


def test_the_link_tools_carry_variants_and_get_analytics_counts_them(client: TestClient, alice: Account) -> None:
    variants = [{"to": "https://example.org/a", "weight": 3}, {"to": "https://example.org/b", "weight": 1}]
    made = tool(client, alice.full, "create_link", {"destination_url": "https://example.org/", "variants": variants})
    assert made["variants"] == variants
    stats = tool(client, alice.full, "get_analytics", {"link_id": made["id"]})
    assert [(v["variant"], v["to"], v["weight"], v["clicks"]) for v in stats["variants"]] == [
        (0, "https://example.org/a", 3, 0),
        (1, "https://example.org/b", 1, 0),
    ]
    assert tool(client, alice.full, "get_analytics", {})["variants"] is None
    cleared = tool(client, alice.full, "update_link", {"id": made["id"], "variants": None})
    assert cleared["variants"] is None
