"""The click log's monthly partitions on PostgreSQL: a click never fails for lack of one, strays in the default
partition find their month, months are made ahead, and a change that cannot lock the log in a moment gives up."""

from __future__ import annotations

import asyncio
import logging
import time as clock
from datetime import UTC, date, datetime, time, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from starlette.testclient import TestClient

from slugline.clicks import partitions, retention
from slugline.common.clock import utcnow
from slugline.runtime import Runtime
from tests.clicks.test_retention import DAYS, record
from tests.support.helpers import POSTGRES_ONLY, Account, create


def months_from(month: date, months: int) -> date:
    for _ in range(months):
        month = partitions.next_month(month)
    return month


def mid(month: date) -> datetime:
    return datetime.combine(month + timedelta(days=14), time(12), UTC)


def where(rt: Runtime) -> dict[str, int]:
    with rt.db.engine.connect() as conn:
        found = conn.execute(text("SELECT tableoid::regclass::text, count(*) FROM clicks GROUP BY 1"))
        return {str(table): int(count) for table, count in found}


@POSTGRES_ONLY
def test_strays_in_the_default_partition_find_their_month(client: TestClient, alice: Account, runtime: Runtime) -> None:
    link_id: str = create(client, alice, slug="strays").json()["id"]
    this = partitions.month_of(utcnow().date())
    past, future = date(this.year - 2, this.month, 1), months_from(this, 6)
    record(runtime, link_id, mid(past), 2)  # months without a partition: in the default one, never refused
    record(runtime, link_id, mid(future), 1)
    assert where(runtime) == {partitions.DEFAULT: 3}
    assert list(retention.prune(runtime.db, None)) == [0]  # the past month moved; the far one waits
    assert where(runtime) == {partitions.name(past): 2, partitions.DEFAULT: 1}
    later = mid(months_from(this, 4))  # its month in reach now: made with the stray in it
    assert sum(retention.prune(runtime.db, None, later)) == 0
    assert where(runtime) == {partitions.name(past): 2, partitions.name(future): 1}
    with runtime.db.engine.connect() as conn:
        assert partitions.monthly(conn) == sorted({past, *partitions.ahead(this), *partitions.ahead(later.date())})
    assert sum(retention.prune(runtime.db, DAYS)) == 2
    assert where(runtime) == {partitions.name(future): 1}
    record(runtime, link_id, mid(past), 1)  # a late click of a month retention dropped: deleted from the default
    assert sum(retention.prune(runtime.db, DAYS)) == 1 and where(runtime) == {partitions.name(future): 1}


@POSTGRES_ONLY
def test_a_change_gives_up_when_the_log_stays_locked(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ahead = datetime.now(UTC) + timedelta(days=130)  # months without partitions yet
    monkeypatch.setattr(retention, "utcnow", lambda: ahead)
    monkeypatch.setattr(retention, "PASS_SECONDS", 0.0)  # the first pass due at once
    with runtime.db.engine.connect() as reader:
        reader.execute(text("SELECT count(*) FROM clicks"))  # a long export's transaction
        started = clock.monotonic()
        with pytest.raises(OperationalError, match="lock timeout"):
            list(retention.prune(runtime.db, None))
        assert clock.monotonic() - started < 5
        with caplog.at_level(logging.WARNING, logger="slugline.clicks"):
            asyncio.run(retention.Upkeep(runtime.db, None).step())
        assert "click log upkeep stopped until its next pass (OperationalError" in caplog.text
    list(retention.prune(runtime.db, None))  # the next pass, once the reader is done
    with runtime.db.engine.connect() as conn:
        assert set(partitions.ahead(ahead.date())) <= set(partitions.monthly(conn))
