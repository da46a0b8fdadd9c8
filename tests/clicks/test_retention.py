"""Retention of the raw click log: old clicks leave the log and the exports, analytics keep counting them; SQLite
deletes in bounded batches by rowid, the click writer's loop runs it, and `slugline clicks prune` runs it once."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, time, timedelta
from typing import Any

import pytest
from sqlalchemy import text
from starlette.testclient import TestClient

from slugline import cli
from slugline.clicks import retention
from slugline.clicks.buffer import ClickRecorder
from slugline.common.clock import utcnow
from slugline.runtime import Runtime
from slugline.settings import Settings
from tests.support.helpers import CHROME, SQLITE_ONLY, Account, create

DAYS = 30


def record(rt: Runtime, link_id: str, at: datetime, clicks: int) -> None:
    """`clicks` clicks of different visitors at `at` (a second apart), written by the click writer (`write_batch`)."""
    recorder = ClickRecorder(rt)
    for n in range(clicks):
        recorder.record((link_id, at.timestamp() + n, CHROME.encode(), b"", "news", False, f"198.51.100.{n}"))
    assert asyncio.run(recorder.flush()) == clicks


def click_log(client: TestClient, who: Account, link_id: str) -> list[str]:
    res = client.get(f"/api/v1/links/{link_id}/clicks", headers=who.auth())
    assert res.status_code == 200, res.text
    return [click["clicked_at"] for click in res.json()["data"]]


def analytics(client: TestClient, who: Account, first: datetime, last: datetime) -> dict[str, Any]:
    period = {"from": first.date().isoformat(), "to": last.date().isoformat()}
    res = client.get("/api/v1/analytics", params=period, headers=who.auth())
    assert res.status_code == 200, res.text
    answer: dict[str, Any] = res.json()
    return answer


@pytest.fixture
def old_and_new(client: TestClient, alice: Account, runtime: Runtime) -> tuple[str, datetime]:
    """A link with 3 clicks five months ago and 2 a few minutes ago, and the old clicks' time."""
    link_id: str = create(client, alice, slug="aging").json()["id"]
    old = datetime.combine((utcnow() - timedelta(days=150)).date(), time(12), UTC)
    record(runtime, link_id, old, 3)
    record(runtime, link_id, utcnow() - timedelta(minutes=5), 2)
    return link_id, old


def test_old_clicks_leave_the_log_and_analytics_keep_them(
    client: TestClient, alice: Account, runtime: Runtime, old_and_new: tuple[str, datetime]
) -> None:
    link_id, old = old_and_new
    before = analytics(client, alice, old - timedelta(days=1), old + timedelta(days=1))
    assert before["total_clicks"] == 3 and before["unique_visitors"] == 3
    listed = click_log(client, alice, link_id)
    assert len(listed) == 5
    assert sum(retention.prune(runtime.db, DAYS)) == 3
    assert analytics(client, alice, old - timedelta(days=1), old + timedelta(days=1)) == before
    assert click_log(client, alice, link_id) == listed[:2]  # newest first: the two recent ones
    with runtime.db.engine.connect() as conn:
        assert conn.execute(text("SELECT clicks FROM links WHERE id = :id"), {"id": link_id}).scalar_one() == 5
    assert sum(retention.prune(runtime.db, DAYS)) == 0
    assert sum(retention.prune(runtime.db, None)) == 0  # unset: every click is kept
    assert len(click_log(client, alice, link_id)) == 2


@SQLITE_ONLY
def test_sqlite_deletes_in_batches_walking_the_rowid(
    client: TestClient, alice: Account, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    link_id: str = create(client, alice, slug="batches").json()["id"]
    old = utcnow() - timedelta(days=DAYS + 5)
    record(runtime, link_id, old, 9)
    record(runtime, link_id, utcnow(), 3)
    record(runtime, link_id, old, 1)  # written late, behind newer clicks (a batch held through an outage)
    monkeypatch.setattr(retention, "BATCH", 3)
    assert list(retention.prune(runtime.db, DAYS)) == [3, 3, 3]  # a window of new clicks ends the pass
    with runtime.db.engine.connect() as conn:
        explained = text("EXPLAIN QUERY PLAN " + retention._DELETE.text)
        plan = " ".join(str(row[-1]) for row in conn.execute(explained, {"after": 0, "last": 9, "cutoff": ""}))
        left = conn.execute(text("SELECT count(*) FROM clicks")).scalar_one()
    assert "USING INTEGER PRIMARY KEY" in plan, plan
    assert left == 4
    # Once what was written before it is old too, the late click goes with it.
    assert sum(retention.prune(runtime.db, DAYS, utcnow() + timedelta(days=DAYS + 1))) == 4


def test_the_click_writer_prunes_between_flushes(
    client: TestClient,
    alice: Account,
    runtime: Runtime,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    link_id: str = create(client, alice, slug="looped").json()["id"]
    record(runtime, link_id, utcnow() - timedelta(days=DAYS + 120), 4)
    record(runtime, link_id, utcnow(), 1)
    runtime.settings.click_log_days = DAYS
    monkeypatch.setattr(retention, "PASS_SECONDS", 0.0)  # the first pass due at once
    recorder = ClickRecorder(runtime)
    recorder._every = 0.05

    def left() -> int:
        with runtime.db.engine.connect() as conn:
            return int(conn.execute(text("SELECT count(*) FROM clicks")).scalar_one())

    async def until_pruned() -> int:
        task = asyncio.create_task(recorder.run())
        try:
            for _ in range(200):  # up to 10 s
                await asyncio.sleep(0.05)
                if await asyncio.to_thread(left) == 1:
                    break
        finally:
            recorder.stop()
            await task
        return left()

    with caplog.at_level(logging.INFO, logger="slugline.clicks"):
        assert asyncio.run(until_pruned()) == 1
    assert f"deleted 4 clicks older than {DAYS} days" in caplog.text


def test_slugline_clicks_prune_runs_one_pass(
    client: TestClient,
    alice: Account,
    settings: Settings,
    old_and_new: tuple[str, datetime],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(cli, "get_settings", lambda: settings)
    assert cli.main(["clicks", "prune"]) == 0
    assert capsys.readouterr().out == "SLUGLINE_CLICK_LOG_DAYS is not set: every click is kept\n"
    assert len(click_log(client, alice, old_and_new[0])) == 5
    settings.click_log_days = DAYS
    assert cli.main(["clicks", "prune"]) == 0
    assert capsys.readouterr().out == f"deleted 3 clicks older than {DAYS} days from the click log\n"
    assert len(click_log(client, alice, old_and_new[0])) == 2
