"""Client ID Metadata Documents: what a document must say, the URL rules, the byte-budgeted cache, the fetch through
the fetcher's address and port checks (a private address or another port is refused before any connection), and the
per-IP budget of fetches that anonymous /analyze draws from too."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import replace

import orjson
import pytest
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyUrl
from starlette.testclient import TestClient

from slugline.common.errors import RateLimited
from slugline.fetch import fetcher
from slugline.oauth import documents
from slugline.runtime import Runtime
from tests.support.helpers import Account

pytestmark = pytest.mark.anyio
URL = "https://app.example/oauth/client.json"
REDIRECT = "https://app.example/callback"
IP = "203.0.113.5"


def serve(monkeypatch: pytest.MonkeyPatch, document: dict[str, object]) -> list[str]:
    """Documents come from `document` instead of the network; the URLs fetched are recorded."""
    fetched: list[str] = []

    async def download(rt: Runtime, url: str, ssl_context: object = None) -> bytes:
        fetched.append(url)
        return orjson.dumps(document)

    monkeypatch.setattr(documents, "download", download)
    monkeypatch.setattr(documents, "CACHE", documents.DocumentCache())
    return fetched


async def test_a_document_registers_its_client_once(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    fetched = serve(monkeypatch, {"client_id": URL, "client_name": "Doc App", "redirect_uris": [REDIRECT]})
    client = await documents.resolve(runtime, URL, IP)
    assert client.client_name == "Doc App" and client.token_endpoint_auth_method == "none"
    assert client.client_secret is None
    await documents.resolve(runtime, URL, IP)
    assert fetched == [URL]  # cached


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"client_id": "https://other.example/c.json", "redirect_uris": [REDIRECT]}, "not its own URL"),
        ({"client_id": URL}, "must list redirect_uris"),
        (
            {"client_id": URL, "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_post"},
            "no client",
        ),
        ({"client_id": URL, "redirect_uris": "nope"}, "not valid"),
        ({"client_id": URL, "redirect_uris": [REDIRECT], "client_name": "n" * 256}, "client_name: at most 255"),
        ({"client_id": URL, "redirect_uris": [REDIRECT, "javascript:alert(1)"]}, "redirect_uris: "),
        ({"client_id": URL, "redirect_uris": ["http://app.example/callback"]}, "redirect_uris: "),
        ({"client_id": URL, "redirect_uris": [f"{REDIRECT}#x"]}, "redirect_uris: "),
    ],
)
async def test_unusable_documents(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch, document: dict[str, object], message: str
) -> None:
    serve(monkeypatch, document)
    with pytest.raises(documents.DocumentError, match=message):
        await documents.resolve(runtime, URL, IP)


@pytest.mark.parametrize("url", ["http://app.example/c.json", "https://app.example/", "https://app.example/a#f"])
async def test_client_id_url_rules(runtime: Runtime, url: str) -> None:
    with pytest.raises(documents.DocumentError, match="https URL with a path"):
        await documents.resolve(runtime, url, IP)


@pytest.mark.parametrize("host", ["127.0.0.1", "10.1.2.3", "169.254.169.254", "[::1]", "[fd00::1]"])
async def test_private_addresses_are_refused_before_connecting(runtime: Runtime, host: str) -> None:
    strict = replace(runtime, settings=runtime.settings.model_copy(update={"fetch_allow_private": False}))
    with pytest.raises(documents.DocumentError, match="private or reserved address"):
        await documents.download(strict, f"https://{host}/client.json")


def test_the_cache_keeps_to_its_byte_budget() -> None:
    cache = documents.DocumentCache(budget=1000)
    client = OAuthClientInformationFull(client_id=URL, redirect_uris=[AnyUrl(REDIRECT)])
    for n in range(20):
        cache.put(f"{URL}?{n}", 200, client)
        assert cache.used <= 1000
    assert cache.get(f"{URL}?19") is client and cache.get(f"{URL}?0") is None


def test_authorize_names_why_a_document_was_refused(client: TestClient, make_account: Callable[..., Account]) -> None:
    res = client.get(
        "/oauth/authorize",
        params={"response_type": "code", "client_id": "https://10.0.0.1/c.json", "code_challenge": "x" * 43},
    )
    assert res.status_code == 400
    assert res.json()["error"] == "invalid_client" and "private" in res.json()["error_description"]


@pytest.mark.parametrize("url", ["https://[::1/c.json", "https://[nonsense]/c.json"])
async def test_a_client_id_that_does_not_parse_is_refused(runtime: Runtime, url: str) -> None:
    with pytest.raises(documents.DocumentError, match="client_id is not a valid URL"):
        await documents.resolve(runtime, url, IP)


async def test_the_port_is_checked_as_the_fetcher_checks_it(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    async def public(host: str, port: int) -> list[fetcher.IPAddress]:
        return [ipaddress.ip_address("93.184.216.34")]  # never connected to: the port is refused first

    monkeypatch.setattr(fetcher, "_resolve", public)
    with pytest.raises(documents.DocumentError, match="port 6379 is not allowed"):
        await documents.download(runtime, "https://app.example:6379/client.json")


async def test_fetches_count_against_the_callers_ip(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    rt = replace(runtime, settings=runtime.settings.model_copy(update={"rate_limit_analyze_anonymous": 2}))
    fetched = serve(monkeypatch, {"client_id": URL, "client_name": "Doc App", "redirect_uris": [REDIRECT]})
    for _ in range(3):
        await documents.resolve(rt, URL, IP)  # one fetch, then the cache: one of the IP's two
    with pytest.raises(documents.DocumentError):
        await documents.resolve(rt, "https://other.example/c.json", IP)  # the second: fetched, and refused
    with pytest.raises(RateLimited, match="too many client metadata documents"):
        await documents.resolve(rt, "https://third.example/c.json", IP)  # refused before any lookup
    assert fetched == [URL, "https://other.example/c.json"]
    with pytest.raises(documents.DocumentError):  # another IP has a budget of its own: fetched (and refused)
        await documents.resolve(rt, "https://third.example/c.json", "198.51.100.7")
    assert fetched[-1] == "https://third.example/c.json"
