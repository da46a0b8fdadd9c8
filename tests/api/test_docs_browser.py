"""The API docs in a real Chromium against a real `slugline serve`, with every request to another origin refused:
Swagger UI draws every operation from the server's own files, and the page's Content-Security-Policy blocks nothing
it needs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import httpx
import pytest

from tests.dashboard.browser import served, until

if TYPE_CHECKING:
    from playwright.sync_api import Page, Route

    from tests.support.server import Server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]
# Collects what the page's policy refuses; added before any script of the page runs (DevTools runs it, not the page).
WATCH_VIOLATIONS = """window.violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.violations.push(e.violatedDirective + " " + e.blockedURI);
});
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with served(tmp_path_factory.mktemp("api-docs")) as running:
        yield running


def test_swagger_ui_shows_every_operation_with_other_origins_unreachable(page: Page, server: Server) -> None:
    document = httpx.get(f"{server.url}/api/v1/openapi.json").json()
    # Swagger UI draws an operation once under each of its tags (every one of ours has one), and so each webhook.
    described = [*document["paths"].values(), *document.get("webhooks", {}).values()]
    operations = sum(max(1, len(op.get("tags", ()))) for methods in described for op in methods.values())
    elsewhere: list[str] = []

    def this_server_only(route: Route) -> None:
        if route.request.url.startswith(f"{server.url}/"):
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    page.context.route("**/*", this_server_only)
    page.add_init_script(WATCH_VIOLATIONS)
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{server.url}/api/v1/docs")
    until(lambda: page.locator(".opblock").count() == operations, f"the {operations} operations")
    assert "Slugline" in page.locator(".information-container .title").inner_text()
    assert page.locator(".opblock-summary-path[data-path='/api/v1/health']").is_visible()
    assert page.evaluate("window.violations") == []
    assert (elsewhere, errors) == ([], [])
