"""Answers over closed days kept by the worker (`slugline.analytics.cache`): each answer is the one read afresh, a
late click on a closed day or a link moved out of a view is seen at once (the account's epoch), and the cache keeps
to its byte budget; on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.testclient import TestClient

from slugline.analytics.cache import AnswerCache, size_of
from slugline.clicks.buffer import ClickRecorder
from slugline.runtime import Runtime
from tests.support.helpers import CHROME, Account
from tests.support.past_clicks import IPHONE, TODAY, clicked, get_json, record

SHAPES: list[dict[str, Any]] = [
    {"days": 30},
    {"days": 30, "source": "google.com"},
    {"days": 30, "device": "mobile"},
    {"days": 7, "interval": "hour"},
    {"days": 30, "interval": "week"},
]


def test_an_answer_from_the_cache_is_the_answer_read_afresh(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    ca = [(TODAY - d, CHROME if d % 2 else IPHONE, "google.com" if d % 3 else None) for d in range(20)]
    a, b = clicked(client, alice, runtime, ca=ca, cb=[(TODAY - d, IPHONE, "google.com") for d in range(0, 20, 4)])
    asked = [(path, shape) for shape in SHAPES for path in ("/analytics", f"/links/{a}/analytics")]
    first = [get_json(client, alice, path, **shape) for path, shape in asked]
    hits = runtime.analytics.hits
    again = [get_json(client, alice, path, **shape) for path, shape in asked]
    assert runtime.analytics.hits > hits  # answered from the cache, and the same
    assert again == first
    runtime.analytics = AnswerCache(1)  # keeps nothing: every answer read afresh
    assert [get_json(client, alice, path, **shape) for path, shape in asked] == first
    assert first[0]["total_clicks"] == 25 and [t["clicks"] for t in first[0]["top_links"]] == [20, 5]
    google = first[2]
    assert google["total_clicks"] == sum(1 for d in range(20) if d % 3) + 5
    assert [t["id"] for t in google["top_links"]] == [a, b]


def test_a_late_click_on_a_closed_day_and_a_click_today_are_counted_at_once(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    [link] = clicked(client, alice, runtime, late=[(TODAY - 10, CHROME, "google.com")] * 3)
    for shape in ({"days": 30}, {"days": 30, "source": "google.com"}):
        assert get_json(client, alice, **shape)["total_clicks"] == 3
        assert get_json(client, alice, f"/links/{link}/analytics", **shape)["total_clicks"] == 3
    record(runtime, [(link, TODAY, CHROME, "google.com")])  # today: read fresh, the closed days' answer still good
    misses = runtime.analytics.misses
    assert get_json(client, alice, days=30)["total_clicks"] == 4
    assert runtime.analytics.misses == misses
    record(runtime, [(link, TODAY - 10, CHROME, "google.com")])  # a closed day: the account's epoch moves on
    for shape in ({"days": 30}, {"days": 30, "source": "google.com"}):
        answer = get_json(client, alice, **shape)
        assert answer["total_clicks"] == 5, shape
        assert [t["clicks"] for t in answer["top_links"]] == [5]
        assert [c["clicks"] for c in answer["clicks"]][-11] == 4
        assert get_json(client, alice, f"/links/{link}/analytics", **shape)["total_clicks"] == 5


def test_a_link_hidden_after_its_answer_was_kept_leaves_the_public_view(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    hidden_clicks = [(TODAY - 5, CHROME, None), (TODAY - 6, CHROME, None)]
    shown, hidden = clicked(client, alice, runtime, shown=[(TODAY - 5, CHROME, None)], hidden=hidden_clicks)
    for key in ("public", "full"):
        assert get_json(client, alice, key=key, days=30)["total_clicks"] == 3
    change = client.put(f"/api/v1/links/{hidden}", json={"visibility": "private"}, headers=alice.auth())
    assert change.status_code == 200, change.text
    public = get_json(client, alice, key="public", days=30)  # the move still pending
    assert public["total_clicks"] == 1 and [t["id"] for t in public["top_links"]] == [shown]
    asyncio.run(ClickRecorder(runtime).flush())  # the writer makes the move: closed days' cubes change
    public = get_json(client, alice, key="public", days=30)
    assert public["total_clicks"] == 1 and [t["id"] for t in public["top_links"]] == [shown]
    assert get_json(client, alice, days=30)["total_clicks"] == 3


def test_the_cache_keeps_to_its_byte_budget() -> None:
    value = {"total": 1, "breakdowns": {"source": [(f"s{n}", n) for n in range(50)]}}
    size = size_of(value)
    assert size > 50 * 50  # each entry's tuple, string and number counted
    cache = AnswerCache(20 * size + size // 2)  # room for 20 such entries
    for n in range(24):
        cache.put(("k", n), 0, value)
        assert cache.bytes <= cache.budget
    assert cache.stats().entries == 20 and cache.evictions == 4 and cache.bytes == 20 * size
    assert cache.get(("k", 3), 0) is None and cache.get(("k", 4), 0) == value  # least recently used went first
    cache.put(("k", 24), 0, value)
    assert cache.get(("k", 4), 0) == value and cache.get(("k", 5), 0) is None  # (k, 4) was just used
    assert cache.get(("k", 6), 1) is None  # made at another epoch: dropped
    assert cache.stats().entries == 19 and cache.bytes == 19 * size
    cache.put(("big",), 0, [value] * 8)  # past an eighth of the budget: never kept
    assert cache.get(("big",), 0) is None and cache.bytes == 19 * size
    stats = cache.stats()
    assert (stats.hits, stats.bytes) == (2, 19 * size) and stats.misses == 4
