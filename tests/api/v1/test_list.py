from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.support.helpers import LINKS, SQLITE_ONLY, Account, create


@pytest.fixture
def five(client: TestClient, alice: Account) -> list[dict[str, Any]]:
    titles = ["Crème brûlée recipe", "Rust async book", None, "apple pie", "Zebra facts"]
    tags = [["food", "dessert"], ["rust", "books"], ["misc"], ["food"], []]
    return [
        create(client, alice, title=t, hashtags=h, slug=f"s{i}", note=f"note {i}").json()
        for i, (t, h) in enumerate(zip(titles, tags, strict=True))
    ]


def listing(client: TestClient, alice: Account, **params: str | int) -> dict[str, Any]:
    res = client.get(LINKS, params=params, headers=alice.auth())
    assert res.status_code == 200, res.text
    body: dict[str, Any] = res.json()
    return body


def test_default_order_is_newest_first(client: TestClient, alice: Account, five: list[dict[str, Any]]) -> None:
    body = listing(client, alice)
    assert [link["slug"] for link in body["data"]] == ["s4", "s3", "s2", "s1", "s0"]
    assert body["pagination"] == {"page": 1, "per": 20, "total": 5, "pages": 1}


def test_pagination(client: TestClient, alice: Account, five: list[dict[str, Any]]) -> None:
    body = listing(client, alice, per=2, page=3, sort="slug", dir="asc")
    assert [link["slug"] for link in body["data"]] == ["s4"]
    assert body["pagination"] == {"page": 3, "per": 2, "total": 5, "pages": 3}
    assert listing(client, alice, per=2, page=9)["data"] == []


def test_sort_by_title_puts_missing_titles_last(client: TestClient, alice: Account, five: list[dict[str, Any]]) -> None:
    asc = [link["title"] for link in listing(client, alice, sort="title", dir="asc")["data"]]
    assert asc[-1] is None and asc[:4] == sorted(asc[:4])
    desc = [link["title"] for link in listing(client, alice, sort="title", dir="desc")["data"]]
    assert desc[-1] is None and desc[:4] == sorted(desc[:4], reverse=True)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"per": 0}, "per"),
        ({"per": 101}, "per"),
        ({"page": 0}, "page"),
        ({"sort": "colour"}, "sort"),
        ({"dir": "up"}, "dir"),
        ({"per": "many"}, "per"),
        ({"bogus": 1}, "bogus"),
    ],
)
@SQLITE_ONLY
def test_list_bounds_are_422(client: TestClient, alice: Account, params: dict[str, str | int], field: str) -> None:
    res = client.get(LINKS, params=params, headers=alice.auth())
    assert res.status_code == 422 and field in res.json()["error"]


@pytest.mark.parametrize(
    ("q", "slugs"),
    [
        ("creme", {"s0"}),
        ("CRÈME Brulee", {"s0"}),
        ("rust book", {"s1"}),
        ("rust pie", set()),
        ("#food", {"s0", "s3"}),
        ("#foo", set()),
        ("note", {"s0", "s1", "s2", "s3", "s4"}),
        ("example.com", {"s0", "s1", "s2", "s3", "s4"}),
        ("s2", {"s2"}),
        ("dessert apple", set()),
        ("#food pie", {"s3"}),
    ],
)
def test_q_matches_all_terms_across_fields(
    client: TestClient, alice: Account, five: list[dict[str, Any]], q: str, slugs: set[str]
) -> None:
    body = listing(client, alice, q=q)
    assert {link["slug"] for link in body["data"]} == slugs
    assert body["pagination"]["total"] == len(slugs)


def test_q_keeps_sort_and_pagination_exact(client: TestClient, alice: Account, five: list[dict[str, Any]]) -> None:
    body = listing(client, alice, q="note", sort="slug", dir="asc", per=2, page=2)
    assert [link["slug"] for link in body["data"]] == ["s2", "s3"]


def test_q_sees_changes_at_once(client: TestClient, alice: Account, five: list[dict[str, Any]]) -> None:
    link_id = five[4]["id"]
    client.put(f"{LINKS}/{link_id}", json={"title": "Quokka facts"}, headers=alice.auth())
    assert {link["slug"] for link in listing(client, alice, q="quokka")["data"]} == {"s4"}
    client.delete(f"{LINKS}/{link_id}", headers=alice.auth())
    assert listing(client, alice, q="quokka")["data"] == []
