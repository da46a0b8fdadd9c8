"""The redirect of a link with a lifecycle: archived (404), expired or used up (to expired_url, else 410, counted),
the click limit (exact, bots not counted), and the card link-preview crawlers get."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.support.helpers import CHROME, LINKS, Account, create

BROWSER = "text/html,application/xhtml+xml,*/*;q=0.8"
SLACK = "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"
GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


def _link(client: TestClient, who: Account, **body: Any) -> dict[str, Any]:
    made = create(client, who, **body)
    assert made.status_code == 201, made.text
    link: dict[str, Any] = made.json()
    return link


def _visit(client: TestClient, slug: str, agent: str = CHROME, **headers: str) -> Any:
    return client.get(f"/{slug}", headers={"user-agent": agent, **headers}, follow_redirects=False)


def _clicks(client: TestClient, who: Account, link_id: str, total: int) -> int:
    """The link's recorded clicks once `total` are in (clicks are buffered), or as they are after 10 s."""
    end = time.monotonic() + 10
    while True:
        found = client.get(f"{LINKS}/{link_id}/clicks?per=100", headers=who.auth()).json()["pagination"]["total"]
        if found >= total or time.monotonic() > end:
            return int(found)
        time.sleep(0.05)


def test_an_archived_link_is_not_found_and_unarchiving_brings_it_back(client: TestClient, alice: Account) -> None:
    link = _link(client, alice, archived=True)
    answer = _visit(client, link["slug"], accept="application/json")
    assert (answer.status_code, answer.json()) == (404, {"error": "link not found"})
    assert _visit(client, link["slug"], accept=BROWSER).status_code == 404
    client.put(f"{LINKS}/{link['id']}", json={"archived": False}, headers=alice.auth())
    assert _visit(client, link["slug"]).status_code == 302


def test_an_expired_link_answers_410_and_counts_the_visit(client: TestClient, alice: Account) -> None:
    link = _link(client, alice, expires_at="2020-01-01T00:00:00Z")
    answer = _visit(client, link["slug"], accept="application/json")
    assert answer.status_code == 410
    assert answer.json() == {"error": "this link has expired"}
    page = _visit(client, link["slug"], accept=BROWSER)
    assert page.status_code == 410 and page.headers["content-type"].startswith("text/html")
    assert "Link expired" in page.text
    assert _clicks(client, alice, link["id"], 2) == 2


def test_an_expired_link_with_expired_url_sends_there(client: TestClient, alice: Account) -> None:
    link = _link(client, alice, expires_at="2020-01-01T00:00:00Z", expired_url="https://example.com/over?x=1")
    answer = _visit(client, link["slug"])
    assert (answer.status_code, answer.headers["location"]) == (302, "https://example.com/over?x=1")
    assert answer.headers["cache-control"] == "private, no-store"


def test_exactly_max_clicks_visitors_go_through_and_bots_take_no_place(client: TestClient, alice: Account) -> None:
    link = _link(client, alice, max_clicks=3, destination_url="https://example.com/sale")
    assert _visit(client, link["slug"], GOOGLEBOT).headers["location"] == "https://example.com/sale"
    assert client.head(f"/{link['slug']}", headers={"user-agent": CHROME}, follow_redirects=False).status_code == 302
    places = [_visit(client, link["slug"]) for _ in range(3)]
    assert [answer.status_code for answer in places] == [302, 302, 302]
    later = [_visit(client, link["slug"], accept="application/json") for _ in range(2)]
    assert [answer.status_code for answer in later] == [410, 410]
    assert client.get(f"{LINKS}/{link['id']}", headers=alice.auth()).json()["status"] == "limit_reached"
    listed = client.get(f"{LINKS}?status=limit_reached", headers=alice.auth()).json()["data"]
    assert [found["id"] for found in listed] == [link["id"]]
    assert _clicks(client, alice, link["id"], 6) == 6  # the bot's, the three that went through, the two refused
    raised = client.put(f"{LINKS}/{link['id']}", json={"max_clicks": 4}, headers=alice.auth()).json()
    assert raised["status"] == "active"
    assert _visit(client, link["slug"]).status_code == 302
    assert _visit(client, link["slug"], accept="application/json").status_code == 410


def test_a_used_up_link_sends_to_expired_url(client: TestClient, alice: Account) -> None:
    link = _link(client, alice, max_clicks=1, expired_url="https://example.com/sold-out")
    assert _visit(client, link["slug"]).headers["location"] == "https://example.com/"
    assert _visit(client, link["slug"]).headers["location"] == "https://example.com/sold-out"


def test_expiry_takes_effect_within_a_second_with_a_warm_cache(client: TestClient, alice: Account) -> None:
    ends = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=2)
    link = _link(client, alice, expires_at=ends.isoformat())
    assert _visit(client, link["slug"]).status_code == 302  # cached from here on
    while _visit(client, link["slug"]).status_code == 302:
        assert datetime.now(UTC) < ends + timedelta(seconds=1), "still redirecting a second after the expiry"
        time.sleep(0.02)
    assert datetime.now(UTC) >= ends
    assert _visit(client, link["slug"]).status_code == 410


def test_an_expiry_set_by_an_update_takes_effect(client: TestClient, alice: Account) -> None:
    link = _link(client, alice)
    assert _visit(client, link["slug"]).status_code == 302
    client.put(f"{LINKS}/{link['id']}", json={"expires_at": "2020-01-01T00:00:00Z"}, headers=alice.auth())
    assert _visit(client, link["slug"]).status_code == 410


CARD = {
    "title": 'Big <sale> & "more"',
    "description": "<script>alert(1)</script>",
    "image_url": "https://img.example/c.png?a=1&b=2",
}


@pytest.mark.parametrize(
    "agent",
    [
        SLACK,
        "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
        "Twitterbot/1.0",
        "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
        "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
        "WhatsApp/2.23.20.0 A",
        "TelegramBot (like TwitterBot)",
    ],
)
def test_link_preview_crawlers_get_the_card_escaped(client: TestClient, alice: Account, agent: str) -> None:
    link = _link(client, alice, preview=CARD, destination_url="https://example.com/sale")
    answer = _visit(client, link["slug"], agent)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
    page = answer.text
    assert '<meta property="og:title" content="Big &lt;sale&gt; &amp; &quot;more&quot;">' in page
    assert '<meta name="twitter:description" content="&lt;script&gt;alert(1)&lt;/script&gt;">' in page
    assert '<meta property="og:image" content="https://img.example/c.png?a=1&amp;b=2">' in page
    assert '<meta name="twitter:card" content="summary_large_image">' in page
    assert "<script>" not in page and "<sale>" not in page


def test_people_and_crawlers_of_links_without_a_card_are_redirected(client: TestClient, alice: Account) -> None:
    carded = _link(client, alice, preview=CARD)
    assert _visit(client, carded["slug"]).status_code == 302
    assert _visit(client, carded["slug"], GOOGLEBOT).status_code == 302
    plain = _link(client, alice)
    assert _visit(client, plain["slug"], SLACK).status_code == 302
    private = _link(client, alice, preview=CARD, visibility="private")
    assert _visit(client, private["slug"], SLACK).status_code == 404
