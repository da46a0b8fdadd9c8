"""Where clicks come from, as the click writer records them: the GeoIP database's country, region and city of the
visitor's address (IPv4 and IPv6), or a trusted proxy's country header; an untrusted caller's header is ignored; the
address itself is never stored."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sqlalchemy import text
from starlette.testclient import TestClient

from slugline.runtime import Runtime
from tests.support.geodb import BERLIN_V6, LYON_V6, PARIS_V4, UNKNOWN_V4, write_db
from tests.support.helpers import CHROME, LINKS, Account, ClientFactory, create


def _clicks(client: TestClient, who: Account, link_id: str, total: int) -> list[dict[str, Any]]:
    """The link's clicks, oldest first, once `total` are written (the writer flushes within its interval)."""
    end = time.monotonic() + 10
    while True:
        found: list[dict[str, Any]] = client.get(f"{LINKS}/{link_id}/clicks?per=100", headers=who.auth()).json()["data"]
        if len(found) >= total or time.monotonic() > end:
            return found[::-1]
        time.sleep(0.05)


def _visit(tc: TestClient, slug: str, **headers: str) -> None:
    answer = tc.get(f"/{slug}", headers={"user-agent": CHROME, **headers}, follow_redirects=False)
    assert answer.status_code == 302


def test_clicks_are_placed_by_the_database_and_a_trusted_header(
    client: TestClient, alice: Account, make_client: ClientFactory, tmp_path: Path
) -> None:
    link = create(client, alice).json()
    geo = str(write_db(tmp_path / "geo.mmdb"))
    proxied, rt = make_client(trusted_proxies="testclient", geoip_db=geo, click_flush_seconds=0.05)
    _visit(proxied, link["slug"], **{"x-forwarded-for": PARIS_V4})
    _visit(proxied, link["slug"], **{"x-forwarded-for": LYON_V6})
    _visit(proxied, link["slug"], **{"x-forwarded-for": BERLIN_V6, "cf-ipcountry": "DE"})
    _visit(proxied, link["slug"], **{"x-forwarded-for": UNKNOWN_V4, "cf-ipcountry": "IT"})
    _visit(proxied, link["slug"], **{"x-forwarded-for": PARIS_V4, "cloudfront-viewer-country": "ES"})
    _visit(proxied, link["slug"], **{"x-forwarded-for": UNKNOWN_V4})
    direct, _ = make_client(geoip_db=geo, click_flush_seconds=0.05)  # no trusted proxy: the header is the client's
    _visit(direct, link["slug"], **{"cf-ipcountry": "FR"})
    places = [(c["country"], c["region"], c["city"]) for c in _clicks(client, alice, link["id"], 7)]
    assert places == [
        ("FR", "Île-de-France", "Paris"),
        ("FR", "Auvergne-Rhône-Alpes", "Lyon"),
        ("DE", "Land Berlin", "Berlin"),  # the header agrees with the database: its city is kept
        ("IT", None, None),
        ("ES", None, None),  # the proxy's country wins; the database's city of another country is not kept
        (None, None, None),
        (None, None, None),  # testclient is not an address, and its header was not believed
    ]
    _no_address_stored(rt)


def _no_address_stored(rt: Runtime) -> None:
    with rt.db.engine.connect() as conn:
        rows = conn.execute(text("SELECT * FROM clicks")).all()
    stored = " ".join(str(value) for row in rows for value in row)
    for address in (PARIS_V4, LYON_V6, BERLIN_V6, UNKNOWN_V4):
        assert address not in stored


def test_a_rows_values_are_counted_alike_by_every_reader() -> None:
    from slugline.clicks import store
    from slugline.webhooks import clicks as webhook_clicks

    assert store.ROW_VALUES == webhook_clicks.ROW_VALUES == 12
