"""The figure controls in a real Chromium against a real `slugline serve`: a custom range by its From and To dates,
an hourly chart, a device row that filters the whole page and the chip that removes the filter; with script and
without it, finding every element by its label or role."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date, timedelta
from typing import TYPE_CHECKING

import httpx
import pytest

from tests.dashboard.browser import create_link, opened, served, sign_up_developer, until

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

    from tests.support.server import Server

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
AGENTS = [  # two desktop clicks, one mobile
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Version/17.0 Mobile Safari/604.1",
]
COUNTRIES = ["FR", "FR", "DE"]  # as a trusted proxy's header names them
CHART = re.compile(r"^Clicks per ")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # The clicks come from this machine, taken for a proxy that names each visitor's country (CF-IPCountry).
    env = {"SLUGLINE_RATE_LIMIT_ANONYMOUS": "100000", "SLUGLINE_TRUSTED_PROXIES": "127.0.0.1"}
    with served(tmp_path_factory.mktemp("figures"), **env) as running:
        yield running


def clicked_account(page: Page, server: Server) -> date:
    """An account with one link clicked three times (two desktop from France, one mobile from Germany), on its
    analytics page once the clicks show; returns the server's today (UTC), the chart's last day."""
    name = sign_up_developer(page, server)
    slug = f"f-{name}"
    create_link(page, server, **{"Destination URL": "https://example.com/figures", "Slug": slug})
    for agent, country in zip(AGENTS, COUNTRIES, strict=True):
        headers = {"User-Agent": agent, "CF-IPCountry": country}
        assert httpx.get(f"{server.url}/{slug}", headers=headers).status_code == 302

    def three_clicks() -> str | None:
        page.goto(f"{server.url}/app/analytics")
        name = chart(page)
        return name if ": 3 clicks from " in name else None

    return date.fromisoformat(until(three_clicks, "the three clicks in the chart").rsplit(" to ", 1)[1])


def chart(page: Page) -> str:
    return page.get_by_role("img", name=CHART).get_attribute("aria-label") or ""


def test_a_custom_range_by_the_hour_filtered_by_a_device_row_and_the_chip_removed(page: Page, server: Server) -> None:
    today = clicked_account(page, server)
    first = today - timedelta(days=2)
    page.get_by_label("Period", exact=True).select_option(label="Custom range")
    page.get_by_label("From", exact=True).fill(first.isoformat())
    page.get_by_label("To", exact=True).fill(today.isoformat())
    page.get_by_label("Interval", exact=True).select_option(label="Hour")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(re.compile(r"interval=hour"))
    assert chart(page) == f"Clicks per hour: 3 clicks from {first} to {today}"
    assert page.locator("figure.chart rect.bar").count() == 3 * 24

    page.get_by_role("table", name="Devices").get_by_role("link", name="mobile", exact=True).click()
    page.wait_for_url(re.compile(r"device=mobile"))
    remove = page.get_by_role("link", name="Remove filter device: mobile")
    assert remove.is_visible()
    assert chart(page) == f"Clicks per hour, device mobile: 1 click from {first} to {today}"
    assert page.locator("figure.chart rect.bar").count() == 3 * 24  # the range and interval stay
    assert page.get_by_role("table", name="Devices").get_by_role("row").count() == 2  # its header and mobile
    assert page.get_by_label("From", exact=True).input_value() == first.isoformat()

    remove.click()
    page.wait_for_url(lambda url: "device=" not in url)
    assert page.get_by_role("link", name=re.compile(r"^Remove filter")).count() == 0
    assert chart(page) == f"Clicks per hour: 3 clicks from {first} to {today}"

    page.get_by_label("Period", exact=True).select_option(label="Last 7 days")  # the dates are cleared with it
    assert page.get_by_label("From", exact=True).input_value() == ""
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(re.compile(r"days=7"))
    assert chart(page).startswith("Clicks per hour, last 7 days: 3 clicks")
    assert page.locator("figure.chart rect.bar").count() == 7 * 24


def test_without_script_dates_filled_are_the_period(browser: Browser, server: Server) -> None:
    with opened(browser, java_script_enabled=False) as page:
        today = clicked_account(page, server)
        page.get_by_label("From", exact=True).fill((today - timedelta(days=6)).isoformat())  # the period left as it is
        page.get_by_role("button", name="Show").click()
        page.wait_for_url(re.compile(r"from="))
        assert chart(page) == f"Clicks per day: 3 clicks from {today - timedelta(days=6)} to {today}"
        assert page.get_by_label("Period", exact=True).input_value() == ""  # Custom range
        page.get_by_role("table", name="Devices").get_by_role("link", name="desktop", exact=True).click()
        assert chart(page).startswith("Clicks per day, device desktop: 2 clicks")
        page.get_by_role("link", name="Remove filter device: desktop").click()
        assert chart(page).startswith("Clicks per day: 3 clicks")


def test_the_top_link_opens_its_page_with_the_same_period_and_filters(page: Page, server: Server) -> None:
    clicked_account(page, server)
    page.goto(f"{page.url}?days=7&interval=week")
    page.get_by_role("table", name="Browsers").get_by_role("link", name="Safari").click()
    page.wait_for_url(re.compile(r"browser=Safari"))
    page.get_by_role("table", name="Top links").get_by_role("link").click()
    page.wait_for_url(re.compile(r"/app/links/lnk_\w+\?days=7&interval=week&browser=Safari$"))
    assert re.match(r"Clicks per week of /\S+, last 7 days, browser Safari: 1 click from", chart(page))
    assert page.get_by_role("link", name="Remove filter browser: Safari").is_visible()


def test_the_world_map_shades_each_country_and_a_country_filters_the_page(page: Page, server: Server) -> None:
    clicked_account(page, server)
    world = page.get_by_role("img", name="Clicks by country: world map", exact=True)
    assert world.is_visible()
    box = world.bounding_box()
    assert box is not None and box["width"] > 900 and 350 < box["height"] < box["width"] / 2  # the page's width
    described = world.get_attribute("aria-describedby") or ""
    assert page.locator(f"#{described}").text_content() == (
        "2 countries shaded by clicks, darker for more, the most from France (2 clicks). "
        "The Countries table lists every country's clicks."
    )

    def fill(code: str) -> list[str]:
        style = "p => [getComputedStyle(p).fill, getComputedStyle(p).fillOpacity]"
        found: list[str] = page.locator(f'path[data-country="{code}"]').evaluate(style)
        return found

    accent = page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--accent')").strip()
    assert accent == "#0b5cad"
    assert fill("FR") == ["rgb(11, 92, 173)", "1"]  # the most: the accent itself
    assert fill("DE")[0] == "rgb(11, 92, 173)" and float(fill("DE")[1]) < 0.5  # the fewest: lightest
    assert fill("GB")[0] != "rgb(11, 92, 173)"  # no clicks: land grey
    assert page.locator('path[data-country="DE"] title').text_content() == "Germany: 1 click"

    page.get_by_role("link", name="Countries as a table").click()
    page.wait_for_url(re.compile(r"#t-countries$"))
    assert page.get_by_role("table", name="Countries").get_by_role("row").count() == 3  # its header, FR and DE

    page.locator('path[data-country="DE"]').click()  # as the table's row for Germany does
    page.wait_for_url(re.compile(r"country=DE"))
    assert re.match(r"Clicks per day, last 30 days, country DE: 1 click from ", chart(page))
    assert page.get_by_role("link", name="Remove filter country: DE").is_visible()
    assert fill("DE") == ["rgb(11, 92, 173)", "1"] and fill("FR")[0] != "rgb(11, 92, 173)"
