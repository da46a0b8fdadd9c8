"""Faults a real server survives (SQLite and PostgreSQL): a worker killed under redirect load, PostgreSQL restarted
under load, Redis stopped. Each test prints what was lost, measured (run with -s to see it). A store that refuses
writes (read-only, full) is tests/test_unavailable.py; a real full disk under load is test_disk_full_e2e.py."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack

import httpx
import pytest

from tests.support.faults import (
    LIMITLESS,
    Load,
    Postgres,
    Redis,
    private_postgres,
    private_redis,
    settled,
    workers_of,
)
from tests.support.server import Server, ServerFactory, api, make_account, wait_for

__all__ = ["private_postgres", "private_redis"]  # fixtures


CLIENTS = ExitStack()  # API clients, closed after each test


@pytest.fixture(autouse=True)
def _close_clients(start_server: ServerFactory) -> Iterator[None]:
    """Closed before the servers stop (this fixture is set up after `start_server`, so torn down first): a server
    stopping waits for its open keep-alive connections, 30 s each test had spent."""
    with CLIENTS:
        yield


def stack_client(server: Server, username: str) -> httpx.Client:
    return CLIENTS.enter_context(api(server, make_account(server, username).full))


def test_worker_killed_under_redirect_load(start_server: ServerFactory, database_url: str) -> None:
    server = start_server(database_url, workers=2, **LIMITLESS)
    assert server.proc is not None
    http = stack_client(server, "killed")
    made = [http.post("/links", json={"destination_url": f"https://example.com/{i}"}).json() for i in range(10)]
    target = made[0]
    load = Load(f"{server.url}/{target['slug']}")
    with load.running():
        wait_for(lambda: len(load.redirects) > 200, what="redirect load")
        victim = workers_of(server.proc.pid)[0]
        killed_at = time.time()
        subprocess.run(["kill", "-9", str(victim)], check=True)
        wait_for(lambda: load.within(killed_at + 1, time.time()) > 100, deadline=30, what="answers after the kill")
        after = http.post("/links", json={"destination_url": "https://example.com/after"})
    assert after.status_code == 201
    sent = len(load.redirects)
    stored = settled(http, target["id"], sent)
    last_second = load.within(killed_at - 1, killed_at)
    print(
        f"\nkill -9 ({database_url.split(':')[0]}): {sent} redirects, {stored} clicks stored, {sent - stored} lost; "
        f"{last_second} redirects in the second before the kill; refused or dropped requests: {len(load.other)}"
    )
    assert 0 <= sent - stored <= last_second  # at most the killed worker's last second of buffered clicks
    assert server.proc.poll() is None
    assert len(workers_of(server.proc.pid)) == 2  # Granian replaced the worker
    listed = http.get("/links", params={"per": 100}).json()
    assert {link["id"] for link in made} | {after.json()["id"]} == {link["id"] for link in listed["data"]}


@pytest.mark.postgres
def test_postgres_restarted_under_load(start_server: ServerFactory, private_postgres: Postgres) -> None:
    server = start_server(private_postgres.url, **LIMITLESS)
    http = stack_client(server, "restarted")
    cached = http.post("/links", json={"destination_url": "https://example.com/cached"}).json()
    unseen = http.post("/links", json={"destination_url": "https://example.com/unseen"}).json()
    load = Load(f"{server.url}/{cached['slug']}")
    with load.running():
        wait_for(lambda: len(load.redirects) > 50, what="redirect load")
        private_postgres.stop()
        down_at = time.time()
        started = time.monotonic()
        res = http.get("/links")
        assert res.status_code == 503 and "database" in res.json()["error"], res.text
        refused_in = time.monotonic() - started
        assert refused_in < 10, refused_in  # a 503, not a hang
        assert httpx.get(f"{server.url}/{unseen['slug']}").status_code == 503
        wait_for(lambda: load.within(down_at + 1, time.time()) > 50, what="cached redirects while PostgreSQL is away")
        private_postgres.start()
        wait_for(lambda: http.get("/links").status_code == 200, deadline=30, what="the API after PostgreSQL returns")
    assert not [status for at, status in load.other if at >= down_at], "a cached redirect failed during the outage"
    sent = len(load.redirects)
    stored = settled(http, cached["id"], sent)
    print(
        f"\nPostgreSQL restart: {sent} redirects, {stored} clicks stored, {sent - stored} lost; "
        f"API answered 503 in {refused_in:.1f} s"
    )
    assert stored == sent
    assert httpx.get(f"{server.url}/{unseen['slug']}").status_code == 302


def test_redis_outage_fails_open_and_shares_again(start_server: ServerFactory, private_redis: Redis) -> None:
    limits = {**LIMITLESS, "SLUGLINE_RATE_LIMIT_DEVELOPER": "30", "SLUGLINE_REDIS_URL": private_redis.url}
    one = start_server(**limits)
    two = start_server(one.database_url, **limits)
    key = make_account(one, "shared").full
    first, second = CLIENTS.enter_context(api(one, key)), CLIENTS.enter_context(api(two, key))

    def drain(http: httpx.Client) -> None:
        wait_for(lambda: http.get("/me").status_code == 429, deadline=30, what="the bucket to run dry")

    drain(first)
    assert second.get("/me").status_code == 429  # one bucket in Redis for both servers
    private_redis.stop()
    res = second.get("/me")
    assert res.status_code == 200 and "ratelimit-remaining" in res.headers  # fail-open: this worker's own bucket
    wait_for(lambda: "Redis unreachable" in two.log(), what="the fallback in the log")
    private_redis.start()
    for http, server in ((first, one), (second, two)):

        def back(http: httpx.Client = http, server: Server = server) -> bool:
            http.get("/me")  # the first call a second after the outage tries Redis again
            return "Redis answers" in server.log()

        wait_for(back, what="Redis back")
    drain(first)
    assert second.get("/me").status_code == 429  # sharing again, with no restart
