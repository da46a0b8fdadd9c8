"""Deleting an account (`slugline accounts delete`): everything it held goes, in bounded transactions, on SQLite and
PostgreSQL; its tokens stop working, its name is free again, and the account made next sees nothing of it."""

from __future__ import annotations

from typing import Any

import pytest
from alembic import command
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.exc import DBAPIError
from starlette.testclient import TestClient

from slugline.accounts import deletion
from slugline.accounts import service as accounts
from slugline.common.errors import Conflict, NotFound
from slugline.common.models import (
    Account,
    ApiKey,
    Click,
    ClickCube,
    CubeMove,
    IdempotentAnswer,
    Link,
    LinkChange,
    SessionToken,
)
from slugline.oauth.models import OAuthGrant, OAuthToken
from slugline.runtime import Runtime
from slugline.storage import migrate
from slugline.storage.db import normalize_url
from tests.oauth.test_token_pruning import grant_for
from tests.support.helpers import CHROME, LINKS, sqlite_plan, wait_for_total
from tests.support.helpers import Account as Who

HELD = (ApiKey, SessionToken, OAuthGrant, IdempotentAnswer, Link, LinkChange, ClickCube, CubeMove)


def _held(rt: Runtime, account_id: int) -> dict[str, int]:
    """Rows of every table that holds something of the account, and every click and OAuth token of the database."""
    with rt.db.session() as session:
        counts = {
            table.__tablename__: session.scalar(select(func.count()).where(table.account_id == account_id)) or 0
            for table in HELD
        }
        counts["clicks"] = session.scalar(select(func.count()).select_from(Click)) or 0
        counts["oauth_tokens"] = session.scalar(select(func.count()).select_from(OAuthToken)) or 0
        return counts


def _account_id(rt: Runtime, name: str) -> int:
    with rt.db.session() as session:
        return int(session.scalar(select(Account.id).where(Account.username == name)) or 0)


def _fill(client: TestClient, who: Who, links: int, clicks: int) -> list[dict[str, Any]]:
    made = [
        client.post(LINKS, json={"destination_url": f"https://example.com/{n}", "note": "zebra"}, headers=who.auth())
        for n in range(links)
    ]
    keyed = {"Idempotency-Key": "once"} | who.auth()
    assert client.post(LINKS, json={"destination_url": "https://example.com/once"}, headers=keyed).is_success
    for n in range(clicks):
        client.get(f"/{made[n % links].json()['slug']}", headers={"User-Agent": CHROME}, follow_redirects=False)
    assert wait_for_total(client, who, clicks)["total_clicks"] == clicks
    return [m.json() for m in made]


