"""`slugline accounts delete` beside a running server of 2 workers: the account registered next, whose links reach the
same links version the deleted one's caches were warmed at, sees nothing of it (on SQLite the id would have been
reused before migration 0014, and every per-worker cache keyed by account id answered with the deleted account's
links); and a large account is deleted while a bystander's writes and redirects go on answering quickly."""

from __future__ import annotations

import os
import statistics
import subprocess
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from slugline.storage.db import normalize_url
from tests.e2e.test_openapi_e2e import UNLIMITED
from tests.support.helpers import CHROME
from tests.support.server import Server, ServerFactory, api, make_account, wait_for

ROUNDS = 8  # each read this many times, so that both workers answer it
# The large account: 2,000 links (four of the deletion's batches) and 20,000 clicks here; the figures in
# docs/benchmarks.md are at 10,000 and 100,000 (`SLUGLINE_E2E_DELETION_LINKS=10000`), which takes PostgreSQL minutes.
LINKS = int(os.environ.get("SLUGLINE_E2E_DELETION_LINKS", "2000"))


def _warm(http: httpx.Client) -> list[Any]:
    """What each worker answers and keeps: the link count, the search index, the analytics."""
    answers = []
    for _ in range(ROUNDS):
        answers.append(http.get("/links").json()["pagination"]["total"])
        answers.append(http.get("/links", params={"q": "zebra"}).json()["pagination"]["total"])
        answers.append(http.get("/search", params={"q": "zebra"}).json()["total"])
        answers.append(http.get("/analytics").json()["total_clicks"])
    return answers


@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_the_next_account_sees_nothing_of_a_deleted_one(
    store: str, start_server: ServerFactory, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("pg_url") if store == "postgres" else None
    server = start_server(url, workers=2, **UNLIMITED)
    make_account(server, "keeper")  # an older account: the deleted one is the newest, whose id SQLite gave again
    ada = make_account(server, "ada")
    with api(server, ada.full) as http:
        first = http.post("/links", json={"destination_url": "https://example.com/a", "note": "zebra"})
        http.post("/links", json={"destination_url": "https://example.com/b", "note": "zebra"})
        slug = first.json()["slug"]
        for _ in range(3):
            httpx.get(f"{server.url}/{slug}", headers={"User-Agent": CHROME})
        wait_for(lambda: http.get("/analytics").json()["total_clicks"] == 3, what="ada's clicks")
        http.post("/links", json={"destination_url": "https://example.com/c", "note": "zebra"})
        http.post("/links", json={"destination_url": "https://example.com/d", "note": "zebra"})
        assert set(_warm(http)) == {4, 3}  # 4 links at links version 4, all of them zebras; 3 clicks

    done = server.cli("accounts", "delete", "ada", "--yes", "--json")
    assert '"links": 4' in done.stdout and '"clicks": 3' in done.stdout

    eve = make_account(server, "eve")
    with api(server, eve.full) as http:
        link = http.post("/links", json={"destination_url": "https://example.com/eve", "note": "yak"}).json()
        for n in range(3):  # eve's links version reaches ada's: 4
            assert http.put(f"/links/{link['id']}", json={"title": f"t{n}"}).is_success
        assert _warm(http) == [1, 0, 0, 0] * ROUNDS
    with api(server, ada.full) as http:
        assert http.get("/links").status_code == 401


def _bulk(http: httpx.Client, prefix: str, count: int) -> None:
    for start in range(0, count, 1000):
        items = [{"destination_url": f"https://example.com/{prefix}/{n}"} for n in range(start, start + 1000)]
        answer = http.post("/links/bulk", json={"links": items})
        assert answer.status_code in (200, 201, 207), answer.text


def _add_clicks(url: str, username: str, per_link: int) -> int:
    """Clicks written straight into the log (the redirect path would take minutes for this many)."""
    engine = create_engine(normalize_url(url))
    many = (
        "(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :per) SELECT i FROM n)"
        if engine.dialect.name == "sqlite"
        else "generate_series(1, :per)"
    )
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO clicks (link_id, clicked_at, device, browser, os, source, referrer, visitor) "
                "SELECT l.id, :at, 'desktop', 'chrome', 'windows', 'direct', NULL, 'v' "
                f"FROM links AS l JOIN accounts AS a ON a.id = l.account_id CROSS JOIN {many} AS n "
                "WHERE a.username = :name"
            ),
            {"per": per_link, "name": username, "at": datetime.now(UTC) - timedelta(days=1)},
        )
        count = conn.execute(text("SELECT count(*) FROM clicks")).scalar_one()
    engine.dispose()
    return int(count)


def _bystander(server: Server, key: str, slug: str, stop: threading.Event, times: list[float]) -> None:
    """A create, then a redirect, again and again: how long each took, in seconds."""
    with api(server, key) as http, httpx.Client(base_url=server.url, timeout=30) as visitor:
        n = 0
        while not stop.is_set():
            began = time.monotonic()
            assert http.post("/links", json={"destination_url": f"https://example.com/by/{n}"}).status_code == 201
            times.append(time.monotonic() - began)
            began = time.monotonic()
            assert visitor.get(f"/{slug}", headers={"User-Agent": CHROME}).status_code == 302
            times.append(time.monotonic() - began)
            n += 1


def _p99(times: list[float]) -> float:
    return statistics.quantiles(times, n=100)[98] if len(times) > 1 else max(times)


@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_large_account_goes_while_the_server_keeps_answering(
    store: str, start_server: ServerFactory, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    links, per_link = LINKS, 10
    url = request.getfixturevalue("pg_url") if store == "postgres" else f"sqlite:///{tmp_path}/e2e.db"
    server = start_server(url, workers=2, **UNLIMITED)
    big, other = make_account(server, "big"), make_account(server, "other")
    with api(server, big.full) as http:
        _bulk(http, "big", links)
    with api(server, other.full) as http:
        slug = http.post("/links", json={"destination_url": "https://example.com/other"}).json()["slug"]
    assert _add_clicks(url, "big", per_link) == links * per_link

    def measured(during: subprocess.Popen[str] | None, seconds: float) -> list[float]:
        stop, times = threading.Event(), list[float]()
        thread = threading.Thread(target=_bystander, args=(server, other.full, slug, stop, times))
        thread.start()
        if during is None:
            time.sleep(seconds)
        else:
            during.wait(timeout=300)
        stop.set()
        thread.join()
        return times

    before = measured(None, 3.0)
    began = time.monotonic()
    deleting = subprocess.Popen(
        [server.python, "-m", "slugline.cli", "accounts", "delete", "big", "--yes"],
        env=server.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    during = measured(deleting, 0)
    took = time.monotonic() - began
    out, err = deleting.communicate()
    assert deleting.returncode == 0, err
    assert out == f"deleted account big with {links} link(s) and {links * per_link} click(s)\n"
    print(
        f"\n{store}: deleted {links} links and {links * per_link} clicks in {took:.1f} s; bystander create+redirect "
        f"p50/p99/max: before {statistics.median(before) * 1000:.1f}/{_p99(before) * 1000:.1f}/"
        f"{max(before) * 1000:.1f} ms ({len(before)} calls), during {statistics.median(during) * 1000:.1f}/"
        f"{_p99(during) * 1000:.1f}/{max(during) * 1000:.1f} ms ({len(during)} calls)"
    )
    assert len(during) > 20 and _p99(during) < 1.0, "the server kept answering while the account went"
