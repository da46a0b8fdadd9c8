"""The official MCP client's OAuth support (its client-side auth provider) against a real `slugline serve`, with a
person who signs in to the dashboard and answers the consent form the way a browser posts it."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, closing
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx
import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

from tests.e2e.server import Server

REDIRECT_URI = "http://localhost:3030/callback"  # never opened: the redirect's Location is read instead
E2E_PASSWORD = "e2e-password"  # what `make_account` registers with


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
        form = {"csrf_token": form_value(page, "csrf_token"), "username": self.username, "password": E2E_PASSWORD}
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


@dataclass
class Flow:
    """One authorization done by hand, as a client would: registration, PKCE, consent; the code not yet spent."""

    server: Server
    client_id: str
    client_secret: str
    verifier: str
    code: str

    def token_form(self, **overrides: str) -> dict[str, str]:
        form = {
            "grant_type": "authorization_code",
            "code": self.code,
            "redirect_uri": REDIRECT_URI,
            "client_id": self.client_id,
            "client_secret": self.client_secret,
            "code_verifier": self.verifier,
        }
        return {**form, **overrides}

    def refresh_form(self, refresh_token: str) -> dict[str, str]:
        return {
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
            "client_id": self.client_id,
            "client_secret": self.client_secret,
        }


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


async def register(http: httpx.AsyncClient) -> dict[str, str]:
    res = await http.post("/oauth/register", json={"client_name": "Hand-made client", "redirect_uris": [REDIRECT_URI]})
    assert res.status_code == 201, res.text
    body: dict[str, str] = res.json()
    return body


def authorize_url(server: Server, client_id: str, challenge: str, **extra: str) -> str:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st-1",
        "resource": f"{server.url}/mcp",
        **extra,
    }
    return f"{server.url}/oauth/authorize?{urlencode(params)}"


async def by_hand(server: Server, person: Person, legacy: bool = False) -> Flow:
    """`legacy`: as a client of the 2025-03-26 authorization spec, which sends no resource indicator."""
    client = await register(person.http)
    verifier, challenge = pkce()
    url = authorize_url(server, client["client_id"], challenge)
    if legacy:
        url = url.replace(f"&{urlencode({'resource': f'{server.url}/mcp'})}", "")
        assert "resource=" not in url
    await person.open(url)
    result = await person.callback()
    assert result.state == "st-1" and result.iss == server.url
    return Flow(server, client["client_id"], client["client_secret"], verifier, result.code)


async def mcp_post(http: httpx.AsyncClient, token: str | None, url: str = "/mcp") -> httpx.Response:
    """A bare JSON-RPC call to /mcp: enough to see how the gate answers a token."""
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)


def expire_tokens(server: Server) -> None:
    """Every OAuth token of the server's SQLite database expires now: what an hour of waiting would do."""
    path = server.database_url.removeprefix("sqlite:///")
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE oauth_tokens SET expires_at = '2000-01-01 00:00:00.000000'")


def stored_bytes(server: Server) -> bytes:
    """The SQLite database's files as bytes (the write-ahead log included), to look for secrets in them."""
    path = Path(server.database_url.removeprefix("sqlite:///"))
    return b"".join(p.read_bytes() for p in (path, path.with_name(path.name + "-wal")) if p.exists())
