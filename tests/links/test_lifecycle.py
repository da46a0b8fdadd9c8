"""A link's lifecycle fields through REST: expires_at, max_clicks, expired_url, archived, preview; `status` in every
answer; `GET /links?status=` and `?archived=`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.support.helpers import LINKS, Account, create

PAST = "2020-01-01T00:00:00Z"
FUTURE = "2999-01-01T00:00:00Z"


def _ids(client: TestClient, who: Account, query: str = "") -> list[str]:
    answer = client.get(f"{LINKS}{query}", headers=who.auth())
    assert answer.status_code == 200, answer.text
    return [link["id"] for link in answer.json()["data"]]


def test_fields_round_trip_on_create_get_update_and_list(client: TestClient, alice: Account) -> None:
    made = create(
        client,
        alice,
        expires_at="2999-06-01T12:00:00+02:00",
        max_clicks=5,
        expired_url="https://example.com/over",
        preview={"title": "Sale", "description": "Half off", "image_url": "https://img.example/card.png"},
    )
    assert made.status_code == 201, made.text
    link = made.json()
    assert link["expires_at"] == "2999-06-01T10:00:00Z"
    assert (link["max_clicks"], link["expired_url"], link["archived"]) == (5, "https://example.com/over", False)
    assert link["preview"] == {"title": "Sale", "description": "Half off", "image_url": "https://img.example/card.png"}
    assert link["status"] == "active"
    got = client.get(f"{LINKS}/{link['id']}", headers=alice.auth()).json()
    assert got == link
    listed = client.get(LINKS, headers=alice.auth()).json()["data"]
    assert listed == [link]
    changed = client.put(
        f"{LINKS}/{link['id']}", json={"expires_at": None, "max_clicks": None, "preview": None}, headers=alice.auth()
    )
    assert changed.status_code == 200, changed.text
    body = changed.json()
    assert (body["expires_at"], body["max_clicks"], body["preview"]) == (None, None, None)
    assert body["expired_url"] == "https://example.com/over"


def test_a_whole_number_is_a_limit_and_an_empty_card_is_none(client: TestClient, alice: Account) -> None:
    made = create(client, alice, max_clicks=2000.0, preview={}, title="plain")
    assert made.status_code == 201, made.text
    assert (made.json()["max_clicks"], made.json()["preview"]) == (2000, None)
    carded = create(client, alice, preview={"title": "Sale"}).json()
    cleared = client.put(f"{LINKS}/{carded['id']}", json={"preview": {"title": None}}, headers=alice.auth())
    assert cleared.status_code == 200, cleared.text
    assert cleared.json()["preview"] is None


def test_a_plain_link_answers_the_defaults(client: TestClient, alice: Account) -> None:
    link = create(client, alice).json()
    assert {key: link[key] for key in ("expires_at", "max_clicks", "expired_url", "archived", "preview", "status")} == {
        "expires_at": None,
        "max_clicks": None,
        "expired_url": None,
        "archived": False,
        "preview": None,
        "status": "active",
    }


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"max_clicks": 0}, "max_clicks"),
        ({"max_clicks": "5"}, "max_clicks"),
        ({"expired_url": "ftp://example.com/"}, "expired_url"),
        ({"expired_url": "https://user:pw@example.com/"}, "expired_url"),
        ({"expires_at": "tomorrow"}, "expires_at"),
        ({"archived": "yes"}, "archived"),
        ({"preview": {"title": "x" * 256}}, "preview"),
        ({"preview": {"image_url": "javascript:alert(1)"}}, "image_url"),
        ({"preview": {"colour": "red"}}, "colour"),
        ({"expires_at": 0}, "expires_at"),  # a number is not an ISO 8601 moment (pydantic would read 1970)
        ({"max_clicks": 2.5}, "max_clicks"),
        ({"max_clicks": True}, "max_clicks"),
    ],
)
def test_bad_lifecycle_values_are_refused(client: TestClient, alice: Account, body: dict[str, Any], named: str) -> None:
    answer = create(client, alice, **body)
    assert answer.status_code == 422, answer.text
    assert named in answer.json()["error"]


def test_status_follows_time_and_archiving(client: TestClient, alice: Account) -> None:
    expired = create(client, alice, expires_at=PAST).json()
    assert expired["status"] == "expired"
    archived = create(client, alice, archived=True, expires_at=PAST).json()
    assert archived["status"] == "archived"
    active = create(client, alice, expires_at=FUTURE).json()
    assert active["status"] == "active"
    unarchived = client.put(f"{LINKS}/{archived['id']}", json={"archived": False}, headers=alice.auth()).json()
    assert (unarchived["archived"], unarchived["status"]) == (False, "expired")
    refused = client.put(f"{LINKS}/{archived['id']}", json={"archived": None}, headers=alice.auth())
    assert refused.status_code == 422


def test_lists_leave_archived_links_out_unless_asked(client: TestClient, alice: Account) -> None:
    kept = create(client, alice, title="spring sale").json()["id"]
    shelved = create(client, alice, title="spring archive", archived=True).json()["id"]
    ended = create(client, alice, title="spring ended", expires_at=PAST).json()["id"]
    assert sorted(_ids(client, alice)) == sorted([kept, ended])
    page = client.get(LINKS, headers=alice.auth()).json()["pagination"]
    assert page["total"] == 2
    assert _ids(client, alice, "?archived=true") == [shelved]
    assert _ids(client, alice, "?status=archived") == [shelved]
    assert _ids(client, alice, "?status=expired") == [ended]
    assert _ids(client, alice, "?status=active") == [kept]
    assert _ids(client, alice, "?status=limit_reached") == []
    assert sorted(_ids(client, alice, "?q=spring")) == sorted([kept, ended])
    assert _ids(client, alice, "?q=spring&archived=true") == [shelved]
    assert _ids(client, alice, "?q=spring&status=expired&sort=slug") == [ended]
    answer = client.get(f"{LINKS}?status=gone", headers=alice.auth())
    assert answer.status_code == 422
    assert "status" in answer.json()["error"]


def test_an_expiry_without_offset_is_utc(client: TestClient, alice: Account) -> None:
    soon = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0, tzinfo=None)
    link = create(client, alice, expires_at=soon.isoformat()).json()
    assert link["expires_at"] == soon.isoformat() + "Z"
