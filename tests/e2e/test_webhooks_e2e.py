"""Webhooks from a real server under Granian (two workers, SQLite and PostgreSQL) to a local receiver that verifies
every delivery with `standardwebhooks`: a scripted session's every event arrives; a worker killed with `kill -9` in
the middle of a delivery and a receiver that is down for a while lose nothing (each message id of the outbox
arrives; repeats are allowed, with the same id). Back-off and leases are shortened by settings to keep it short."""

from __future__ import annotations

import subprocess
import time
from collections import Counter

import httpx
from sqlalchemy import create_engine, text

from slugline.storage.db import normalize_url
from tests.support.faults import LIMITLESS, workers_of
from tests.support.receiver import Receiver
from tests.support.server import ServerFactory, api, make_account, wait_for

FAST = {
    "SLUGLINE_WEBHOOKS_ALLOW_PRIVATE": "true",
    "SLUGLINE_WEBHOOKS_TIMEOUT_SECONDS": "2",  # a claim's lease: 2 * 2 + 5 = 9 s
    "SLUGLINE_WEBHOOKS_RETRY_SECONDS": "0.2",
    "SLUGLINE_WEBHOOKS_RETRY_MAX_SECONDS": "1",
    "SLUGLINE_WEBHOOKS_POLL_SECONDS": "0.2",
    "SLUGLINE_WEBHOOKS_CLICK_INTERVAL_SECONDS": "0.2",
    **LIMITLESS,
}
DOWN_SECONDS = 10


def _expect(rx: Receiver, created: int, updated: int, deleted: int, clicks: int, deadline: float = 30) -> None:
    def done() -> bool:
        kinds = Counter(e["type"] for e in rx.events.values())
        clicked = sum(len(e["data"]["clicks"]) for e in rx.events.values() if e["type"] == "link.clicked")
        return (kinds["link.created"], kinds["link.updated"], kinds["link.deleted"], clicked) == (
            created,
            updated,
            deleted,
            clicks,
        )

    wait_for(done, deadline=deadline, what=f"{created}/{updated}/{deleted} link events and {clicks} clicks")


def _redirects(server_url: str, slug: str, n: int) -> None:
    with httpx.Client() as client:
        for _ in range(n):
            assert client.get(f"{server_url}/{slug}").status_code in (301, 302)


def test_every_event_arrives_through_a_kill_and_an_outage(start_server: ServerFactory, database_url: str) -> None:
    server = start_server(database_url, workers=2, **FAST)
    assert server.proc is not None
    http = api(server, make_account(server, "hooked").full)
    with Receiver() as rx, http:
        hook = http.post("/webhooks", json={"url": rx.url}).json()
        rx.secret = hook["secret"]
        # A scripted session.
        links = [http.post("/links", json={"destination_url": f"https://example.com/{n}"}).json() for n in range(5)]
        for link in links[:2]:
            http.put(f"/links/{link['id']}", json={"title": "Titled"})
        http.delete(f"/links/{links[4]['id']}")
        _redirects(server.url, links[0]["slug"], 40)
        _expect(rx, 5, 2, 1, 40)
        # kill -9 of the workers while one of them waits for the receiver's answer.
        rx.hold = 4
        held = http.post("/links", json={"destination_url": "https://example.com/held", "slug": "held"}).json()
        wait_for(lambda: rx.held, what="a delivery under way")
        for worker in workers_of(server.proc.pid):
            subprocess.run(["kill", "-9", str(worker)], check=True)
        rx.hold = 0
        _expect(rx, 6, 2, 1, 40)  # claimed again once the lease ran out, by a respawned worker
        assert rx.held[0] in rx.events and rx.events[rx.held[0]]["data"]["id"] == held["id"]
        # The receiver is down while the account goes on.
        rx.down()
        more = [http.post("/links", json={"destination_url": f"https://example.com/m{n}"}).json() for n in range(2)]
        http.put(f"/links/{more[0]['id']}", json={"note": "while down"})
        http.delete(f"/links/{more[1]['id']}")
        _redirects(server.url, links[1]["slug"], 20)
        time.sleep(DOWN_SECONDS)
        failed = http.get(f"/webhooks/{hook['id']}/attempts").json()["data"]
        assert failed[0]["status"] is None and failed[0]["error"].startswith("could not connect")
        rx.up()
        _expect(rx, 8, 3, 2, 60)
        assert not rx.refused
    # Every message the outbox holds arrived, each under its one id; repeats only of ids that arrived.
    engine = create_engine(normalize_url(database_url))
    with engine.connect() as conn:
        outbox = set(conn.execute(text("SELECT id FROM webhook_messages")).scalars())
    engine.dispose()
    assert outbox == set(rx.events)
    repeats = Counter(msg_id for msg_id, _ in rx.arrivals if msg_id in rx.events)
    print(f"\nwebhooks e2e ({database_url.split(':')[0]}): {len(outbox)} messages, {sum(repeats.values())} deliveries")
