"""slugline.mcp.exchange: the requests it answers get, byte for byte, the SDK transport's answer; the rest go there."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from mcp.server.mcpserver import MCPServer
from mcp_types import JSONRPCResponse
from starlette.testclient import TestClient

from slugline.mcp import exchange, tools
from tests.support.helpers import SQLITE_ONLY, Account

JSON = "application/json"
BOTH = "application/json, text/event-stream"


def call(method: str, params: Any = None, id_: Any = 7) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        body["params"] = params
    return body


def tool(name: str, arguments: Any) -> dict[str, Any]:
    return call("tools/call", {"name": name, "arguments": arguments})


# (body, Content-Type, Accept, MCP-Protocol-Version or None, answered by exchange, status)
CASES: list[tuple[Any, str, str, str | None, bool, int]] = [
    (tool("get_me", {}), JSON, BOTH, "2025-06-18", True, 200),
    (tool("get_me", {}), JSON, JSON, None, True, 200),  # no header: 2025-03-26, as the spec says to assume
    (tool("get_me", {}), "application/json; charset=utf-8", "*/*", "2025-11-25", True, 200),
    (call("tools/list"), JSON, BOTH, "2025-03-26", True, 200),
    (call("tools/list"), JSON, BOTH, "2024-11-05", True, 200),
    (call("ping", id_="abc"), JSON, BOTH, "2025-06-18", True, 200),
    (call("resources/list"), JSON, BOTH, "2025-06-18", True, 200),
    (call("no/such/method"), JSON, BOTH, "2025-06-18", True, 200),
    (call("tools/call", {"name": 5}), JSON, BOTH, "2025-06-18", True, 200),  # malformed params: INVALID_PARAMS
    (tool("no_such_tool", {}), JSON, BOTH, "2025-06-18", True, 200),
    (tool("delete_link", {"id": "lnk_00000000000"}), JSON, BOTH, "2025-06-18", True, 200),
    (tool("delete_link", {}), JSON, BOTH, "2025-06-18", True, 200),
    (tool("list_links", {"per": "many"}), JSON, BOTH, "2025-06-18", True, 200),
    (tool("get_analytics", {}), JSON, BOTH, "2025-06-18", True, 200),
    # Left to the SDK's transport.
    (
        call(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
        ),
        JSON,
        BOTH,
        None,
        False,
        200,
    ),
    ({"jsonrpc": "2.0", "method": "notifications/initialized"}, JSON, BOTH, "2025-06-18", False, 202),
    ({"jsonrpc": "2.0", "id": 3, "result": {}}, JSON, BOTH, "2025-06-18", False, 202),
    ([tool("get_me", {})], JSON, BOTH, "2025-03-26", False, 400),  # a batch
    ({"jsonrpc": "2.0", "id": 3}, JSON, BOTH, "2025-06-18", False, 400),  # not a message
    (b"{not json", JSON, BOTH, "2025-06-18", False, 400),
    (tool("get_me", {}), JSON, "text/event-stream", "2025-06-18", False, 406),  # 406
    (tool("get_me", {}), "application/json-seq", BOTH, "2025-06-18", False, 415),
    (tool("get_me", {}), "Application/JSON", BOTH, "2025-06-18", False, 415),
    (tool("get_me", {}), JSON, BOTH, "2099-01-01", False, 400),  # refused by the SDK's version check
]


@pytest.fixture
def answered(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """What each request's `exchange.answer` returned."""
    seen: list[bool] = []
    real = exchange.answer

    async def counted(*args: Any) -> bool:
        seen.append(await real(*args))
        return seen[-1]

    monkeypatch.setattr(exchange, "answer", counted)
    yield seen


def send(client: TestClient, key: str, body: Any, content_type: str, accept: str, version: str | None) -> Any:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": content_type, "Accept": accept}
    if version is not None:
        headers["MCP-Protocol-Version"] = version
    content = body if isinstance(body, bytes) else orjson.dumps(body)
    return client.post("http://127.0.0.1/mcp", content=content, headers=headers)


