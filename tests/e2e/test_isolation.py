"""One tenant's slow work cannot stall the others: against the real `slugline serve`, one account's storm of auto_meta
creates aimed at a slow page leaves another account's requests as fast as usual."""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from tests.support.server import ServerFactory, make_account

SLOW_SECONDS = 3.0  # each fetch of the slow page (the fetcher gives up after 5 s)
STORM = 50  # concurrent auto_meta creates by one account
OTHER_SECONDS = 0.2  # the other account's answers during the storm (a few ms on a quiet machine)
# A request stuck behind a fetch waits for it: the probes start 0.5 s into 3 s fetches, so up to 2.5 s. The storm's
# 50 creates finishing at once may hold one answer near a second on a machine busy with other jobs (1.04 s seen in CI).
STALLED_SECONDS = 2.0
PROBES = ("/links", "/me", "/health")


class SlowPage(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        time.sleep(SLOW_SECONDS)
        body = b"<html><head><title>Slow page</title></head><body>late</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def slow_page() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowPage)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_slow_auto_meta_storm_leaves_other_accounts_fast(start_server: ServerFactory, slow_page: str) -> None:
    server = start_server()
    stormer, other = make_account(server, "stormer"), make_account(server, "bystander")
    base = f"{server.url}/api/v1"
    storm_auth = {"Authorization": f"Bearer {stormer.full}"}

    # One client with a connection per create: all of them reach the server at once (a client each would spend
    # seconds of this process's CPU making TLS contexts, and the storm would trickle in).
    stormy = httpx.Client(base_url=base, headers=storm_auth, timeout=30, limits=httpx.Limits(max_connections=STORM))

    def create(i: int) -> httpx.Response:
        return stormy.post("/links", json={"destination_url": f"{slow_page}?n={i}", "auto_meta": True})

    with stormy, httpx.Client(base_url=base, headers={"Authorization": f"Bearer {other.full}"}, timeout=30) as http:
        quiet = _probe(http, lambda: False, rounds=20)  # a warm connection, and this machine's noise
        with concurrent.futures.ThreadPoolExecutor(max_workers=STORM) as pool:
            storm = [pool.submit(create, i) for i in range(STORM)]
            time.sleep(0.5)  # the storm is under way: every create has reached the server
            during = _probe(http, lambda: all(f.done() for f in storm))
            answers = [f.result() for f in storm]
    assert len(during) >= 30, len(during)  # the storm lasted long enough to measure something
    # Nine in ten answers within 200 ms and none stalled: a machine busy with other jobs may delay a stray request,
    # a worker stalled by the storm delays every one of them by seconds.
    waits = sorted(during)
    summary = (
        f"during the storm: p90 {waits[len(waits) * 9 // 10]:.3f} s, max {waits[-1]:.3f} s; quiet: {max(quiet):.3f} s"
    )
    assert waits[len(waits) * 9 // 10] < OTHER_SECONDS and waits[-1] < STALLED_SECONDS, summary
    made = [a for a in answers if a.status_code == 201]
    refused = [a for a in answers if a.status_code == 429]
    assert len(made) + len(refused) == STORM, [a.status_code for a in answers]
    assert made and all(a.json()["title"] == "Slow page" for a in made)  # the fetches that ran filled the title
    assert refused and all(int(a.headers["retry-after"]) >= 1 and "auto_meta" in a.json()["error"] for a in refused)


def _probe(http: httpx.Client, done: Callable[[], bool], rounds: int = 0) -> list[float]:
    """Seconds each of the other account's requests took, until `done()` (or for `rounds` rounds)."""
    seen: list[float] = []
    while not done() if not rounds else len(seen) < rounds * len(PROBES):
        for path in PROBES:
            started = time.perf_counter()
            assert http.get(path).status_code == 200
            seen.append(time.perf_counter() - started)
        time.sleep(0.05)
    return seen


# The review's `q`: 16 terms of dashes over links of dashes and accented text, sorted by title, so answered on a thread.
# It took ~1 s over 200 links (each term normalized every link's text again) and held a database thread meanwhile;
# now ~10 ms (`SearchIndex.filter`'s text checks).
SLOW_Q = {"q": " ".join("-" * n for n in range(1, 17)), "sort": "title"}
HEAVY_LINK = {
    "destination_url": "https://e.x/" + "-" * 2000,
    "title": "-" * 255,
    "description": "É" * 1024,
    "note": "É" * 4096,
}
HEAVY_LINKS = 200
SLOW = 1.0  # seconds: what the query took before, and others waited for it; now well under
THREADS = 4  # the worker's database threads on SQLite (`db.SQLITE_THREADS`)


def test_one_accounts_slow_queries_leave_a_thread_for_the_others(start_server: ServerFactory) -> None:
    """One account's heaviest searches, from the API and the dashboard at once, as many as the worker has database
    threads: another account's list and /health still answer at once. They waited seconds when each such query took
    a second, the dashboard was not capped and the cap equalled the threads (the in-process tests check the cap
    itself: `tests/test_gates.py`)."""
    server = start_server(SLUGLINE_RATE_LIMIT_DEVELOPER="1000000", SLUGLINE_BUSY_WAIT_SECONDS="30")
    heavy, other = make_account(server, "heavy"), make_account(server, "neighbour")
    base = f"{server.url}/api/v1"
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {heavy.full}"}, timeout=120) as http:
        for _ in range(HEAVY_LINKS):
            assert http.post("/links", json=HEAVY_LINK).status_code == 201
        assert http.get("/links", params=SLOW_Q).status_code == 200  # the search index is built: warm from here
        started = time.perf_counter()
        assert http.get("/links", params=SLOW_Q).status_code == 200
        single = time.perf_counter() - started
    stormy = httpx.Client(timeout=120, limits=httpx.Limits(max_connections=THREADS))
    api_query = (f"{base}/links", {"Authorization": f"Bearer {heavy.full}"})
    page_query = (f"{server.url}/app/links", {"Cookie": f"slugline_session={heavy.session}"})
    other_auth = {"Authorization": f"Bearer {other.full}"}
    with (
        stormy,
        httpx.Client(base_url=base, headers=other_auth, timeout=120) as http,
        concurrent.futures.ThreadPoolExecutor(max_workers=THREADS) as pool,
    ):
        storm = [
            pool.submit(stormy.get, url, params=SLOW_Q, headers=headers)
            for url, headers in (api_query, page_query) * (THREADS // 2)
        ]
        time.sleep(0.3)  # every query has reached the server
        waits = []
        for path, params in (("/links", {"sort": "title"}), ("/health", {})) * 3:
            begun = time.perf_counter()
            assert http.get(path, params=params).status_code == 200
            waits.append(time.perf_counter() - begun)
        answers = [f.result() for f in storm]
    assert [a.status_code for a in answers] == [200] * THREADS, [a.text[-300:] for a in answers]
    assert "-" * 100 in answers[1].text  # the dashboard's table, with the links that matched
    assert single < SLOW / 2, f"one query alone took {single:.3f} s"
    assert max(waits) < SLOW / 2, f"one query alone took {single:.3f} s; the other requests meanwhile {waits}"
