"""Countries and cities end to end: clicks placed by a test GeoIP database (IPv4 and IPv6) and by a trusted proxy's
country header show in GET /analytics, a link's analytics, MCP get_analytics and the dashboard (a table with flags
and a world map); `country=` filters every figure; an untrusted caller's header is ignored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from selectolax.lexbor import LexborHTMLParser
from starlette.testclient import TestClient

from slugline.settings import Settings
from tests.dashboard.pages import new_link
from tests.support.geodb import BERLIN_V4, LYON_V6, PARIS_V4, write_db
from tests.support.helpers import (
    BASE_URL,
    CHROME,
    LINKS,
    Account,
    ClientFactory,
    create,
    make_settings,
    wait_for_total,
)
from tests.support.mcp_calls import tool
from tests.support.server import wait_for

ANALYTICS = "/api/v1/analytics"


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url, public_url=BASE_URL)  # /mcp answers only the names its public URL gives


def _visits(make_client: ClientFactory, tmp_path: Path, slug: str) -> None:
    geo = str(write_db(tmp_path / "geo.mmdb"))
    proxied, _ = make_client(trusted_proxies="testclient", geoip_db=geo, click_flush_seconds=0.05)
    direct, _ = make_client(geoip_db=geo, click_flush_seconds=0.05)
    for client, headers in [
        (proxied, {"x-forwarded-for": PARIS_V4}),
        (proxied, {"x-forwarded-for": PARIS_V4, "user-agent": "Mozilla/5.0 (iPhone) Mobile Safari/604.1"}),
        (proxied, {"x-forwarded-for": LYON_V6}),
        (proxied, {"x-forwarded-for": BERLIN_V4}),
        (proxied, {"cf-ipcountry": "IT"}),
        (direct, {"cf-ipcountry": "JP"}),  # not through a trusted proxy: unknown
    ]:
        answer = client.get(f"/{slug}", headers={"user-agent": CHROME, **headers}, follow_redirects=False)
        assert answer.status_code == 302


def _analytics(client: TestClient, who: Account, path: str = ANALYTICS, **query: str) -> dict[str, Any]:
    """One read of the account's analytics (`path`, with `query`): the tests wait for every click first."""
    answer = client.get(path, params=query, headers=who.auth())
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def _page_showing(owner: TestClient, path: str, wanted: tuple[str, ...]) -> str:
    """The dashboard's page at `path` once it shows every text of `wanted` (clicks are buffered); fails after 10 s,
    naming those it still lacked."""
    seen = [""]

    def shown() -> str | None:
        seen[0] = owner.get(path).text
        return seen[0] if all(text in seen[0] for text in wanted) else None

    def missing() -> str:
        return f"{path} to show {[text for text in wanted if text not in seen[0]]}"

    return wait_for(shown, deadline=10, what=missing)


def test_countries_and_cities_in_rest_and_mcp(
    client: TestClient, alice: Account, make_client: ClientFactory, tmp_path: Path
) -> None:
    link = create(client, alice).json()
    _visits(make_client, tmp_path, link["slug"])
    whole = wait_for_total(client, alice, 6)  # every click written
    assert whole["total_clicks"] == 6
    assert whole["countries"] == [
        {"country": "FR", "clicks": 3},
        {"country": "DE", "clicks": 1},
        {"country": "IT", "clicks": 1},
    ]
    assert {row["city"]: row["clicks"] for row in whole["cities"]} == {"Paris": 2, "Lyon": 1, "Berlin": 1}
    french = _analytics(client, alice, country="fr")
    assert (french["country"], french["total_clicks"]) == ("FR", 3)
    assert [row["device"] for row in french["devices"]] == ["desktop", "mobile"]
    assert {row["city"] for row in french["cities"]} == {"Paris", "Lyon"}
    one = _analytics(client, alice, f"{LINKS}/{link['id']}/analytics", city="paris")
    assert (one["total_clicks"], one["countries"]) == (2, [{"country": "FR", "clicks": 2}])
    assert client.get(ANALYTICS, params={"country": "FRA"}, headers=alice.auth()).status_code in (400, 422)
    mcp = tool(client, alice.full, "get_analytics", {"country": "DE"})
    assert (mcp["total_clicks"], mcp["countries"], mcp["cities"]) == (
        1,
        [{"country": "DE", "clicks": 1}],
        [{"city": "Berlin", "clicks": 1}],
    )


def test_the_dashboard_shows_countries_with_flags(
    owner: TestClient, make_client: ClientFactory, tmp_path: Path
) -> None:
    link_id = new_link(owner, destination_url="https://example.com/", slug="geo-dash")
    _visits(make_client, tmp_path, "geo-dash")
    wanted = ('aria-hidden="true">🇫🇷</span>', "🇩🇪", "🇮🇹", "Lyon", "Berlin")  # every click written
    page = _page_showing(owner, "/app/analytics", wanted)
    assert 'id="t-countries"' in page and 'id="t-cities"' in page
    assert "🇩🇪" in owner.get(f"/app/links/{link_id}").text
    assert "🇩🇪" not in owner.get("/app/analytics?country=FR").text.split('id="t-countries"')[1]


def _map_shades(page: str) -> dict[str, tuple[str, str | None]]:
    """Each country on the page's map: (its shade class, the link around it)."""
    tree = LexborHTMLParser(page)
    assert tree.css_first("figure.world-map svg[role=img]") is not None
    out = {}
    for path in tree.css("figure.world-map path"):
        parent = path.parent
        href = parent.attributes.get("href") if parent is not None and parent.tag == "a" else None
        out[path.attributes["data-country"] or ""] = (path.attributes["class"] or "", href)
    return out


def test_the_dashboard_draws_the_countries_on_a_world_map(
    owner: TestClient, make_client: ClientFactory, tmp_path: Path
) -> None:
    link_id = new_link(owner, destination_url="https://example.com/", slug="geo-map")
    assert "world-map" not in owner.get("/app/analytics").text  # no click has a country yet: no map
    _visits(make_client, tmp_path, "geo-map")
    page = _page_showing(owner, "/app/analytics?days=7", ("Italy: 1 click",))  # every click written
    assert '<h2 id="t-map">Clicks by country</h2>' in page and 'href="#t-countries"' in page
    assert 'aria-labelledby="world-map-title"' in page and ">Clicks by country: world map</title>" in page
    shades = _map_shades(page)
    # FR 3 clicks (the most: darkest), DE and IT 1; JP's header came from an untrusted caller: no country, not drawn.
    assert shades["FR"] == ("s5", "?days=7&country=FR")
    assert shades["DE"] == ("s1", "?days=7&country=DE")
    assert shades["IT"] == ("s1", "?days=7&country=IT")
    assert shades["JP"] == ("s0", None) and shades["GB"] == ("s0", None)
    assert "France: 3 clicks" in page and "Japan: no clicks" in page

    french = _map_shades(owner.get("/app/analytics?country=FR").text)
    assert french["FR"] == ("s5", None)  # the filter applied: no link to it
    assert {code for code, (shade, _) in french.items() if shade != "s0"} == {"FR"}
    one = _map_shades(owner.get(f"/app/links/{link_id}?city=Berlin").text)  # a link's page has it too
    assert one["DE"] == ("s5", "?city=Berlin&country=DE")
    assert {code for code, (shade, _) in one.items() if shade != "s0"} == {"DE"}
