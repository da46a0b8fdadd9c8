"""`links.purge.purge_expired`: links that expired before a date go, with their clicks, in bounded batches."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from sqlalchemy import text
from starlette.testclient import TestClient

from slugline.links.purge import purge_expired
from slugline.runtime import Runtime
from tests.support.helpers import CHROME, LINKS, Account, create


def test_purge_removes_only_links_expired_before_the_date(client: TestClient, runtime: Runtime, alice: Account) -> None:
    old = [create(client, alice, expires_at=f"2020-01-0{day}T00:00:00Z").json() for day in range(1, 6)]
    recent = create(client, alice, expires_at="2024-06-01T00:00:00Z").json()
    forever = create(client, alice).json()
    for link in (old[0], recent):
        client.get(f"/{link['slug']}", headers={"user-agent": CHROME}, follow_redirects=False)
    deadline = time.monotonic() + 10
    while client.get(f"{LINKS}/{old[0]['id']}/clicks", headers=alice.auth()).json()["pagination"]["total"] < 1:
        assert time.monotonic() < deadline, "the click was never stored"
        time.sleep(0.05)

    done = purge_expired(runtime, datetime(2021, 1, 1, tzinfo=UTC), batch=2)
    assert (done["purged"], done["batches"]) == (5, 3)
    for link in old:
        assert client.get(f"{LINKS}/{link['id']}", headers=alice.auth()).status_code == 404
        assert client.get(f"/{link['slug']}", follow_redirects=False).status_code == 404
    kept = [link["id"] for link in client.get(f"{LINKS}?per=100", headers=alice.auth()).json()["data"]]
    assert sorted(kept) == sorted([recent["id"], forever["id"]])
    with runtime.db.engine.connect() as conn:
        left = conn.execute(text("SELECT link_id FROM clicks")).scalars().all()
    assert old[0]["id"] not in left
    assert purge_expired(runtime, datetime(2021, 1, 1, tzinfo=UTC))["purged"] == 0
