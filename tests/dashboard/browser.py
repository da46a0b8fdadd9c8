"""A real Chromium for the dashboard's browser tests and screenshots: Debian's `chromium` driven by Playwright
(Playwright's own browser download is not reachable from here). Missing: the tests skip, except in CI."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from tests.support.helpers import unavailable

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ViewportSize

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
