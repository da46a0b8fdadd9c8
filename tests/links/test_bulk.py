"""`POST|PATCH|DELETE /links/bulk`: an answer per item in the single calls' words, or all or none with `atomic`;
scope rules per item; one rate-limit token per item; the search index and the redirect cache right afterwards."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2
import pytest
from starlette.testclient import TestClient

from slugline.links import bulk
from tests.support.helpers import BASE_URL, CHROME, LINKS, SQLITE_ONLY, Account, ClientFactory, create

BULK = f"{LINKS}/bulk"


def send(client: TestClient, method: str, who: Account, body: Any, key: str = "full") -> httpx2.Response:
    return client.request(method, BULK, json=body, headers=who.auth(key))


def statuses(got: httpx2.Response) -> list[int]:
    assert got.status_code == 200, got.text
    return [item["status"] for item in got.json()["results"]]


def slugs(client: TestClient, who: Account, q: str | None = None) -> list[str]:
    params = {"per": "100", "sort": "slug", "dir": "asc", **({"q": q} if q else {})}
    return [link["slug"] for link in client.get(LINKS, params=params, headers=who.auth()).json()["data"]]


def redirect(client: TestClient, slug: str) -> int:
    return client.get(f"/{slug}", headers={"user-agent": CHROME}, follow_redirects=False).status_code


def test_create_answers_per_item(client: TestClient, alice: Account) -> None:
    create(client, alice, slug="taken")
    items = [
        {"destination_url": "https://example.com/a", "slug": "bulk-a", "hashtags": ["news"]},
        {"destination_url": "https://example.com/b", "slug": "taken"},
        {"destination_url": "https://example.com/c"},
        {"destination_url": "https://example.com/d", "slug": "bulk-a"},
        {"destination_url": "https://example.com/e", "slug": "locked", "visibility": "password", "password": "sesame"},
    ]
    got = send(client, "POST", alice, {"links": items})
    assert statuses(got) == [201, 409, 201, 409, 201]
    results = got.json()["results"]
    assert [item["index"] for item in results] == list(range(5))
    assert results[1]["error"] == results[3]["error"].replace("bulk-a", "taken") == "slug 'taken' is already taken"
    assert results[0]["link"]["short_url"] == f"{BASE_URL}/bulk-a" and len(results[2]["link"]["slug"]) == 7
    assert got.json()["succeeded"] == 3 and got.json()["failed"] == 2
    assert sorted(slugs(client, alice)) == sorted(["taken", "bulk-a", "locked", results[2]["link"]["slug"]])
    assert slugs(client, alice, "#news") == ["bulk-a"]  # the search index knows them at once
    assert redirect(client, "bulk-a") == 302


def test_atomic_is_all_or_none(client: TestClient, alice: Account) -> None:
    create(client, alice, slug="taken")
    items = [
        {"destination_url": "https://example.com/a", "slug": "fresh"},
        {"destination_url": "https://x.test/", "slug": "taken"},
    ]
    got = send(client, "POST", alice, {"links": items, "atomic": True})
    assert got.status_code == 409 and got.json() == {"error": "item 1: slug 'taken' is already taken"}
    assert slugs(client, alice) == ["taken"] and redirect(client, "fresh") == 404

    ids = [create(client, alice, slug=f"keep-{n}").json()["id"] for n in range(3)]
    got = send(client, "DELETE", alice, {"ids": [*ids, "lnk_00000000000"], "atomic": True})
    assert got.status_code == 404 and got.json() == {"error": "item 3: link not found"}
    got = send(client, "PATCH", alice, {"ids": ["lnk_00000000000", *ids], "change": {"title": "T"}, "atomic": True})
    assert got.status_code == 404
    assert slugs(client, alice) == ["keep-0", "keep-1", "keep-2", "taken"]
    assert all(client.get(f"{LINKS}/{i}", headers=alice.auth()).json()["title"] is None for i in ids)

    got = send(client, "DELETE", alice, {"ids": ids, "atomic": True})
    assert statuses(got) == [200, 200, 200] and slugs(client, alice) == ["taken"]


def test_update_and_delete_answer_per_id(client: TestClient, alice: Account) -> None:
    ids = [create(client, alice, slug=f"many-{n}").json()["id"] for n in range(3)]
    got = send(client, "PATCH", alice, {"ids": [ids[0], "nope", ids[2]], "change": {"hashtags": ["sale"]}})
    assert statuses(got) == [200, 404, 200]
    assert (
        got.json()["results"][0]["link"]["hashtags"] == ["sale"]
        and got.json()["results"][1]["error"] == "link not found"
    )
    assert slugs(client, alice, "#sale") == ["many-0", "many-2"]
    got = send(client, "DELETE", alice, {"ids": [ids[0], ids[0], ids[1]]})
    assert statuses(got) == [200, 404, 200] and got.json()["results"][0] == {
        "index": 0,
        "status": 200,
        "deleted": True,
        "id": ids[0],
    }
    assert slugs(client, alice) == ["many-2"] and slugs(client, alice, "#sale") == ["many-2"]
    assert redirect(client, "many-0") == 404 and redirect(client, "many-2") == 302


def test_the_change_is_checked_once_for_the_whole_call(client: TestClient, alice: Account) -> None:
    link_id = create(client, alice).json()["id"]
    assert send(client, "PATCH", alice, {"ids": [link_id], "change": {"slug": "x"}}).status_code == 422
    assert send(client, "PATCH", alice, {"ids": [link_id], "change": {}}).status_code == 422
    got = send(client, "PATCH", alice, {"ids": [link_id], "change": {"visibility": "private"}}, key="public")
    assert got.status_code == 403
    assert send(client, "POST", alice, {"links": []}).status_code == 422
    too_many = [{"destination_url": "https://example.com/"}] * (bulk.MAX_ITEMS + 1)
    assert send(client, "POST", alice, {"links": too_many}).status_code == 422
    auto = [{"destination_url": "https://example.com/"}, {"destination_url": "https://example.com/", "auto_meta": True}]
    assert send(client, "POST", alice, {"links": auto}).json()["error"].startswith("item 1: auto_meta is not available")
    invalid = [{"destination_url": "https://example.com/", "slug": "fine"}, {"destination_url": "ftp://nope"}]
    got = send(client, "POST", alice, {"links": invalid})  # a body that breaks the schema refuses the whole call
    assert got.status_code == 422 and got.json()["error"].startswith("item 1: destination_url must be an absolute")
    assert len(slugs(client, alice)) == 1  # the test's own link: nothing of the refused calls


def test_a_public_key_touches_no_hidden_link(client: TestClient, alice: Account) -> None:
    open_id = create(client, alice, slug="open").json()["id"]
    hidden_id = create(client, alice, slug="hidden", visibility="private").json()["id"]
    items = [
        {"destination_url": "https://example.com/", "visibility": "private"},
        {"destination_url": "https://example.com/"},
    ]
    assert statuses(send(client, "POST", alice, {"links": items}, key="public")) == [403, 201]
    got = send(client, "PATCH", alice, {"ids": [hidden_id, open_id], "change": {"title": "T"}}, key="public")
    assert statuses(got) == [404, 200] and got.json()["results"][0]["error"] == "link not found"
    assert statuses(send(client, "DELETE", alice, {"ids": [hidden_id, open_id]}, key="public")) == [404, 200]
    assert client.get(f"{LINKS}/{hidden_id}", headers=alice.auth()).json()["title"] is None


@SQLITE_ONLY
def test_a_bulk_call_counts_one_request_per_item(
    make_client: ClientFactory, make_account: Callable[..., Account]
) -> None:
    tc, rt = make_client(rate_limit_developer=20)
    from slugline.accounts import service as accounts

    made = accounts.register(rt, {"username": "limited", "password": "correct horse"}, plan="developer")
    key = tc.post("/api/v1/api-key", json={"scope": "full"}, headers={"Authorization": f"Bearer {made['token']}"})
    auth = {"Authorization": f"Bearer {key.json()['key']}"}
    items = [{"destination_url": f"https://example.com/{n}"} for n in range(8)]
    got = tc.post(BULK, json={"links": items}, headers=auth)
    assert got.status_code == 200 and int(got.headers["RateLimit-Remaining"]) == 19  # the middleware's one, drawn first
    assert int(tc.get("/api/v1/me", headers=auth).headers["RateLimit-Remaining"]) <= 11  # 8 for the items, 1 for /me
    refused = tc.post(BULK, json={"links": items * 2}, headers=auth)
    assert refused.status_code == 429 and "16 items" in refused.json()["error"]
    assert refused.headers["Retry-After"]
    assert tc.post(BULK, json={"links": items * 3}, headers=auth).status_code == 429  # more than a minute's budget
    assert tc.get(LINKS, headers=auth).json()["pagination"]["total"] == 8


@pytest.mark.parametrize("method", ["POST", "PATCH", "DELETE"])
def test_refusals_before_any_work(client: TestClient, alice: Account, method: str) -> None:
    assert client.request(method, BULK, json={"ids": []}).status_code == 401
    assert send(client, method, alice, {"unknown": 1}).status_code == 422
    assert send(client, method, alice, [1, 2]).status_code == 422
    if method != "POST":  # no id holds NUL, which PostgreSQL cannot store
        assert send(client, method, alice, {"ids": ["lnk_\x00"], "change": {"title": "t"}}).status_code == 422


def test_a_password_with_another_visibility_refuses_the_whole_call(client: TestClient, alice: Account) -> None:
    """The document's rule (a password only with visibility 'password') holds for the change itself, before any link
    is looked up: 422 for the call, not a 404 or 422 per item (what schemathesis's fuzzing found)."""
    made = client.post(LINKS, json={"destination_url": "https://example.com/p"}, headers=alice.auth()).json()["id"]
    change = {"visibility": "unlisted", "password": "open sesame"}
    for ids in (["lnk_00000000000"], [made]):
        res = send(client, "PATCH", alice, {"ids": ids, "change": change})
        assert res.status_code == 422, res.text
        assert res.json() == {"error": "password can only be set on a link whose visibility is 'password'"}
    assert client.get(f"{LINKS}/{made}", headers=alice.auth()).json()["visibility"] == "public"
