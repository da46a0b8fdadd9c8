"""Redirects and click recording through a real `slugline serve`, with real HTTP clients."""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx

from tests.support.server import Server, ServerFactory, api, clicks_of, make_account, wait_for

IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.4 Mobile/15E148 Safari/604.1"
)
CHROME = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
)
GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


def test_devices_sources_and_totals(start_server: ServerFactory, database_url: str) -> None:
    server = start_server(database_url)
    keys = make_account(server, "clicker")
    visits = [  # (user agent, referrer, query) -> (device, source, referrer host)
        (IPHONE, None, "", ("mobile", "direct", None)),
        (IPHONE, "https://www.news.example.com/story?id=1", "", ("mobile", "news.example.com", "news.example.com")),
        (CHROME, None, "?utm_source=Newsletter", ("desktop", "newsletter", None)),
        (CHROME, "https://m.facebook.com/", "?utm_source=twitter", ("desktop", "twitter", "facebook.com")),
        (CHROME, None, "?src=qr", ("desktop", "qr", None)),
        (GOOGLEBOT, None, "", ("bot", "direct", None)),
    ]
    with api(server, keys.full) as http, httpx.Client(base_url=server.url) as browser:
        link = http.post("/links", json={"destination_url": "https://example.org/tour?lang=en", "slug": "tour"}).json()
        for agent, referrer, query, _ in visits:
            headers = {"User-Agent": agent, **({"Referer": referrer} if referrer else {})}
            res = browser.get(f"/tour{query}", headers=headers)
            assert res.status_code == 302, res.text
            assert res.headers["cache-control"] == "private, no-store"
            assert res.headers["x-robots-tag"] == "noindex"
            assert res.headers["location"].startswith("https://example.org/tour?lang=en")
            assert "src=qr" not in res.headers["location"]

        rows = clicks_of(http, link["id"], len(visits))
        assert Counter((r["device"], r["source"], r["referrer"]) for r in rows) == Counter(v[3] for v in visits)
        assert [r["clicked_at"] for r in rows] == sorted((r["clicked_at"] for r in rows), reverse=True)
        assert all(r["browser"] and r["os"] for r in rows)

        stats = http.get("/analytics", params={"days": 7}).json()
        assert stats["total_clicks"] == 5  # the bot is recorded but left out of every figure
        assert stats["unique_visitors"] == 2  # one iPhone, one Chrome, from one address
        assert {d["device"]: d["clicks"] for d in stats["devices"]} == {"mobile": 2, "desktop": 3}
        assert {s["source"]: s["clicks"] for s in stats["sources"]} == {
            "direct": 1,
            "news.example.com": 1,
            "newsletter": 1,
            "twitter": 1,
            "qr": 1,
        }
        assert {(b["browser"].lower(), b["clicks"]) for b in stats["browsers"]} == {("safari", 2), ("chrome", 3)}
        assert {(o["os"].lower(), o["clicks"]) for o in stats["operating_systems"]} == {("ios", 2), ("windows", 3)}
        referrers = {r["referrer"]: r["clicks"] for r in stats["referrers"]}
        assert (referrers["news.example.com"], referrers["facebook.com"]) == (1, 1)
        assert stats["top_links"] == [{"id": link["id"], "slug": "tour", "title": None, "clicks": 5}]
        assert len(stats["clicks"]) == 7 and stats["clicks"][-1]["clicks"] == 5
        assert http.get(f"/links/{link['id']}").json()["clicks"] == 5

        only = http.get("/analytics", params={"days": 1, "source": "Newsletter"}).json()
        assert (only["total_clicks"], only["devices"], only["source"]) == (
            1,
            [{"device": "desktop", "clicks": 1}],
            "newsletter",
        )
        mobile = http.get(f"/links/{link['id']}/analytics", params={"days": 1, "device": "mobile"}).json()
        assert (mobile["total_clicks"], mobile["device"], mobile["unique_visitors"]) == (2, "mobile", 1)


def _hammer(url: str, stop: threading.Event, got: list[int]) -> None:
    """Redirect requests on one connection until told to stop or the server goes away; count the 302s."""
    with httpx.Client(headers={"User-Agent": CHROME}, timeout=10) as client:
        while not stop.is_set():
            try:
                if client.get(url).status_code == 302:
                    got.append(1)
            except httpx.HTTPError:
                return


