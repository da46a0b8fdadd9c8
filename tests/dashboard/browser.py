"""A real Chromium for the dashboard's browser tests and screenshots: Debian's `chromium` driven by Playwright
(Playwright's own browser download is not reachable from here). Missing: the tests skip, except in CI. And what the
browser tests do as a person would: sign up, create a link, wait for a page to show something.

A pytest plugin too (named in tests/conftest.py): the `browser` fixture, one Chromium a module, and `page`, a page of
its own for each test. A module brings its `server` fixture, made with `served`."""

from __future__ import annotations

import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.dashboard.pages import PASSWORD
from tests.support.helpers import unavailable
from tests.support.server import Server, set_plan

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, ViewportSize

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


@contextmanager
def served(tmp: Path, **env: str) -> Iterator[Server]:
    """A real `slugline serve` on a new SQLite file in `tmp` (`env`: more of its environment), for a browser to visit;
    checks for the browser first, so a module without one skips before starting a server."""
    require_browser()
    running = Server(f"sqlite:///{tmp}/dashboard.db", env_extra=env).start(tmp)
    try:
        yield running
    finally:
        running.stop()


@contextmanager
def opened(browser: Browser, viewport: ViewportSize = DESKTOP, **options: Any) -> Iterator[Page]:
    """A page in a context of its own (its own cookies), waiting up to 15 s for anything; `options` go to the context
    (e.g. `java_script_enabled=False`)."""
    context = browser.new_context(viewport=viewport, **options)
    context.set_default_timeout(15_000)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    require_browser()
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    with opened(browser) as fresh:
        yield fresh


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


def sign_up_developer(page: Page, server: Server) -> str:
    """Signs up through the forms, then moves the account to the developer plan (links need a plan with API access)."""
    name = sign_up(page, server)
    set_plan(server, name, "developer")
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
