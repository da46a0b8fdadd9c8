"""The official MCP client's OAuth support (its client-side auth provider) against a real `slugline serve`, with a
person who signs in to the dashboard and answers the consent form the way a browser posts it."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

from mcp import Client
from tests.support.server import PASSWORD, Server

REDIRECT_URI = "http://localhost:3030/callback"  # never opened: the redirect's Location is read instead


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def form_value(page: str, name: str) -> str:
    found = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert found, f"no {name} in the page"
    return found.group(1).replace("&amp;", "&")


@dataclass
class Person:
    """A browser: signs in on the dashboard, then follows the authorization URL and answers the consent form."""

    server: Server
    username: str
    scope: str = "full"
    decision: str = "allow"
    http: httpx.AsyncClient = field(init=False)
    redirected_to: str | None = None

    def __post_init__(self) -> None:
        self.http = httpx.AsyncClient(base_url=self.server.url, timeout=30)

    async def __aenter__(self) -> Person:
        await self.sign_in()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

    async def sign_in(self) -> None:
        page = (await self.http.get("/app/login")).text
        form = {"csrf_token": form_value(page, "csrf_token"), "username": self.username, "password": PASSWORD}
        res = await self.http.post("/app/login", data=form)
        assert res.status_code == 303, res.text

    async def consent_page(self, authorization_url: str) -> httpx.Response:
        res = await self.http.get(authorization_url)
        assert res.status_code == 302, res.text  # the authorization endpoint sends the person to the consent page
        return await self.http.get(urljoin(self.server.url, res.headers["location"]))

    async def open(self, authorization_url: str) -> None:
        page = await self.consent_page(authorization_url)
        assert page.status_code == 200, page.text
        form = {
            "csrf_token": form_value(page.text, "csrf_token"),
            "request": form_value(page.text, "request"),
            "scope": self.scope,
            "decision": self.decision,
        }
        res = await self.http.post("/oauth/consent", data=form)
        assert res.status_code == 303, res.text
        self.redirected_to = res.headers["location"]

    async def callback(self) -> AuthorizationCodeResult:
        assert self.redirected_to is not None
        query = parse_qs(urlsplit(self.redirected_to).query)
        return AuthorizationCodeResult(
            code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
        )


def oauth_provider(
    server: Server, person: Person, storage: MemoryStorage, host: str = "127.0.0.1"
) -> OAuthClientProvider:
    metadata = OAuthClientMetadata(
        client_name="E2E Assistant",
        redirect_uris=[AnyUrl(REDIRECT_URI)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )
    return OAuthClientProvider(
        server_url=f"http://{host}:{server.port}/mcp",
        client_metadata=metadata,
        storage=storage,
        redirect_handler=person.open,
        callback_handler=person.callback,
    )


@asynccontextmanager
async def connect(provider: OAuthClientProvider, url: str, mode: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(auth=provider, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


async def mcp_post(http: httpx.AsyncClient, token: str | None, url: str = "/mcp") -> httpx.Response:
    """A bare JSON-RPC call to /mcp: enough to see how the gate answers a token."""
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)
