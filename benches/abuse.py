"""Abuse figures against a real `slugline serve` on loopback: one line of JSON per measurement.

    .venv/bin/python benches/abuse.py                   # all of them
    .venv/bin/python benches/abuse.py storm clicks      # some of them

Each scenario starts its own server (SQLite, one worker) so limits and buffers start fresh. To measure an older
version, point PYTHONPATH at its `python/` directory (with the built `_core` beside it): the servers run whatever
`slugline` that Python imports.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.server import Server, make_account

SLOW_SECONDS = 4.0
CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"


def report(name: str, **figures: Any) -> None:
    print(json.dumps({"measure": name, **figures}), flush=True)


@contextmanager
def serving(**env: str) -> Iterator[Server]:
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(f"sqlite:///{tmp}/bench.db", env_extra=env).start(Path(tmp))
        try:
            yield server
        finally:
            server.stop()


class SlowPage(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        time.sleep(SLOW_SECONDS)
        body = b"<html><head><title>Slow</title></head></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def storm() -> None:
    """45 slow auto_meta creates by one account; the other account's GET /links, /me and /health meanwhile."""
    page = ThreadingHTTPServer(("127.0.0.1", 0), SlowPage)
    page.daemon_threads = True
    threading.Thread(target=page.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{page.server_address[1]}/"
    with serving() as server:
        a, b = make_account(server, "stormer"), make_account(server, "bystander")
        base = f"{server.url}/api/v1"

        auth = {"Authorization": f"Bearer {a.full}"}
        stormy = httpx.Client(base_url=base, headers=auth, timeout=60, limits=httpx.Limits(max_connections=45))

        def create(i: int) -> int:
            return stormy.post("/links", json={"destination_url": f"{url}?{i}", "auto_meta": True}).status_code

        with stormy, httpx.Client(base_url=base, headers={"Authorization": f"Bearer {b.full}"}, timeout=60) as http:
            quiet = timed(http, 30)
            with concurrent.futures.ThreadPoolExecutor(45) as pool:
                futures = [pool.submit(create, i) for i in range(45)]
                time.sleep(0.3)
                during = timed(http, 0, until=lambda: all(f.done() for f in futures))
                codes = [f.result() for f in futures]
    page.shutdown()
    report(
        "storm: other account during 45 slow auto_meta creates",
        quiet_p50_ms=ms(statistics.median(quiet)),
        during_p50_ms=ms(statistics.median(during)),
        during_max_ms=ms(max(during)),
        probes=len(during),
        creates={str(c): codes.count(c) for c in sorted(set(codes))},
    )


def timed(http: httpx.Client, count: int, until: Callable[[], bool] | None = None) -> list[float]:
    seen: list[float] = []
    while (until is None and len(seen) < count) or (until is not None and not until()):
        for path in ("/links", "/me", "/health"):
            started = time.perf_counter()
            http.get(path)
            seen.append(time.perf_counter() - started)
        time.sleep(0.02)
    return seen


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def tokens() -> None:
    """One IP: registrations, then anonymous logins (unknown names) carrying 5 different session tokens."""
    with serving() as server:
        base = f"{server.url}/api/v1"
        registered = []
        for i in range(20):
            res = httpx.post(f"{base}/auth/register", json={"username": f"bulk-{i}", "password": "long enough"})
            if res.status_code == 201:
                registered.append(res.json()["token"])
        tokens = registered[:5]
        codes = []
        started = time.monotonic()
        for i in range(300):
            headers = {"Authorization": f"Bearer {tokens[i % len(tokens)]}"} if tokens else {}
            body = {"username": f"nobody-{i}", "password": "wrong password"}
            codes.append(httpx.post(f"{base}/auth/login", json=body, headers=headers).status_code)
        took = time.monotonic() - started
    report(
        "tokens: one IP",
        registrations_accepted_of_20=len(registered),
        logins_with_5_tokens_not_429_of_300=sum(c != 429 for c in codes),
        seconds=round(took, 1),
        argon2_logins_per_minute=round(sum(c != 429 for c in codes) / took * 60),
    )


def worker_rss(server: Server) -> int:
    """KiB of resident memory of the server's processes (Granian's main process and its worker)."""
    assert server.proc is not None
    pids = [server.proc.pid]
    for child in Path(f"/proc/{server.proc.pid}/task").glob("*/children"):
        pids += [int(p) for p in child.read_text().split()]
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total


def clicks() -> None:
    """150 redirects with a 300 KB User-Agent while the SQLite database is locked by another writer."""
    with serving() as server:
        keys = make_account(server, "clicker")
        auth = {"Authorization": f"Bearer {keys.full}"}
        httpx.post(
            f"{server.url}/api/v1/links", json={"destination_url": "https://example.org/", "slug": "c"}, headers=auth
        )
        httpx.get(f"{server.url}/c")
        time.sleep(1.5)
        before = worker_rss(server)
        lock = sqlite3.connect(server.database_url.removeprefix("sqlite:///"), timeout=30)
        lock.execute("BEGIN EXCLUSIVE")
        agent = "A" * (300 * 1024)
        with httpx.Client() as http:
            for _ in range(150):
                http.get(f"{server.url}/c", headers={"User-Agent": agent})
        time.sleep(0.5)
        during = worker_rss(server)
        health = httpx.get(f"{server.url}/api/v1/health").json()
        lock.rollback()
        lock.close()
    report(
        "clicks: 150 redirects with a 300 KB User-Agent, database locked",
        rss_growth_mib=round((during - before) / 1024, 1),
        health_clicks=health.get("clicks"),
    )


def holes() -> None:
    out: dict[str, Any] = {}
    with serving() as server:
        base = f"{server.url}/api/v1"
        keys = make_account(server, "holes")
        session = {"Authorization": f"Bearer {keys.session}"}
        codes = [
            httpx.get(f"{base}/analyze", params={"url": "http://127.0.0.1:9/"}, headers=session).status_code
            for _ in range(15)
        ]
        out["analyze_with_session_429_of_15"] = codes.count(429)
        auth = {"Authorization": f"Bearer {keys.full}"}
        httpx.post(f"{base}/links", json={"destination_url": "https://example.org/", "slug": "src"}, headers=auth)
        with httpx.Client() as http:
            for i in range(500):  # a browser: bots are left out of analytics
                http.get(f"{server.url}/src", params={"utm_source": f"s{i}"}, headers={"User-Agent": CHROME})
        time.sleep(2)
        stats = httpx.get(f"{base}/analytics", headers=auth)
        out["analytics_sources_entries_after_500_utm"] = len(stats.json()["sources"])
        out["analytics_bytes"] = len(stats.content)
        out["cache_control_on_me"] = httpx.get(f"{base}/me", headers=auth).headers.get("cache-control")
        port = httpx.get(f"{base}/analyze", params={"url": "http://93.184.216.34:6379/"}, timeout=30)
        out["analyze_public_port_6379_status"] = port.status_code
        out["slow_body_status_and_seconds"] = slow_body(server, keys.full)
        out["logout_status"] = status(lambda: httpx.post(f"{base}/auth/logout", headers=session, timeout=30))
        out["me_after_logout"] = status(lambda: httpx.get(f"{base}/me", headers=session, timeout=30))
    # Behind a proxy: the client's own claim on the left of X-Forwarded-For, the address the proxy saw appended.
    with serving(SLUGLINE_TRUSTED_PROXIES="*") as server:
        keys = make_account(server, "locker")
        body = {"destination_url": "https://example.org/", "slug": "pw", "visibility": "password", "password": "right"}
        httpx.post(f"{server.url}/api/v1/links", json=body, headers={"Authorization": f"Bearer {keys.full}"})
        codes = [
            httpx.post(
                f"{server.url}/pw",
                data={"password": f"wrong{i}"},
                headers={"X-Forwarded-For": f"10.9.{i}.1, 203.0.113.7"},
            ).status_code
            for i in range(15)
        ]
        out["star_proxies_unlock_429_of_15"] = codes.count(429)
    out["empty_secret_exit_code"] = empty_secret()
    report("smaller holes", **out)


def status(call: Callable[[], httpx.Response]) -> int | str:
    try:
        return call().status_code
    except httpx.HTTPError as exc:
        return type(exc).__name__


def slow_body(server: Server, key: str, wait: float = 40.0) -> list[float | str]:
    """Headers promising 100 bytes of JSON, then silence: what answers, and when."""
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.settimeout(wait)
        sock.sendall(
            f"POST /api/v1/links HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n".encode()
        )
        started = time.monotonic()
        try:
            status = sock.recv(64).split(b" ")[1].decode() or "closed"
        except (TimeoutError, IndexError):
            status = f"no answer in {wait:g} s"
        return [status, round(time.monotonic() - started, 1)]


def empty_secret() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "SLUGLINE_DATABASE_URL": f"sqlite:///{tmp}/s.db", "SLUGLINE_SECRET_KEY": ""}
        proc = subprocess.Popen([sys.executable, "-m", "slugline.cli", "serve", "--port", "0"], env=env)
        try:
            return proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.terminate()
            proc.wait()
            return -1  # it started serving


SCENARIOS = {"storm": storm, "tokens": tokens, "clicks": clicks, "holes": holes}

if __name__ == "__main__":
    for name in sys.argv[1:] or list(SCENARIOS):
        SCENARIOS[name]()
