"""Who may use /mcp and what a public-only key can see, against a real `slugline serve --workers 2`."""

from __future__ import annotations

import base64
import time

import httpx
import pytest

from mcp import Client, MCPError
from tests.support.helpers import tampered
from tests.support.mcp_client import MODES, call, call_error, connect
from tests.support.server import ServerFactory, make_account

pytestmark = pytest.mark.anyio
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


async def test_public_key_never_reveals_hidden_links(start_server: ServerFactory) -> None:
    server = start_server(workers=2)
    keys = make_account(server, "keeper")
    async with connect(server, keys.full, MODES[-1]) as owner:
        hidden = [
            await call(
                owner,
                "create_link",
                {"destination_url": "https://example.org/1", "title": "Secret plan", "visibility": "private"},
            ),
            await call(
                owner,
                "create_link",
                {
                    "destination_url": "https://example.org/2",
                    "title": "Secret door",
                    "visibility": "password",
                    "password": "open sesame",
                },
            ),
        ]
        shown = await call(
            owner,
            "create_link",
            {"destination_url": "https://example.org/3", "title": "Secret garden", "visibility": "unlisted"},
        )
    for mode in MODES:
        async with connect(server, keys.public, mode) as client:
            assert (await call(client, "get_me"))["scope"] == "public"
            for query in ({}, {"q": "secret"}, {"q": "example.org"}, {"sort": "title", "dir": "asc", "per": 100}):
                page = await call(client, "list_links", query)
                assert [link["id"] for link in page["data"]] == [shown["id"]], query
                assert page["pagination"]["total"] == 1
            for link in hidden:
                for arguments in (
                    {"title": "mine now"},
                    {"visibility": "public"},
                    {"destination_url": "https://x.org"},
                ):
                    assert await call_error(client, "update_link", {"id": link["id"], **arguments}) == "link not found"
                assert await call_error(client, "delete_link", {"id": link["id"]}) == "link not found"
            refused = await call_error(
                client, "create_link", {"destination_url": "https://x.org", "visibility": "private"}
            )
            assert refused == "a public-only key cannot make a link private or password-protected"
            assert (
                await call_error(
                    client, "update_link", {"id": shown["id"], "visibility": "password", "password": "abcd"}
                )
                == refused
            )
    async with connect(server, keys.full, MODES[0]) as owner:
        page = await call(owner, "list_links", {"q": "secret", "sort": "title", "dir": "asc"})
        assert [link["title"] for link in page["data"]] == ["Secret door", "Secret garden", "Secret plan"]
        assert [link["visibility"] for link in page["data"]] == ["password", "unlisted", "private"]


async def test_public_key_never_reveals_hidden_links_through_the_read_tools(start_server: ServerFactory) -> None:
    """get_link (by id, slug and short URL), get_qr_code, get_link_clicks and search_links."""
    server = start_server(workers=2)
    keys = make_account(server, "lockbox")
    async with connect(server, keys.full, MODES[0]) as owner:
        hidden = [
            await call(
                owner,
                "create_link",
                {"destination_url": "https://example.org/a", "slug": "vault-a", "title": "Vault", "visibility": v}
                | ({"slug": "vault-b", "password": "open sesame"} if v == "password" else {}),
            )
            for v in ("private", "password")
        ]
        shown = await call(
            owner,
            "create_link",
            {"destination_url": "https://example.org/c", "slug": "vault-c", "title": "Vault", "visibility": "public"},
        )
        assert {hit["link"]["id"] for hit in (await call(owner, "search_links", {"q": "vault"}))["hits"]} == {
            link["id"] for link in [*hidden, shown]
        }
        for link in hidden:  # the full key sees them, so what the public key is told below is about the key
            found = await call(owner, "search_links", {"q": link["slug"]})
            assert [hit["link"]["id"] for hit in found["hits"]][:1] == [link["id"]]
            assert await call(owner, "get_link", {"slug": link["slug"]}) == link
            assert (await client_image(owner, link["id"])).startswith(b"\x89PNG")
    for mode in MODES:
        async with connect(server, keys.public, mode) as client:
            for link in hidden:
                for name in ({"id": link["id"]}, {"slug": link["slug"]}, {"short_url": link["short_url"]}):
                    assert await call_error(client, "get_link", name) == "link not found", (mode, name)
                assert await call_error(client, "get_qr_code", {"id": link["id"]}) == "link not found"
                assert await call_error(client, "get_qr_code", {"id": link["id"], "size": 1}) == "link not found"
                assert await call_error(client, "get_link_clicks", {"id": link["id"]}) == "link not found"
            for query in ("vault", "example.org", "vaul"):
                found = await call(client, "search_links", {"q": query, "limit": 100})
                assert [hit["link"]["id"] for hit in found["hits"]] == [shown["id"]] and found["total"] == 1, query
            for link in hidden:
                found = await call(client, "search_links", {"q": link["slug"]})
                assert (found["hits"], found["total"]) == ([], 0), link["slug"]
            assert (await call(client, "get_link", {"short_url": shown["short_url"]}))["id"] == shown["id"]
            assert (await client_image(client, shown["id"])).startswith(b"\x89PNG")
            assert (await call(client, "get_link_clicks", {"id": shown["id"]}))["pagination"]["total"] == 0


