"""Month packs (`slugline.clicks.packs`): an account view's answers read from packs are the answers read from its day
cubes, for every shape, key and filter; a write to a day a pack holds (a late click, a link deleted) deletes the pack
in the same transaction, and the upkeep makes it again; on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from sqlalchemy import text
from starlette.testclient import TestClient

from slugline import cli
from slugline.analytics import cubes
from slugline.analytics.cache import AnswerCache
from slugline.clicks import packs
from slugline.clicks.buffer import ClickRecorder
from slugline.clicks.cubes import ALL, PACK
from slugline.common.clock import day_date, month_of_day
from slugline.runtime import Runtime
from slugline.settings import Settings
from tests.support.helpers import CHROME, Account
from tests.support.past_clicks import IPHONE, TODAY, clicked, get_json, record

SHAPES: list[dict[str, Any]] = [
    {"days": 90},
    {"days": 90, "interval": "week"},
    {"days": 30, "interval": "month"},
    {"days": 90, "device": "mobile"},
    {"days": 90, "source": "google.com"},
    {"days": 90, "browser": "chrome", "device": "desktop"},
    {"days": 7, "interval": "hour"},
]


def _answers(client: TestClient, who: Account, runtime: Runtime) -> list[Any]:
    """Every shape for both keys, read afresh (no cached answer)."""
    runtime.analytics = AnswerCache(1)
    return [get_json(client, who, key=key, **shape) for shape in SHAPES for key in ("full", "public")]


def _id(runtime: Runtime, who: Account) -> int:
    with runtime.db.session() as session:
        return int(
            session.execute(text("SELECT id FROM accounts WHERE username = :u"), {"u": who.username}).scalar_one()
        )


def _packs(runtime: Runtime, account: int) -> list[tuple[str, int]]:
    with runtime.db.session() as session:
        found = session.execute(
            text("SELECT scope, bucket FROM click_cubes WHERE account_id = :a AND level = :p ORDER BY scope, bucket"),
            {"a": account, "p": PACK},
        )
        return [(str(s), int(b)) for s, b in found]


def _clicks(days: range) -> list[tuple[int, str, str | None]]:
    return [(TODAY - d, CHROME if d % 2 else IPHONE, "google.com" if d % 3 else None) for d in days]


def _held_days(runtime: Runtime, account: int) -> tuple[int, int]:
    """(days read from packs, day cubes read) for the full key's view over 90 days."""
    with runtime.db.session() as session:
        view = cubes.View(account, ALL)
        first, last = day_date(TODAY - 89), day_date(TODAY)
        rows, found = cubes.period_rows(session, view, first, last, hours=False, uniques=False)
    return sum(b - a + 1 for _, a, b, _, _ in found), len(rows)


