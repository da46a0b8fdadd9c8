"""A link's month projections (`slugline.clicks.cubes.BY_AGENT`, `BY_ORIGIN`, `BY_PLACE`): the click writer writes
them with each month of a link, filtered top links read them instead of the months and answer what the months answer,
and a link moved in or out of its account's views takes only its days and months there; on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import text
from starlette.testclient import TestClient

from slugline.analytics import cubes
from slugline.analytics.cache import AnswerCache
from slugline.clicks.buffer import ClickRecorder
from slugline.clicks.cubes import BY_AGENT, BY_ORIGIN, BY_PLACE, MONTH
from slugline.common.clock import day_date
from slugline.runtime import Runtime
from tests.support.helpers import CHROME, Account
from tests.support.past_clicks import IPHONE, TODAY, clicked, get_json

SHAPES: list[dict[str, Any]] = [
    {"days": 120, "device": "mobile"},
    {"days": 120, "source": "google.com"},
    {"days": 120, "device": "mobile", "source": "newsletter"},
    {"days": 120, "browser": "chrome", "os": "windows"},
    {"days": 45, "source": "newsletter"},
]
SOURCES = ("google.com", "newsletter", None)


def _rows(runtime: Runtime, where: str) -> list[tuple[str, int, int]]:
    with runtime.db.session() as session:
        found = session.execute(text(f"SELECT scope, level, bucket FROM click_cubes WHERE {where}"))
        return sorted((str(s), int(lv), int(b)) for s, lv, b in found)


def _top_links(client: TestClient, who: Account, runtime: Runtime) -> list[Any]:
    runtime.analytics = AnswerCache(1)  # every answer read afresh
    return [get_json(client, who, **shape)["top_links"] for shape in SHAPES]


def _bytes_read(runtime: Runtime, account: int, links: list[str], filters: dict[str, str]) -> int:
    with runtime.db.session() as session:
        rows = cubes.fitting_rows(session, account, links, day_date(TODAY - 119), day_date(TODAY), filters)
    return sum(len(cube) for _, _, cube in rows)


def test_filtered_top_links_read_projections_and_answer_what_the_months_do(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    made = {
        f"p{n}": [
            (TODAY - d, CHROME if (d + n) % 2 else IPHONE, SOURCES[(d + n) % 3])
            for d in range(0, 110, 2)
            if d % (n + 3)
        ]
        for n in range(4)
    }
    links = clicked(client, alice, runtime, **made)
    months = _rows(runtime, f"level = {MONTH} AND scope NOT IN ('', 'p')")
    assert len(months) >= 4 * 4
    for level in (BY_AGENT, BY_ORIGIN, BY_PLACE):
        assert _rows(runtime, f"level = {level}") == [(s, level, b) for s, _, b in months]
    answers = _top_links(client, alice, runtime)
    assert all(answers) and len({str(a) for a in answers}) == len(SHAPES)  # each shape ranks something of its own
    with runtime.db.session() as session:
        account = int(session.execute(text("SELECT id FROM accounts WHERE username = 'alice'")).scalar_one())
    projected = _bytes_read(runtime, account, links, {"source": "google.com"})
    with runtime.db.writing() as session:
        session.execute(text(f"DELETE FROM click_cubes WHERE level IN ({BY_AGENT}, {BY_ORIGIN}, {BY_PLACE})"))
    assert _top_links(client, alice, runtime) == answers  # the months themselves, as before the projections
    assert projected < _bytes_read(runtime, account, links, {"source": "google.com"})


def test_a_link_moved_takes_only_its_days_and_months_into_the_views(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    hidden, gone = clicked(
        client,
        alice,
        runtime,
        hidden=[(TODAY - d, IPHONE, "newsletter") for d in range(0, 60, 5)],
        gone=[(TODAY - d, CHROME, None) for d in range(0, 60, 7)],
    )
    assert _rows(runtime, f"scope = '{gone}' AND level = {BY_ORIGIN}")
    assert (
        client.put(f"/api/v1/links/{hidden}", json={"visibility": "private"}, headers=alice.auth()).status_code == 200
    )
    assert client.delete(f"/api/v1/links/{gone}", headers=alice.auth()).status_code == 200
    asyncio.run(ClickRecorder(runtime).flush())  # the writer makes the moves
    assert _rows(runtime, "level NOT IN (0, 1, 2) AND scope IN ('', 'p')") == []
    assert _rows(runtime, f"scope = '{gone}'") == []
    assert _rows(runtime, f"scope = '{hidden}' AND level = {BY_ORIGIN}")