def test_sigterm_under_load_loses_no_clicks(start_server: ServerFactory, database_url: str, tmp_path: Any) -> None:
    url = database_url if not database_url.startswith("sqlite") else f"sqlite:///{tmp_path}/load.db"
    server = start_server(url)
    keys = make_account(server, "loader")
    with api(server, keys.full) as http:
        link = http.post("/links", json={"destination_url": "https://example.org/load", "slug": "load"}).json()
    stop = threading.Event()
    counts: list[list[int]] = [[] for _ in range(8)]
    threads = [threading.Thread(target=_hammer, args=(f"{server.url}/load", stop, got)) for got in counts]
    for thread in threads:
        thread.start()
    try:
        wait_for(lambda: sum(map(len, counts)) >= 1500, what="load to build up")
        assert server.stop(signal.SIGTERM) == 0, server.log()
    finally:
        stop.set()  # bounded: every client stops at the first failed request, or here
        for thread in threads:
            thread.join(timeout=30)
    received = sum(map(len, counts))

    restarted = start_server(url)
    with api(restarted, keys.full) as http:
        stored = http.get(f"/links/{link['id']}/clicks", params={"per": 1}).json()["pagination"]["total"]
        counter = http.get(f"/links/{link['id']}").json()["clicks"]
        # two days: the load may straddle midnight UTC
        daily = http.get("/analytics", params={"days": 2}).json()["total_clicks"]
    assert stored == counter == daily == received, (stored, counter, daily, received)


def _watch(server: Server, path: str, since: float, stale: Callable[[httpx.Response], bool]) -> list[float]:
    """Fresh connections (so both workers answer) for 1.5 s; the times, after `since`, of stale answers."""
    late: list[float] = []
    end = since + 1.5
    while time.monotonic() < end:
        sent = time.monotonic()
        with httpx.Client(base_url=server.url) as fresh:
            if stale(fresh.get(path)):
                late.append(sent - since)
    return late


def test_changed_or_deleted_link_stops_redirecting_within_a_second(
    start_server: ServerFactory, database_url: str
) -> None:
    server = start_server(database_url, workers=2)
    keys = make_account(server, "mover")
    with api(server, keys.full) as http:
        link = http.post("/links", json={"destination_url": "https://old.example/", "slug": "moving"}).json()
        other = http.post("/links", json={"destination_url": "https://other.example/", "slug": "other"}).json()
        for _ in range(20):  # warm the caches of both workers
            with httpx.Client(base_url=server.url) as fresh:
                assert fresh.get("/moving").headers["location"] == "https://old.example/"

        assert http.put(f"/links/{link['id']}", json={"destination_url": "https://new.example/"}).status_code == 200
        late = _watch(
            server, "/moving", time.monotonic(), lambda r: r.headers.get("location") == "https://old.example/"
        )
        assert all(t < 1.0 for t in late), late

        assert http.delete(f"/links/{link['id']}").status_code == 200
        late = _watch(server, "/moving", time.monotonic(), lambda r: r.status_code != 404)
        assert all(t < 1.0 for t in late), late

        # Clicks for the link deleted while they waited in a buffer did not poison the batch.
        with httpx.Client(base_url=server.url) as fresh:
            assert fresh.get("/other").status_code == 302
        clicks_of(http, other["id"], 1)


def test_hostile_bytes_never_break_a_redirect_or_the_clicks(start_server: ServerFactory, database_url: str) -> None:
    """Raw header bytes (a real server passes them through as sent) and control characters in utm_source."""
    server = start_server(database_url)
    keys = make_account(server, "hostile")
    with api(server, keys.full) as http, httpx.Client(base_url=server.url) as client:
        link = http.post("/links", json={"destination_url": "https://example.org/ok", "slug": "ok"}).json()
        vault = http.post(
            "/links",
            json={
                "destination_url": "https://example.org/v",
                "slug": "vault",
                "visibility": "password",
                "password": "open sesame",
            },
        ).json()
        for accept in (b"text/html;q=\xb2", b"text/html;q=" + b"9" * 5000, b"*/*", b""):
            res = client.get("/missing", headers={b"Accept": accept})
            assert res.status_code == 404 and res.json() == {"error": "link not found"}, accept
        browser = client.get("/missing", headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
        assert browser.status_code == 404 and browser.headers["content-type"].startswith("text/html")

        for value in (b"\xb2.abc", b"9" * 5000 + b".abc", b"%d.\xe9\xe9" % (time.time() + 3600)):
            res = client.get("/vault", headers={b"Cookie": f"slu_{vault['id']}=".encode() + value})
            assert res.status_code == 200 and "password-protected" in res.text, value

        for query in ("?utm_source=%00", "?utm_source=%00News%01letter", ""):
            assert client.get(f"/ok{query}", headers={"User-Agent": CHROME}).status_code == 302
        rows = clicks_of(http, link["id"], 3)
        assert Counter(r["source"] for r in rows) == Counter({"direct": 2, "newsletter": 1})
        assert client.get("/ok", headers={"User-Agent": CHROME}).status_code == 302  # later clicks still land
        clicks_of(http, link["id"], 4)
