"""MCP tool calls to an app in this process (the test client): one JSON-RPC `tools/call` POSTed to /mcp with the
headers a current client sends, for tests that check a tool's answer without starting a server (the official client
against a real one is `tests.support.mcp_client`)."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

ACCEPT = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


def tool_result(client: TestClient, key: str, name: str, arguments: dict[str, Any]) -> Any:
    """The call's whole `result` (`isError`, `structuredContent`, `content`): HTTP 200 is asserted, not success."""
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    res = client.post("/mcp", json=body, headers={**ACCEPT, "Authorization": f"Bearer {key}"})
    assert res.status_code == 200, res.text
    return res.json()["result"]


def tool(client: TestClient, key: str, name: str, arguments: dict[str, Any]) -> Any:
    """A call that must succeed: its structured content."""
    result = tool_result(client, key, name, arguments)
    assert not result.get("isError"), result
    return result["structuredContent"]


def listed_tools(client: TestClient, key: str) -> dict[str, Any]:
    """`tools/list`: each tool's description (schemas, annotations) by its name."""
    body = {"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {}}
    res = client.post("/mcp", json=body, headers={**ACCEPT, "Authorization": f"Bearer {key}"})
    assert res.status_code == 200, res.text
    return {found["name"]: found for found in res.json()["result"]["tools"]}
