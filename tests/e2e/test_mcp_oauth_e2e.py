"""OAuth 2.1 for MCP, end to end against `slugline serve`: the official client's OAuth provider discovers, registers,
sends a signed-in person through consent, gets tokens and calls tools, in both scopes and both protocol modes."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.support.mcp_client import MODES, call, call_error
from tests.support.mcp_client import connect as connect_key
from tests.support.oauth_client import MemoryStorage, Person, connect, form_value, mcp_post, oauth_provider
from tests.support.oauth_flow import authorize_url, by_hand, expire_tokens, pkce, stored_bytes
from tests.support.server import ServerFactory, api, make_account

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", MODES)
async def test_full_and_public_grants_call_tools(start_server: ServerFactory, mode: str) -> None:
    server = start_server()
    keys = make_account(server, "olive")
    with api(server, keys.full) as http:
        hidden = http.post("/links", json={"destination_url": "https://example.com/s", "visibility": "private"}).json()
    for scope in ("full", "public"):
        async with (
            Person(server, "olive", scope=scope) as person,
            connect(oauth_provider(server, person, MemoryStorage()), f"{server.url}/mcp", mode) as client,
        ):
            me = await call(client, "get_me")
            assert me["scope"] == scope
            listed = await call(client, "list_links")
            ids = {link["id"] for link in listed["data"]}
            assert (hidden["id"] in ids) == (scope == "full")
            if scope == "public":
                message = await call_error(client, "update_link", {"id": hidden["id"], "title": "x"})
                assert message == "link not found"


async def test_refresh_rotates_and_disconnect_revokes_at_once(start_server: ServerFactory) -> None:
    server = start_server()
    make_account(server, "pia")
    async with Person(server, "pia", scope="public") as person, httpx.AsyncClient(base_url=server.url) as http:
        flow = await by_hand(server, person)
        first = (await http.post("/oauth/token", data=flow.token_form())).json()
        assert first["scope"] == "public" and first["expires_in"] == 3600 and first["token_type"] == "Bearer"
        res = await http.post("/oauth/token", data=flow.refresh_form(first["refresh_token"]))
        assert res.status_code == 200, res.text
        second = res.json()
        assert second["refresh_token"] != first["refresh_token"] and second["access_token"] != first["access_token"]
        async with connect_key(server, second["access_token"], MODES[1]) as client:
            assert (await call(client, "get_me"))["scope"] == "public"
        # Settings lists the app; disconnecting it refuses the very next call.
        settings = (await person.http.get("/app/settings")).text
        assert "Hand-made client" in settings and "Public links only" in settings
        action = re.search(r'action="(/app/settings/apps/\d+/disconnect)"', settings)
        assert action is not None
        res = await person.http.post(action.group(1), data={"csrf_token": form_value(settings, "csrf_token")})
        assert res.status_code == 303
        refused = await mcp_post(http, second["access_token"])
        assert refused.status_code == 401
        assert 'resource_metadata="' in refused.headers["www-authenticate"]
        res = await http.post("/oauth/token", data=flow.refresh_form(second["refresh_token"]))
        assert res.status_code == 400 and res.json()["error"] == "invalid_grant"
        assert "Hand-made client" not in (await person.http.get("/app/settings")).text


async def test_refreshing_never_gives_a_fresh_budget(start_server: ServerFactory) -> None:
    """The review's case: five tokens of one grant (a code and four refreshes) each reported 599 -> 597, so one IP
    could make 36,000 MCP calls a minute. Now each refresh retires the token before it, and every token of the
    account's grants draws from the bucket of its key of that scope."""
    server = start_server(SLUGLINE_RATE_LIMIT_DEVELOPER="12")  # one call back every 5 s
    keys = make_account(server, "rory")
    async with Person(server, "rory") as person, httpx.AsyncClient(base_url=server.url) as http:
        flow = await by_hand(server, person)
        tokens = (await http.post("/oauth/token", data=flow.token_form())).json()
        remaining = []
        for _ in range(4):
            for _ in range(3):
                answer = await mcp_post(http, tokens["access_token"])
                assert answer.status_code == 200, answer.text
                remaining.append(int(answer.headers["ratelimit-remaining"]))
            old = tokens["access_token"]
            tokens = (await http.post("/oauth/token", data=flow.refresh_form(tokens["refresh_token"]))).json()
            assert (await mcp_post(http, old)).status_code == 401  # rotated out by the refresh
        assert remaining == sorted(remaining, reverse=True) and remaining[-1] <= 2  # one budget, draining
        for token in (tokens["access_token"], keys.full):  # the refreshed token, and the full key: both spent
            for _ in range(3):
                answer = await mcp_post(http, token)
                if answer.status_code == 429:
                    break
            assert answer.status_code == 429 and int(answer.headers["retry-after"]) >= 1


async def test_discovery_documents_and_the_401_that_points_at_them(start_server: ServerFactory) -> None:
    server = start_server()
    async with httpx.AsyncClient(base_url=server.url) as http:
        refused = await mcp_post(http, None)
        assert refused.status_code == 401 and "error" in refused.json()
        prm_url = f"{server.url}/.well-known/oauth-protected-resource/mcp"
        assert refused.headers["www-authenticate"] == f'Bearer resource_metadata="{prm_url}"'
        for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
            prm = (await http.get(path)).json()
            assert prm["resource"] == f"{server.url}/mcp" and prm["authorization_servers"] == [server.url]
        meta = (await http.get("/.well-known/oauth-authorization-server")).json()
        assert meta["issuer"] == server.url and meta["code_challenge_methods_supported"] == ["S256"]
        assert meta["client_id_metadata_document_supported"] is True
        assert {"authorization_code", "refresh_token"} == set(meta["grant_types_supported"])


