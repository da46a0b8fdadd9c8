"""The import page in a real Chromium against a real `slugline serve`: choosing a file shows its first rows before
anything is sent; importing shows the report, and the links are in the list."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.dashboard.browser import PHONE, opened, served, sign_up_developer

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

    from tests.support.server import Server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]
SHLINK = (
    "createdAt,domain,shortCode,shortUrl,longUrl,title,tags,visits\n"
    + "".join(
        f"2024-03-0{n}T10:00:00+00:00,,shl-{n},https://s.test/shl-{n},https://example.com/{n},Page {n},news,{n}\n"
        for n in range(1, 8)
    )
    + '2024-03-09T10:00:00+00:00,,"bad slug",https://s.test/x,https://example.com/x,"A, quoted",,0\n'
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with served(tmp_path_factory.mktemp("import-page")) as running:
        yield running


def test_the_page_previews_the_first_rows_then_reports(page: Page, server: Server, tmp_path: Path) -> None:
    sign_up_developer(page, server)
    export = tmp_path / "shlink-export.csv"
    export.write_text(SHLINK)
    page.goto(f"{server.url}/app/links")
    page.get_by_role("link", name="Import").click()
    page.get_by_label("Format").select_option("shlink")
    page.get_by_label("File").set_input_files(str(export))
    preview = page.locator("#import-preview-table")
    preview.locator("tbody tr").first.wait_for()
    assert preview.locator("thead th").all_inner_texts()[:5] == [
        "createdAt",
        "domain",
        "shortCode",
        "shortUrl",
        "longUrl",
    ]
    rows = preview.locator("tbody tr")
    assert rows.count() == 8 and rows.nth(7).locator("td").nth(5).inner_text() == "A, quoted"
    page.get_by_role("button", name="Import").click()
    page.wait_for_url(f"{server.url}/app/links/import")
    report = page.locator("#import-report")
    assert report.locator('[data-count="created"]').inner_text() == "7"
    assert report.locator('[data-count="errors"]').inner_text() == "1"
    assert "slug" in report.locator("tbody").inner_text()
    page.goto(f"{server.url}/app/links?q=shl-3")
    assert "https://example.com/3" in page.content()


def test_the_preview_of_a_wide_file_scrolls_in_its_box_on_a_phone(
    browser: Browser, server: Server, tmp_path: Path
) -> None:
    export = tmp_path / "shlink-export.csv"
    export.write_text(SHLINK)
    with opened(browser, PHONE) as page:
        sign_up_developer(page, server)
        page.goto(f"{server.url}/app/links/import")
        page.get_by_label("File").set_input_files(str(export))
        page.locator("#import-preview-table tbody tr").first.wait_for()
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # the page: no sideways
        assert page.locator("#import-preview-table").evaluate(
            "t => t.parentElement.scrollWidth > t.parentElement.clientWidth"
        )
