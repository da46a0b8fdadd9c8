"""Redirect rules on the redirect path: by country (a trusted CDN's header, else the GeoIP database, IPv4 and IPv6),
device, OS, browser and language; the first rule that holds wins; a password link asks for its password first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from tests.support.geodb import BERLIN_V4, BERLIN_V6, LYON_V6, PARIS_V4, UNKNOWN_V4, write_db
from tests.support.helpers import CHROME, LINKS, Account, ClientFactory, create

IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.0 Mobile/15E148 Safari/604.1"
)
RULES = [
    {"if": {"country": ["FR"], "device": ["mobile"]}, "to": "https://example.com/fr-mobile"},
    {"if": {"country": ["DE"], "device": ["desktop"]}, "to": "https://example.com/de-desktop"},
    {"if": {"language": ["es"]}, "to": "https://example.com/es"},
]


def _where(tc: TestClient, slug: str, agent: str = CHROME, **headers: str) -> str:
    answer = tc.get(f"/{slug}", headers={"user-agent": agent, **headers}, follow_redirects=False)
    assert answer.status_code == 302, answer.text
    return str(answer.headers["location"])


def _link(tc: TestClient, who: Account, **body: Any) -> dict[str, Any]:
    made = create(tc, who, **{"rules": RULES, **body})
    assert made.status_code == 201, made.text
    found: dict[str, Any] = made.json()
    return found


def test_a_french_mobile_and_a_german_desktop_visitor_go_different_ways(
    client: TestClient, alice: Account, make_client: ClientFactory, tmp_path: Path
) -> None:
    tc, _ = make_client(trusted_proxies="testclient", geoip_db=str(write_db(tmp_path / "geo.mmdb")))
    slug = _link(client, alice)["slug"]
    assert _where(tc, slug, IPHONE, **{"x-forwarded-for": PARIS_V4}) == "https://example.com/fr-mobile"
    assert _where(tc, slug, CHROME, **{"x-forwarded-for": BERLIN_V4}) == "https://example.com/de-desktop"
    assert _where(tc, slug, IPHONE, **{"x-forwarded-for": LYON_V6}) == "https://example.com/fr-mobile"
    assert _where(tc, slug, CHROME, **{"x-forwarded-for": BERLIN_V6}) == "https://example.com/de-desktop"
    assert _where(tc, slug, CHROME, **{"x-forwarded-for": PARIS_V4}) == "https://example.com/"
    assert _where(tc, slug, IPHONE, **{"x-forwarded-for": UNKNOWN_V4}) == "https://example.com/"


def test_a_trusted_cdn_header_wins_and_an_untrusted_one_is_ignored(
    client: TestClient, alice: Account, make_client: ClientFactory, tmp_path: Path
) -> None:
    slug = _link(client, alice)["slug"]
    trusted, _ = make_client(trusted_proxies="testclient", country_header="X-Country")
    assert _where(trusted, slug, IPHONE, **{"cf-ipcountry": "fr"}) == "https://example.com/fr-mobile"
    assert _where(trusted, slug, CHROME, **{"cloudfront-viewer-country": "DE"}) == "https://example.com/de-desktop"
    assert _where(trusted, slug, IPHONE, **{"x-vercel-ip-country": "FR"}) == "https://example.com/fr-mobile"
    assert _where(trusted, slug, IPHONE, **{"x-country": "FR", "cf-ipcountry": "DE"}) == "https://example.com/fr-mobile"
    assert _where(trusted, slug, IPHONE, **{"cf-ipcountry": "XX"}) == "https://example.com/"
    # No trusted proxy: the same headers are the client's own say, and ignored.
    assert _where(client, slug, IPHONE, **{"cf-ipcountry": "FR"}) == "https://example.com/"
    assert _where(client, slug, CHROME, **{"cloudfront-viewer-country": "DE"}) == "https://example.com/"


def test_language_os_and_browser_rules_and_the_query_is_merged(client: TestClient, alice: Account) -> None:
    rules = [
        {"if": {"os": ["iOS"], "browser": ["safari"]}, "to": "https://example.com/ios?x=1"},
        {"if": {"language": ["fr"]}, "to": "https://example.com/fr"},
    ]
    slug = _link(client, alice, rules=rules)["slug"]
    assert _where(client, slug, IPHONE) == "https://example.com/ios?x=1"
    assert _where(client, slug, CHROME, **{"accept-language": "fr-CA,en;q=0.8"}) == "https://example.com/fr"
    assert _where(client, slug, CHROME, **{"accept-language": "en,fr;q=0.8"}) == "https://example.com/"
    answer = client.get(f"/{slug}?utm_source=news", headers={"user-agent": IPHONE}, follow_redirects=False)
    assert answer.headers["location"] == "https://example.com/ios?x=1&utm_source=news"


def test_a_password_link_asks_first_then_follows_its_rules(client: TestClient, alice: Account) -> None:
    link = _link(client, alice, visibility="password", password="open sesame")
    form = client.get(f"/{link['slug']}", headers={"user-agent": IPHONE, "cf-ipcountry": "FR"})
    assert form.status_code == 200 and "password" in form.text.lower()
    rules = [{"if": {"device": ["mobile"]}, "to": "https://example.com/mobile"}]
    assert client.put(f"{LINKS}/{link['id']}", json={"rules": rules}, headers=alice.auth()).status_code == 200
    answer = client.post(
        f"/{link['slug']}", data={"password": "open sesame"}, headers={"user-agent": IPHONE}, follow_redirects=False
    )
    assert (answer.status_code, answer.headers["location"]) == (302, "https://example.com/mobile")


def test_a_rules_change_is_seen_at_once_and_clearing_them_restores_the_destination(
    client: TestClient, alice: Account
) -> None:
    link = _link(client, alice, rules=[{"if": {}, "to": "https://example.com/always"}])
    assert _where(client, link["slug"]) == "https://example.com/always"
    changed = [{"if": {"device": ["desktop"]}, "to": "https://example.com/desk"}]
    client.put(f"{LINKS}/{link['id']}", json={"rules": changed}, headers=alice.auth())
    assert _where(client, link["slug"]) == "https://example.com/desk"
    cleared = client.put(f"{LINKS}/{link['id']}", json={"rules": None}, headers=alice.auth())
    assert cleared.json()["rules"] is None
    assert _where(client, link["slug"]) == "https://example.com/"
