"""The interactive API docs: Swagger UI served by this server alone, from the fastapi-swagger package's files, under
a Content-Security-Policy that lets no other origin's code run on the dashboard's origin (a browser proves the page
works under it: tests/api/test_docs_browser.py)."""

from __future__ import annotations

import re
from importlib.resources import files

import fastapi_swagger
from starlette.testclient import TestClient

from tests.support.helpers import SQLITE_ONLY

DOCS = "/api/v1/docs"
TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
# What the page may draw on: its own origin, and the data: images of Swagger UI's stylesheet.
SOURCES = {"'self'", "'none'", "data:"}


def linked(page: str) -> list[str]:
    return re.findall(r'(?:src|href)="([^"]*)"', page)


def policy(header: str) -> dict[str, list[str]]:
    directives = (part.split() for part in header.split(";") if part.strip())
    return {name: sources for name, *sources in directives}


@SQLITE_ONLY
def test_the_page_names_no_other_origin(client: TestClient) -> None:
    page = client.get(DOCS)
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert "://" not in page.text and "//" not in "".join(linked(page.text)), page.text
    assert linked(page.text) and all(url.startswith(f"{DOCS}/assets/") for url in linked(page.text)), page.text
    assert "<script>" not in page.text  # every script is a file of ours: the policy allows no inline one


@SQLITE_ONLY
def test_the_page_allows_scripts_and_everything_else_from_its_own_origin_only(client: TestClient) -> None:
    page = client.get(DOCS)
    rules = policy(page.headers["content-security-policy"])
    assert rules["default-src"] == ["'none'"]
    assert rules["script-src"] == ["'self'"]
    assert rules["frame-ancestors"] == ["'none'"]
    assert {source for sources in rules.values() for source in sources} <= SOURCES, rules
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["cache-control"] == "no-store"  # it names the assets' current digests


@SQLITE_ONLY
def test_each_asset_is_served_with_its_type_and_cached_for_a_year(client: TestClient) -> None:
    for url in linked(client.get(DOCS).text):
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert asset.headers["content-type"] == TYPES[url[url.rindex(".") :]], url
        assert asset.headers["cache-control"] == "public, max-age=31536000, immutable", url
        assert asset.headers["x-content-type-options"] == "nosniff", url
        assert "ratelimit-limit" not in asset.headers, url  # static files, as the dashboard's: not rate limited


@SQLITE_ONLY
def test_swagger_ui_comes_from_the_packages_files(client: TestClient) -> None:
    """Swagger UI is the one fastapi-swagger ships, byte for byte. Its files' names are what that package does not
    promise to keep (pyproject.toml bounds it below 0.5): a release that moves them fails here."""
    shipped = files(fastapi_swagger) / "resources"
    urls = linked(client.get(DOCS).text)
    for name in ("swagger-ui-bundle.js", "swagger-ui.css"):
        assert (shipped / name).is_file(), f"fastapi-swagger no longer ships resources/{name}"
        [url] = [url for url in urls if url.endswith(f"/{name}")]
        assert client.get(url).content == (shipped / name).read_bytes()


@SQLITE_ONLY
def test_the_start_up_script_loads_the_apis_document(client: TestClient) -> None:
    page = client.get(DOCS).text
    [start] = [url for url in linked(page) if url.endswith("/docs.js")]
    assert 'data-openapi="/api/v1/openapi.json"' in page
    script = client.get(start).text
    assert "SwaggerUIBundle(" in script and "dataset.openapi" in script and "validatorUrl: null" in script


@SQLITE_ONLY
def test_an_asset_not_named_by_the_page_is_not_found(client: TestClient) -> None:
    [url] = [url for url in linked(client.get(DOCS).text) if url.endswith("/swagger-ui.css")]
    assert client.get(url).status_code == 200 and url.startswith(f"{DOCS}/assets/"), url
    stale = re.sub(r"/assets/[^/]+/", "/assets/0123456789ab/", url)
    for wrong in (stale, url.replace("swagger-ui.css", "index.html"), f"{DOCS}/assets/swagger-ui.css"):
        answer = client.get(wrong)
        assert (answer.status_code, answer.json()) == (404, {"error": "not found"}), wrong


@SQLITE_ONLY
def test_fastapis_oauth2_redirect_page_is_gone(client: TestClient) -> None:
    """An inline-script page of FastAPI's own: the API signs in with bearer tokens, not through Swagger UI."""
    assert client.get("/docs/oauth2-redirect").status_code == 404
