"""Unique visitors follow new clicks, a deleted link and a visibility change at once, whichever worker made them:
the roll-up cubes' pending moves are allowed for when read, and made by the next click batch."""

from __future__ import annotations

from starlette.testclient import TestClient

from slugline.accounts import callers
from slugline.analytics import service as analytics
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
    # again, but visitor 2 is still counted, on a: today's visitors are recounted from the remaining links' sketches.
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
