"""The dashboard in a real Chromium against a real `slugline serve`: from nothing to a key and a link with a chart,
as a person does it, finding every element by its label or role."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date, timedelta
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from tests.dashboard.browser import DESKTOP, PHONE, create_link, opened, served, sign_up, sign_up_developer, until
from tests.dashboard.pages import PASSWORD
from tests.support.server import Server, set_plan

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # Each test signs up through the form: more than the default registrations an address may make in an hour. Every
    # page counts against the address's anonymous rate, like an API call (60 a minute): the module's pages, and its
    # waits that reload a page until clicks show, all come from this one address.
    limits = {"SLUGLINE_RATE_LIMIT_REGISTER": "100", "SLUGLINE_RATE_LIMIT_ANONYMOUS": "100000"}
    with served(tmp_path_factory.mktemp("dashboard"), **limits) as running:
        yield running


def test_newcomer_gets_from_nothing_to_a_key_and_a_link_with_a_chart(page: Page, server: Server) -> None:
    name = sign_up(page, server)
    # A new account is on the free plan: the pages say which plan gives access, as the API answers 403.
    notice = page.get_by_role("alert").inner_text()
    assert "developer plan" in notice
    assert "links" in notice and "API" not in notice  # what this page needs, not what the API answers
    page.get_by_role("navigation").get_by_role("link", name="Settings").click()
    assert "developer plan" in page.get_by_role("status").inner_text()
    set_plan(server, name, "developer")

    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(f"{server.url}/app/login")
    page.get_by_label("Username").fill(name)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{server.url}/app/")

    link_id = create_link(
        page,
        server,
        **{"Destination URL": "https://doc.rust-lang.org/book/", "Slug": f"book-{name}", "Title": "The Rust Book"},
        Hashtags="rust, books",
    )
    secret_id = create_link(
        page,
        server,
        **{"Destination URL": "https://example.com/secret", "Slug": f"sec-{name}", "Visibility": "Password"},
        Password="open sesame",
    )
    assert page.get_by_text("password", exact=True).is_visible()

    page.goto(f"{server.url}/app/links")
    page.get_by_label("Search").fill("rust #books")
    page.get_by_label("Search").press("Enter")
    rows = page.get_by_role("row").filter(has=page.get_by_role("link", name=f"book-{name}"))
    assert rows.count() == 1
    assert page.get_by_role("link", name=f"sec-{name}").count() == 0

    for agent in ("Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0)"):
        res = httpx.get(f"{server.url}/book-{name}", headers={"User-Agent": agent}, follow_redirects=False)
        assert res.status_code == 302

    def chart_with_clicks() -> str | None:
        page.goto(f"{server.url}/app/links/{link_id}")
        label = page.get_by_role("img", name=re.compile(r"^Clicks per day")).get_attribute("aria-label") or ""
        return label if ": 2 clicks" in label else None

    until(chart_with_clicks, "the two clicks in the chart")
    qr = page.get_by_role("img", name=re.compile(r"^QR code"))
    assert qr.evaluate("img => img.complete && img.naturalWidth") > 0
    assert page.get_by_role("cell", name="mobile").count() >= 1  # devices and the latest clicks

    page.get_by_role("navigation").get_by_role("link", name="Settings").click()
    page.get_by_role("button", name="Generate full-access key").click()
    full = page.get_by_label("New API key").input_value()
    assert full.startswith("svc_live_")
    page.get_by_role("button", name="Generate public-only key").click()
    public = page.get_by_label("New API key").input_value()
    assert public.startswith("svc_pub_")

    api = f"{server.url}/api/v1"
    listed = httpx.get(f"{api}/links", headers={"Authorization": f"Bearer {full}"}).json()
    assert {link["id"] for link in listed["data"]} == {link_id, secret_id}
    listed = httpx.get(f"{api}/links", headers={"Authorization": f"Bearer {public}"}).json()
    assert [link["id"] for link in listed["data"]] == [link_id]

    page.get_by_role("button", name="Revoke public-only key").click()
    assert httpx.get(f"{api}/me", headers={"Authorization": f"Bearer {public}"}).status_code == 401
    assert httpx.get(f"{api}/me", headers={"Authorization": f"Bearer {full}"}).status_code == 200

    session = next(c["value"] for c in page.context.cookies() if c["name"] == "slugline_session")
    assert httpx.get(f"{api}/me", headers={"Authorization": f"Bearer {session}"}).status_code == 200
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(f"{server.url}/app/login")
    assert httpx.get(f"{api}/me", headers={"Authorization": f"Bearer {session}"}).status_code == 401


def test_a_form_posted_without_its_csrf_token_is_refused(page: Page, server: Server) -> None:
    sign_up_developer(page, server)
    form: dict[str, str | float | bool] = {"destination_url": "https://example.com/forged", "visibility": "public"}
    refused = page.request.post(f"{server.url}/app/links/new", form=form, max_redirects=0)
    assert refused.status == 403
    page.goto(f"{server.url}/app/links")
    assert page.get_by_text("No links yet").is_visible()


def test_link_form_errors_appear_next_to_their_field(page: Page, server: Server) -> None:
    sign_up_developer(page, server)
    page.goto(f"{server.url}/app/links/new")
    page.get_by_label("Destination URL").fill("ftp://example.com/file")
    page.get_by_label("Slug").fill("api")
    page.get_by_role("button", name="Create link").click()
    described = page.get_by_label("Destination URL").get_attribute("aria-describedby") or ""
    message = page.locator(f"#{described.split()[-1]}").inner_text()
    assert "http(s)" in message
    field = page.get_by_label("Destination URL")
    assert field.get_attribute("aria-invalid") == "true"
    assert field.evaluate("e => e === document.activeElement")  # the first field in error, brought into view
    assert field.evaluate("e => getComputedStyle(e).borderTopColor") == "rgb(180, 35, 24)"  # --danger, not --line


@pytest.mark.parametrize("path", ["/app/links", "/app/analytics", "/app/settings", "/app/links/new", "/app/webhooks"])
def test_pages_fit_a_phone_and_start_with_a_skip_link(browser: Browser, server: Server, path: str) -> None:
    with opened(browser, PHONE) as page:
        sign_up_developer(page, server)
        page.goto(f"{server.url}{path}")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Skip to content"


# Whether every space-separated word of an element's text lies on one line (a word broken across lines has two boxes).
WORDS_WHOLE = """e => { const t = e.firstChild; let i = 0; const lines = [];
  for (const w of t.textContent.split(" ")) {
    const r = document.createRange(); r.setStart(t, i); r.setEnd(t, i + w.length);
    lines.push(r.getClientRects().length); i += w.length + 1;
  }
  return lines.every(n => n === 1); }"""
# Where an element's text starts and ends across the page, [left, right].
TEXT_SPAN = """e => { const r = document.createRange(); r.selectNodeContents(e);
  const b = r.getBoundingClientRect(); return [b.left, b.right]; }"""


def watch(page: Page) -> list[str]:
    """Every console error, uncaught script error and failed request or 4xx/5xx answer of `page`, as it happens. A
    request cut short by the next navigation (net::ERR_ABORTED, such as the icon of a page left at once) is no fault."""
    problems: list[str] = []
    page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda exc: problems.append(f"script error: {exc}"))
    page.on(
        "requestfailed",
        lambda req: (
            problems.append(f"failed: {req.url} ({req.failure})") if req.failure != "net::ERR_ABORTED" else None
        ),
    )
    page.on("response", lambda res: problems.append(f"{res.status}: {res.url}") if res.status >= 400 else None)
    return problems


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_no_page_logs_an_error_or_requests_what_is_missing(browser: Browser, server: Server, viewport: Any) -> None:
    with opened(browser, viewport) as page:
        problems = watch(page)
        for path in ("/app/login", "/app/register"):
            page.goto(f"{server.url}{path}")
        name = sign_up(page, server)
        assert problems == [
            f"403: {server.url}/app/",
            "console error: Failed to load resource: the server responded with a status of 403 (Forbidden)",
        ]  # a new account's plan notice: nothing else
        problems.clear()
        set_plan(server, name, "developer")
        link_id = create_link(page, server, **{"Destination URL": "https://example.com/a/b", "Slug": f"w-{name}"})
        for path in (
            "/app/links",
            f"/app/links/{link_id}",
            f"/app/links/{link_id}/edit",
            "/app/analytics",
            "/app/analytics?days=7",
            "/app/links/new",
            "/app/settings",  # last: its key button is pressed below
        ):
            page.goto(f"{server.url}{path}")
            page.wait_for_load_state("networkidle")
            icon = page.locator('link[rel="icon"]').get_attribute("href")
            assert icon is not None, f"{path} names no icon, so a browser asks for /favicon.ico"
            fetched = page.request.get(f"{server.url}{icon}")
            assert fetched.status == 200 and fetched.headers["content-type"].startswith("image/svg+xml")
        page.get_by_role("button", name="Generate full-access key").click()
        page.wait_for_load_state("networkidle")
        assert problems == []
        # Where no page names an icon (JSON, the API docs) the browser asks for /favicon.ico: that is there too.
        assert page.request.get(f"{server.url}/favicon.ico").status == 200


def test_the_short_url_is_whole_on_a_phone(browser: Browser, server: Server) -> None:
    with opened(browser, PHONE) as page:
        name = sign_up_developer(page, server)
        slug = f"a-rather-long-slug-{name}"
        long_url = "https://example.com/" + "/".join(["a-long-path-segment"] * 8) + "?utm_source=newsletter"
        title = "Quarterly planning notes for the infrastructure modernisation programme"
        create_link(page, server, **{"Destination URL": long_url, "Slug": slug, "Title": title})
        page.goto(f"{server.url}/app/links")
        short = page.get_by_text(f"{server.url}/{slug}", exact=True)
        box = short.bounding_box()
        assert short.is_visible() and box is not None
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box  # whole, not clipped or scrolled off
        assert short.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
        copy = page.get_by_role("button", name="Copy", exact=True)
        copy_box = copy.bounding_box()
        assert copy_box is not None and copy_box["x"] + copy_box["width"] <= PHONE["width"]
        # The destination: one line cut with an ellipsis, the whole URL in its title; no page-wide sideways scroll.
        destination = page.get_by_title(long_url)
        assert destination.is_visible()
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        # Ordinary text wraps between words only: each word of the title is on one line.
        assert page.get_by_text(title, exact=True).evaluate(WORDS_WHOLE)


def test_a_week_chart_names_each_day_under_its_bar(page: Page, server: Server) -> None:
    sign_up_developer(page, server)
    page.goto(f"{server.url}/app/analytics?days=7")
    labels = page.locator(".chart-x span")
    texts = labels.all_inner_texts()
    last = page.get_by_role("img", name=re.compile(r"^Clicks per day")).get_attribute("aria-label") or ""
    end = date.fromisoformat(last.rsplit(" to ", 1)[1])
    assert texts == [(end - timedelta(days=6 - i)).strftime("%b %-d") for i in range(7)]  # 7 consecutive days
    bars = [box for rect in page.locator("figure.chart rect.bar").all() if (box := rect.bounding_box())]
    centres = [box["x"] + box["width"] / 2 for box in bars]
    under = [box["x"] + box["width"] / 2 for label in labels.all() if (box := label.bounding_box())]
    assert len(centres) == len(under) == 7
    assert all(abs(a - b) < 1.5 for a, b in zip(centres, under, strict=True)), (centres, under)
    gaps = [b - a for a, b in pairwise(under)]
    assert max(gaps) - min(gaps) < 1.5  # evenly spaced
    texts_at = [label.evaluate(TEXT_SPAN) for label in labels.all()]
    assert all(a[1] <= b[0] for a, b in pairwise(texts_at)), texts_at  # none overlap


def test_the_owner_deletes_the_account_from_settings(page: Page, server: Server) -> None:
    name = sign_up(page, server)
    page.get_by_role("navigation").get_by_role("link", name="Settings").click()
    page.get_by_label("Confirm with your password").fill("not the password")
    page.get_by_role("button", name="Delete account").click()
    assert "password is not this account" in page.get_by_text("password is not this account").inner_text()
    page.get_by_label("Confirm with your password").fill(PASSWORD)
    page.get_by_role("button", name="Delete account").click()
    page.wait_for_url(f"{server.url}/app/login?deleted=1")
    assert "Your account was deleted" in page.get_by_role("status").inner_text()
    page.get_by_label("Username").fill(name)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    assert "wrong username or password" in page.get_by_role("alert").inner_text()
