"""What the fault tests stand on: redirect load that remembers every 302 it received, the clicks stored once they
settle, a private PostgreSQL cluster and a private Redis (so stopping them disturbs no other test), and a server's
worker processes."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.support.helpers import unavailable
from tests.support.server import free_port

LIMITLESS = {
    f"SLUGLINE_RATE_LIMIT_{name}": "1000000"
    for name in ("DEVELOPER", "PRO", "ANONYMOUS", "ANALYZE_ANONYMOUS", "LOGIN", "REGISTER", "UNLOCK")
}


@dataclass
class Load:
    """GETs `url` in a loop from one thread; `redirects` holds the time of every 302, `other` every other answer."""

    url: str
    redirects: list[float] = field(default_factory=list)
    other: list[tuple[float, int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        # A new connection per request, so the load spreads over every worker.
        with httpx.Client(timeout=10, limits=httpx.Limits(max_keepalive_connections=0)) as client:
            while not self._stop.is_set():
                try:
                    status = client.get(self.url, follow_redirects=False).status_code
                except httpx.HTTPError:
                    status = 0  # a connection the dying worker dropped: no 302 was received
                (self.redirects.append(time.time()) if status == 302 else self.other.append((time.time(), status)))

    @contextmanager
    def running(self) -> Iterator[Load]:
        thread = threading.Thread(target=self.run, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join(timeout=15)

    def within(self, start: float, end: float) -> int:
        return sum(start <= at < end for at in self.redirects)


def stored_clicks(http: httpx.Client, link_id: str) -> int:
    total: int = http.get(f"/links/{link_id}/clicks", params={"per": 1}).json()["pagination"]["total"]
    return total


def settled(http: httpx.Client, link_id: str, expected: int, deadline: float = 20.0) -> int:
    """Stored clicks once they reach `expected` or stop changing for 2 s (the buffer flushes about every second)."""
    end, last, since = time.monotonic() + deadline, -1, time.monotonic()
    while time.monotonic() < end:
        now = stored_clicks(http, link_id)
        if now >= expected:
            return now
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since > 2:
            return now
        time.sleep(0.1)
    return last


def workers_of(pid: int) -> list[int]:
    """The child processes of `pid` (Granian's workers)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            children.append(int(stat.parent.name))
    return children


class Postgres:
    """A throwaway cluster on a free port, owned by the `postgres` user (initdb refuses root)."""

    def __init__(self) -> None:
        bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
        if not bins:
            unavailable("no PostgreSQL server binaries under /usr/lib/postgresql")
        self.bin = bins[-1].parent
        self.root = Path(tempfile.mkdtemp(prefix="slugline-pg-"))
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.as_owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.as_owner:
            shutil.chown(self.root, "postgres")
        self._run("initdb", "-D", str(self.root / "data"), "-A", "trust", "-U", "postgres", "--no-sync")

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run([*self.as_owner, str(self.bin / tool), *args], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.root / "data"), "-o", options, "-l", str(self.root / "log"), "-w", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        stop = [*self.as_owner, str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "stop"]
        subprocess.run(stop, capture_output=True, check=False)  # already stopped is fine
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def private_postgres() -> Iterator[Postgres]:
    pg = Postgres()
    try:
        pg.start()
        yield pg
    finally:
        pg.remove()


class Redis:
    def __init__(self) -> None:
        if shutil.which("redis-server") is None:
            unavailable("redis-server is not installed")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        args = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 15
        while time.monotonic() < end:
            try:
                with socket.create_connection(("127.0.0.1", self.port), 0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=15)


@pytest.fixture
def private_redis() -> Iterator[Redis]:
    server = Redis()
    try:
        server.start()
        yield server
    finally:
        server.stop()
