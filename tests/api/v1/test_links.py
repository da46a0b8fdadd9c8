from __future__ import annotations

import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import text
from starlette.testclient import TestClient

from slugline.links import service as link_service
from slugline.runtime import Runtime
from tests.support.helpers import LINKS, SQLITE_ONLY, Account, create

BASE62 = re.compile(r"^[0-9A-Za-z]+$")
LATER = datetime(2099, 1, 2, 3, 4, 5, tzinfo=UTC)  # what the service's clock says once the link exists


def test_create_minimal_link(client: TestClient, alice: Account) -> None:
    res = create(client, alice, destination_url="https://doc.rust-lang.org/book/")
    assert res.status_code == 201
    link = res.json()
    assert re.fullmatch(r"lnk_[0-9A-Za-z]{11}", link["id"])
    assert len(link["slug"]) == 7 and BASE62.match(link["slug"])
    assert link["short_url"] == f"http://sl.test/{link['slug']}"
    assert link["destination_url"] == "https://doc.rust-lang.org/book/"
    assert link["visibility"] == "public" and link["clicks"] == 0 and link["hashtags"] == []
    assert link["title"] is None and link["description"] is None and link["note"] is None
    assert link["created_at"] == link["updated_at"]
    assert "password" not in link and "password_hash" not in link


def test_create_full_link_and_read_it_back(client: TestClient, alice: Account) -> None:
    res = create(
        client,
        alice,
        slug="rust-book",
        title="The Rust Book",
        description="Learn Rust",
        note="for the team",
        hashtags=["#Rust", "books", "rust"],
        visibility="unlisted",
    )
    assert res.status_code == 201
    link = res.json()
    assert link["slug"] == "rust-book" and link["hashtags"] == ["rust", "books"]
    got = client.get(f"{LINKS}/{link['id']}", headers=alice.auth())
    assert got.status_code == 200 and got.json() == link


OVER_BOUNDS: list[tuple[dict[str, Any], str]] = [
    ({"destination_url": "ftp://example.com/"}, "destination_url"),
    ({"destination_url": "/relative/path"}, "destination_url"),
    ({"destination_url": "https://user:pw@example.com/"}, "destination_url"),
    ({"destination_url": "https://example.com/" + "a" * 2048}, "destination_url"),
    ({"destination_url": "https:///no-host"}, "destination_url"),
    ({"destination_url": 42}, "destination_url"),
    ({"slug": ""}, "slug"),
    ({"slug": "a" * 65}, "slug"),
    ({"slug": "has space"}, "slug"),
    ({"slug": "ünïcode"}, "slug"),
    ({"slug": "api"}, "slug"),
    ({"slug": "MCP"}, "slug"),
    ({"title": "t" * 256}, "title"),
    ({"description": "d" * 1025}, "description"),
    ({"note": "n" * 4097}, "note"),
    ({"hashtags": [f"t{i}" for i in range(31)]}, "hashtags"),
    ({"hashtags": ["x" * 65]}, "hashtags"),
    ({"hashtags": ["#"]}, "hashtags"),
    ({"hashtags": ["two words"]}, "hashtag"),
    ({"hashtags": "notalist"}, "hashtags"),
    ({"visibility": "secret"}, "visibility"),
    ({"visibility": "password"}, "password"),
    ({"visibility": "password", "password": "abc"}, "password"),
    ({"auto_meta": "maybe"}, "auto_meta"),
    ({"colour": "red"}, "unknown field 'colour'"),
]


@pytest.mark.parametrize(("extra", "needle"), OVER_BOUNDS, ids=[n for _, n in OVER_BOUNDS])
@SQLITE_ONLY
def test_each_bound_gives_422_naming_the_field(
    client: TestClient, alice: Account, extra: dict[str, Any], needle: str
) -> None:
    res = create(client, alice, **extra)
    assert res.status_code == 422, res.text
    assert needle in res.json()["error"]


@SQLITE_ONLY
def test_missing_destination_is_422(client: TestClient, alice: Account) -> None:
    res = client.post(LINKS, json={"title": "no url"}, headers=alice.auth())
    assert res.status_code == 422 and res.json()["error"] == "destination_url is required"


def test_bounds_are_inclusive(client: TestClient, alice: Account) -> None:
    res = create(
        client,
        alice,
        slug="a" * 64,
        title="t" * 255,
        description="d" * 1024,
        note="n" * 4096,
        hashtags=[f"t{i}" for i in range(30)],
        destination_url="https://e.com/" + "p" * 2034,
    )
    assert res.status_code == 201, res.text


def test_taken_slug_is_409_and_slugs_are_case_sensitive(
    client: TestClient, alice: Account, make_account: Callable[..., Account]
) -> None:
    assert create(client, alice, slug="Launch").status_code == 201
    assert create(client, alice, slug="launch").status_code == 201
    other = make_account("bob")
    res = create(client, other, slug="Launch")
    assert res.status_code == 409 and "Launch" in res.json()["error"]


