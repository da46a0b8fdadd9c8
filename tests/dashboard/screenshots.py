"""Screenshots of the dashboard's main pages at desktop and phone width, for the README.

    .venv/bin/python -m tests.dashboard.screenshots docs/screenshots

Starts a real server on a throwaway database, fills it with a few links and clicks through real redirects, and
saves palette PNGs (small enough to commit) of each page. The server believes this script as a proxy
(SLUGLINE_TRUSTED_PROXIES), so each click's country comes from the CF-IPCountry header it sends, as a CDN would set
it: the analytics pages show their world map and countries table (their flags need a colour emoji font, Debian's
fonts-noto-color-emoji).
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
from pathlib import Path

import httpx
from PIL import Image

from tests.dashboard.browser import DESKTOP, PHONE, chromium
from tests.support.server import Server, set_plan

LINKS = [
    ("rust-book", "https://doc.rust-lang.org/book/", "The Rust Programming Language", "rust, books", "public"),
    ("pep8", "https://peps.python.org/pep-0008/", "PEP 8 - Style Guide for Python Code", "python", "public"),
    ("launch", "https://example.com/launch-plan", "Launch plan (team only)", "work", "private"),
    ("draft", "https://example.com/drafts/q4", "Q4 draft", "work, drafts", "unlisted"),
]
AGENTS = {
    "desktop": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0",
    "mobile": "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
    "tablet": "Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
}
CLICKS = [  # slug, device, query, referrer, country, times
    ("rust-book", "desktop", "", "https://news.ycombinator.com/item?id=1", "US", 6),
    ("rust-book", "desktop", "", "https://news.ycombinator.com/item?id=1", "CA", 3),
    ("rust-book", "mobile", "?utm_source=newsletter", None, "DE", 4),
    ("rust-book", "mobile", "?utm_source=newsletter", None, "FR", 2),
    ("rust-book", "mobile", "?src=qr", None, "JP", 4),
    ("pep8", "desktop", "", None, "GB", 3),
    ("pep8", "desktop", "", None, "IN", 2),
    ("pep8", "tablet", "", "https://www.reddit.com/r/python", "BR", 2),
    ("pep8", "tablet", "", "https://www.reddit.com/r/python", "AU", 1),
    ("draft", "desktop", "", None, "SE", 2),
]
PAGES = {"login": "/app/login", "links": "/app/links", "link": None, "analytics": "/app/analytics"}


def populate(server: Server) -> tuple[str, str]:
    """An account with links and clicks; returns (session token, id of the first link)."""
    api = httpx.Client(base_url=f"{server.url}/api/v1", timeout=30)
    token = api.post("/auth/register", json={"username": "ada", "password": "correct horse battery"}).json()["token"]
    set_plan(server, "ada", "developer")
    key = api.post("/api-key", json={"scope": "full"}, headers={"Authorization": f"Bearer {token}"}).json()["key"]
    ids = []
    for slug, url, title, tags, visibility in LINKS:
        body = {"slug": slug, "destination_url": url, "title": title, "hashtags": tags.split(", ")}
        made = api.post("/links", json={**body, "visibility": visibility}, headers={"Authorization": f"Bearer {key}"})
        ids.append(made.json()["id"])
    for slug, device, query, referrer, country, times in CLICKS:
        headers = {"User-Agent": AGENTS[device], "CF-IPCountry": country, **({"Referer": referrer} if referrer else {})}
        for _ in range(times):
            httpx.get(f"{server.url}/{slug}{query}", headers=headers)
    total = sum(c[-1] for c in CLICKS)
    end = time.monotonic() + 20
    auth = {"Authorization": f"Bearer {key}"}
    while api.get("/analytics", headers=auth).json()["total_clicks"] < total and time.monotonic() < end:
        time.sleep(0.1)
    return token, ids[0]


def save(png: bytes, path: Path) -> None:
    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT)
    image.save(path, optimize=True)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        # Every page counts against the address's anonymous rate (60 a minute), and every shot is a page or two.
        # The clicks' country header is believed from this machine only (a trusted proxy's, as a CDN's would be).
        env = {"SLUGLINE_RATE_LIMIT_ANONYMOUS": "100000", "SLUGLINE_TRUSTED_PROXIES": "127.0.0.1"}
        server = Server(f"sqlite:///{tmp}/shots.db", env_extra=env)
        server.start(Path(tmp))
        try:
            token, link_id = populate(server)
            with chromium() as browser:
                for width, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
                    context = browser.new_context(viewport=viewport)
                    page = context.new_page()
                    page.goto(f"{server.url}/app/login")
                    save(page.screenshot(), out / f"login-{width}.png")
                    context.add_cookies([{"name": "slugline_session", "value": token, "url": server.url}])
                    for name, path in (("links", "/app/links"), ("link", f"/app/links/{link_id}")):
                        page.goto(f"{server.url}{path}")
                        save(page.screenshot(full_page=name == "link"), out / f"{name}-{width}.png")
                    page.goto(f"{server.url}/app/analytics")
                    save(page.screenshot(full_page=True), out / f"analytics-{width}.png")
                    page.goto(f"{server.url}/app/settings")
                    page.get_by_role("button", name="Generate public-only key").click()
                    save(page.screenshot(full_page=True), out / f"settings-{width}.png")
                    context.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots"))