async def client_image(client: Client, link_id: str) -> bytes:
    result = await client.call_tool("get_qr_code", {"id": link_id})
    assert not result.is_error, result.content
    image = result.content[0]
    assert image.type == "image"
    return base64.b64decode(image.data)


def test_http_layer_refuses_before_any_tool_runs(start_server: ServerFactory) -> None:
    server = start_server()
    keys = make_account(server, "gatekeeper")
    free = make_account(server, "freeloader", plan="free")
    revoked = make_account(server, "revoked")
    with httpx.Client(base_url=server.url, timeout=10) as http:
        revoke = http.delete(
            "/api/v1/api-key", params={"scope": "full"}, headers={"Authorization": f"Bearer {revoked.session}"}
        )
        assert revoke.status_code == 200 and revoke.json() == {"deleted": True, "scope": "full"}, revoke.text

        # A 401 names the protected resource metadata (RFC 9728), where an OAuth client starts discovery.
        metadata = f'resource_metadata="{server.url}/.well-known/oauth-protected-resource/mcp"'

        def post(authorization: str | None, **headers: str) -> httpx.Response:
            auth = {"Authorization": authorization} if authorization else {}
            return http.post("/mcp", json=INITIALIZE, headers={**ACCEPT, **auth, **headers})

        for authorization, message in (
            (None, "missing API key"),
            ("Basic abc", "missing API key"),
            (f"Bearer {tampered(keys.full)}", "malformed API key"),
            (f"Bearer {revoked.full}", "invalid or revoked API key"),
        ):
            res = post(authorization)
            challenge = "Bearer " + ('error="invalid_token", ' if authorization else "") + metadata
            assert res.status_code == 401 and res.headers["WWW-Authenticate"] == challenge, authorization
            assert res.json()["error"].startswith(message), res.json()
        for token in (free.full, free.public):
            res = post(f"Bearer {token}")
            assert res.status_code == 403 and "developer plan" in res.json()["error"]
        res = post(f"Bearer {keys.session}")
        assert res.status_code == 403 and res.json()["error"].startswith("session tokens only work")
        assert post(f"Bearer {keys.full}", Host="attacker.example").status_code == 421
        assert post(f"Bearer {keys.full}").status_code == 200
        for method in ("GET", "DELETE"):
            started = time.monotonic()
            res = http.request(method, "/mcp", headers={**ACCEPT, "Authorization": f"Bearer {keys.full}"})
            assert (res.status_code, res.headers["Allow"]) == (405, "POST") and set(res.json()) == {"error"}
            assert time.monotonic() - started < 5


async def test_official_client_is_refused_with_a_bad_key(start_server: ServerFactory) -> None:
    server = start_server()
    free = make_account(server, "stranger", plan="free")
    for key in ("svc_live_not-a-key", free.full):
        for mode in MODES:
            with pytest.raises(ExceptionGroup) as caught:
                async with connect(server, key, mode) as client:
                    await client.list_tools()
            assert caught.group_contains(MCPError, match="error response"), (key, mode)
