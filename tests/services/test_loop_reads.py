"""On SQLite, `GET /links/{id}` and plain `GET /links` are answered on the event loop when that needs no waiting and
little work (`slugline.loopread`); otherwise from a thread. Both paths must give exactly the same answers, and the
loop path must decline, not wait or grind, when SQLite is busy or the statement is large."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import create_engine, text
from starlette.testclient import TestClient

from slugline import loopread
from slugline.caller import Caller
from slugline.errors import NotFound
from slugline.loopread import LoopReader
from slugline.models import Base
from slugline.runtime import Runtime
from slugline.schemas import ListParams, SearchParams
from slugline.searchindex import SearchCache
from slugline.services import links, search
from tests.helpers import SQLITE_ONLY, Account, create
from tests.services.conftest import Now

T = TypeVar("T")


AWKWARD: list[dict[str, Any]] = [
    {"title": "Ünïcode — “quotes” \\ back\nslash", "hashtags": ["émoji😀", "a"], "note": "n", "description": ""},
    {"visibility": "private", "hashtags": []},
    {"visibility": "unlisted", "title": None},
    {"visibility": "password", "password": "correct horse"},
    {"destination_url": "https://example.com/path?q=1&r=%20#frag"},
]


def _callers(runtime: Runtime, who: Account) -> Iterator[Caller]:
    with runtime.db.engine.connect() as conn:
        found = conn.execute(text("SELECT id, created_at FROM accounts WHERE username = :u"), {"u": who.username})
        account_id, moment = found.one()
    for scope in ("full", "public"):
        yield Caller(account_id, who.username, "developer", scope, moment, "http://sl.test")


@pytest.fixture
def made(client: TestClient, alice: Account) -> list[dict[str, Any]]:
    out = []
    for body in AWKWARD * 3:
        res = create(client, alice, **body)
        assert res.status_code == 201, res.text
        out.append(res.json())
    return out


def test_both_paths_give_the_same_link(runtime: Runtime, alice: Account, made: list[dict[str, Any]], now: Now) -> None:
    reader = runtime.db.now
    assert reader is not None
    for caller in _callers(runtime, alice):
        for link in made:
            try:
                expected: dict[str, Any] | None = links.get_link(runtime, caller, link["id"])
            except NotFound:
                expected = None
            try:
                got = now(links.get_link_now(runtime, caller, link["id"]))
            except NotFound:
                got = None
            else:
                assert got is not None, "the loop path declined a primary-key read"
            assert got == expected
            if caller.scope == "full":
                assert got == link  # what the create answered, field for field
    assert reader.declined == 0


def test_both_paths_give_the_same_pages(runtime: Runtime, alice: Account, made: list[dict[str, Any]], now: Now) -> None:
    for caller in _callers(runtime, alice):
        for direction in ("asc", "desc"):
            for page in (1, 2, 3, 9):
                data = {"per": 4, "page": page, "dir": direction}
                expected = links.list_links(runtime, caller, data)  # also remembers the total
                assert now(links.list_links_now(runtime, caller, ListParams.model_validate(data))) == expected
    # Shapes no index gives in order are left to the thread path.
    assert now(links.list_links_now(runtime, caller, ListParams(sort="title"))) is None
    assert now(links.list_links_now(runtime, caller, ListParams(sort="title", q="quotes"))) is None


def test_both_paths_give_the_same_matches_and_hits(
    runtime: Runtime, alice: Account, made: list[dict[str, Any]], now: Now
) -> None:
    for caller in _callers(runtime, alice):
        for query in ("quotes", "example", "émoji", "#a", "nothing-matches-this"):
            params = SearchParams(q=query)
            assert now(search.search_now(runtime, caller, params)) is None  # the index is not loaded yet
            expected = search.search_links(runtime, caller, params.model_dump())  # loads it
            assert now(search.search_now(runtime, caller, params)) == expected
            for direction in ("asc", "desc"):
                for page in (1, 2, 5):
                    data = {"q": query, "per": 3, "page": page, "dir": direction}
                    expected = links.list_links(runtime, caller, data)
                    assert now(links.list_links_now(runtime, caller, ListParams.model_validate(data))) == expected
            runtime.search = SearchCache(runtime.search.budget_bytes)  # forgotten again for the next query
    reader = runtime.db.now
    assert reader is not None and reader.declined == 0


def test_a_search_index_behind_the_accounts_version_is_brought_up_on_a_thread(
    runtime: Runtime, alice: Account, made: list[dict[str, Any]], client: TestClient, now: Now
) -> None:
    caller = next(_callers(runtime, alice))
    params = ListParams(q="quotes")
    links.list_links(runtime, caller, params.model_dump())
    assert now(links.list_links_now(runtime, caller, params)) is not None
    with runtime.db.engine.begin() as conn:  # another worker's write
        conn.execute(text("UPDATE links SET title = 'quotes too' WHERE visibility = 'private'"))
        conn.execute(text("UPDATE accounts SET links_version = links_version + 1"))
    assert now(links.list_links_now(runtime, caller, params)) is None
    res = client.get("/api/v1/links", params={"q": "quotes"}, headers=alice.auth())
    assert res.json()["pagination"]["total"] == 6  # 3 of the awkward titles and 3 private links
    assert now(links.list_links_now(runtime, caller, params)) == res.json()


def test_a_total_not_remembered_is_counted_on_a_thread(
    runtime: Runtime, alice: Account, made: list[dict[str, Any]], client: TestClient, now: Now
) -> None:
    caller = next(_callers(runtime, alice))
    assert now(links.list_links_now(runtime, caller, ListParams())) is None  # nothing remembered yet
    assert client.get("/api/v1/links", headers=alice.auth()).json()["pagination"]["total"] == len(made)
    assert now(links.list_links_now(runtime, caller, ListParams())) is not None
    assert create(client, alice).status_code == 201  # a new version: counted again, on a thread
    assert now(links.list_links_now(runtime, caller, ListParams())) is None


@SQLITE_ONLY
def test_a_statement_past_its_budget_is_interrupted_and_the_thread_answers(
    runtime: Runtime,
    alice: Account,
    made: list[dict[str, Any]],
    client: TestClient,
    monkeypatch: pytest.MonkeyPatch,
    now: Now,
) -> None:
    reader = runtime.db.now
    assert reader is not None
    monkeypatch.setattr(loopread, "TICK_STEPS", 1)
    monkeypatch.setattr(loopread, "STEP_BUDGET", 5)
    reader.close()  # reopened with the small tick
    caller = next(_callers(runtime, alice))
    links.list_links(runtime, caller, {})
    assert now(links.list_links_now(runtime, caller, ListParams())) is None
    assert reader.declined >= 1
    res = client.get("/api/v1/links", headers=alice.auth())
    assert res.status_code == 200
    assert [link["id"] for link in res.json()["data"]] == [link["id"] for link in reversed(made)][:20]
    res = client.get(f"/api/v1/links/{made[0]['id']}", headers=alice.auth())
    assert res.json() == made[0]


def test_a_locked_file_is_declined_at_once_not_waited_for(tmp_path: Path) -> None:
    # In WAL mode (the service's) readers are never blocked but for a moment; a file in rollback-journal mode,
    # locked by a writer, shows that the reader never waits for a lock.
    path = tmp_path / "journal.db"
    engine = create_engine(f"sqlite:///{path}")
    Base.metadata.create_all(engine)
    reader = LoopReader(path, engine.dialect)
    stmt = links.page_statement("sqlite", "created_at", "desc", False, False)
    binds = {"account_id": 1, "limit": 5, "offset": 0}
    assert reader.rows(stmt, binds) == []
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    started = time.monotonic()
    assert reader.rows(stmt, binds) is None
    assert time.monotonic() - started < 0.1
    assert reader.declined == 1
    holder.execute("COMMIT")
    assert reader.rows(stmt, binds) == []
    holder.close()
    reader.close()
    engine.dispose()


def test_timestamps_in_any_other_stored_form_are_still_read() -> None:
    assert loopread.iso("2024-05-01 12:00:00.123456") == "2024-05-01T12:00:00Z"
    assert loopread.iso("2024-05-01 12:00:00") == "2024-05-01T12:00:00Z"
    assert loopread.iso("2024-05-01T14:00:00.5+02:00") == "2024-05-01T12:00:00Z"
    assert loopread.iso(None) is None
