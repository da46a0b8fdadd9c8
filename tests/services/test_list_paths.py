"""`GET /links` takes a different path by the shape of the request: the total without `q` is remembered per version
of the account's links; with `q`, dense matches are paged by walking the creation-time index and sparse ones by
primary key. Every path must give the same pages as a plain sort of the matching links."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from starlette.testclient import TestClient

from slugline.runtime import Runtime
from slugline.services import links
from tests.helpers import Account, create


def _page(client: TestClient, who: Account, key: str = "full", **params: Any) -> dict[str, Any]:
    res = client.get("/api/v1/links", params=params, headers=who.auth(key))
    assert res.status_code == 200, res.text
    body: dict[str, Any] = res.json()
    return body


def _ids(body: dict[str, Any]) -> list[str]:
    return [link["id"] for link in body["data"]]


def test_dense_and_sparse_matches_page_like_a_plain_sort(client: TestClient, alice: Account) -> None:
    made = []
    for i in range(120):
        title = "zebra rare" if i in (7, 93) else ("common word" if i % 3 == 0 else "other thing")
        visibility = "private" if i % 4 == 0 else "public"
        res = create(client, alice, title=title, visibility=visibility)
        assert res.status_code == 201, res.text
        made.append(res.json())
    newest_first = list(reversed(made))  # created one after another: creation order is the list's order
    for word, key in (("common", "full"), ("common", "public"), ("zebra", "full"), ("zebra", "public")):
        expected = [
            link["id"]
            for link in newest_first
            if word in link["title"] and (key == "full" or link["visibility"] == "public")
        ]
        assert (word == "common") == (len(expected) * links.DENSE_SHARE >= 120)  # both paths are taken
        for direction, order in (("desc", expected), ("asc", expected[::-1])):
            pages = [_page(client, alice, key, q=word, per=7, page=n, dir=direction) for n in range(1, 8)]
            assert [i for page in pages for i in _ids(page)] == order
            assert {page["pagination"]["total"] for page in pages} == {len(expected)}


def test_the_remembered_total_follows_every_write_on_any_worker(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    for _ in range(3):
        assert create(client, alice).status_code == 201
    assert _page(client, alice)["pagination"]["total"] == 3
    assert _page(client, alice, "public")["pagination"]["total"] == 3
    # Another worker's write: a row inserted and the version bumped straight in the database.
    with runtime.db.engine.begin() as conn:
        conn.execute(text("UPDATE links SET visibility = 'private' WHERE id IN (SELECT id FROM links LIMIT 1)"))
        conn.execute(text("UPDATE accounts SET links_version = links_version + 1"))
    assert _page(client, alice)["pagination"]["total"] == 3
    assert _page(client, alice, "public")["pagination"]["total"] == 2
    gone = _ids(_page(client, alice))[0]
    assert client.delete(f"/api/v1/links/{gone}", headers=alice.auth()).status_code == 200
    assert _page(client, alice)["pagination"]["total"] == 2
    assert len(runtime.link_counts) <= 2
