"""Unique visitors stay exact while a day's count is remembered (`slugline.analytics.visitors`): new clicks, a deleted
link and a visibility change are seen at once, whichever worker made them, however the day's total moves."""

from __future__ import annotations

import tracemalloc
from datetime import UTC, date, datetime

from starlette.testclient import TestClient

from slugline.accounts import callers
from slugline.analytics import service as analytics
from slugline.analytics.visitors import VisitorCounts
from slugline.runtime import Runtime
from tests.support.helpers import BASE_URL, CHROME, Account, ClientFactory, click_recorder, create


def visit(client: TestClient, slug: str, visitors: range) -> None:
    """One click on the link from each visitor (a user agent of its own, so a visitor hash of its own), written."""
    for n in visitors:
        res = client.get(f"/{slug}", headers={"User-Agent": f"{CHROME} v{n}"}, follow_redirects=False)
        assert res.status_code == 302
    assert client.portal is not None
    client.portal.call(click_recorder(client).flush)


def figures(client: TestClient, who: Account, key: str = "full", **params: str) -> tuple[int, int]:
    stats = client.get("/api/v1/analytics", params=params, headers=who.auth(key)).json()
    return stats["total_clicks"], stats["unique_visitors"]


def test_counts_follow_clicks_deletions_and_visibility_from_any_worker(
    client: TestClient, alice: Account, runtime: Runtime, make_client: ClientFactory
) -> None:
    other_worker, _ = make_client()  # another process's runtime on the same database
    a = create(client, alice, slug="uv-a").json()
    b = create(client, alice, slug="uv-b").json()
    visit(client, "uv-a", range(3))
    assert figures(client, alice) == (3, 3)
    visit(client, "uv-b", range(2, 4))  # visitor 2 again, and a new one
    assert figures(client, alice) == (5, 4)
    visit(client, "uv-a", range(1))  # a returning visitor: one more click, no more visitors
    assert figures(client, alice) == (6, 4)
    assert figures(client, alice, "public") == (6, 4)

    # Another worker deletes b (2 clicks, visitors 2 and 3), and two new visitors click a: the day's total reads 6
    # again, but the links version moved, so the remembered 4 is not served.
    assert other_worker.delete(f"/api/v1/links/{b['id']}", headers=alice.auth()).status_code == 200
    visit(client, "uv-a", range(10, 12))
    assert figures(client, alice) == (6, 5)  # visitors 0, 1, 2 (on a), 10, 11

    # A link made private leaves the public-only view with its visitors; the full view keeps them.
    c = create(client, alice, slug="uv-c").json()
    visit(client, "uv-c", range(20, 22))
    assert figures(client, alice, "public") == (8, 7)
    changed = other_worker.put(f"/api/v1/links/{c['id']}", json={"visibility": "private"}, headers=alice.auth())
    assert changed.status_code == 200
    assert figures(client, alice, "public") == (6, 5)
    assert figures(client, alice) == (8, 7)
    assert figures(client, alice, source="direct") == (8, 7)
    assert figures(client, alice, source="elsewhere") == (0, 0)
    caller = callers.authenticate(runtime, f"Bearer {alice.full}", BASE_URL)
    for link, visitors in ((a, 5), (c, 2)):  # a link's own figures (its dashboard page), remembered apart
        for _ in range(2):
            assert analytics.analytics_on_thread(runtime, caller, {}, link["id"])["unique_visitors"] == visitors


def test_a_count_is_served_only_under_the_version_and_total_it_was_made_under(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    create(client, alice, slug="uv-d")
    visit(client, "uv-d", range(2))
    assert figures(client, alice) == (2, 2)
    counts = runtime.visitor_counts
    (key,) = [k for k in counts._counts.ordered_keys() if k[3] is None and k[4] is None and not k[2]]
    held = counts._counts.peek(key)
    assert held is not None
    version, clicks, _ = held
    counts.put(key, version, clicks, 99)  # what is remembered is what is served, while both still read the same
    assert figures(client, alice) == (2, 99)
    visit(client, "uv-d", range(2, 3))  # the day's total moves: counted again
    assert figures(client, alice) == (3, 3)


def test_the_remembered_counts_are_bounded_least_recently_used_first_out() -> None:
    counts = VisitorCounts(max_entries=3)
    born = datetime(2026, 1, 1, tzinfo=UTC)
    keys = [(1, born, False, None, None, date(2026, 1, day)) for day in range(1, 6)]
    for key in keys[:3]:
        counts.put(key, 7, 10, 5)
    assert counts.get(keys[0], 7, 10) == 5  # used: now the most recent
    assert counts.get(keys[0], 8, 10) is None and counts.get(keys[0], 7, 11) is None
    counts.put(keys[3], 7, 10, 5)
    assert len(counts) == 3
    assert counts.get(keys[1], 7, 10) is None  # the least recently used went
    assert counts.get(keys[0], 7, 10) == 5 and counts.get(keys[2], 7, 10) == 5


def test_the_remembered_counts_keep_within_their_bytes_and_cost_no_more_than_counted() -> None:
    """Sources are the clicks' to choose: 255 characters outside the BMP each, the budget still holds, and
    `ENTRY_BYTES` with the strings' sizes covers what the entries really take."""
    counts = VisitorCounts(max_bytes=1 << 20)
    born = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(10_000):
        counts.put((i, born, False, f"lnk_{i:011d}", f"{i:06d}" + "\U0001f600" * 249, date(2026, 1, 1)), 7, 10, 5)
        assert counts.bytes <= 1 << 20
    assert 0 < len(counts) < 10_000
    unbounded = VisitorCounts(max_entries=1 << 30, max_bytes=1 << 40)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(5_000):  # every string new, as read from the database
            source = f"{i:06d}" + "\U0001f600" * 249 if i % 2 else f"src-{i}"
            key = (i, datetime(2026, 1, 1, tzinfo=UTC), bool(i % 3), f"lnk_{i:011d}", source, date(2026, 1, 1 + i % 28))
            unbounded.put(key, i + 10_000, i + 20_000, i + 30_000)
        taken = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert taken <= unbounded.bytes, (taken, unbounded.bytes)
