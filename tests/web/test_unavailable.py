"""A store that refuses writes (read-only, full) or is away answers 503 `{"error": ...}`, never 500, and reads
that need no write keep working; acknowledged writes stay."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from starlette.testclient import TestClient

from slugline.clicks.buffer import MAX_BATCH_FAILURES
from slugline.runtime import Runtime
from slugline.storage.db import UNAVAILABLE_MESSAGE
from slugline.storage.loopwrite import LoopWriter
from tests.support.helpers import SQLITE_ONLY, click_recorder


def _query_only(conn: Any, _: Any) -> None:
    conn.execute("PRAGMA query_only=ON")


def read_only(rt: Runtime) -> None:
    """Every new connection refuses writes, as SQLite does for a read-only file (root ignores file modes): the
    pool's, and the loop writer's (whose write is then declined to the thread path)."""
    event.listen(rt.db.engine, "connect", _query_only)
    rt.db.engine.dispose()
    writer = rt.db.write_now
    if isinstance(writer, LoopWriter):
        writer.close()
        _query_only(writer._connection(), None)


@SQLITE_ONLY
def test_read_only_store_is_503_and_reads_still_answer(client: TestClient, runtime: Runtime, alice: Any) -> None:
    auth = {"Authorization": f"Bearer {alice.full}"}
    kept = client.post("/api/v1/links", json={"destination_url": "https://a.example/", "slug": "kept"}, headers=auth)
    assert kept.status_code == 201
    read_only(runtime)
    res = client.post("/api/v1/links", json={"destination_url": "https://b.example/"}, headers=auth)
    assert res.status_code == 503, res.text
    assert res.json() == {"error": UNAVAILABLE_MESSAGE}
    assert res.headers["retry-after"] == "1"
    assert isinstance(runtime.db.write_now, LoopWriter) and runtime.db.write_now.declined == 1
    listed = client.get("/api/v1/links", headers=auth)
    assert listed.status_code == 200
    assert [link["slug"] for link in listed.json()["data"]] == ["kept"]  # the acknowledged write, and only it
    assert client.get("/kept", follow_redirects=False).status_code == 302


@SQLITE_ONLY
def test_store_away_is_503_on_the_api_and_on_uncached_redirects(client: TestClient, runtime: Runtime) -> None:
    path = runtime.settings.sqlite_path()
    assert path is not None
    path.rename(path.with_suffix(".away"))
    path.mkdir()  # the file cannot be opened now, as when its volume is gone
    # After the move: a connection a background task (click flush, webhook scan) opened between a dispose and the
    # move would still reach the old file, and the login would answer from it (seen once under load).
    runtime.db.engine.dispose()
    res = client.post("/api/v1/auth/login", json={"username": "someone", "password": "whatever1"})
    assert res.status_code == 503, res.text
    assert res.json() == {"error": UNAVAILABLE_MESSAGE}
    res = client.get("/never-cached", follow_redirects=False)
    assert res.status_code == 503, res.text
    assert res.json() == {"error": UNAVAILABLE_MESSAGE}


@SQLITE_ONLY
def test_clicks_wait_while_the_store_refuses_writes(client: TestClient, runtime: Runtime, alice: Any) -> None:
    """A full disk or a read-only file refuses every row while reads work: clicks must wait, not be dropped."""
    auth = {"Authorization": f"Bearer {alice.full}"}
    link = client.post("/api/v1/links", json={"destination_url": "https://a.example/", "slug": "held"}, headers=auth)
    clicks = click_recorder(client)
    read_only(runtime)
    assert all(client.get("/held", follow_redirects=False).status_code == 302 for _ in range(5))
    assert client.portal is not None
    for _ in range(MAX_BATCH_FAILURES + 1):  # past the row-by-row fallback
        client.portal.call(clicks.flush)
    assert (len(clicks), clicks.dropped) == (5, 0)
    event.remove(runtime.db.engine, "connect", _query_only)
    runtime.db.engine.dispose()
    client.portal.call(clicks.flush)
    assert len(clicks) == 0
    res = client.get(f"/api/v1/links/{link.json()['id']}/clicks", headers=auth)
    assert res.json()["pagination"]["total"] == 5
