"""The official MCP client (SDK v2) pointed at a real `slugline serve`, authenticated with an API key."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import LATEST_MODERN_VERSION

from mcp import Client
from tests.support.server import Server

# "legacy" is the initialize handshake (2025-era protocol versions); the other is the current per-request protocol.
MODES = ("legacy", LATEST_MODERN_VERSION)
TOOL_NAMES = {
    "get_me",
    "list_links",
    "create_link",
    "create_links",
    "update_link",
    "delete_link",
    "get_analytics",
    "get_link",
    "search_links",
    "get_qr_code",
    "get_link_clicks",
    "preview_url",
}


@asynccontextmanager
async def connect(server: Server, key: str, mode: str, path: str = "/mcp") -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http,
        Client(streamable_http_client(f"{server.url}{path}", http_client=http), mode=mode) as client,
    ):
        yield client


async def call(client: Client, name: str, arguments: dict[str, Any] | None = None) -> Any:
    """The structured result of a call that must succeed."""
    result = await client.call_tool(name, arguments or {})
    assert not result.is_error, (name, arguments, result.content)
    return result.structured_content


async def call_error(client: Client, name: str, arguments: dict[str, Any]) -> str:
    """The message of a call that must fail as a tool error (`isError`), with no structured result."""
    result = await client.call_tool(name, arguments)
    assert result.is_error, (name, arguments, result.structured_content)
    assert result.structured_content is None
    [content] = result.content
    assert content.type == "text"
    return content.text
