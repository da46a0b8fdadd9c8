"""A link's clicks and unique visitors per variant come from its roll-up cubes: they match an exact count of the
click log under periods and filters (`variant=` among them) in REST and MCP, outlive the click log's retention, the
dashboard filters by a variant's row, and migration 0021 counts under their variant the clicks the cubes had counted
without one (its downgrade leaves every cube in version 2, as the code before it reads them, every click counted
without a variant)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from alembic import command
from sqlalchemy import select, text
from starlette.testclient import TestClient

from slugline.clicks.retention import prune
from slugline.common.models import Click
from slugline.runtime import Runtime
from slugline.settings import Settings
from slugline.storage import migrate
from tests.dashboard.pages import new_link
from tests.support.helpers import (
    BASE_URL,
    CHROME,
    LINKS,
    SQLITE_ONLY,
    Account,
    click_recorder,
    create,
    make_settings,
)
from tests.support.mcp_calls import tool

IPHONE = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148 Safari/604.1"
VARIANTS = [
    {"to": "https://example.com/a", "weight": 50},
    {"to": "https://example.com/b", "weight": 30},
    {"to": "https://example.com/c", "weight": 20},
]
DAYS_BACK = (40, 6, 1, 0)  # oldest first: a worker keeps the salts of its three latest days
QUERIES: list[dict[str, Any]] = [
    {},
    {"days": 90},
    {"days": 90, "variant": 1},
    {"days": 7, "device": "mobile"},
    {"days": 90, "country": "fr", "variant": 0},
    {"days": 2, "variant": 2, "device": "desktop"},
    {
        "from": str(datetime.now(UTC).date() - timedelta(days=40)),
        "to": str(datetime.now(UTC).date() - timedelta(days=6)),
        "variant": 2,
    },
]


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url, public_url=BASE_URL)  # /mcp answers only the names its public URL gives


def _today() -> date:
    return datetime.now(UTC).date()


def _record(client: TestClient, link_id: str) -> int:
    """Clicks on days `DAYS_BACK`: nine visitors a day, each kept on one variant for the day (as the redirects draw
    them), two devices, three places; a tenth visitor sent by a rule (no variant) and a bot. Each day's clicks are
    written as one batch (a worker keeps the visitor salts of a few days only). The clicks the cubes count."""
    recorder = click_recorder(client)
    assert client.portal is not None
    for back in DAYS_BACK:
        midnight = datetime.combine(_today() - timedelta(days=back), datetime.min.time(), UTC).timestamp()
        for n in range(30):
            person = n % 10
            variant = None if person == 9 else (person + back) % 3
            agent = (CHROME, IPHONE)[person % 2].encode()
            country = ("FR", "DE", None)[person % 3]
            ip = f"198.18.0.{person}"
            recorder.queue.record(link_id, agent, b"", None, False, ip, midnight + 60 * n, country, variant)
        recorder.queue.record(link_id, b"curl/8", b"", None, False, "198.18.9.9", midnight + 1, None, 0)
        client.portal.call(recorder.flush)
    return 30 * len(DAYS_BACK)


def _exact(rt: Runtime, link_id: str, query: dict[str, Any]) -> list[tuple[int, int]]:
    """Each variant's (clicks, distinct visitors a day summed) counted from the click log for `query`."""
    last = date.fromisoformat(query["to"]) if "to" in query else _today()
    first = date.fromisoformat(query["from"]) if "from" in query else last - timedelta(days=query.get("days", 30) - 1)
    with rt.db.session() as session:
        rows = session.execute(
            select(Click.clicked_at, Click.device, Click.country, Click.variant, Click.visitor).where(
                Click.link_id == link_id
            )
        ).all()
    kept = [
        r
        for r in rows
        if r.device != "bot"
        and first <= r.clicked_at.date() <= last
        and query.get("device", r.device) == r.device
        and query.get("country", str(r.country).lower()) == str(r.country).lower()
        and query.get("variant", r.variant) == r.variant
    ]
    return [
        (
            sum(r.variant == n for r in kept),
            len({(r.clicked_at.date(), r.visitor) for r in kept if r.variant == n}),
        )
        for n in range(len(VARIANTS))
    ]


def _figures(stats: dict[str, Any]) -> list[tuple[int, int]]:
    assert [(v["variant"], v["to"], v["weight"]) for v in stats["variants"]] == [
        (n, v["to"], v["weight"]) for n, v in enumerate(VARIANTS)
    ]
    return [(v["clicks"], v["unique_visitors"]) for v in stats["variants"]]


def _link_analytics(client: TestClient, who: Account, link_id: str, **query: Any) -> dict[str, Any]:
    answer = client.get(f"{LINKS}/{link_id}/analytics", params=query, headers=who.auth())
    assert answer.status_code == 200, answer.text
    stats: dict[str, Any] = answer.json()
    return stats


