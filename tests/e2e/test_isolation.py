"""One tenant's slow work cannot stall the others: against the real `slugline serve`, one account's storm of auto_meta
creates aimed at a slow page leaves another account's requests as fast as usual."""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from tests.e2e.server import ServerFactory, make_account

SLOW_SECONDS = 3.0  # each fetch of the slow page (the fetcher gives up after 5 s)
STORM = 50  # concurrent auto_meta creates by one account
OTHER_MAX_SECONDS = 0.2  # the other account's slowest answer during the storm (normally a few ms)


class SlowPage(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's naming
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

    def create(i: int) -> httpx.Response:
        body = {"destination_url": f"{slow_page}?n={i}", "auto_meta": True}
        return httpx.post(f"{base}/links", json=body, headers=storm_auth, timeout=30)

    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {other.full}"}, timeout=30) as http:
        assert http.get("/links").status_code == 200  # a warm connection, as a steady client has
        with concurrent.futures.ThreadPoolExecutor(max_workers=STORM) as pool:
            storm = [pool.submit(create, i) for i in range(STORM)]
            time.sleep(0.5)  # the storm is under way: every create has reached the server
            slowest, probes = 0.0, 0
            while not all(f.done() for f in storm):
                for path in ("/links", "/me", "/health"):
                    started = time.perf_counter()
                    assert http.get(path).status_code == 200
                    slowest = max(slowest, time.perf_counter() - started)
                    probes += 1
                time.sleep(0.05)
            answers = [f.result() for f in storm]
    assert probes >= 30, probes  # the storm lasted long enough to measure something
    assert slowest < OTHER_MAX_SECONDS, f"another account waited {slowest:.3f} s during the storm"
    made = [a for a in answers if a.status_code == 201]
    refused = [a for a in answers if a.status_code == 429]
    assert len(made) + len(refused) == STORM, [a.status_code for a in answers]
    assert made and all(a.json()["title"] == "Slow page" for a in made)  # the fetches that ran filled the title
    assert refused and all(int(a.headers["retry-after"]) >= 1 and "auto_meta" in a.json()["error"] for a in refused)
