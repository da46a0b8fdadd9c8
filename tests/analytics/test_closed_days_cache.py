"""Answers over closed days kept by the worker (`slugline.analytics.cache`): each answer is the one read afresh, a
late click on a closed day or a link moved out of a view is seen at once (the account's epoch), and the cache keeps
to its byte budget; on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from starlette.testclient import TestClient

from slugline.analytics.cache import AnswerCache, size_of
from slugline.clicks.buffer import ClickRecorder
from slugline.runtime import Runtime
from tests.support.helpers import CHROME, Account

IPHONE = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148"
TODAY = int(time.time() // 86_400)


def _record(runtime: Runtime, clicks: list[tuple[str, int, str, str | None]]) -> None:
    """(link id, epoch day, user agent, utm_source) clicks, through the click writer, a batch a day (the writer
    keeps the salts of a few days at a time); each click its own visitor."""
    for day in sorted({c[1] for c in clicks}):
        recorder = ClickRecorder(runtime)
        for n, (link_id, _, agent, source) in enumerate(c for c in clicks if c[1] == day):
            when = min(day * 86_400 + 3_600 + n, time.time() - 1)
            recorder.record((link_id, when, agent.encode(), b"", source, False, f"198.51.100.{n % 250}"))
        asyncio.run(recorder.flush())
        assert len(recorder) == 0 and recorder.dropped == 0


def _link(client: TestClient, who: Account, slug: str) -> str:
    made = client.post("/api/v1/links", headers=who.auth(), json={"destination_url": "https://e.org/", "slug": slug})
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


def _clicked(
    client: TestClient, who: Account, runtime: Runtime, **clicks: Sequence[tuple[int, str, str | None]]
) -> list[str]:
    """A link for each slug named, with its (epoch day, user agent, utm_source) clicks recorded; their ids."""
    ids = {slug: _link(client, who, slug) for slug in clicks}
    _record(runtime, [(ids[slug], *click) for slug, made in clicks.items() for click in made])
    return list(ids.values())


def _get(client: TestClient, who: Account, path: str = "/analytics", key: str = "full", **params: Any) -> Any:
    answer = client.get(f"/api/v1{path}", params=params, headers=who.auth(key))
    assert answer.status_code == 200, answer.text
    return answer.json()


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
    a, b = _clicked(client, alice, runtime, ca=ca, cb=[(TODAY - d, IPHONE, "google.com") for d in range(0, 20, 4)])
    asked = [(path, shape) for shape in SHAPES for path in ("/analytics", f"/links/{a}/analytics")]
    first = [_get(client, alice, path, **shape) for path, shape in asked]
    hits = runtime.analytics.hits
    again = [_get(client, alice, path, **shape) for path, shape in asked]
    assert runtime.analytics.hits > hits  # answered from the cache, and the same
    assert again == first
    runtime.analytics = AnswerCache(1)  # keeps nothing: every answer read afresh
    assert [_get(client, alice, path, **shape) for path, shape in asked] == first
    assert first[0]["total_clicks"] == 25 and [t["clicks"] for t in first[0]["top_links"]] == [20, 5]
    google = first[2]
    assert google["total_clicks"] == sum(1 for d in range(20) if d % 3) + 5
    assert [t["id"] for t in google["top_links"]] == [a, b]


def test_a_late_click_on_a_closed_day_and_a_click_today_are_counted_at_once(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    [link] = _clicked(client, alice, runtime, late=[(TODAY - 10, CHROME, "google.com")] * 3)
    for shape in ({"days": 30}, {"days": 30, "source": "google.com"}):
        assert _get(client, alice, **shape)["total_clicks"] == 3
        assert _get(client, alice, f"/links/{link}/analytics", **shape)["total_clicks"] == 3
    _record(runtime, [(link, TODAY, CHROME, "google.com")])  # today: read fresh, the closed days' answer still good
    misses = runtime.analytics.misses
    assert _get(client, alice, days=30)["total_clicks"] == 4
    assert runtime.analytics.misses == misses
    _record(runtime, [(link, TODAY - 10, CHROME, "google.com")])  # a closed day: the account's epoch moves on
    for shape in ({"days": 30}, {"days": 30, "source": "google.com"}):
        answer = _get(client, alice, **shape)
        assert answer["total_clicks"] == 5, shape
        assert [t["clicks"] for t in answer["top_links"]] == [5]
        assert [c["clicks"] for c in answer["clicks"]][-11] == 4
        assert _get(client, alice, f"/links/{link}/analytics", **shape)["total_clicks"] == 5


def test_a_link_hidden_after_its_answer_was_kept_leaves_the_public_view(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    hidden_clicks = [(TODAY - 5, CHROME, None), (TODAY - 6, CHROME, None)]
    shown, hidden = _clicked(client, alice, runtime, shown=[(TODAY - 5, CHROME, None)], hidden=hidden_clicks)
    for key in ("public", "full"):
        assert _get(client, alice, key=key, days=30)["total_clicks"] == 3
    change = client.put(f"/api/v1/links/{hidden}", json={"visibility": "private"}, headers=alice.auth())
    assert change.status_code == 200, change.text
    public = _get(client, alice, key="public", days=30)  # the move still pending
    assert public["total_clicks"] == 1 and [t["id"] for t in public["top_links"]] == [shown]
    asyncio.run(ClickRecorder(runtime).flush())  # the writer makes the move: closed days' cubes change
    public = _get(client, alice, key="public", days=30)
    assert public["total_clicks"] == 1 and [t["id"] for t in public["top_links"]] == [shown]
    assert _get(client, alice, days=30)["total_clicks"] == 3


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
