"""Two workers' click writers and a stream of link changes on one database: the roll-up cubes stay exactly what the
click log says — every click counted once in each view it belongs to, none after its link is deleted, unique
visitors exact — and no batch deadlocks or is lost (PostgreSQL's row and advisory locks, SQLite's one writer)."""

from __future__ import annotations

import asyncio
import random
import threading
import time

from sqlalchemy import text
from starlette.testclient import TestClient

from slugline.accounts import callers
from slugline.analytics import service as analytics
from slugline.clicks.buffer import ClickRecorder, RawClick
from slugline.runtime import Runtime
from tests.support.helpers import BASE_URL, CHROME, Account, ClientFactory

LINKS = 6
ROUNDS = 12


def _click(link_id: str, person: int) -> RawClick:
    return (link_id, time.time(), f"{CHROME} p{person}".encode(), b"", None, False, f"198.51.100.{person}")


def _writer(rt: Runtime, links: list[str], seed: int, failures: list[BaseException]) -> None:
    rng = random.Random(seed)
    try:
        for _ in range(ROUNDS):
            recorder = ClickRecorder(rt)
            for _ in range(40):
                recorder.record(_click(rng.choice(links), rng.randrange(30)))
            asyncio.run(recorder.flush())
            assert len(recorder) == 0, "a batch was not written"
    except BaseException as exc:
        failures.append(exc)


def test_writers_and_link_changes_leave_the_cubes_exact(
    client: TestClient, alice: Account, runtime: Runtime, make_client: ClientFactory
) -> None:
    links = []
    for i in range(LINKS):
        made = client.post(
            "/api/v1/links", headers=alice.auth(), json={"destination_url": "https://e.org/", "slug": f"cc{i}"}
        )
        links.append(made.json()["id"])
    _, other = make_client()
    failures: list[BaseException] = []
    writers = [threading.Thread(target=_writer, args=(rt, links, n, failures)) for n, rt in enumerate((runtime, other))]
    for thread in writers:
        thread.start()
    for n in range(8):  # meanwhile: links hidden and shown again, one deleted
        level = "private" if n % 2 == 0 else "public"
        client.put(f"/api/v1/links/{links[n % 3]}", json={"visibility": level}, headers=alice.auth())
        if n == 4:
            client.delete(f"/api/v1/links/{links[5]}", headers=alice.auth())
        time.sleep(0.05)
    for thread in writers:
        thread.join()
    assert not failures, failures
    with runtime.db.engine.connect() as conn:
        truth = {
            public_only: conn.execute(
                text(
                    "SELECT count(*), count(DISTINCT c.visitor) FROM clicks c JOIN links l ON l.id = c.link_id "
                    "WHERE c.device != 'bot'" + (" AND l.visibility IN ('public', 'unlisted')" if public_only else "")
                )
            ).one()
            for public_only in (False, True)
        }
    for moved in (False, True):  # the link changes' cube moves pending (allowed for when read), then made
        if moved:
            asyncio.run(ClickRecorder(runtime).flush())
            with runtime.db.engine.connect() as conn:
                assert conn.execute(text("SELECT count(*) FROM cube_moves")).scalar_one() == 0
        for public_only, key in ((False, alice.full), (True, alice.public)):
            caller = callers.authenticate(runtime, f"Bearer {key}", BASE_URL)
            stats = analytics.analytics_on_thread(runtime, caller, {"days": 2})  # across midnight UTC too
            assert (stats["total_clicks"], stats["unique_visitors"]) == tuple(truth[public_only])
            assert sum(t["clicks"] for t in stats["top_links"]) == truth[public_only][0]