def _every_query(client: TestClient, who: Account, rt: Runtime, link_id: str) -> Iterator[dict[str, Any]]:
    """Each of `QUERIES` answered over REST, its variants checked against the click log: the answers."""
    for query in QUERIES:
        stats = _link_analytics(client, who, link_id, **query)
        exact = _exact(rt, link_id, query)
        assert _figures(stats) == exact, query
        if "variant" in query:  # the filter holds for every figure, as any other filter's
            assert stats["variant"] == query["variant"]
            assert (stats["total_clicks"], stats["unique_visitors"]) == exact[query["variant"]], query
        yield stats


def test_variant_figures_follow_periods_and_filters_and_outlive_the_click_log(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    link = create(client, alice, variants=VARIANTS).json()
    _record(client, link["id"])
    answers = list(_every_query(client, alice, runtime, link["id"]))
    assert all(clicks > 0 for clicks, _ in _figures(answers[1])), "every variant has clicks: the test can fail"
    mcp = tool(client, alice.full, "get_analytics", {"link_id": link["id"], "days": 90, "variant": 1})
    assert mcp["variants"] == answers[2]["variants"] and mcp["total_clicks"] == answers[2]["total_clicks"]
    refused = client.get("/api/v1/analytics", params={"variant": 1}, headers=alice.auth())
    assert refused.status_code == 422 and list(refused.json()) == ["error"] and "variant" in refused.json()["error"]
    assert client.get(f"{LINKS}/{link['id']}/analytics?variant=10", headers=alice.auth()).status_code == 422

    # Retention as if run 70 days on: every raw click goes (PostgreSQL drops whole months of them).
    assert sum(prune(runtime.db, 1, datetime.now(UTC) + timedelta(days=70))) > 0
    with runtime.db.session() as session:
        assert session.scalar(select(Click.id).limit(1)) is None
    for query, before in zip(QUERIES, answers, strict=True):
        assert _link_analytics(client, alice, link["id"], **query)["variants"] == before["variants"], query


def _downgrade(rt: Runtime, revision: str) -> None:
    config = migrate.alembic_config()
    with rt.db.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


def _versions(rt: Runtime) -> set[int]:
    """The format versions of the stored day and month cubes (each `cube` column's first byte; a link's month
    projections, which keep no variant, are written in the current version whatever the month's)."""
    with rt.db.engine.connect() as conn:
        found = conn.execute(text("SELECT cube FROM click_cubes WHERE level IN (0, 1, 2)")).scalars()
        return {bytes(cube)[0] for cube in found}


def test_migration_0021_counts_stored_clicks_under_their_variant(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    link = create(client, alice, variants=VARIANTS).json()
    total = _record(client, link["id"])
    recounted = list(_every_query(client, alice, runtime, link["id"]))
    account = client.get("/api/v1/analytics", params={"days": 90}, headers=alice.auth()).json()
    assert _versions(runtime) == {3}
    _downgrade(runtime, "0020")  # the cubes as before 0021: every click counted without a variant
    assert _versions(runtime) == {2}, "the code before 0021 reads cubes of versions 1 and 2 only"
    before = _link_analytics(client, alice, link["id"], days=90)
    assert (before["total_clicks"], _figures(before)) == (total, [(0, 0)] * len(VARIANTS))
    assert client.get("/api/v1/analytics", params={"days": 90}, headers=alice.auth()).json() == account
    migrate.upgrade(runtime.db.engine)
    assert list(_every_query(client, alice, runtime, link["id"])) == recounted
    assert client.get("/api/v1/analytics", params={"days": 90}, headers=alice.auth()).json() == account

    # Clicks the click log no longer holds keep their variant in the cubes, where no recount from the log reaches:
    # the downgrade takes it out of every cube all the same.
    assert sum(prune(runtime.db, 1, datetime.now(UTC) + timedelta(days=70))) > 0
    _downgrade(runtime, "0020")
    assert _versions(runtime) == {2}
    after = _link_analytics(client, alice, link["id"], days=90)
    assert (after["total_clicks"], after["unique_visitors"]) == (
        recounted[1]["total_clicks"],
        recounted[1]["unique_visitors"],
    )
    assert _figures(after) == [(0, 0)] * len(VARIANTS)
    migrate.upgrade(runtime.db.engine)  # with no click left to count again, they stay without a variant
    assert _versions(runtime) == {2} and _link_analytics(client, alice, link["id"], days=90) == after


@SQLITE_ONLY
def test_the_dashboard_filters_by_a_variants_row(owner: TestClient, runtime: Runtime) -> None:
    text = "\n".join(f"{v['weight']} {v['to']}" for v in VARIANTS)
    link_id = new_link(owner, destination_url="https://example.com/", slug="split-dash", variants=text)
    _record(owner, link_id)
    page = owner.get(f"/app/links/{link_id}?days=90").text
    assert 'href="?days=90&amp;variant=1" title="Show only clicks sent to variant 2"' in page
    filtered = owner.get(f"/app/links/{link_id}?days=90&variant=1").text
    assert "variant: 2" in filtered, "variants are numbered from 1 on the page"
    clicks, visitors = _exact(runtime, link_id, {"days": 90, "variant": 1})[1]
    assert f'<div class="value">{clicks}</div>' in filtered and f'<div class="value">{visitors}</div>' in filtered
