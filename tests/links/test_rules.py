"""A link's redirect rules through the API: validated like destination_url (same bounds and schemes), at most 20,
values the classification knows; answered as stored; cleared with null or []; MCP takes them as REST does."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.support.helpers import LINKS, Account, create

GOOD = [{"if": {"country": ["fr", "BE"], "device": ["Mobile"], "os": ["ios"]}, "to": "https://example.com/fr"}]


def test_rules_are_stored_normalized_and_answered(client: TestClient, alice: Account) -> None:
    made = create(client, alice, rules=GOOD)
    assert made.status_code == 201, made.text
    expected = [{"if": {"country": ["FR", "BE"], "device": ["mobile"], "os": ["iOS"]}, "to": "https://example.com/fr"}]
    assert made.json()["rules"] == expected
    got = client.get(f"{LINKS}/{made.json()['id']}", headers=alice.auth()).json()
    assert got["rules"] == expected
    listed = client.get(LINKS, headers=alice.auth()).json()["data"]
    assert listed[0]["rules"] == expected
    plain = create(client, alice).json()
    assert plain["rules"] is None
    emptied = client.put(f"{LINKS}/{made.json()['id']}", json={"rules": []}, headers=alice.auth())
    assert emptied.json()["rules"] is None


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ([{"if": {"country": ["FRA"]}, "to": "https://example.com/"}], "country"),
        ([{"if": {"device": ["phone"]}, "to": "https://example.com/"}], "device must be one of"),
        ([{"if": {"browser": ["Netscape"]}, "to": "https://example.com/"}], "browser must be one of"),
        ([{"if": {"language": ["fr_FR"]}, "to": "https://example.com/"}], "language"),
        ([{"if": {"planet": ["mars"]}, "to": "https://example.com/"}], "planet"),
        ([{"if": {}, "to": "javascript:alert(1)"}], "absolute http(s) URL"),
        ([{"if": {}, "to": "https://example.com/" + "a" * 2100}], "at most"),
        ([{"if": {}}], "to"),
        ([{"if": {}, "to": "https://example.com/"}] * 21, "20"),
        ([{"if": {"country": []}, "to": "https://example.com/"}], "country"),
    ],
)
def test_bad_rules_are_refused_with_the_field_named(
    client: TestClient, alice: Account, rules: list[dict[str, Any]], message: str
) -> None:
    answer = create(client, alice, rules=rules)
    assert answer.status_code in (400, 422), answer.text
    body = answer.json()
    assert set(body) >= {"error"} and message in body["error"], body
    assert "rules" in body["error"]
