"""Weighted variants (an A/B split) of a link: validated like destination_url; a split over 10,000 visitors follows
the weights within 2% and one visitor keeps one variant for the day; on the redirect path after the rules; each click
records its variant, and a link's analytics count clicks per variant."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest
from starlette.testclient import TestClient

from slugline import _core
from slugline.clicks.store import SaltBook
from slugline.runtime import Runtime
from tests.support.helpers import CHROME, LINKS, Account, ClientFactory, create

VARIANTS = [
    {"to": "https://example.com/a", "weight": 50},
    {"to": "https://example.com/b", "weight": 30},
    {"to": "https://example.com/c", "weight": 20},
]
WEIGHTS = (0.5, 0.3, 0.2)


def test_ten_thousand_visitors_split_by_the_weights_and_each_keeps_its_variant_for_the_day() -> None:
    split = _core.Variants('[{"to": "a", "weight": 50}, {"to": "b", "weight": 30}, {"to": "c", "weight": 20}]')
    salt = b"\x07" * 32
    drawn: Counter[int] = Counter()
    for n in range(10_000):
        ip, agent = f"198.18.{n // 256}.{n % 256}", f"Agent/{n % 7}".encode()
        first = split.choose(salt, "lnk_abcdefghijk", ip, agent)
        assert all(split.choose(salt, "lnk_abcdefghijk", ip, agent) == first for _ in range(3)), "sticky"
        drawn[first] += 1
    for index, share in enumerate(WEIGHTS):
        assert abs(drawn[index] / 10_000 - share) < 0.02, drawn
    moved = sum(
        split.choose(salt, "lnk_abcdefghijk", f"198.18.0.{n}", b"A")
        != split.choose(b"next day", "lnk_abcdefghijk", f"198.18.0.{n}", b"A")
        for n in range(256)
    )
    assert moved > 60, "the next day's salt draws again"


@pytest.mark.parametrize(
    ("variants", "message"),
    [
        ([{"to": "https://example.com/a", "weight": 1}], "variants"),
        ([{"to": "https://example.com/a", "weight": 0}, {"to": "https://example.com/b", "weight": 1}], "weight"),
        ([{"to": "https://example.com/a", "weight": 1001}, {"to": "https://example.com/b", "weight": 1}], "weight"),
        ([{"to": "https://example.com/a", "weight": "1"}, {"to": "https://example.com/b", "weight": 1}], "weight"),
        ([{"to": "ftp://example.com/a", "weight": 1}, {"to": "https://example.com/b", "weight": 1}], "to"),
        ([{"to": "https://example.com/a", "weight": 1, "x": 1}, {"to": "https://example.com/b", "weight": 1}], "x"),
        ([{"to": f"https://example.com/{n}", "weight": 1} for n in range(11)], "variants"),
    ],
)
def test_bad_variants_are_refused_with_the_field_named(
    client: TestClient, alice: Account, variants: list[dict[str, Any]], message: str
) -> None:
    answer = create(client, alice, variants=variants)
    assert answer.status_code == 422, answer.text
    assert list(answer.json()) == ["error"] and message in answer.json()["error"]


def _visit(tc: TestClient, slug: str, ip: str, agent: str = CHROME) -> str:
    answer = tc.get(f"/{slug}", headers={"user-agent": agent, "x-forwarded-for": ip}, follow_redirects=False)
    assert answer.status_code == 302, answer.text
    return str(answer.headers["location"])


def test_visitors_are_split_sticky_after_the_rules_and_analytics_count_each_variant(
    client: TestClient, alice: Account, make_client: ClientFactory
) -> None:
    rules = [{"if": {"language": ["fr"]}, "to": "https://example.com/fr"}]
    made = create(client, alice, variants=VARIANTS, rules=rules)
    assert made.status_code == 201, made.text
    link = made.json()
    assert (
        link["variants"] == VARIANTS
        and client.get(f"{LINKS}/{link['id']}", headers=alice.auth()).json()["variants"] == VARIANTS
    )
    tc, rt = make_client(trusted_proxies="testclient")
    seen: dict[str, str] = {}
    for n in range(300):
        ip = f"198.18.1.{n % 250}" if n < 250 else f"198.18.1.{n - 250}"  # the last 50 come back the same day
        to = _visit(tc, link["slug"], ip)
        assert seen.setdefault(ip, to) == to, "one visitor, one variant all day"
    assert set(seen.values()) == {v["to"] for v in VARIANTS}
    french = tc.get(
        f"/{link['slug']}",
        headers={"user-agent": CHROME, "accept-language": "fr", "x-forwarded-for": "198.18.1.1"},
        follow_redirects=False,
    )
    assert french.headers["location"] == "https://example.com/fr", "a rule that holds comes before the split"
    day = int(time.time() // 86_400)
    salt = SaltBook().get(rt.db, [day])[day]  # the day's salt, shared through the database
    split = _core.Variants(str(VARIANTS).replace("'", '"'))
    for ip, to in list(seen.items())[:20]:
        assert VARIANTS[split.choose(salt, link["id"], ip, CHROME.encode())]["to"] == to, "drawn in the core"
    stats = _analytics(tc, alice, link["id"], 301)
    assert [v["to"] for v in stats["variants"]] == [v["to"] for v in VARIANTS]
    expected = Counter(seen[f"198.18.1.{n % 250}"] for n in range(300))
    assert {v["to"]: v["clicks"] for v in stats["variants"]} == {to: expected[to] for to in expected}
    assert sum(v["clicks"] for v in stats["variants"]) == 300, "the rule's click has no variant"
    plain = create(client, alice).json()
    assert client.get(f"{LINKS}/{plain['id']}/analytics", headers=alice.auth()).json()["variants"] is None


def _analytics(tc: TestClient, who: Account, link_id: str, total: int) -> dict[str, Any]:
    end = time.monotonic() + 10
    while True:
        stats: dict[str, Any] = tc.get(f"{LINKS}/{link_id}/analytics", headers=who.auth()).json()
        if stats["total_clicks"] >= total or time.monotonic() > end:
            return stats
        time.sleep(0.05)


def test_variants_are_changed_and_cleared_by_an_update(client: TestClient, alice: Account, runtime: Runtime) -> None:
    link = create(client, alice, variants=VARIANTS).json()
    two = VARIANTS[:2]
    changed = client.put(f"{LINKS}/{link['id']}", json={"variants": two}, headers=alice.auth())
    assert changed.status_code == 200 and changed.json()["variants"] == two
    for _ in range(20):
        assert _visit(client, link["slug"], "198.18.2.1") in {v["to"] for v in two}
    cleared = client.put(f"{LINKS}/{link['id']}", json={"variants": []}, headers=alice.auth())
    assert cleared.status_code == 200 and cleared.json()["variants"] is None
    assert _visit(client, link["slug"], "198.18.2.1") == "https://example.com/"
