"""The metadata fetcher connects to web ports only (80 and 443, unless `SLUGLINE_FETCH_PORTS` lists more), on the
first hop and on every redirect: a public address's Redis or admin port is not a page."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator

import pytest
from starlette.testclient import TestClient

from slugline.fetch import fetcher
from slugline.fetch.fetcher import UnsafeURLError, fetch_metadata
from slugline.settings import Settings
from tests.support.helpers import SQLITE_ONLY
from tests.support.webpages import LOOPBACK, PageServer, respond, serve_pages

PUBLIC = ipaddress.ip_address("93.184.216.34")


@pytest.fixture
async def server() -> AsyncIterator[PageServer]:
    async for srv in serve_pages("127.0.0.1"):
        yield srv


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Names resolve to a public address and every GET answers a page, recording the port it went to."""
    ports: list[int] = []

    async def resolve(host: str, port: int) -> list[fetcher.IPAddress]:
        return [PUBLIC]

    async def get(target: fetcher.Target, addrs: object, opts: object) -> tuple[int, dict[str, str], bytes]:
        ports.append(target.port)
        return 200, {"content-type": "text/html"}, b"<title>reached</title>"

    monkeypatch.setattr(fetcher, "_resolve", resolve)
    monkeypatch.setattr(fetcher, "_get", get)
    return ports


@pytest.mark.anyio
@pytest.mark.parametrize("url", ["http://93.184.216.34:6379/", "https://example.com:8443/", "http://example.com:22/"])
async def test_other_ports_of_public_addresses_are_refused(url: str, no_network: list[int]) -> None:
    with pytest.raises(UnsafeURLError, match=r"port \d+ is not allowed \(allowed ports: 80, 443\)"):
        await fetch_metadata(url)
    assert no_network == []


@pytest.mark.anyio
async def test_web_ports_and_configured_ones_are_fetched(no_network: list[int]) -> None:
    for url in ("http://example.com/", "https://example.com:443/", "http://example.com:80/x"):
        assert (await fetch_metadata(url)).title == "reached"
    assert (await fetch_metadata("http://example.com:8080/", ports={80, 443, 8080})).title == "reached"
    assert no_network == [80, 443, 80, 8080]


@pytest.mark.anyio
async def test_a_redirect_to_another_port_is_refused(server: PageServer) -> None:
    server.routes["/go"] = respond(302, location="http://93.184.216.34:6379/")
    with pytest.raises(UnsafeURLError, match=r"redirects to a refused location: url port 6379 is not allowed"):
        await fetch_metadata(server.url("/go"), allow_networks=LOOPBACK)


def test_the_setting_lists_the_ports() -> None:
    assert Settings(fetch_ports="443, 8443").fetch_port_set() == {443, 8443}
    with pytest.raises(RuntimeError, match="SLUGLINE_FETCH_PORTS"):
        Settings(fetch_ports="http").fetch_port_set()


@SQLITE_ONLY
def test_analyze_refuses_another_port_with_422(client: TestClient) -> None:
    answer = client.get("/api/v1/analyze", params={"url": "http://93.184.216.34:6379/"})
    assert answer.status_code == 422 and "port 6379 is not allowed" in answer.json()["error"]