async def test_refusals(start_server: ServerFactory) -> None:
    server = start_server()
    keys = make_account(server, "quinn")
    async with Person(server, "quinn") as person, httpx.AsyncClient(base_url=server.url) as http:
        # A wrong verifier spends the code: it has one try, and the right verifier comes too late.
        flow = await by_hand(server, person)
        wrong = await http.post("/oauth/token", data=flow.token_form(code_verifier=pkce()[0]))
        assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
        late = await http.post("/oauth/token", data=flow.token_form())
        assert late.status_code == 400 and late.json()["error"] == "invalid_grant"

        flow = await by_hand(server, person)
        moved = await http.post("/oauth/token", data=flow.token_form(redirect_uri="http://localhost:3030/other"))
        assert moved.status_code == 400 and moved.json()["error"] == "invalid_request"
        tokens = (await http.post("/oauth/token", data=flow.token_form())).json()
        assert (await mcp_post(http, tokens["access_token"])).status_code == 200
        # A code used twice is refused, and the replay revokes what the code gave.
        again = await http.post("/oauth/token", data=flow.token_form())
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
        assert (await mcp_post(http, tokens["access_token"])).status_code == 401

        # A redirect URI that is not exactly a registered one: an error page, never a redirect to it.
        other = authorize_url(server, flow.client_id, pkce()[1], redirect_uri="http://localhost:3030/callback/x")
        res = await person.http.get(other)
        assert res.status_code == 400 and res.json()["error"] == "invalid_request"
        # plain, or a resource other than this server's /mcp
        res = await person.http.get(authorize_url(server, flow.client_id, pkce()[1], code_challenge_method="plain"))
        assert res.status_code in (302, 400) and "invalid_request" in (res.headers.get("location", "") + res.text)
        res = await person.http.get(
            authorize_url(server, flow.client_id, pkce()[1], resource="https://else.example/mcp")
        )
        assert res.status_code == 302 and "error=invalid_target" in res.headers["location"]

        # An access token is refused at the REST API, and by another audience (this server under another name).
        # This one comes from a flow without a resource indicator (the legacy spec): it is bound to /mcp all the same.
        flow = await by_hand(server, person, legacy=True)
        tokens = (await http.post("/oauth/token", data=flow.token_form())).json()
        rest = await http.get("/api/v1/links", headers={"Authorization": f"Bearer {tokens['access_token']}"})
        assert rest.status_code == 401 and "MCP endpoint" in rest.json()["error"]
        async with httpx.AsyncClient(base_url=f"http://localhost:{server.port}") as elsewhere:
            res = await mcp_post(elsewhere, tokens["access_token"])
            assert res.status_code == 401 and "another resource" in res.json()["error"]
            assert 'error="invalid_token"' in res.headers["www-authenticate"]
        allowed = await mcp_post(http, tokens["access_token"])
        assert allowed.status_code == 200 and allowed.headers["ratelimit-limit"] == "600"  # the developer rate
        # The account's full-access bucket, its full key's: drawn from once before (the first flow's call), with 10 a
        # second coming back, so 598 left if that was under 0.1 s ago, else 599.
        assert allowed.headers["ratelimit-remaining"] in ("598", "599")
        assert (await mcp_post(http, keys.full)).status_code == 200  # static keys work as before

        # A rotated refresh token presented again is refused, and the replay revokes the grant.
        flow = await by_hand(server, person)
        first = (await http.post("/oauth/token", data=flow.token_form())).json()
        second = (await http.post("/oauth/token", data=flow.refresh_form(first["refresh_token"]))).json()
        assert (await mcp_post(http, second["access_token"])).status_code == 200
        replay = await http.post("/oauth/token", data=flow.refresh_form(first["refresh_token"]))
        assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
        assert (await mcp_post(http, second["access_token"])).status_code == 401

        # RFC 7009: the app revokes its access token; its refresh token goes with it.
        flow = await by_hand(server, person)
        tokens = (await http.post("/oauth/token", data=flow.token_form())).json()
        creds = {"client_id": flow.client_id, "client_secret": flow.client_secret}
        res = await http.post("/oauth/revoke", data={**creds, "token": tokens["access_token"]})
        assert res.status_code == 200
        assert (await mcp_post(http, tokens["access_token"])).status_code == 401
        res = await http.post("/oauth/token", data=flow.refresh_form(tokens["refresh_token"]))
        assert res.status_code == 400 and res.json()["error"] == "invalid_grant"

        # Only keyed hashes are stored: no token or code appears in the database file.
        stored = stored_bytes(server)
        assert tokens["access_token"].encode() not in stored and tokens["refresh_token"].encode() not in stored
        assert flow.code.encode() not in stored and flow.client_secret.encode() not in stored

        # An expired access token.
        flow = await by_hand(server, person)
        tokens = (await http.post("/oauth/token", data=flow.token_form())).json()
        expire_tokens(server)
        res = await mcp_post(http, tokens["access_token"])
        assert res.status_code == 401 and "expired" in res.json()["error"]


async def test_client_id_metadata_document_at_a_private_address(start_server: ServerFactory) -> None:
    server = start_server(SLUGLINE_FETCH_ALLOW_PRIVATE="false")
    make_account(server, "rae")
    async with Person(server, "rae") as person:
        for host in ("127.0.0.1", "10.0.0.7", "169.254.169.254"):
            url = authorize_url(server, f"https://{host}/oauth/client.json", pkce()[1])
            res = await person.http.get(url)
            assert res.status_code == 400, res.text
            body = res.json()
            assert body["error"] == "invalid_client" and "private or reserved address" in body["error_description"]