def test_everything_goes_in_bounded_batches(
    runtime: Runtime, client: TestClient, make_account: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ada, bob = make_account("ada"), make_account("bob")
    _fill(client, ada, links=7, clicks=23)
    _fill(client, bob, links=2, clicks=3)
    ada_id, bob_id = _account_id(runtime, "ada"), _account_id(runtime, "bob")
    bob_before = _held(runtime, bob_id) | {"clicks": 3}  # every click left is bob's; no OAuth token is
    grant_for(runtime, ada_id, "agent.example")
    assert all(_held(runtime, ada_id)[t.__tablename__] for t in (ApiKey, SessionToken, OAuthGrant, Link, ClickCube))

    links_per_tx: list[int] = []
    clicks_per_tx: list[int] = []
    delete_links, delete_clicks = deletion._delete_links, deletion._delete_clicks

    def links_step(*args: Any) -> int:
        links_per_tx.append(delete_links(*args))
        return links_per_tx[-1]

    def clicks_step(*args: Any) -> int:
        clicks_per_tx.append(delete_clicks(*args))
        return clicks_per_tx[-1]

    monkeypatch.setattr(deletion, "_delete_links", links_step)
    monkeypatch.setattr(deletion, "_delete_clicks", clicks_step)
    done = deletion.delete_account(runtime, "Ada", links=3, clicks=4)

    assert done == {"username": "ada", "deleted": True, "links": 8, "clicks": 23}
    assert links_per_tx == [3, 3, 2] and max(clicks_per_tx) == 4 and sum(clicks_per_tx) == 23
    left = _held(runtime, ada_id)
    assert {name: n for name, n in left.items() if n and name not in ("clicks", "oauth_tokens")} == {}
    assert (left["clicks"], left["oauth_tokens"]) == (3, 0)
    assert _account_id(runtime, "ada") == 0 and _held(runtime, bob_id) == bob_before

    for token in (ada.full, ada.session):  # every worker within the trust period; this one at once
        assert client.get("/api/v1/me", headers={"Authorization": f"Bearer {token}"}).status_code == 401
    login = {"username": "ada", "password": ada.password}
    assert client.post("/api/v1/auth/login", json=login).status_code == 401
    with pytest.raises(NotFound):
        deletion.delete_account(runtime, "ada")

    # The name is free; the new account has a new id and sees none of the old one's links, counts or search hits.
    again = make_account("ada")
    assert _account_id(runtime, "ada") > max(ada_id, bob_id)
    page = client.get(LINKS, params={"q": "zebra"}, headers=again.auth()).json()
    assert page["pagination"]["total"] == 0 and page["data"] == []
    assert client.get("/api/v1/search", params={"q": "zebra"}, headers=again.auth()).json()["total"] == 0
    assert client.get("/api/v1/analytics", headers=again.auth()).json()["total_clicks"] == 0


def test_a_deletion_stopped_half_way_is_finished_by_running_it_again(
    runtime: Runtime, client: TestClient, make_account: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid = make_account("cid")
    _fill(client, cid, links=4, clicks=2)
    cid_id = _account_id(runtime, "cid")

    def stop(*_: Any) -> int:
        raise OSError("the operator's terminal went away")

    monkeypatch.setattr(deletion, "_delete_links", stop)
    with pytest.raises(OSError):
        deletion.delete_account(runtime, "cid", links=2)
    assert client.get(LINKS, headers=cid.auth()).status_code == 401  # closed at once, though not yet gone
    monkeypatch.undo()
    assert deletion.delete_account(runtime, "cid", links=2)["links"] == 5
    assert _account_id(runtime, "cid") == 0 and _held(runtime, cid_id)["links"] == 0


def test_a_closed_accounts_plan_cannot_be_changed_so_its_upkeep_goes_on(
    runtime: Runtime, client: TestClient, make_account: Any
) -> None:
    """The plan `deleting` is what the upkeep looks for: a new plan would leave the account closed but half there for
    good, its links still redirecting. So set-plan refuses it, and the upkeep takes the account as before."""
    dee = make_account("dee")
    _fill(client, dee, links=3, clicks=2)
    deletion.close_own(runtime, accounts.operator(runtime, "dee"), dee.password)

    with pytest.raises(Conflict, match="'dee' is being deleted"):
        accounts.set_plan(runtime, "Dee", "pro")
    assert accounts.show_account(runtime, "dee")["plan"] == deletion.CLOSED
    assert _held(runtime, _account_id(runtime, "dee"))["links"] == 4, "the upkeep has not run yet"
    for _ in deletion.finish_closed(runtime.db, links=2):
        pass
    assert _account_id(runtime, "dee") == 0
    with pytest.raises(NotFound):
        accounts.set_plan(runtime, "dee", "pro")


def test_a_closed_accounts_password_cannot_be_reset_so_nobody_signs_in_to_it(
    runtime: Runtime, client: TestClient, make_account: Any
) -> None:
    """A closed account's password is one nobody knows until the upkeep has taken it: a reset would let whoever
    knows the new one sign in to an account being deleted, and refused, it leaves the password as it was."""
    eve = make_account("eve")
    deletion.close_own(runtime, accounts.operator(runtime, "eve"), eve.password)
    with runtime.db.session() as session:
        closed_hash = session.scalar(select(Account.password_hash).where(Account.username == "eve"))

    with pytest.raises(Conflict, match="'eve' is being deleted: its password"):
        accounts.reset_password(runtime, "Eve", {"new_password": "a new long password"})
    with runtime.db.session() as session:
        assert session.scalar(select(Account.password_hash).where(Account.username == "eve")) == closed_hash
    login = {"username": "eve", "password": "a new long password"}
    assert client.post("/api/v1/auth/login", json=login).status_code == 401
    for _ in deletion.finish_closed(runtime.db):
        pass
    with pytest.raises(NotFound):
        accounts.reset_password(runtime, "eve", {"new_password": "a new long password"})


def test_batch_sizes_must_be_positive(runtime: Runtime) -> None:
    with pytest.raises(ValueError, match="positive"):
        deletion.delete_account(runtime, "nobody", links=0)


class _Deadlock(Exception):
    sqlstate = deletion.DEADLOCK


def test_closing_is_tried_again_when_postgresql_breaks_a_deadlock(
    runtime: Runtime, make_account: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A webhook delivery finishing while the account closes can deadlock with it on PostgreSQL (endpoint then
    message, against the endpoint's cascade): the cancelled close is run again; any other database error is not."""
    make_account("dee")
    tries: list[str] = []
    once = deletion._close_once

    def first_cancelled(db: Any, username: str, values: dict[str, Any]) -> tuple[int, str]:
        tries.append(username)
        if len(tries) == 1:
            raise DBAPIError("DELETE FROM webhook_endpoints", {}, _Deadlock())
        return once(db, username, values)

    monkeypatch.setattr(deletion, "_close_once", first_cancelled)
    assert deletion.delete_account(runtime, "dee")["deleted"] and tries == ["dee", "dee"]

    make_account("eve")
    monkeypatch.setattr(_Deadlock, "sqlstate", "23505")  # not a deadlock: no second try
    tries.clear()
    with pytest.raises(DBAPIError):
        deletion.delete_account(runtime, "eve")
    assert tries == ["eve"] and _account_id(runtime, "eve") > 0


@pytest.mark.postgres
def test_on_postgresql_a_batch_names_its_account_and_its_links_triggers_skip_only_its_rows(pg_url: str) -> None:
    """Migration 0022: a link's deletion records a cube move and queues a link.deleted webhook for a subscribed
    endpoint, except in a transaction naming its account in `slugline.deleting_account` (as `_delete_links` does);
    the downgrade fires them again."""
    engine = create_engine(normalize_url(pg_url))
    migrate.upgrade(engine)
    fired = text("SELECT (SELECT count(*) FROM cube_moves), (SELECT count(*) FROM webhook_messages)")

    def delete_link(link: str, naming: int | None) -> tuple[int, int]:
        with engine.begin() as conn:
            if naming is not None:
                conn.execute(deletion._DELETING_PG, {"account": str(naming)})
            conn.execute(text("DELETE FROM links WHERE id = :id"), {"id": link})
            moves, messages = conn.execute(fired).one()
            conn.execute(text("DELETE FROM cube_moves; DELETE FROM webhook_messages"))
            return int(moves), int(messages)

    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO accounts (id, username, password_hash, plan, created_at, links_version) "
                "VALUES (1, 'ann', 'x', 'developer', now(), 0), (2, 'ben', 'x', 'developer', now(), 0)"
            )
        )
        conn.execute(
            text(
                "INSERT INTO links (id, account_id, slug, destination_url, hashtags, visibility, clicks, created_at, "
                "updated_at) SELECT 'l' || n, 1 + n % 2, 's' || n, 'https://example.com/', '[]', 'public', 0, now(), "
                "now() FROM generate_series(1, 5) AS n"
            )
        )
        conn.execute(
            text(
                "INSERT INTO webhook_endpoints (id, account_id, url, events, secret_salt, base_url, enabled, "
                "expired_through, created_at, updated_at) SELECT 'we_' || a, a, 'https://hook.example/', "
                "',link.deleted,', 's', 'https://sl.example', true, 0, 0, 0 FROM generate_series(1, 2) AS a"
            )
        )
    try:
        assert delete_link("l1", naming=None) == (1, 1)  # l1, l3, l5 are ben's (2), l2, l4 ann's (1)
        assert delete_link("l3", naming=2) == (0, 0)
        assert delete_link("l5", naming=1) == (1, 1)  # another account's name skips nothing of ben's
        assert delete_link("l2", naming=1) == (0, 0)
        config = migrate.alembic_config()
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0021")
        assert delete_link("l4", naming=1) == (1, 1)
    finally:
        engine.dispose()


def test_on_sqlite_a_batch_of_links_is_found_by_id(tmp_path: Any) -> None:
    """Not through the account's index: that walked every link the account has left, in each batch (quadratic in
    the account's links)."""
    ids = [f"lnk_{n:011d}" for n in range(25)]
    plan = sqlite_plan(
        f"{tmp_path}/plan.db",
        lambda rt: deletion._delete_links(rt.db, 1, ids),
        lambda statement: statement.startswith("DELETE FROM links"),
    )
    assert "autoindex_links_1 (id=?)" in plan and "account" not in plan, plan
