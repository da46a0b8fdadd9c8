"""The links page's export buttons download what `GET /api/v1/links/export` gives, with the page's search."""

from __future__ import annotations

import orjson
from starlette.testclient import TestClient

from tests.dashboard.pages import new_link


def test_the_links_page_exports_its_links(owner: TestClient) -> None:
    new_link(owner, destination_url="https://example.com/a", slug="launch-a")
    new_link(owner, destination_url="https://example.com/b", slug="other-b")
    page = owner.get("/app/links", params={"q": "launch"})
    assert (
        'href="/app/links/export.csv?q=launch"' in page.text and 'href="/app/links/export.ndjson?q=launch"' in page.text
    )
    got = owner.get("/app/links/export.ndjson", params={"q": "launch"})
    assert got.status_code == 200 and got.headers["content-disposition"] == 'attachment; filename="links.ndjson"'
    assert [orjson.loads(line)["slug"] for line in got.content.splitlines()] == ["launch-a"]
    got = owner.get("/app/links/export.csv")
    assert got.status_code == 200 and got.text.count("https://example.com/") == 2
    assert owner.get("/app/links/export.xml").status_code == 422


def test_export_needs_a_session(client: TestClient) -> None:
    got = client.get("/app/links/export.csv", follow_redirects=False)
    assert got.status_code in (302, 303) and got.headers["location"].startswith("/app/login")
