"""The /mcp HTTP layer in process (slugline.mcp.http): DNS-rebinding checks from SLUGLINE_PUBLIC_URL, refusal order."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from slugline.mcp.http import AllowedNames
from slugline.settings import Settings
from tests.support.helpers import SQLITE_ONLY, Account, make_settings

PUBLIC = "https://links.example.com"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url, public_url=PUBLIC)


def post(
    client: TestClient, key: str | None, url: str = f"{PUBLIC}/mcp", body: Any = INITIALIZE, **headers: str
) -> Any:
    auth = {"Authorization": f"Bearer {key}"} if key else {}
    return client.post(url, json=body, headers={**ACCEPT, **auth, **headers})


@SQLITE_ONLY
def test_public_url_and_loopback_names_are_accepted(client: TestClient, alice: Account) -> None:
    for url, extra in (
        (f"{PUBLIC}/mcp", {}),
        (f"{PUBLIC}:8443/mcp/", {}),
        ("http://127.0.0.1:9000/mcp", {}),
        ("http://localhost/mcp", {}),
        ("http://[::1]:8000/mcp", {}),
        (f"{PUBLIC}/mcp", {"Origin": PUBLIC}),
        ("http://localhost:3000/mcp", {"Origin": "http://localhost:6274"}),
    ):
        res = post(client, alice.full, url, **extra)
        assert res.status_code == 200, (url, extra, res.text)
        assert res.json()["result"]["serverInfo"]["name"] == "slugline"


@SQLITE_ONLY
def test_other_hosts_and_origins_are_refused_before_the_key(client: TestClient, alice: Account) -> None:
    for key in (None, alice.full):
        res = post(client, key, "https://attacker.example/mcp")
        assert res.status_code == 421
        assert "SLUGLINE_PUBLIC_URL" in res.json()["error"] and "attacker.example" in res.json()["error"]
        res = post(client, key, Origin="https://attacker.example")
        assert res.json() == {"error": "Origin 'https://attacker.example' is not allowed for /mcp"}
        assert res.status_code == 403


@SQLITE_ONLY
def test_key_is_checked_before_the_content_type(client: TestClient, alice: Account) -> None:
    def plain(key: str | None) -> Any:
        auth = {"Authorization": f"Bearer {key}"} if key else {}
        return client.post(f"{PUBLIC}/mcp", content=b"{}", headers={**ACCEPT, **auth, "Content-Type": "text/plain"})

    assert plain(None).status_code == 401
    res = plain(alice.full)
    assert res.status_code == 400 and "application/json" in res.json()["error"]


@SQLITE_ONLY
def test_tool_errors_carry_the_service_message(client: TestClient, alice: Account) -> None:
    def tool(name: str, arguments: dict[str, Any]) -> Any:
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        res = post(client, alice.full, body=body, **{"MCP-Protocol-Version": "2025-06-18"})
        assert res.status_code == 200, res.text
        return res.json()["result"]

    missing = tool("delete_link", {"id": "lnk_00000000000"})
    assert missing == {"content": [{"type": "text", "text": "link not found"}], "isError": True}
    rest = client.get("/api/v1/links", params={"colour": "red"}, headers=alice.auth())
    assert tool("list_links", {"colour": "red"})["content"][0]["text"] == rest.json()["error"]
    made = tool("create_link", {"destination_url": "https://example.org/", "slug": "inproc"})
    assert made["structuredContent"]["short_url"] == f"{PUBLIC}/inproc"


def test_list_links_answers_the_same_on_every_call(client: TestClient, alice: Account) -> None:
    """The first list reads on a thread; later ones on the event loop, whose rows arrive as JSON bytes: the tool's
    structured content is the same JSON as REST's either way."""
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "list_links", "arguments": {}}}
    client.post(
        "/api/v1/links", json={"destination_url": "https://example.org/", "slug": "listed"}, headers=alice.auth()
    )
    for _ in range(3):
        res = post(client, alice.full, body=body, **{"MCP-Protocol-Version": "2025-06-18"})
        assert res.status_code == 200, res.text
        result = res.json()["result"]
        assert not result.get("isError"), result
        assert [link["slug"] for link in result["structuredContent"]["data"]] == ["listed"]


def test_create_link_says_what_auto_meta_ran_into_and_nothing_otherwise(client: TestClient, alice: Account) -> None:
    def create(arguments: dict[str, Any]) -> Any:
        body = {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "create_link", "arguments": arguments},
        }
        res = post(client, alice.full, body=body, **{"MCP-Protocol-Version": "2025-06-18"})
        assert res.status_code == 200, res.text
        return res.json()["result"]["structuredContent"]

    refused = create({"destination_url": "http://10.1.2.3/", "auto_meta": True})  # refused before any packet
    assert "private or reserved address" in refused["meta_error"] and refused["title"] is None
    assert "meta_error" not in create({"destination_url": "https://example.org/quiet"})


@pytest.mark.parametrize(
    "public_url, host, origin",
    [
        (None, "localhost:8000", "http://127.0.0.1:8000"),
        (None, "LOCALHOST", "http://[::1]"),
        ("https://sl.example.org", "sl.example.org", "https://sl.example.org"),
        ("https://sl.example.org", "Sl.Example.Org:443", "https://sl.example.org:8443"),
        ("http://[2001:db8::1]:8080/", "[2001:db8::1]:8080", "http://[2001:db8::1]:8080"),
    ],
)
def test_allowed_names_come_from_the_public_url(public_url: str | None, host: str, origin: str) -> None:
    allowed = AllowedNames.of(Settings(public_url=public_url, secret_key="x" * 40))
    assert allowed.host(host) and allowed.origin(origin) and allowed.origin(None) and allowed.origin("")


@pytest.mark.parametrize(
    "host, origin",
    [
        ("sl.example.org.attacker.example", "https://sl.example.org.attacker.example"),
        ("attacker.example", "http://sl.example.org"),  # the scheme is part of the origin
        ("sl.example.org:", "https://sl.example.org:"),
        ("sl.example.org:80x", "https://sl.example.org:1:2"),
        ("[2001:db8::1]", "https://[2001:db8::1]"),  # loopback and the public name only
        ("", "null"),
    ],
)
def test_other_names_are_refused(host: str, origin: str) -> None:
    allowed = AllowedNames.of(Settings(public_url="https://sl.example.org", secret_key="x" * 40))
    assert not allowed.host(host) and not allowed.origin(origin)


@SQLITE_ONLY
def test_a_body_past_the_cap_is_413_whatever_its_length_claims(client: TestClient, alice: Account) -> None:
    auth = {"Authorization": f"Bearer {alice.full}", **ACCEPT, "Content-Type": "application/json"}
    huge = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "' + b"x" * (1 << 20) + b'"}}'

    def chunks() -> Iterator[bytes]:  # sent chunked: no Content-Length to refuse it by
        for start in range(0, len(huge), 65536):
            yield huge[start : start + 65536]

    for content in (huge, chunks()):
        res = client.post(f"{PUBLIC}/mcp", content=content, headers=auth)
        assert res.status_code == 413, res.text
        assert res.json() == {"error": "the request body must be at most 1024 KiB"}
    res = client.post(f"{PUBLIC}/mcp", content=huge[: 1 << 19] + b'"}}', headers=auth)
    assert res.status_code == 200 and res.json()["result"] == {}, res.text  # under the cap: a ping
