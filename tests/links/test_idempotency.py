"""`Idempotency-Key` on `POST /links` and `POST /links/bulk`, `idempotency_key` on MCP's create tools: a retry with
the same key and body gets the first answer, with its status, and never a second link."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, insert, select, update
from starlette.testclient import TestClient

from slugline.accounts import service as accounts
from slugline.common.clock import utcnow
from slugline.common.models import IdempotentAnswer
from slugline.links import idempotency
from slugline.runtime import Runtime
from slugline.settings import Settings
from tests.support.helpers import BASE_URL, LINKS, Account, make_settings
from tests.support.mcp_calls import tool_result

KEY = "Idempotency-Key"


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url, public_url=BASE_URL)  # /mcp answers only the names its public URL gives


def post(client: TestClient, who: Account, body: Any, key: str | None, path: str = LINKS) -> Any:
    return client.post(path, json=body, headers={**who.auth(), **({KEY: key} if key else {})})


def total(client: TestClient, who: Account) -> int:
    return int(client.get(LINKS, headers=who.auth()).json()["pagination"]["total"])


def test_a_retry_gets_the_first_answer(client: TestClient, alice: Account, make_account: Any) -> None:
    body = {"destination_url": "https://example.com/once"}
    first = post(client, alice, body, "order-1")
    again = post(client, alice, body, "order-1")
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json() and again.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers and total(client, alice) == 1

    other = post(client, alice, {"destination_url": "https://example.com/other"}, "order-1")
    assert other.status_code == 409 and "was used for another request" in other.json()["error"]
    assert post(client, alice, body, None).json()["id"] != first.json()["id"]  # no key: a new link each time

    bob = make_account("bob")  # keys are the account's own
    assert post(client, bob, body, "order-1").json()["id"] != first.json()["id"]
    assert post(client, alice, body, "has space").status_code == 422
    assert post(client, alice, body, "x" * 256).status_code == 422


def test_a_refusal_is_answered_again_and_a_limit_is_not_kept(client: TestClient, alice: Account) -> None:
    post(client, alice, {"destination_url": "https://example.com/", "slug": "taken"}, None)
    body = {"destination_url": "https://example.com/2", "slug": "taken"}
    assert post(client, alice, body, "k-409").status_code == 409
    client.delete(f"{LINKS}/{client.get(LINKS, headers=alice.auth()).json()['data'][0]['id']}", headers=alice.auth())
    again = post(client, alice, body, "k-409")
    assert again.status_code == 409 and again.json() == {"error": "slug 'taken' is already taken"}
    assert post(client, alice, body, "k-new").status_code == 201


def test_bulk_creates_are_replayed_too(client: TestClient, alice: Account) -> None:
    body = {"links": [{"destination_url": f"https://example.com/{n}"} for n in range(3)]}
    first = post(client, alice, body, "batch-7", f"{LINKS}/bulk")
    again = post(client, alice, body, "batch-7", f"{LINKS}/bulk")
    assert first.status_code == again.status_code == 200 and first.json() == again.json()
    assert total(client, alice) == 3
    assert post(client, alice, body, "batch-7").status_code == 409  # the key named the bulk create


def test_keys_last_a_day_and_an_account_keeps_a_bounded_number(
    client: TestClient, alice: Account, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = {"destination_url": "https://example.com/day"}
    first = post(client, alice, body, "day-1").json()
    with runtime.db.engine.begin() as conn:
        conn.execute(update(IdempotentAnswer).values(created_at=utcnow() - idempotency.KEEP - timedelta(seconds=1)))
    assert post(client, alice, body, "day-1").json()["id"] != first["id"]  # a day later the key is new again

    monkeypatch.setattr(idempotency, "MAX_PER_ACCOUNT", 3)
    for n in range(6):
        post(client, alice, {"destination_url": f"https://example.com/{n}"}, f"bound-{n}")
    with runtime.db.engine.connect() as conn:
        kept = list(conn.scalars(select(IdempotentAnswer.key).order_by(IdempotentAnswer.created_at)))
    assert kept == ["bound-3", "bound-4", "bound-5"]


def test_a_key_under_way_is_409(client: TestClient, alice: Account, runtime: Runtime) -> None:
    account_id = accounts.operator(runtime, "alice").account_id
    with runtime.db.engine.begin() as conn:
        conn.execute(
            insert(IdempotentAnswer).values(
                account_id=account_id, key="busy", fingerprint="x" * 64, status=0, answer=None, created_at=utcnow()
            )
        )
    got = post(client, alice, {"destination_url": "https://example.com/"}, "busy")
    assert got.status_code == 409 and "was used for another request" in got.json()["error"]
    body = {"destination_url": "https://example.com/"}
    fingerprint = idempotency.fingerprint_of("create_link", body)
    with runtime.db.engine.begin() as conn:
        conn.execute(update(IdempotentAnswer).values(fingerprint=fingerprint))
    got = post(client, alice, body, "busy")
    assert got.status_code == 409 and "still under way" in got.json()["error"] and total(client, alice) == 0


def test_mcp_create_tools_take_an_idempotency_key(client: TestClient, alice: Account, runtime: Runtime) -> None:
    def tool(name: str, arguments: dict[str, Any]) -> Any:
        return tool_result(client, alice.full, name, arguments)

    args = {"destination_url": "https://example.com/agent", "idempotency_key": "agent-1"}
    first, again = tool("create_link", args), tool("create_link", args)
    assert first["structuredContent"]["id"] == again["structuredContent"]["id"]
    bulk = {"links": [{"destination_url": "https://example.com/b"}], "idempotency_key": "agent-2"}
    assert tool("create_links", bulk)["structuredContent"] == tool("create_links", bulk)["structuredContent"]
    assert total(client, alice) == 2
    assert tool("create_link", {**args, "slug": "other"})["isError"]
    with runtime.db.engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(IdempotentAnswer)) == 2
