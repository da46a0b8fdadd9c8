from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from tests.support.helpers import LINKS, Account, create


@pytest.fixture
def mixed(client: TestClient, alice: Account) -> dict[str, dict[str, object]]:
    made = {}
    for level in ("public", "unlisted", "private", "password"):
        extra = {"password": "letmein!"} if level == "password" else {}
        made[level] = create(client, alice, visibility=level, title=f"{level} link", **extra).json()
    return made


def test_public_key_lists_only_public_and_unlisted(
    client: TestClient, alice: Account, mixed: dict[str, dict[str, object]]
) -> None:
    res = client.get(LINKS, headers=alice.auth("public"))
    assert {link["visibility"] for link in res.json()["data"]} == {"public", "unlisted"}
    assert res.json()["pagination"]["total"] == 2
    searched = client.get(LINKS, params={"q": "link"}, headers=alice.auth("public")).json()
    assert searched["pagination"]["total"] == 2
    assert client.get(LINKS, headers=alice.auth("full")).json()["pagination"]["total"] == 4


@pytest.mark.parametrize("level", ["private", "password"])
def test_hidden_links_are_404_for_a_public_key(
    client: TestClient, alice: Account, mixed: dict[str, dict[str, object]], level: str
) -> None:
    link_id = mixed[level]["id"]
    for res in (
        client.get(f"{LINKS}/{link_id}", headers=alice.auth("public")),
        client.put(f"{LINKS}/{link_id}", json={"title": "x"}, headers=alice.auth("public")),
        client.delete(f"{LINKS}/{link_id}", headers=alice.auth("public")),
    ):
        assert res.status_code == 404 and res.json() == {"error": "link not found"}
    res = client.get(f"{LINKS}/{link_id}", headers=alice.auth("full"))
    assert res.status_code == 200 and res.json()["title"] != "x"  # the refused update changed nothing


@pytest.mark.parametrize("level", ["private", "password"])
def test_public_key_cannot_raise_visibility(
    client: TestClient, alice: Account, mixed: dict[str, dict[str, object]], level: str
) -> None:
    res = create(client, alice, key="public", visibility=level, password="letmein!")
    assert res.status_code == 403
    upd = client.put(
        f"{LINKS}/{mixed['public']['id']}",
        json={"visibility": level, "password": "letmein!"},
        headers=alice.auth("public"),
    )
    assert upd.status_code == 403
    assert client.get(f"{LINKS}/{mixed['public']['id']}", headers=alice.auth()).json()["visibility"] == "public"


def test_public_key_manages_public_links(
    client: TestClient, alice: Account, mixed: dict[str, dict[str, object]]
) -> None:
    link_id = mixed["unlisted"]["id"]
    res = client.put(f"{LINKS}/{link_id}", json={"visibility": "public"}, headers=alice.auth("public"))
    assert res.status_code == 200 and res.json()["visibility"] == "public"
    assert client.delete(f"{LINKS}/{link_id}", headers=alice.auth("public")).status_code == 200
