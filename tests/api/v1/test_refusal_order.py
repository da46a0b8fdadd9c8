"""Inputs that once crashed or were checked in the wrong order: a public key's refusals come before its body, and a
visibility of the wrong type is a 422 naming the field (REST and MCP alike), never a 500."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.support.helpers import SQLITE_ONLY

MCP = "http://127.0.0.1/mcp"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
WRONG_TYPES = [["private"], {}, ["password"], 7]


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@SQLITE_ONLY
@pytest.mark.parametrize("visibility", WRONG_TYPES)
@pytest.mark.parametrize("key", ["full", "public"])
def test_visibility_of_the_wrong_type_is_422(client: TestClient, alice: Any, key: str, visibility: Any) -> None:
    auth = bearer(getattr(alice, key))
    res = client.post(
        "/api/v1/links", json={"destination_url": "https://a.example/", "visibility": visibility}, headers=auth
    )
    assert res.status_code == 422, res.text
    assert "visibility" in res.json()["error"]
    made = client.post("/api/v1/links", json={"destination_url": "https://a.example/"}, headers=auth).json()
    res = client.put(f"/api/v1/links/{made['id']}", json={"visibility": visibility}, headers=auth)
    assert res.status_code == 422, res.text
    assert "visibility" in res.json()["error"]


@SQLITE_ONLY
@pytest.mark.parametrize("visibility", WRONG_TYPES)
def test_mcp_visibility_of_the_wrong_type_is_a_tool_error(client: TestClient, alice: Any, visibility: Any) -> None:
    def tool(name: str, arguments: dict[str, Any]) -> Any:
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        res = client.post(MCP, json=body, headers={**MCP_HEADERS, **bearer(alice.public)})
        assert res.status_code == 200, res.text
        return res.json()["result"]

    made = tool("create_link", {"destination_url": "https://a.example/"})
    assert not made.get("isError"), made
    for name, args in (
        ("create_link", {"destination_url": "https://a.example/", "visibility": visibility}),
        ("update_link", {"id": made["structuredContent"]["id"], "visibility": visibility}),
    ):
        result = tool(name, args)
        assert result["isError"] is True, (name, result)
        assert "visibility" in result["content"][0]["text"], (name, result)


@SQLITE_ONLY
@pytest.mark.parametrize(
    "content, content_type",
    [(b"{not json", "application/json"), (b"scope=full", "text/plain"), (b'{"scope": "root"}', "application/json")],
)
def test_public_key_cannot_manage_keys_whatever_the_body(
    client: TestClient, alice: Any, content: bytes, content_type: str
) -> None:
    headers = {**bearer(alice.public), "Content-Type": content_type}
    res = client.post("/api/v1/api-key", content=content, headers=headers)
    assert res.status_code == 403, res.text
    assert res.json() == {"error": "a public-only key cannot manage API keys"}
    # The same bodies with a session token still get their own answers, after the scope check.
    res = client.post(
        "/api/v1/api-key", content=content, headers={**bearer(alice.session), "Content-Type": content_type}
    )
    assert res.status_code in (400, 422), res.text


@SQLITE_ONLY
@pytest.mark.parametrize("path", ["/api/v1/links?per=abc", "/api/v1/search?limit=0", "/api/v1/search"])
def test_a_bad_query_string_is_refused_after_the_key(client: TestClient, alice: Any, path: str) -> None:
    assert client.get(path).status_code == 401
    assert client.get(path, headers=bearer("sl_" + "x" * 40)).status_code == 401
    assert client.get(path, headers=bearer(alice.full)).status_code == 422