def both_ways(client: TestClient, monkeypatch: pytest.MonkeyPatch, key: str, case: tuple[Any, ...]) -> tuple[Any, Any]:
    """The answer to `case` through `exchange`, then through the SDK's transport alone."""
    body, content_type, accept, version = case[:4]
    fast = send(client, key, body, content_type, accept, version)
    with monkeypatch.context() as patched:

        async def declined(*args: Any) -> bool:
            return False

        patched.setattr(exchange, "answer", declined)
        sdk = send(client, key, body, content_type, accept, version)
    return fast, sdk


def same(fast: Any, sdk: Any) -> None:
    assert (fast.status_code, fast.headers.get("content-type"), fast.content) == (
        sdk.status_code,
        sdk.headers.get("content-type"),
        sdk.content,
    )


@SQLITE_ONLY
@pytest.mark.parametrize("case", CASES, ids=[f"{i}" for i in range(len(CASES))])
def test_each_request_gets_the_sdk_transports_answer(
    client: TestClient,
    alice: Account,
    monkeypatch: pytest.MonkeyPatch,
    answered: list[bool],
    case: tuple[Any, str, str, str | None, bool, int],
) -> None:
    fast, sdk = both_ways(client, monkeypatch, alice.full, case)
    assert answered == [case[4]]
    same(fast, sdk)
    assert fast.status_code == case[5], fast.text


@SQLITE_ONLY
def test_a_handlers_unmapped_exception_is_answered_as_the_sdk_answers_it(
    client: TestClient, alice: Account, monkeypatch: pytest.MonkeyPatch, answered: list[bool]
) -> None:
    async def broken(self: MCPServer) -> Any:
        raise RuntimeError("listing broke")

    monkeypatch.setattr(MCPServer, "list_tools", broken)
    case = (call("tools/list"), JSON, BOTH, "2025-06-18", True, 200)
    fast, sdk = both_ways(client, monkeypatch, alice.full, case)
    assert answered == [True]
    same(fast, sdk)
    assert fast.json()["error"] == {"code": 0, "message": "listing broke"}


@SQLITE_ONLY
def test_the_tool_sees_the_caller_and_a_public_key_stays_public(
    client: TestClient, alice: Account, answered: list[bool]
) -> None:
    made = client.post(
        "/api/v1/links",
        json={"destination_url": "https://example.org/hidden", "visibility": "private"},
        headers=alice.auth(),
    )
    assert made.status_code == 201, made.text
    seen = {}
    for key in (alice.full, alice.public):
        res = send(client, key, tool("list_links", {}), JSON, BOTH, "2025-06-18")
        seen[key] = [link["id"] for link in res.json()["result"]["structuredContent"]["data"]]
    assert answered == [True, True]
    assert seen == {alice.full: [made.json()["id"]], alice.public: []}


@SQLITE_ONLY
def test_a_cancellation_a_handler_lets_out_is_answered_as_the_sdk_answers_it(
    client: TestClient, alice: Account, monkeypatch: pytest.MonkeyPatch, answered: list[bool]
) -> None:
    async def stray(rt: Any, caller: Any, arguments: dict[str, Any]) -> dict[str, Any]:
        raise asyncio.CancelledError  # as from awaiting a task something else cancelled

    monkeypatch.setattr(tools, "_me", stray)
    fast, sdk = both_ways(client, monkeypatch, alice.full, CASES[0])
    assert answered == [True]
    same(fast, sdk)
    assert fast.json()["error"] == {"code": -32000, "message": "Connection closed"}


@SQLITE_ONLY
def test_an_answer_that_cannot_be_written_is_answered_as_the_sdk_answers_it(
    client: TestClient, alice: Account, monkeypatch: pytest.MonkeyPatch, answered: list[bool]
) -> None:
    def unwritable(self: JSONRPCResponse, **kwargs: Any) -> str:
        raise ValueError("cannot write this")

    monkeypatch.setattr(JSONRPCResponse, "model_dump_json", unwritable)
    fast, sdk = both_ways(client, monkeypatch, alice.full, CASES[0])
    assert answered == [True]
    same(fast, sdk)
    assert fast.status_code == 500 and fast.json()["error"]["message"] == "Error handling POST request"
