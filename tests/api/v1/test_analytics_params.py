"""The analytics parameters over REST, on `/analytics` and `/links/{id}/analytics` alike: each rule's 422 names it,
and a link a key cannot see is 404 whatever the parameters."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from starlette.testclient import TestClient

from slugline.analytics import service
from slugline.common.caller import Caller
from slugline.runtime import Runtime
from tests.api.v1.test_analytics import make_links
from tests.support.helpers import SQLITE_ONLY, Account, create

TODAY = datetime.now(UTC).date()
PATHS = ("/api/v1/analytics", "/api/v1/links/{id}/analytics")
Query = dict[str, str | int]


@pytest.mark.parametrize(
    ("query", "rule"),
    [
        ({"days": 3, "from": "2026-01-01"}, "give either days or from/to, not both"),
        ({"days": 3, "to": "2026-01-01"}, "give either days or from/to, not both"),
        ({"to": "2026-01-01"}, "to needs from"),
        ({"from": "2026-01-05", "to": "2026-01-01"}, "from must not be after to"),
        ({"from": "2025-01-01", "to": "2026-01-01"}, "a period is at most 365 days"),  # 366 days, both included
        ({"from": (TODAY - timedelta(days=400)).isoformat()}, "a period is at most 365 days"),  # to: today
        ({"days": 8, "interval": "hour"}, "interval hour needs a period of at most 7 days"),
        ({"interval": "hour"}, "interval hour needs a period of at most 7 days"),  # days: 30 by default
        ({"from": "2026-01-01", "to": "2026-01-08", "interval": "hour"}, "at most 7 days"),
        ({"interval": "year"}, "interval: input should be 'hour', 'day', 'week' or 'month'"),
        ({"device": "phone"}, "device: input should be 'desktop', 'mobile', 'tablet' or 'other'"),
        ({"device": "bot"}, "device: input should be"),  # bots are left out of every figure: not a filter
        ({"from": "yesterday"}, "from: input should be a valid date"),
        ({"from": "2026-02-30"}, "from: input should be a valid date"),
        ({"from": "2026-01-01", "to": "01/02/2026"}, "to: input should be a valid date"),
        ({"days": 0}, "days: input should be greater than or equal to 1"),
        ({"days": 366}, "days: input should be less than or equal to 365"),
        ({"browser": "x" * 33}, "browser: string should have at most 32 characters"),
        ({"os": "x" * 33}, "os: string should have at most 32 characters"),
        ({"referrer": "x" * 256}, "referrer: string should have at most 255 characters"),
        ({"since": "2026-01-01"}, "unknown field 'since'"),
    ],
)
@SQLITE_ONLY
def test_each_rule_is_a_422_naming_it(client: TestClient, alice: Account, query: Query, rule: str) -> None:
    link = create(client, alice, slug="ruled").json()
    for path in PATHS:
        res = client.get(path.format(id=link["id"]), params=query, headers=alice.auth())
        assert res.status_code == 422, (path, res.text)
        assert rule in res.json()["error"] and set(res.json()) == {"error"}, (path, res.text)


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"days": 7, "interval": "hour"},
        {"from": "2026-01-01", "to": "2026-01-07", "interval": "hour"},
        {"from": "2025-01-02", "to": "2026-01-01", "interval": "month"},  # 365 days
        {"from": "2026-03-01", "to": "2026-03-01", "interval": "week"},
        {"days": 365, "device": "tablet", "browser": "Firefox", "os": "iOS", "referrer": "Example.COM"},
    ],
)
@SQLITE_ONLY
def test_what_the_rules_allow_is_answered(client: TestClient, alice: Account, query: Query) -> None:
    link = create(client, alice, slug="allowed").json()
    for path in PATHS:
        res = client.get(path.format(id=link["id"]), params=query, headers=alice.auth())
        assert res.status_code == 200, (path, res.text)


def test_a_link_the_key_cannot_see_is_404(
    client: TestClient, alice: Account, make_account: Callable[..., Account]
) -> None:
    links = make_links(client, alice)
    for level in ("private", "password"):  # hidden from a public-only key, whatever the parameters
        path = f"/api/v1/links/{links[level]['id']}/analytics"
        queries: list[Query] = [{}, {"days": 7, "interval": "hour", "device": "mobile"}]
        for query in queries:
            res = client.get(path, params=query, headers=alice.auth("public"))
            assert (res.status_code, res.json()) == (404, {"error": "link not found"}), (level, query)
        assert client.get(path, headers=alice.auth()).status_code == 200  # the full key sees it
    for visible in ("public", "unlisted"):
        res = client.get(f"/api/v1/links/{links[visible]['id']}/analytics", headers=alice.auth("public"))
        assert res.status_code == 200, res.text
    bob = make_account("bob")
    for unknown in ("lnk_00000000000", "not-an-id", links["public"]["slug"]):  # an id, not a slug
        res = client.get(f"/api/v1/links/{unknown}/analytics", headers=alice.auth())
        assert (res.status_code, res.json()) == (404, {"error": "link not found"}), unknown
    res = client.get(f"/api/v1/links/{links['public']['id']}/analytics", headers=bob.auth())  # another account's
    assert (res.status_code, res.json()) == (404, {"error": "link not found"})
    assert client.get(f"/api/v1/links/{links['public']['id']}/analytics").status_code == 401


@SQLITE_ONLY
def test_the_parameters_reach_the_service_by_their_public_names(
    client: TestClient, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`from` is `from_` in the model: the service is handed it as clients send it, with what was given only."""
    seen: list[tuple[dict[str, str], str | None]] = []

    async def recorded(rt: Runtime, caller: Caller, data: dict[str, Any], link_id: str | None = None) -> Any:
        seen.append(({name: str(value) for name, value in data.items()}, link_id))
        return {}

    monkeypatch.setattr(service, "get_analytics", recorded)
    query = {"from": "2026-01-01", "to": "2026-01-03", "interval": "week", "browser": "Firefox"}
    for path in PATHS:
        assert client.get(path.format(id="lnk_00000000000"), params=query, headers=alice.auth()).status_code == 200
    assert seen == [(query, None), (query, "lnk_00000000000")]