def test_update_sends_only_changes_and_null_clears(
    client: TestClient, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = create(client, alice, title="Old", note="keep me", hashtags=["a"]).json()
    monkeypatch.setattr(link_service, "utcnow", lambda: LATER)
    res = client.put(
        f"{LINKS}/{link['id']}", json={"title": None, "hashtags": None, "slug": "new-slug"}, headers=alice.auth()
    )
    assert res.status_code == 200, res.text
    body = res.json()
    assert body["title"] is None and body["hashtags"] == [] and body["note"] == "keep me"
    assert body["slug"] == "new-slug" and body["short_url"].endswith("/new-slug")
    assert (body["created_at"], body["updated_at"]) == (link["created_at"], "2099-01-02T03:04:05Z")
    assert client.get(f"{LINKS}/{link['id']}", headers=alice.auth()).json()["updated_at"] == "2099-01-02T03:04:05Z"


def test_concurrent_updates_of_different_fields_both_stay_and_clicks_are_never_written_back(
    client: TestClient, alice: Account, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = create(client, alice, title="t", note="n").json()
    apply_password = link_service._apply_password

    def slowly(*args: Any) -> None:  # between the read of the link and the write: the other update runs here
        time.sleep(0.02)
        apply_password(*args)

    monkeypatch.setattr(link_service, "_apply_password", slowly)
    url = f"{LINKS}/{link['id']}"
    with runtime.db.engine.begin() as conn:  # clicks counted meanwhile by the click writer
        conn.execute(text("UPDATE links SET clicks = 41 WHERE id = :id"), {"id": link["id"]})

    def change(field: str) -> None:
        for i in range(15):
            assert client.put(url, json={field: f"{field} {i}"}, headers=alice.auth()).status_code == 200

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(change, ("title", "note")))
    final = client.get(url, headers=alice.auth()).json()
    assert (final["title"], final["note"], final["clicks"]) == ("title 14", "note 14", 41)


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({}, "empty"),
        ({"slug": None}, "slug cannot be null"),
        ({"destination_url": None}, "destination_url"),
        ({"auto_meta": True}, "auto_meta"),
        ({"visibility": "password"}, "password is required"),
        ({"password": "hunter22"}, "password can only be set"),
    ],
)
@SQLITE_ONLY
def test_bad_updates_are_422(client: TestClient, alice: Account, body: dict[str, Any], needle: str) -> None:
    link = create(client, alice).json()
    res = client.put(f"{LINKS}/{link['id']}", json=body, headers=alice.auth())
    assert res.status_code == 422 and needle in res.json()["error"]


def test_update_to_taken_slug_is_409(client: TestClient, alice: Account) -> None:
    create(client, alice, slug="first")
    second = create(client, alice, slug="second").json()
    res = client.put(f"{LINKS}/{second['id']}", json={"slug": "first"}, headers=alice.auth())
    assert res.status_code == 409


def test_password_link_never_returns_password(client: TestClient, alice: Account) -> None:
    res = create(client, alice, visibility="password", password="open sesame")
    assert res.status_code == 201
    assert "open sesame" not in res.text and "password" not in res.json()
    listed = client.get(LINKS, headers=alice.auth())
    assert "open sesame" not in listed.text and "argon2" not in listed.text


def test_delete_is_permanent(client: TestClient, alice: Account) -> None:
    link = create(client, alice).json()
    res = client.delete(f"{LINKS}/{link['id']}", headers=alice.auth())
    assert res.json() == {"deleted": True, "id": link["id"]}
    assert client.get(f"{LINKS}/{link['id']}", headers=alice.auth()).status_code == 404
    assert client.delete(f"{LINKS}/{link['id']}", headers=alice.auth()).status_code == 404


def test_accounts_never_see_each_other(
    client: TestClient, alice: Account, make_account: Callable[..., Account]
) -> None:
    bob = make_account("bob")
    link = create(client, alice, title="alice only").json()
    for res in (
        client.get(f"{LINKS}/{link['id']}", headers=bob.auth()),
        client.put(f"{LINKS}/{link['id']}", json={"title": "mine"}, headers=bob.auth()),
        client.delete(f"{LINKS}/{link['id']}", headers=bob.auth()),
    ):
        assert res.status_code == 404 and res.json() == {"error": "link not found"}
    assert client.get(LINKS, headers=bob.auth()).json()["pagination"]["total"] == 0
    assert client.get(LINKS, params={"q": "alice"}, headers=bob.auth()).json()["data"] == []


@pytest.mark.parametrize("field", ["title", "note", "slug", "destination_url", "hashtags"])
def test_nul_characters_are_422_not_a_crash(client: TestClient, alice: Account, field: str) -> None:
    value: Any = ["a\x00b"] if field == "hashtags" else "https://e.com/\x00" if field == "destination_url" else "a\x00b"
    res = create(client, alice, **{field: value})
    assert res.status_code == 422 and field in res.json()["error"]
    listed = client.get(LINKS, params={"q": "a\x00b"}, headers=alice.auth())
    assert listed.status_code == 422 and "q" in listed.json()["error"]


@pytest.mark.parametrize(
    "path",
    [f"{LINKS}/lnk_%00", f"{LINKS}/%00/clicks", f"{LINKS}/x%00y/qr", "/api/v1/public/a%00b", f"{LINKS}/{'x' * 5000}"],
)
def test_odd_ids_in_paths_are_404(client: TestClient, alice: Account, path: str) -> None:
    res = client.get(path, headers=alice.auth())
    assert res.status_code == 404 and res.json() == {"error": "link not found"}
