"""`GET /links/export`: every link the key may see, every column, oldest first, filtered as the list is, streamed a
chunk at a time."""

from __future__ import annotations

import csv
import io
import tracemalloc
from datetime import timedelta
from typing import Any

import orjson
import pytest
from sqlalchemy import insert
from starlette.testclient import TestClient

from slugline.common.clock import utcnow
from slugline.common.models import Link
from slugline.links import export, files
from slugline.runtime import Runtime
from tests.support.helpers import LINKS, SQLITE_ONLY, Account, create
from tests.support.streams import stream_get

EXPORT = f"{LINKS}/export"


def ndjson(client: TestClient, who: Account, key: str = "full", **query: str) -> list[dict[str, Any]]:
    got = client.get(EXPORT, params={"format": "ndjson", **query}, headers=who.auth(key))
    assert got.status_code == 200, got.text
    assert got.headers["content-type"].startswith("application/x-ndjson")
    return [orjson.loads(line) for line in got.content.splitlines()]


def test_every_column_of_every_link_oldest_first(client: TestClient, alice: Account) -> None:
    first = create(client, alice, slug="first", title="=SUM(A1)", hashtags=["a", "b"], note="n").json()
    second = create(client, alice, slug="second", visibility="private").json()
    rows = ndjson(client, alice)
    assert [row["slug"] for row in rows] == ["first", "second"]
    assert list(rows[0]) == list(files.COLUMNS)
    assert rows[0]["id"] == first["id"] and rows[0]["hashtags"] == ["a", "b"] and rows[0]["title"] == "=SUM(A1)"
    assert rows[0]["short_url"] == first["short_url"] and rows[1]["visibility"] == "private"
    assert rows[0]["created_at"].startswith(first["created_at"][:-1]) and rows[1]["id"] == second["id"]

    got = client.get(EXPORT, headers=alice.auth())
    assert got.headers["content-type"].startswith("text/csv")
    assert got.headers["content-disposition"] == 'attachment; filename="links.csv"'
    table = list(csv.DictReader(io.StringIO(got.text)))
    assert [row["slug"] for row in table] == ["first", "second"]
    assert table[0]["title"] == "'=SUM(A1)" and table[0]["hashtags"] == "a b" and table[1]["title"] == ""


def test_a_public_key_exports_only_what_it_may_see(client: TestClient, alice: Account) -> None:
    create(client, alice, slug="open")
    create(client, alice, slug="hidden", visibility="private")
    create(client, alice, slug="locked", visibility="password", password="secret-pass")
    assert [row["slug"] for row in ndjson(client, alice, "public")] == ["open"]
    assert [row["slug"] for row in ndjson(client, alice)] == ["open", "hidden", "locked"]


def test_q_filters_as_the_list_does(client: TestClient, alice: Account) -> None:
    for slug in ("launch-one", "other", "launch-two"):
        create(client, alice, slug=slug, hashtags=["news"] if slug != "other" else [])
    assert [row["slug"] for row in ndjson(client, alice, q="launch")] == ["launch-one", "launch-two"]
    assert [row["slug"] for row in ndjson(client, alice, q="#news")] == ["launch-one", "launch-two"]
    assert ndjson(client, alice, q="nothing-matches") == []


def test_refusals(client: TestClient, alice: Account) -> None:
    assert client.get(EXPORT, params={"format": "xml"}, headers=alice.auth()).status_code == 422
    assert client.get(EXPORT).status_code == 401
    assert client.get(EXPORT, headers=alice.auth()).text.splitlines() == [",".join(files.COLUMNS)]


def fill(rt: Runtime, account_id: int, count: int) -> None:
    """`count` links written straight to the table (the export reads the table; no feed or index needed)."""
    start = utcnow() - timedelta(days=1)
    rows = [
        {
            "id": f"lnk_{n:011d}",
            "account_id": account_id,
            "slug": f"bulk-{n}",
            "destination_url": f"https://example.com/{n}/" + "x" * 200,
            "hashtags": [],
            "visibility": "public",
            "clicks": 0,
            "created_at": start + timedelta(milliseconds=n // 3),  # ties on the instant: the id breaks them
            "updated_at": start,
        }
        for n in range(count)
    ]
    with rt.db.engine.begin() as conn:
        conn.execute(insert(Link), rows)


def account_id(rt: Runtime, who: Account) -> int:
    from slugline.accounts import service as accounts

    return accounts.operator(rt, who.username).account_id


def test_chunks_follow_the_keyset_across_ties(
    client: TestClient, alice: Account, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export, "CHUNK_ROWS", 7)
    fill(runtime, account_id(runtime, alice), 50)
    got = stream_get(client, EXPORT, alice.full, {"format": "ndjson"})
    assert got.status == 200 and got.finished
    chunks = [[orjson.loads(line)["slug"] for line in body.splitlines()] for body in got.bodies if body]
    assert [slug for chunk in chunks for slug in chunk] == [f"bulk-{n}" for n in range(50)]
    assert all(1 <= len(chunk) <= 7 for chunk in chunks)


@SQLITE_ONLY
def test_memory_follows_the_chunk_not_the_account(
    client: TestClient, alice: Account, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(runtime, account_id(runtime, alice), 10_000)

    def peak(chunk_rows: int) -> int:
        monkeypatch.setattr(export, "CHUNK_ROWS", chunk_rows)
        sizes: list[int] = []
        tracemalloc.start()
        try:
            got = stream_get(client, EXPORT, alice.full, on_body=lambda got: sizes.append(len(got.bodies.pop())))
            highest = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert got.finished and sum(sizes) > 10_000 * 200
        return highest

    peak(10_000)  # once before measuring: compiled statements and other caches filled
    chunked, whole = peak(250), peak(10_000)
    assert chunked * 8 < whole, (chunked, whole)


def test_archived_links_are_exported_unless_the_filters_say_otherwise(client: TestClient, alice: Account) -> None:
    create(client, alice, slug="kept")
    gone = create(client, alice, slug="shelved").json()["id"]
    assert client.put(f"{LINKS}/{gone}", json={"archived": True}, headers=alice.auth()).status_code == 200
    assert [row["slug"] for row in ndjson(client, alice)] == ["kept", "shelved"]
    assert [row["slug"] for row in ndjson(client, alice, archived="false")] == ["kept"]
    assert [row["slug"] for row in ndjson(client, alice, status="archived")] == ["shelved"]
    assert [row["slug"] for row in ndjson(client, alice, status="active", q="e")] == ["kept"]
    assert client.get(EXPORT, params={"status": "nope"}, headers=alice.auth()).status_code == 422
