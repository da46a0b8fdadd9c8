"""A real full disk under a real server: the SQLite database on a small tmpfs of its own, filled to the last byte
while redirects run. Writes answer 503 `{"error": ...}` (as for any store that cannot write), reads and redirects
keep answering promptly, and once there is room again the buffered clicks are written with no restart. Prints
what was lost (run with -s to see it)."""

from __future__ import annotations

import errno
import itertools
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from slugline.storage.db import UNAVAILABLE_MESSAGE
from tests.support.faults import LIMITLESS, Load, settled, workers_of
from tests.support.server import Server, ServerFactory, api, make_account, wait_for

DISK_BYTES = 32 << 20
FULL_SECONDS = 5  # several flush rounds, past the point where a failing batch is retried one click at a time
PROMPT = 2.0  # seconds: an answer slower than this while the disk is full counts as a hang

Body = dict[str, Any]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of DISK_BYTES mounted for this test; requested before `start_server`, so the server stops first."""
    mount = tmp_path / "disk"
    mount.mkdir()
    try:
        made = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES}", "tmpfs", str(mount)], capture_output=True, text=True
        )
    except OSError as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
    if made.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here: {made.stderr.strip()}")
    try:
        yield mount
    finally:
        if subprocess.run(["umount", str(mount)]).returncode != 0:
            subprocess.run(["umount", "--lazy", str(mount)])  # still busy: gone once its last user is


def fill(path: Path) -> None:
    """Take every byte left on the filesystem, smaller writes filling what a larger one could not."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        for size in (1 << 20, 4096, 1):
            block = b"\0" * size
            try:
                while True:
                    os.write(fd, block)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
    finally:
        os.close(fd)


def until_refused(write: Callable[[], httpx.Response], accepted: list[Body]) -> httpx.Response:
    """Repeat `write` until it is refused. SQLite may still reuse WAL space it holds, so a write may be taken at
    first: each one answered 201 is acknowledged, and goes in `accepted`."""

    def attempt() -> httpx.Response | None:
        started = time.monotonic()
        res = write()
        assert time.monotonic() - started < PROMPT, f"a write took {time.monotonic() - started:.1f} s"
        assert res.status_code in (201, 503), res.text
        if res.status_code == 201:
            accepted.append(res.json())
            return None
        return res

    return wait_for(attempt, what="a write refused on the full disk")


def uncached_redirects(server: Server, unseen: list[Body], until: float) -> list[float]:
    """GET links the worker has not cached, one every half second until `until` (time.time()): how long each took."""
    took = []
    for link in unseen:
        started = time.monotonic()
        res = httpx.get(f"{server.url}/{link['slug']}", timeout=30)
        took.append(time.monotonic() - started)
        assert res.status_code == 302, res.text
        if time.time() >= until:
            break
        time.sleep(0.5)
    return took


def while_full(
    server: Server, clients: tuple[httpx.Client, httpx.Client], links: list[Body], public_keys: list[Body]
) -> list[float]:
    """Link and key writes refused with 503, reads answered, uncached redirects timed; returns their times."""
    http, session = clients
    full_at = time.time()
    refused = until_refused(lambda: http.post("/links", json={"destination_url": "https://x.example/"}), links)
    assert refused.json() == {"error": UNAVAILABLE_MESSAGE} and refused.headers["retry-after"] == "1"
    refused = until_refused(lambda: session.post("/api-key", json={"scope": "public"}), public_keys)
    assert refused.json() == {"error": UNAVAILABLE_MESSAGE}
    listed = http.get("/links", params={"per": 100})
    assert listed.status_code == 200 and len(listed.json()["data"]) == len(links)
    return uncached_redirects(server, links[1:], until=full_at + FULL_SECONDS)


def largest_gap(times: list[float], start: float, end: float) -> float:
    """The longest wait between two redirects received in [start, end)."""
    within = sorted(at for at in times if start <= at < end)
    return max((b - a for a, b in itertools.pairwise(within)), default=end - start)


def created(http: httpx.Client) -> Body | None:
    res = http.post("/links", json={"destination_url": "https://y.example/"})
    return res.json() if res.status_code == 201 else None


def clicks_held(server: Server) -> dict[str, int]:
    clicks: dict[str, int] = httpx.get(f"{server.url}/api/v1/health").json()["clicks"]
    return clicks


def drained(server: Server) -> dict[str, int] | None:
    clicks = clicks_held(server)
    return clicks if clicks["pending"] == 0 else None


def test_full_disk(small_disk: Path, start_server: ServerFactory) -> None:
    filler = small_disk / "filler"
    filler.touch()  # while there is room for its inode
    server = start_server(f"sqlite:///{small_disk}/slugline.db", **LIMITLESS)
    assert server.proc is not None
    worker = workers_of(server.proc.pid)
    keys = make_account(server, "full-disk")
    with api(server, keys.full) as http, api(server, keys.session) as session:
        links = [http.post("/links", json={"destination_url": f"https://example.com/{i}"}).json() for i in range(12)]
        public_keys: list[Body] = []
        load = Load(f"{server.url}/{links[0]['slug']}")
        with load.running():
            wait_for(lambda: len(load.redirects) > 50, what="redirect load")
            fill(filler)
            full_at = time.time()
            took = while_full(server, (http, session), links, public_keys)
            held, taken = clicks_held(server)["pending"], len(links) - 12
            filler.unlink()
            freed_at = time.time()
            links.append(wait_for(lambda: created(http), what="a write once the disk has room"))
            wait_for(lambda: load.within(freed_at, time.time()) > 20, what="redirects after the disk has room")
        gap = largest_gap(load.redirects, full_at, freed_at)
        assert not [(at, status) for at, status in load.other if at >= full_at], "a cached redirect failed"
        sent = len(load.redirects)
        stored = settled(http, links[0]["id"], sent)
        clicks = wait_for(lambda: drained(server), what="an empty click buffer")
        print(
            f"\nfull disk: {sent} redirects, {stored} clicks stored ({sent - stored} lost, {clicks['dropped']} "
            f"dropped), {held} of them held in the buffer while full; {taken} link writes taken after filling; "
            f"uncached redirects answered in {min(took):.2f}-{max(took):.2f} s, cached ones {gap:.2f} s apart at most"
        )
        assert max(took) < PROMPT and gap < PROMPT
        assert stored == sent and clicks["dropped"] == 0
        listed = http.get("/links", params={"per": 100}).json()["data"]
        assert {link["id"] for link in links} == {link["id"] for link in listed}  # every acknowledged write, only them
        public = public_keys[-1]["key"] if public_keys else keys.public
        assert httpx.get(f"{server.url}/api/v1/me", headers={"Authorization": f"Bearer {public}"}).status_code == 200
    assert server.proc.poll() is None and workers_of(server.proc.pid) == worker  # the worker never died
