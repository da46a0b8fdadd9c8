"""The per-worker search indexes: a byte budget, one build at a time, and other workers' changes applied
from the change feed (O(changed links)) instead of a reload. Two runtimes on one database stand in for two
workers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import delete, event, func, select
from starlette.testclient import TestClient

from slugline.common.models import LinkChange
from slugline.runtime import Runtime
from slugline.search import feed as searchfeed
from slugline.search.cache import SearchCache
from slugline.storage.loopwrite import drive, session_run
from tests.support.helpers import Account, ClientFactory, create


def _search(client: TestClient, who: Account, q: str) -> set[str]:
    response = client.get("/api/v1/search", params={"q": q, "limit": 100}, headers=who.auth())
    assert response.status_code == 200, response.text
    return {hit["link"]["slug"] for hit in response.json()["hits"]}


def _filter(client: TestClient, who: Account, q: str) -> set[str]:
    response = client.get("/api/v1/links", params={"q": q, "per": 100}, headers=who.auth())
    assert response.status_code == 200, response.text
    return {link["slug"] for link in response.json()["data"]}


@pytest.fixture
def workers(make_client: ClientFactory) -> tuple[tuple[TestClient, Runtime], tuple[TestClient, Runtime]]:
    return make_client(), make_client()


def test_another_workers_changes_arrive_through_the_feed(workers: Any, alice: Account) -> None:
    (first, _), (second, second_rt) = workers
    for i in range(3):
        assert create(first, alice, slug=f"pear-{i}", title="Pear tart").status_code == 201
    assert _search(second, alice, "pear") == {"pear-0", "pear-1", "pear-2"}
    assert second_rt.search.builds == 1

    made = create(first, alice, slug="plum", title="Plum pie").json()
    assert first.put(f"/api/v1/links/{made['id']}", json={"title": "Pear and plum"}, headers=alice.auth()).is_success
    pear_0 = _filter(first, alice, "pear-0")
    assert pear_0 == {"pear-0"}
    gone = first.get("/api/v1/links", params={"q": "pear-0"}, headers=alice.auth()).json()["data"][0]["id"]
    assert first.delete(f"/api/v1/links/{gone}", headers=alice.auth()).is_success

    assert _search(second, alice, "pear") == {"pear-1", "pear-2", "plum"}
    assert _filter(second, alice, "and plum") == {"plum"}
    assert not _filter(second, alice, "pie"), "the old title is forgotten"
    assert second_rt.search.builds == 1, "caught up from the feed, not reloaded"


def test_a_catch_up_of_many_links_probes_them_by_id(workers: Any, alice: Account) -> None:
    """Twelve links changed in another worker are read by id (on SQLite: the primary key, not the account's index,
    which would read every link of the account) and only the account's own are indexed."""
    (first, _), (second, second_rt) = workers
    assert create(first, alice, slug="fig-start", title="Fig").status_code == 201
    assert _search(second, alice, "fig") == {"fig-start"}
    for i in range(12):
        assert create(first, alice, slug=f"fig-{i}", title="Fig jam").status_code == 201
    ran: list[tuple[str, Any]] = []
    engine = second_rt.db.engine
    listener = lambda *a: ran.append((a[2], a[3]))  # noqa: E731
    event.listen(engine, "before_cursor_execute", listener)
    try:
        assert _search(second, alice, "fig") == {"fig-start", *(f"fig-{i}" for i in range(12))}
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    assert second_rt.search.builds == 1, "caught up from the feed"
    statement, parameters = next((s, p) for s, p in ran if "FROM links" in s)  # the catch-up's, before the hits
    if engine.dialect.name == "sqlite":  # PostgreSQL plans from its statistics
        with engine.connect() as conn:
            plan = " ".join(row[-1] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters))
        assert "autoindex_links_1 (id=?)" in plan and "account" not in plan, plan


