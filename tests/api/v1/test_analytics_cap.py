"""`/analytics` breakdowns are capped: the top entries and one "(other)" row with the rest, so anonymous visitors
choosing utm_source values or referrers cannot make an account's analytics (or its MCP result) grow without bound."""

from __future__ import annotations

from starlette.testclient import TestClient

from slugline.analytics.shape import OTHER, TOP_ENTRIES
from tests.support.helpers import CHROME, Account, create, wait_for_total


def test_sources_and_referrers_are_the_top_entries_and_one_other_row(client: TestClient, alice: Account) -> None:
    assert create(client, alice, slug="popular").status_code == 201
    distinct = TOP_ENTRIES + 15
    for i in range(distinct):  # source i (and referrer i) gets i + 1 clicks, so the order is known
        headers = {"User-Agent": CHROME, "Referer": f"https://r{i:02d}.example/"}
        for _ in range(i + 1 if i < TOP_ENTRIES else 1):
            client.get(f"/popular?utm_source=s{i:02d}", headers=headers, follow_redirects=False)
    total = sum(range(1, TOP_ENTRIES + 1)) + 15
    stats = wait_for_total(client, alice, total)
    assert stats["total_clicks"] == total
    sources = stats["sources"]
    assert len(sources) == TOP_ENTRIES + 1
    assert sources[0] == {"source": f"s{TOP_ENTRIES - 1:02d}", "clicks": TOP_ENTRIES}
    assert sources[-1] == {"source": OTHER, "clicks": 15}
    assert sum(s["clicks"] for s in sources) == total
    referrers = stats["referrers"]
    assert len(referrers) == TOP_ENTRIES + 1
    assert referrers[0] == {"referrer": f"r{TOP_ENTRIES - 1:02d}.example", "clicks": TOP_ENTRIES}
    assert referrers[-1] == {"referrer": OTHER, "clicks": 15}
    assert stats["devices"] == [{"device": "desktop", "clicks": total}]  # few entries: no other row
    assert [(b["browser"].lower(), b["clicks"]) for b in stats["browsers"]] == [("chrome", total)]
