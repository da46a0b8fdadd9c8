"""`slugline backup` while a real server takes redirects and API writes, then `slugline restore` into a fresh
directory: a second server on the restored copy serves the same links, and the same keys and sessions work there."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support.helpers import CHROME
from tests.support.server import Server, api, make_account


@dataclass
class FileSecretServer(Server):
    """A server whose secret is the file `secret.key` beside its SQLite database, as a default install's is."""

    @property
    def env(self) -> dict[str, str]:
        env = dict(super().env)
        env.pop("SLUGLINE_SECRET_KEY", None)
        return env


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[list[Server]]:
    started: list[Server] = []
    try:
        yield started
    finally:
        for server in started:
            server.stop()


def slugline(server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "slugline.cli", *args], env=server.env, capture_output=True, text=True, timeout=120
    )


def test_backup_under_load_restores_the_same_links_and_keys(tmp_path: Path, servers: list[Server]) -> None:
    live = FileSecretServer(f"sqlite:///{tmp_path}/live/slugline.db", workers=2)
    servers.append(live.start(tmp_path))
    keys = make_account(live, "keeper")
    with api(live, keys.full) as http:
        before = {}
        for n in range(40):
            made = http.post("/links", json={"destination_url": f"https://example.com/{n}", "slug": f"kept-{n}"})
            assert made.status_code == 201, made.text
            before[made.json()["slug"]] = made.json()["destination_url"]

    stop = threading.Event()
    done = {"redirects": 0, "creates": 0}

    def redirects() -> None:
        with httpx.Client(base_url=live.url, headers={"user-agent": CHROME}) as client:
            while not stop.is_set():
                assert client.get(f"/kept-{done['redirects'] % 40}").status_code == 302
                done["redirects"] += 1

    def creates() -> None:
        with api(live, keys.full) as http:
            while not stop.is_set():
                assert http.post("/links", json={"destination_url": "https://example.com/load"}).status_code == 201
                done["creates"] += 1

    load = [threading.Thread(target=redirects), threading.Thread(target=creates)]
    for thread in load:
        thread.start()
    try:
        while done["creates"] < 20 or done["redirects"] < 50:
            stop.wait(0.05)
        target = tmp_path / "backups" / "slugline.backup"
        made = slugline(live, "backup", str(target))
        mid = dict(done)
    finally:
        stop.set()
        for thread in load:
            thread.join()
    assert made.returncode == 0, made.stderr
    assert "KEEP THE SERVER SECRET" in made.stderr and (tmp_path / "backups" / "slugline.backup.secret.key").exists()
    assert done["creates"] > mid["creates"] or done["redirects"] > mid["redirects"]  # the load went on around it

    fresh = FileSecretServer(f"sqlite:///{tmp_path}/fresh/slugline.db", workers=1)
    restored = slugline(fresh, "restore", str(target))
    assert restored.returncode == 0, restored.stderr
    assert (tmp_path / "fresh" / "secret.key").read_bytes() == (tmp_path / "live" / "secret.key").read_bytes()
    servers.append(fresh.start(tmp_path))

    with api(fresh, keys.full) as http:  # the same key, verified with the restored secret
        assert http.get("/me").json()["username"] == "keeper"
        listed = http.get("/links", params={"per": 100, "q": "kept"}).json()
        assert {link["slug"]: link["destination_url"] for link in listed["data"]} == before
        assert http.get("/links").json()["pagination"]["total"] >= 40 + 20
    session = httpx.get(f"{fresh.url}/api/v1/me", headers={"Authorization": f"Bearer {keys.session}"})
    assert session.status_code == 200
    with httpx.Client(base_url=fresh.url, headers={"user-agent": CHROME}) as client:
        for slug, destination in before.items():
            answer = client.get(f"/{slug}")
            assert answer.status_code == 302 and answer.headers["location"] == destination
