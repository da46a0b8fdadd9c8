"""The new-link form's "Fetch title and description" box, in a real Chromium against a real `slugline serve`: the title
comes from a local page (the server's test switch lets the fetcher reach loopback), and a page that cannot be read
leaves the link made with a notice that says why."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.dashboard.browser import served, sign_up_developer
from tests.support.webpages import html_site

if TYPE_CHECKING:
    from playwright.sync_api import Page

    from tests.support.server import Server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]
PAGE = b"""<html><head><title>Gardening for beginners</title>
<meta name="description" content="Seeds, soil and patience"></head><body>Hello</body></html>"""


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with html_site(PAGE) as url:
        yield url


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with served(tmp_path_factory.mktemp("auto-meta")) as running:
        yield running


def _create_with_auto_meta(page: Page, server: Server, destination: str) -> None:
    sign_up_developer(page, server)
    page.goto(f"{server.url}/app/links/new")
    page.get_by_label("Destination URL", exact=True).fill(destination)
    page.get_by_label("Fetch title and description").check()
    page.get_by_role("button", name="Create link").click()
    page.wait_for_url(re.compile(r".*/app/links/lnk_\w+(\?.*)?$"))


def test_the_box_fills_title_and_description_from_the_page(page: Page, server: Server, site: str) -> None:
    _create_with_auto_meta(page, server, f"{site}/garden")
    assert "Gardening for beginners" in page.get_by_role("heading", level=1).inner_text()
    assert "Seeds, soil and patience" in page.content()
    assert page.locator("p.notice").count() == 0  # nothing failed: no notice


def test_a_page_that_cannot_be_read_leaves_the_link_made_with_a_notice(page: Page, server: Server) -> None:
    _create_with_auto_meta(page, server, "http://127.0.0.1:9/closed")  # nothing listens on the discard port
    notice = page.locator("p.notice").inner_text()
    assert "could not be fetched: " in notice and notice.split("could not be fetched: ", 1)[1].strip()
    page.goto(f"{server.url}/app/links")
    assert "127.0.0.1:9/closed" in page.content()
