"""A flood of distinct `utm_source` values and referrer hosts on one public link (issue 35, finding 3), through the
real click writer: the roll-up cubes keep at most `MAX_COMBOS` combinations and count the rest under `(other)`, so a
day's rows stop growing once that many have been seen, and analytics still add up: the exact total, the top 20
sources and referrers with one `(other)` row for the rest, the hours and the visitors; on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import random
import time
from datetime import date
from typing import Any

import pytest
from sqlalchemy import text
from starlette.testclient import TestClient

from slugline import _core
from slugline.analytics.shape import OTHER, TOP_ENTRIES
from slugline.clicks.buffer import ClickRecorder
from slugline.clicks.cubes import BY_AGENT, BY_ORIGIN, BY_PLACE
from slugline.runtime import Runtime
from tests.support.helpers import CHROME, Account

ROUND = 50_000  # clicks, each with a source and (every other one) a referrer host never seen before; two rounds
MAX_VALUES = 1_000  # sources, and referrer hosts, a cube keeps apart (rust_core/cube/mod.rs; docs/architecture.md)
# Bytes of one cube row, its five columns together: MAX_VALUES sources of the length sent here, as many referrer
# hosts, their hours, visitors by source and referrer, and sketches. A row that grew with the sources would pass it
# within the first round.
ROW_BOUND = 1 << 17
GROWTH = 1 << 10  # what a second round may add to a full row: wider counts and sketches, never a combination
AGENTS, ADDRESSES = 40, 250  # visitors: one per user agent and address


def _flood(runtime: Runtime, link_id: str, day: int, first: int, rng: random.Random, seen: set[Any]) -> None:
    recorder = ClickRecorder(runtime)
    for n in range(first, first + ROUND):
        agent, address = f"{CHROME} v{rng.randrange(AGENTS)}", f"198.51.100.{rng.randrange(ADDRESSES)}"
        seen.add((agent, address))
        referrer = f"https://r{n}.example/".encode() if n % 2 else b""
        when = day * 86_400 + rng.randrange(86_400)
        recorder.record((link_id, when, agent.encode(), referrer, f"s{n}-{rng.getrandbits(32):x}", False, address))
    asyncio.run(recorder.flush())  # in batches of `click_flush_max`, as the flusher writes them
    assert len(recorder) == 0 and recorder.dropped == 0


def _rows(runtime: Runtime, day: int) -> dict[tuple[str, int], tuple[int, int, int]]:
    """(scope, level) -> (bytes of the row, distinct sources, distinct referrer hosts) of the day's and its
    month's rows."""
    stmt = text(
        "SELECT scope, level, cube, coalesce(length(uniques), 0) + coalesce(length(hours), 0) "
        "+ coalesce(length(links), 0) + coalesce(length(sketches), 0) FROM click_cubes"
    )
    with runtime.db.engine.connect() as conn:
        found = conn.execute(stmt).all()
    out = {}
    for scope, level, cube, rest in found:
        kept = _core.analyse([(1, day, bytes(cube), None, None)], {}, False)["breakdowns"]
        out[(scope, level)] = (len(cube) + rest, len(kept["source"]), len(kept["referrer"]))
    return out


def _top_and_other(rows: list[dict[str, Any]], name: str, total: int) -> None:
    names = [row[name] for row in rows]
    assert len(rows) <= TOP_ENTRIES + 1 and names.count(OTHER) == 1 and names[-1] == OTHER, names
    assert sum(row["clicks"] for row in rows) == total


@pytest.mark.timeout(300)
def test_a_flood_of_sources_leaves_the_cubes_bounded_and_the_answers_whole(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    made = client.post("/api/v1/links", headers=alice.auth(), json={"destination_url": "https://e.org/", "slug": "fl"})
    link_id = made.json()["id"]
    day = int(time.time() // 86_400) - 1  # yesterday, UTC: all of its hours are past
    rng, seen = random.Random(35), set[Any]()
    _flood(runtime, link_id, day, 0, rng, seen)
    half = _rows(runtime, day)
    _flood(runtime, link_id, day, ROUND, rng, seen)
    full = _rows(runtime, day)

    projections = {(link_id, level) for level in (BY_AGENT, BY_ORIGIN, BY_PLACE)}  # bounded like the month they project
    assert set(full) == {(scope, level) for scope in ("", "p", link_id) for level in (0, 1)} | projections
    for key, (size, sources, referrers) in full.items():
        assert half[key][0] <= ROW_BOUND and size <= ROW_BOUND and size <= half[key][0] + GROWTH, (key, half, full)
        assert (sources, referrers) == half[key][1:], (key, half, full)  # no new combination past the bound
        assert sources <= MAX_VALUES + 1 and referrers <= MAX_VALUES + 1  # `(other)` besides

    clicks = 2 * ROUND
    yesterday = date.fromordinal(date(1970, 1, 1).toordinal() + day).isoformat()
    for which in ("full", "public"):
        answer = client.get("/api/v1/analytics", params={"days": 365}, headers=alice.auth(which)).json()
        assert answer["total_clicks"] == clicks, answer
        _top_and_other(answer["sources"], "source", clicks)
        _top_and_other(answer["referrers"], "referrer", ROUND)  # every other click had a referrer
        assert abs(answer["unique_visitors"] - len(seen)) <= 0.1 * len(seen)  # ±1.6% standard error past 1,024
    hours = client.get(
        "/api/v1/analytics", params={"from": yesterday, "to": yesterday, "interval": "hour"}, headers=alice.auth()
    ).json()
    assert sum(bucket["clicks"] for bucket in hours["clicks"]) == clicks
