"""Top links' slugs and titles: looked up by id and kept to the links the caller sees, so that SQLite probes the
links' primary key for them instead of reading every link of the account."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from starlette.testclient import TestClient

from slugline.accounts import callers
from slugline.analytics import toplinks
from slugline.common.caller import Caller
from slugline.runtime import Runtime
from tests.support.helpers import Account, sqlite_plan


def _caller(rt: Runtime, who: Account, public_only: bool) -> Caller:
    return callers.resolve(rt, callers.parse(rt, f"Bearer {who.public if public_only else who.full}"), "http://sl.test")


def test_titles_are_of_the_callers_own_links_it_may_see(
    client: TestClient, runtime: Runtime, make_account: Callable[..., Account]
) -> None:
    alice, bob = make_account("alice"), make_account("bob")
    made = {}
    for who in (alice, bob):
        for level in ("public", "private"):
            link = {"destination_url": "https://example.com/", "visibility": level, "title": f"{who.username} {level}"}
            answer = client.post("/api/v1/links", json=link, headers=who.auth())
            assert answer.status_code == 201, answer.text
            made[who.username, level] = answer.json()["id"]
    with runtime.db.session() as session:
        full = toplinks.titles(session, _caller(runtime, alice, False), [*made.values(), "lnk_unknown00000"])
        public = toplinks.titles(session, _caller(runtime, alice, True), list(made.values()))
    assert {n: title for n, (_, title) in full.items()} == {
        made["alice", "public"]: "alice public",
        made["alice", "private"]: "alice private",
    }
    assert list(public) == [made["alice", "public"]]


def test_on_sqlite_titles_probe_the_links_by_id(tmp_path: Path) -> None:
    """Without statistics SQLite takes `account_id = ?` to find fewer rows than ten ids, and would walk the account's
    index: every link of the account for each top-links answer (2.3 ms at 10,000 links)."""
    caller = Caller(account_id=1, username="alice", plan="developer", scope="full", created_at=datetime.now(UTC))

    def ask(rt: Runtime) -> None:
        with rt.db.session() as session:
            toplinks.titles(session, caller, [f"lnk_{n:011d}" for n in range(25)])

    plan = sqlite_plan(f"{tmp_path}/plan.db", ask, lambda statement: "FROM links" in statement)
    assert "autoindex_links_1 (id=?)" in plan and "account" not in plan, plan
