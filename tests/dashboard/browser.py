"""A real Chromium for the dashboard's browser tests and screenshots: Debian's `chromium` driven by Playwright
(Playwright's own browser download is not reachable from here). Missing: the tests skip, except in CI. And what the
browser tests do as a person would: sign up, create a link, wait for a page to show something."""

from __future__ import annotations

import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from tests.dashboard.pages import PASSWORD
from tests.support.helpers import unavailable

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, ViewportSize

    from tests.support.server import Server

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DESKTOP: ViewportSize = {"width": 1280, "height": 800}
PHONE: ViewportSize = {"width": 390, "height": 844}


def browser_problem() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install playwright)"
    if shutil.which("chromium") is None:
        return "no `chromium` on PATH (apt-get install chromium)"
    return None


def require_browser() -> None:
    """Skip with the reason when no browser can run; in CI (CI=true) fail instead: CI must run these tests."""
    problem = browser_problem()
    if problem is not None:
        unavailable(problem)


@contextmanager
def chromium() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def until(check: Callable[[], Any], what: str, deadline: float = 20.0) -> Any:
    """What `check()` answers once it is truthy, asked again every 0.2 s; failing after `deadline` seconds."""
    end = time.monotonic() + deadline
    while not (found := check()):
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.2)
    return found


def sign_up(page: Page, server: Server) -> str:
    name = f"b{uuid.uuid4().hex[:10]}"
    page.goto(f"{server.url}/")
    assert page.url.endswith("/app/login")
    page.get_by_role("link", name="Create an account").click()
    page.get_by_label("Username").fill(name)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    page.wait_for_url(f"{server.url}/app/")
    return name


def create_link(page: Page, server: Server, **fields: str) -> str:
    """Fill the form (labels as keys, e.g. Destination URL); returns the new link's id from its page's URL."""
    page.goto(f"{server.url}/app/links/new")
    for label, value in fields.items():
        if label == "Visibility":
            page.get_by_label("Visibility").select_option(label=value)
        else:
            page.get_by_label(label, exact=True).fill(value)
    page.get_by_role("button", name="Create link").click()
    page.wait_for_url(re.compile(r".*/app/links/lnk_\w+$"))
    return page.url.rsplit("/", 1)[1]
