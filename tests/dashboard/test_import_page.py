"""The links import page: the upload goes through the code of `POST /api/v1/links/import` and the page shows its
report; a form without its CSRF token imports nothing."""

from __future__ import annotations

import orjson
from starlette.testclient import TestClient

from tests.dashboard.pages import csrf_of, new_link
from tests.support.helpers import SQLITE_ONLY

FILE = b"".join(
    orjson.dumps(row) + b"\n"
    for row in (
        {"slug": "from-file", "destination_url": "https://example.com/file"},
        {"slug": "taken-here", "destination_url": "https://example.com/other"},
    )
)


@SQLITE_ONLY
def test_the_page_imports_a_file_and_shows_the_report(owner: TestClient) -> None:
    new_link(owner, destination_url="https://example.com/mine", slug="taken-here")
    assert 'href="/app/links/import"' in owner.get("/app/links").text
    token = csrf_of(owner, "/app/links/import")
    sent = owner.post(
        "/app/links/import",
        data={"csrf_token": token, "format": "", "dry_run": "true"},
        files={"file": ("links.ndjson", FILE, "application/x-ndjson")},
    )
    assert sent.status_code == 200 and "Dry run: nothing was written" in sent.text
    assert "from-file" not in owner.get("/app/links").text
    sent = owner.post(
        "/app/links/import",
        data={"csrf_token": token},
        files={"file": ("links.ndjson", FILE, "application/x-ndjson")},
    )
    assert sent.status_code == 200 and "Import done" in sent.text
    assert 'data-count="created">1<' in sent.text and 'data-count="conflicts">1<' in sent.text
    assert "slug &#39;taken-here&#39; is already taken" in sent.text
    assert "from-file" in owner.get("/app/links").text


@SQLITE_ONLY
def test_an_upload_without_the_token_or_with_a_bad_format_imports_nothing(owner: TestClient) -> None:
    files = {"file": ("links.ndjson", FILE, "application/x-ndjson")}
    refused = owner.post("/app/links/import", data={"csrf_token": "forged"}, files=files)
    assert refused.status_code == 403
    token = csrf_of(owner, "/app/links/import")
    wrong = owner.post("/app/links/import", data={"csrf_token": token, "format": "xml"}, files=files)
    assert wrong.status_code == 422 and "format must be one of" in wrong.text
    assert "from-file" not in owner.get("/app/links").text


def test_the_page_needs_a_session(client: TestClient) -> None:
    got = client.get("/app/links/import", follow_redirects=False)
    assert got.status_code in (302, 303) and got.headers["location"].startswith("/app/login")