def test_a_gap_in_the_feed_means_a_reload(workers: Any, alice: Account) -> None:
    (first, first_rt), (second, second_rt) = workers
    assert create(first, alice, slug="fig", title="Fig jam").status_code == 201
    assert _search(second, alice, "fig") == {"fig"}
    assert create(first, alice, slug="fig-2", title="Fig roll").status_code == 201
    with first_rt.db.session() as session:
        session.execute(delete(LinkChange))  # as if pruned
    assert _search(second, alice, "fig") == {"fig", "fig-2"}
    assert second_rt.search.builds == 2


def test_old_feed_rows_are_pruned(runtime: Runtime, alice: Account, client: TestClient) -> None:
    assert create(client, alice, slug="seed").status_code == 201
    with runtime.db.session() as session:
        account_id = session.scalar(select(LinkChange.account_id))
        assert account_id is not None
        run = session_run(session)
        dialect = runtime.db.engine.dialect.name
        for version in range(2, 2 + 3 * searchfeed.KEEP):
            assert drive(searchfeed.bump(run, dialect, account_id, "lnk_x")) == version
        kept = session.scalar(select(func.count()).select_from(LinkChange))
        assert kept is not None and kept <= searchfeed.KEEP + searchfeed.PRUNE_EVERY
        newest = 1 + 3 * searchfeed.KEEP
        assert searchfeed.changed_since(session, account_id, 1, newest) is None, "rows after 1 are gone: reload"
        assert searchfeed.changed_since(session, account_id, newest - 5, newest) == (newest, {"lnk_x"})
        assert searchfeed.changed_since(session, account_id, newest - 5, newest + 1) is None, "not there yet"


def test_one_build_per_account_at_a_time(
    runtime: Runtime, alice: Account, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(20):
        assert create(client, alice, slug=f"kiwi-{i}", title="Kiwi").status_code == 201
    cache = runtime.search = SearchCache()
    build = SearchCache._build

    def slow_build(self: SearchCache, *args: Any) -> Any:
        time.sleep(0.3)  # long enough for every other request to arrive while this one builds
        return build(self, *args)

    monkeypatch.setattr(SearchCache, "_build", slow_build)
    start = threading.Barrier(8)
    results: list[set[str]] = []

    def search() -> None:
        start.wait()
        results.append(_search(client, alice, "kiwi"))

    threads = [threading.Thread(target=search) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 8 and all(len(found) == 20 for found in results)
    assert cache.builds == 1


def _accounts(make_account: Callable[..., Account], client: TestClient, n: int) -> list[Account]:
    made = [make_account() for _ in range(n)]
    note = " ".join(f"word{i}" for i in range(400))
    for who in made:
        for i in range(5):
            assert create(client, who, note=note, title=f"budget {i}").status_code == 201
    return made


def test_indexes_stay_within_the_byte_budget(
    runtime: Runtime, client: TestClient, make_account: Callable[..., Account]
) -> None:
    users = _accounts(make_account, client, 4)
    probe = runtime.search = SearchCache()
    _search(client, users[0], "budget")
    one = probe.held_bytes
    assert one > 10_000
    cache = runtime.search = SearchCache(budget_bytes=int(2.5 * one))
    for who in users:
        _search(client, who, "budget")
        assert cache.held_bytes <= cache.budget_bytes
    assert len(cache._entries) == 2, "two indexes fit; the least recently used went first"
    _search(client, users[2], "budget")  # touched: now the most recent
    _search(client, users[0], "budget")
    assert cache.builds == 5 and set(cache._entries) == _ids(runtime, users[2], users[0])


def test_an_index_over_the_whole_budget_is_served_but_not_kept(
    runtime: Runtime, client: TestClient, alice: Account
) -> None:
    for i in range(3):
        assert create(client, alice, title=f"melon {i}").status_code == 201
    cache = runtime.search = SearchCache(budget_bytes=100)
    assert len(_search(client, alice, "melon")) == 3
    assert cache.held_bytes == 0 and not cache._entries


def _ids(runtime: Runtime, *users: Account) -> set[int]:
    from slugline.common.models import Account as AccountRow

    with runtime.db.session() as session:
        names = [u.username for u in users]
        return set(session.scalars(select(AccountRow.id).where(AccountRow.username.in_(names))))
