"""`/search`: ranked hits with highlights, what a public key may find, and the bounds."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.support.helpers import SQLITE_ONLY, Account, create

SEARCH = "/api/v1/search"


@pytest.fixture
def corpus(client: TestClient, alice: Account) -> dict[str, str]:
    links = {
        "title": create(
            client, alice, slug="t1", title="Kubernetes networking guide", destination_url="https://example.org/a"
        ).json(),
        "url": create(
            client, alice, slug="u1", title="Something else", destination_url="https://kubernetes.example.org/"
        ).json(),
        "note": create(
            client,
            alice,
            slug="n1",
            title="Unrelated",
            note="ask about kubernetes",
            destination_url="https://example.org/b",
        ).json(),
        "tag": create(
            client, alice, slug="g1", title="Tagged", hashtags=["kubernetes"], destination_url="https://example.org/c"
        ).json(),
        "private": create(
            client,
            alice,
            slug="p1",
            title="Kubernetes secrets",
            visibility="private",
            destination_url="https://example.org/d",
        ).json(),
    }
    return {name: link["id"] for name, link in links.items()}


def search(client: TestClient, alice: Account, q: str, key: str = "full", **params: int) -> dict[str, Any]:
    res = client.get(SEARCH, params={"q": q, **params}, headers=alice.auth(key))
    assert res.status_code == 200, res.text
    body: dict[str, Any] = res.json()
    return body


def test_ranking_follows_field_weights(client: TestClient, alice: Account, corpus: dict[str, str]) -> None:
    body = search(client, alice, "kubernetes")
    order = [hit["link"]["id"] for hit in body["hits"]]
    assert body["total"] == 5 and body["query"] == "kubernetes"
    assert set(order[:2]) == {corpus["title"], corpus["private"]}
    assert order.index(corpus["tag"]) < order.index(corpus["note"]) < order.index(corpus["url"])
    scores = [hit["score"] for hit in body["hits"]]
    assert scores == sorted(scores, reverse=True)


def test_public_key_never_sees_private_hits(client: TestClient, alice: Account, corpus: dict[str, str]) -> None:
    body = search(client, alice, "kubernetes", key="public")
    assert body["total"] == 4
    assert corpus["private"] not in {hit["link"]["id"] for hit in body["hits"]}


@SQLITE_ONLY
def test_highlights_mark_terms_and_escape_html(client: TestClient, alice: Account) -> None:
    create(client, alice, title="<b>Rust</b> & friends", slug="esc")
    hit = search(client, alice, "rust")["hits"][0]
    assert hit["highlights"]["title"] == "&lt;b&gt;<mark>Rust</mark>&lt;/b&gt; &amp; friends"


@pytest.mark.parametrize(
    ("q", "expected"),
    [("kuber", 5), ("kubernetse", 5), ("#kubernetes", 1), ("kubernetes networking", 1), ("zzzzzz", 0)],
)
@SQLITE_ONLY
def test_prefix_typo_and_tag_terms(
    client: TestClient, alice: Account, corpus: dict[str, str], q: str, expected: int
) -> None:
    assert search(client, alice, q)["total"] == expected


@SQLITE_ONLY
def test_accents_do_not_matter(client: TestClient, alice: Account) -> None:
    create(client, alice, title="Crème Brûlée", slug="cb")
    assert search(client, alice, "creme brulee")["total"] == 1
    assert search(client, alice, "CRÈME")["total"] == 1


@pytest.mark.parametrize("params", [{}, {"q": ""}, {"q": "x", "limit": 0}, {"q": "x", "limit": 101}])
@SQLITE_ONLY
def test_search_bounds(client: TestClient, alice: Account, params: dict[str, str | int]) -> None:
    res = client.get(SEARCH, params=params, headers=alice.auth())
    assert res.status_code == 422


@SQLITE_ONLY
def test_limit_caps_hits_not_total(client: TestClient, alice: Account, corpus: dict[str, str]) -> None:
    body = search(client, alice, "kubernetes", limit=2)
    assert body["total"] == 5 and len(body["hits"]) == 2
