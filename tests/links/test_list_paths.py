"""`GET /links` takes a different path by the shape of the request: the total without `q` is remembered per version
of the account's links; with `q`, dense matches are paged by walking the creation-time index and sparse ones by
primary key. Every path must give the same pages as a plain sort of the matching links."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import text
from starlette.testclient import TestClient

from slugline.links import service as links
from slugline.runtime import Runtime
from slugline.storage import loopread
from tests.support.helpers import POSTGRES_ONLY, Account, create


def _page(client: TestClient, who: Account, key: str = "full", **params: Any) -> dict[str, Any]:
    res = client.get("/api/v1/links", params=params, headers=who.auth(key))
    assert res.status_code == 200, res.text
    body: dict[str, Any] = res.json()
    return body


def _ids(body: dict[str, Any]) -> list[str]:
    return [link["id"] for link in body["data"]]


GREEK = ("alpha", "beta", "gamma", "delta", "epsilon")


def _everything(client: TestClient, who: Account, key: str, sort: str, direction: str) -> list[str]:
    """Every link the key sees, in the database's own order for this sort (no `q`)."""
    found: list[str] = []
    for n in range(1, 10):
        page = _page(client, who, key, per=100, page=n, sort=sort, dir=direction)
        found += _ids(page)
        if n >= page["pagination"]["pages"]:
            return found
    raise AssertionError("more pages than expected")


def test_matches_page_like_a_plain_sort_of_every_link(client: TestClient, alice: Account, runtime: Runtime) -> None:
    titles = {}
    for i in range(120):
        title = "zebra rare" if i in (7, 93) else ("common word" if i % 3 == 0 else f"other {GREEK[i % 5]}")
        visibility = "private" if i % 4 == 0 else "public"
        res = create(client, alice, title=title, visibility=visibility)
        assert res.status_code == 201, res.text
        titles[res.json()["id"]] = title
    # Two links made in the same microsecond: the index breaks the tie by id, as the database does.
    with runtime.db.engine.begin() as conn:
        conn.execute(
            text("UPDATE links SET created_at = (SELECT min(created_at) FROM links) WHERE title = 'zebra rare'")
        )
        conn.execute(text("UPDATE accounts SET links_version = links_version + 1"))
    for sort in ("created_at", "title"):  # the index gives the page / the database sorts the matches
        for direction in ("desc", "asc"):
            for key in ("full", "public"):
                everything = _everything(client, alice, key, sort, direction)
                for word in ("common", "zebra", "delta"):
                    expected = [link_id for link_id in everything if word in titles[link_id]]
                    pages = [
                        _page(client, alice, key, q=word, per=7, page=n, dir=direction, sort=sort) for n in range(1, 8)
                    ]
                    assert [i for page in pages for i in _ids(page)] == expected, (sort, direction, key, word)
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


@POSTGRES_ONLY
def test_a_page_in_creation_order_walks_the_accounts_index_on_postgresql(runtime: Runtime) -> None:
    """Not a sort of the whole account per page: with sorting turned off in the planner, the plan still has no
    full sort (an incremental one, for ties in creation time, is fine)."""
    for direction in ("desc", "asc"):
        for public_only in (False, True):
            stmt = links.page_statement("postgresql", "created_at", direction, public_only, False)
            query = loopread.named(runtime.db.engine.dialect, stmt, frozenset({"account_id", "limit", "offset"}))
            with runtime.db.engine.begin() as conn:
                conn.exec_driver_sql("SET LOCAL enable_sort = off")
                binds = query.named({"account_id": 1, "limit": 20, "offset": 0})
                plan = "\n".join(row[0] for row in conn.exec_driver_sql("EXPLAIN " + query.sql, binds))
            assert "Index Scan" in plan and not re.search(r"(^|->)\s*Sort  \(cost", plan, re.MULTILINE), plan
