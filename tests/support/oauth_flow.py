"""An authorization done by hand, as an OAuth client does it (registration, PKCE, consent), for the tests that
need to hold the code and tokens themselves; and looking into the server's SQLite file."""

from __future__ import annotations

import base64
import hashlib
import secrets
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import httpx

from tests.support.oauth_client import REDIRECT_URI, Person
from tests.support.server import Server


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


def expire_tokens(server: Server) -> None:
    """Every OAuth token of the server's SQLite database expires now: what an hour of waiting would do."""
    path = server.database_url.removeprefix("sqlite:///")
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE oauth_tokens SET expires_at = '2000-01-01 00:00:00.000000'")


def stored_bytes(server: Server) -> bytes:
    """The SQLite database's files as bytes (the write-ahead log included), to look for secrets in them."""
    path = Path(server.database_url.removeprefix("sqlite:///"))
    return b"".join(p.read_bytes() for p in (path, path.with_name(path.name + "-wal")) if p.exists())
