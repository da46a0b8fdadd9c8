"""The figure pages' query string (`dashboard.figures`), in process: the period (last N days, or From-To), interval
and filters read from it, the breakdown rows and filter chips whose links change it, the account's page and a link's
alike, and parameters the analytics refuse shown beside the controls as a 422, never a 500."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html import unescape
from urllib.parse import parse_qsl, urlsplit

import pytest
from starlette.testclient import TestClient

from slugline.analytics.shape import OTHER, TOP_ENTRIES
from tests.dashboard.pages import new_link
from tests.support.helpers import CHROME, click_recorder

IPHONE = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Version/17.0 Mobile Safari/604.1"
NEWS = "https://news.example.com/story"
LINK = re.compile(r'<a href="([^"]*)"[^>]*>([^<]*)</a>')
CHART = re.compile(r'<svg role="img" aria-label="([^"]*)"')


def visit(client: TestClient, slug: str, agent: str, referrer: str | None = None, times: int = 1) -> None:
    headers = {"User-Agent": agent, **({"Referer": referrer} if referrer else {})}
    for _ in range(times):
        assert client.get(f"/{slug}", headers=headers, follow_redirects=False).status_code == 302


def landed(client: TestClient) -> None:
    """The click buffer written out, so the figures count every visit made."""
    assert client.portal is not None
    client.portal.call(click_recorder(client).flush)


def table(page: str, heading: str) -> str:
    """The table named by the heading `heading`."""
    found = re.search(rf'<h2 id="([^"]+)">{re.escape(heading)}</h2>', page)
    assert found, f"no heading {heading}"
    start = page.index(f'<table aria-labelledby="{found[1]}">')
    return page[start : page.index("</table>", start)]


def links(html: str) -> dict[str, str]:
    """{text: href} of the links in `html`."""
    return {unescape(text): unescape(href) for href, text in LINK.findall(html)}


def query(href: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(href).query))


def total(page: str) -> int:
    found = re.search(r'<div class="muted">Clicks</div><div class="value">(\d+)</div>', page)
    assert found, "no clicks total"
    return int(found[1])


def chip(page: str, name: str, value: str) -> str:
    """The link that removes the filter `name`: `value`, by its accessible name."""
    found = re.search(rf'<a href="([^"]*)" aria-label="Remove filter {name}: {re.escape(value)}"', page)
    assert found, f"no chip for {name}: {value}"
    return unescape(found[1])


def test_a_breakdown_row_filters_the_page_and_its_chip_removes_the_filter(owner: TestClient) -> None:
    link_id = new_link(owner, destination_url="https://example.com/fig", slug="fig")
    visit(owner, "fig", CHROME, NEWS, times=2)
    visit(owner, "fig", IPHONE)
    landed(owner)
    page = owner.get("/app/analytics?days=7&interval=week").text
    assert total(page) == 3
    devices = links(table(page, "Devices"))
    assert set(devices) == {"desktop", "mobile"}
    assert query(devices["mobile"]) == {"days": "7", "interval": "week", "device": "mobile"}
    assert query(links(table(page, "Browsers"))["Safari"])["browser"] == "Safari"
    assert query(links(table(page, "Operating systems"))["iOS"])["os"] == "iOS"
    assert query(links(table(page, "Sources"))["news.example.com"])["source"] == "news.example.com"
    assert query(links(table(page, "Referrers"))["news.example.com"])["referrer"] == "news.example.com"

    filtered = owner.get(f"/app/analytics{devices['mobile']}")
    assert filtered.status_code == 200
    assert total(filtered.text) == 1
    assert CHART.findall(filtered.text)[0].startswith("Clicks per week, last 7 days, device mobile: 1 click from")
    assert '<input type="hidden" name="device" value="mobile">' in filtered.text  # the form keeps the filter
    assert "mobile" not in links(table(filtered.text, "Devices"))  # the filter applied is no link to itself
    top = links(table(filtered.text, "Top links"))["fig"]
    assert top == f"/app/links/{link_id}?days=7&interval=week&device=mobile"  # the same period and filters

    one = owner.get(top).text
    assert (total(one), query(chip(one, "device", "mobile"))) == (1, {"days": "7", "interval": "week"})
    assert query(links(table(one, "Browsers"))["Safari"]) == {**query(top), "browser": "Safari"}
    assert total(owner.get(f"/app/analytics{chip(filtered.text, 'device', 'mobile')}").text) == 3


def test_filters_combine_and_all_of_them_are_removed_at_once(owner: TestClient) -> None:
    new_link(owner, destination_url="https://example.com/both", slug="both")
    visit(owner, "both", CHROME, NEWS)
    visit(owner, "both", CHROME)
    visit(owner, "both", IPHONE, NEWS)
    landed(owner)
    page = owner.get("/app/analytics?browser=CHROME&referrer=News.Example.com").text  # any case
    assert total(page) == 1
    assert query(chip(page, "referrer", "News.Example.com")) == {"browser": "CHROME"}
    everything = re.search(r'<a href="([^"]*)">Remove all filters</a>', page)
    assert everything and unescape(everything[1]) == "?"
    assert total(owner.get("/app/analytics").text) == 3


def test_the_other_row_is_no_filter(owner: TestClient) -> None:
    new_link(owner, destination_url="https://example.com/many", slug="many")
    for i in range(TOP_ENTRIES + 1):
        visit(owner, "many", CHROME, f"https://site{i}.example.com/")
    landed(owner)
    referrers = table(owner.get("/app/analytics").text, "Referrers")
    assert f"<td>{OTHER}</td>" in referrers
    assert len(links(referrers)) == TOP_ENTRIES and OTHER not in links(referrers)


def test_from_and_to_win_over_the_period_and_hours_make_a_bar_each(owner: TestClient) -> None:
    today = datetime.now(UTC).date()
    first = today - timedelta(days=2)
    page = owner.get(f"/app/analytics?days=30&from={first}&to={today}&interval=hour").text
    assert page.count('<rect class="bar"') == 3 * 24
    assert CHART.findall(page)[0] == f"Clicks per hour: 0 clicks from {first} to {today}"
    assert '<option value="" selected>Custom range</option>' in page
    assert f'name="from" type="date" value="{first}"' in page and f'name="to" type="date" value="{today}"' in page
    assert '<option value="hour" selected>Hour</option>' in page
    assert '<div class="value">3 days</div>' in page
    monthly = owner.get("/app/analytics?days=90&interval=month").text
    assert CHART.findall(monthly)[0].startswith("Clicks per month, last 90 days: 0 clicks")
    assert '<option value="90" selected>Last 90 days</option>' in monthly
    assert 'name="from" type="date" value=""' in monthly  # blank, so picking another period is not overruled


def test_blank_and_unknown_parameters_are_left_out(owner: TestClient) -> None:
    page = owner.get("/app/analytics?days=&from=&to=&interval=&device=&source=+&utm_source=x")
    assert page.status_code == 200
    assert CHART.findall(page.text)[0].startswith("Clicks per day, last 30 days: 0 clicks")
    assert 'class="chips"' not in page.text


def test_filter_values_are_shown_as_text(owner: TestClient) -> None:
    page = owner.get("/app/analytics", params={"source": "<b>bold</b>"}).text
    assert "<b>bold</b>" not in page
    assert "source: &lt;b&gt;bold&lt;/b&gt;" in page


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"from": "2026-03-02", "to": "2026-03-01"}, "from must not be after to"),
        ({"from": "2025-01-01", "to": "2026-01-01"}, "a period is at most 365 days"),
        ({"to": "2026-03-01"}, "to needs from"),
        ({"days": "30", "interval": "hour"}, "interval hour needs a period of at most 7 days"),
        ({"days": "0"}, "days"),
        ({"days": "week"}, "days"),
        ({"from": "yesterday"}, "from"),
        ({"interval": "year"}, "interval"),
        ({"device": "phone"}, "device"),
    ],
)
@pytest.mark.parametrize("where", ["account", "link"])
def test_parameters_the_analytics_refuse_are_a_422_beside_the_controls(
    owner: TestClient, params: dict[str, str], message: str, where: str
) -> None:
    path = "/app/analytics"
    if where == "link":
        path = f"/app/links/{new_link(owner, destination_url='https://example.com/bad', slug='bad')}"
    res = owner.get(path, params=params)
    assert res.status_code == 422, res.text
    alert = re.search(r'<p class="alert" role="alert" id="e-period">([^<]*)</p>', res.text)
    assert alert and unescape(alert[1]).startswith(message), alert
    assert '<label for="f-from">From</label>' in res.text  # the controls stay, to put it right
    assert 'aria-describedby="h-period e-period"' in res.text
    assert not CHART.findall(res.text)
    for name, value in params.items():
        if name in ("from", "to"):
            assert f'name="{name}" type="date" value="{value}"' in res.text