def test_answers_from_packs_are_the_answers_from_day_cubes(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    shown, hidden = clicked(client, alice, runtime, shown=_clicks(range(0, 80)), hidden=_clicks(range(0, 80, 7)))
    change = client.put(f"/api/v1/links/{hidden}", json={"visibility": "private"}, headers=alice.auth())
    assert change.status_code == 200, change.text
    asyncio.run(ClickRecorder(runtime).flush())  # the writer makes the move before anything is packed
    before = _answers(client, alice, runtime)
    assert _packs(runtime, _id(runtime, alice)) == [] and _held_days(runtime, _id(runtime, alice)) == (0, 80)
    made = sum(packs.upkeep(runtime.db))
    months = {month_of_day(TODAY - d) for d in range(2, 80)}
    assert made == 2 * len(months)  # every month with closed days, for both views
    assert {b for _, b in _packs(runtime, _id(runtime, alice))} >= {
        TODAY - 2
    }  # the month under way: up to the last closed day
    held, read = _held_days(runtime, _id(runtime, alice))
    assert held >= 78 and read == 2  # the closed days come from packs, yesterday's and today's from day cubes
    assert _answers(client, alice, runtime) == before
    assert before[0]["total_clicks"] == 80 + 12 and before[1]["total_clicks"] == 80  # full, then public
    assert sum(packs.upkeep(runtime.db)) == 0  # nothing more is due
    assert [t["id"] for t in before[0]["top_links"]] == [shown, hidden]


def test_a_write_to_a_packed_day_takes_its_pack_away_until_the_upkeep_makes_it_again(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    kept, gone = clicked(client, alice, runtime, kept=_clicks(range(0, 60)), gone=_clicks(range(20, 50, 2)))
    assert sum(packs.upkeep(runtime.db)) > 0
    late_month = month_of_day(TODAY - 10)
    record(runtime, [(kept, TODAY - 10, CHROME, "google.com")])  # a late click on a packed day
    left = _packs(runtime, _id(runtime, alice))
    assert all(month_of_day(b) != late_month for _, b in left)  # that month's packs went with the write
    assert len(left) > 0  # the others stayed
    with_late = _answers(client, alice, runtime)
    assert with_late[0]["total_clicks"] == 60 + 15 + 1
    assert sum(packs.upkeep(runtime.db)) == 2  # made again, for both views
    assert _answers(client, alice, runtime) == with_late

    deleted = client.delete(f"/api/v1/links/{gone}", headers=alice.auth())
    assert deleted.status_code == 200, deleted.text
    asyncio.run(ClickRecorder(runtime).flush())  # the writer takes the link's cubes out: its months' packs go
    its_months = {month_of_day(TODAY - d) for d in range(20, 50)}
    assert all(month_of_day(b) not in its_months for _, b in _packs(runtime, _id(runtime, alice)))
    without = _answers(client, alice, runtime)
    assert without[0]["total_clicks"] == 61 and [t["id"] for t in without[0]["top_links"]] == [kept]
    assert sum(packs.upkeep(runtime.db)) > 0
    assert _answers(client, alice, runtime) == without


def test_the_month_under_way_is_packed_again_as_its_days_close(
    client: TestClient, alice: Account, runtime: Runtime
) -> None:
    clicked(client, alice, runtime, only=_clicks(range(0, 40)))
    now = time.time()
    assert sum(packs.upkeep(runtime.db, now)) > 0
    assert sum(packs.upkeep(runtime.db, now)) == 0
    tomorrow = sum(packs.upkeep(runtime.db, now + 86_400))  # one more day closed: its month's pack made again
    assert tomorrow == 2
    assert max(b for _, b in _packs(runtime, _id(runtime, alice))) == TODAY - 1


def test_slugline_clicks_pack_makes_the_packs_due(
    client: TestClient,
    alice: Account,
    runtime: Runtime,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    clicked(client, alice, runtime, one=_clicks(range(5, 8)))
    monkeypatch.setattr(cli, "get_settings", lambda: settings)
    assert cli.main(["clicks", "pack"]) == 0
    months = len({month_of_day(TODAY - d) for d in range(5, 8)})
    assert capsys.readouterr().out.startswith(f"made {2 * months} month packs of closed days in ")
    assert cli.main(["clicks", "pack"]) == 0
    assert capsys.readouterr().out.startswith("made 0 month packs")


def test_a_pack_made_meanwhile_is_not_made_again(client: TestClient, alice: Account, runtime: Runtime) -> None:
    clicked(client, alice, runtime, one=_clicks(range(3, 6)))
    account = _id(runtime, alice)
    with runtime.db.session() as session:
        todo = packs.due(session.connection(), [account], packs.last_closed())[account]
    assert todo and all(scope in (ALL, "p") for scope, _, _ in todo)
    with runtime.db.writing() as session:  # two workers' passes found the same packs due
        assert [packs.make(session.connection(), account, *due) for due in todo] == [True] * len(todo)
    with runtime.db.writing() as session:
        assert [packs.make(session.connection(), account, *due) for due in todo] == [False] * len(todo)
    assert len(_packs(runtime, account)) == len(todo)


def test_a_pass_finds_many_accounts_due_packs_in_one_query(
    client: TestClient, make_account: Any, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob = make_account("alice"), make_account("bob")
    clicked(client, alice, runtime, one=_clicks(range(3, 6)))
    clicked(client, bob, runtime, two=_clicks(range(40, 41)))
    a, b = _id(runtime, alice), _id(runtime, bob)
    with runtime.db.session() as session:
        todo = packs.due(session.connection(), [a, b], packs.last_closed())
    assert {scope for scope, _, _ in todo[a]} == {scope for scope, _, _ in todo[b]} == {ALL, "p"}
    assert {month for _, month, _ in todo[b]} == {month_of_day(TODAY - 40)}
    asked: list[list[int]] = []
    finding = packs.due

    def due(conn: Any, accounts: list[int], closed: int) -> Any:
        asked.append(accounts)
        return finding(conn, accounts, closed)

    monkeypatch.setattr(packs, "due", due)
    assert sum(packs.upkeep(runtime.db)) == len(todo[a]) + len(todo[b])
    assert asked == [[a, b]]  # one query for both accounts, not one each
    with runtime.db.session() as session:
        assert packs.due(session.connection(), [a, b], packs.last_closed()) == {a: [], b: []}
