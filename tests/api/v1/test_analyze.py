"""`/analyze` and `auto_meta` against a local page: what is read from it, and which URLs are never fetched."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from tests.support.helpers import SQLITE_ONLY, Account, ClientFactory, create
from tests.support.webpages import html_site

pytestmark = SQLITE_ONLY  # what is tested is the fetching: the store plays no part
PAGE = b"""<html><head><title>Plain title</title><meta property="og:title" content="OG Title">
<meta name="description" content="A page about things"><link rel="icon" href="/fav.png"></head></html>"""


@pytest.fixture
def site() -> Iterator[str]:
    with html_site(PAGE) as url:
        yield url


def test_analyze_reads_the_page(client: TestClient, site: str) -> None:
    res = client.get("/api/v1/analyze", params={"url": site + "/page"})
    assert res.status_code == 200, res.text
    body = res.json()
    assert body["title"] == "OG Title" and body["description"] == "A page about things"
    assert body["favicon"] == site + "/fav.png" and body["status"] == 200 and body["reachable"] is True
    assert body["final_url"] == site + "/page" and body["redirects"] == []


def test_auto_meta_fills_title_and_description(client: TestClient, alice: Account, site: str) -> None:
    res = create(client, alice, destination_url=site + "/", auto_meta=True)
    assert res.status_code == 201
    assert res.json()["title"] == "OG Title" and res.json()["description"] == "A page about things"
    explicit = create(client, alice, destination_url=site + "/", auto_meta=True, title="Mine").json()
    assert explicit["title"] == "Mine" and explicit["description"] == "A page about things"


def test_auto_meta_never_fails_a_create_and_says_what_failed(client: TestClient, alice: Account) -> None:
    res = create(client, alice, destination_url="http://127.0.0.1:9/closed", auto_meta=True)
    assert res.status_code == 201 and res.json()["title"] is None
    assert (
        res.json()["meta_error"]
        == client.get("/api/v1/analyze", params={"url": "http://127.0.0.1:9/"}).json()["fetch_error"]
    )
    refused = create(client, alice, destination_url="http://10.1.2.3/", auto_meta=True)  # refused before any packet
    assert refused.status_code == 201 and "private or reserved address" in refused.json()["meta_error"]


def test_no_meta_error_when_the_fetch_worked_or_was_not_asked(client: TestClient, alice: Account, site: str) -> None:
    assert "meta_error" not in create(client, alice, destination_url=site + "/", auto_meta=True).json()
    assert "meta_error" not in create(client, alice, destination_url="http://127.0.0.1:9/").json()


def test_unreachable_site_is_200_with_fetch_error(client: TestClient) -> None:
    res = client.get("/api/v1/analyze", params={"url": "http://127.0.0.1:9/"})
    assert res.status_code == 200
    assert res.json()["reachable"] is False and res.json()["fetch_error"]


@pytest.mark.parametrize(
    "url",
    [
        "not a url",
        "ftp://example.com/",
        "http://127.0.0.1/",
        "http://[::1]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://2130706433/",
    ],
)
def test_private_or_invalid_urls_are_422(make_client: ClientFactory, url: str) -> None:
    strict, _ = make_client(fetch_allow_private=False)
    res = strict.get("/api/v1/analyze", params={"url": url})
    assert res.status_code == 422 and res.json()["error"].startswith("url")


def test_anonymous_analyze_is_limited_hard(make_client: ClientFactory, site: str) -> None:
    tc, _ = make_client(rate_limit_analyze_anonymous=2)
    codes = [tc.get("/api/v1/analyze", params={"url": site}).status_code for _ in range(3)]
    assert codes == [200, 200, 429]
