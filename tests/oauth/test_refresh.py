"""A refresh rotates both tokens (the earlier access token is refused at once) and never gives a fresh rate-limit
budget: every OAuth token of an account draws from the bucket of the account's API key of the grant's scope."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select
from starlette.testclient import TestClient

from slugline.accounts import service as accounts
from slugline.common.caller import Caller
from slugline.common.models import Account
from slugline.oauth import grants
from slugline.oauth.tokens import CODE_PREFIX, REFRESH_PREFIX, Issued
from slugline.runtime import Runtime
from tests.support.helpers import BASE_URL, SQLITE_ONLY, ClientFactory

TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def connect(rt: Runtime, username: str, scope: str, client_id: str = "https://app.example/c.json") -> Issued:
    """An account's consent for `client_id`, and the code exchanged: what the consent page and /oauth/token do."""
    with rt.db.session() as session:
        account = session.scalars(select(Account).where(Account.username == username)).one()
        caller = Caller(account.id, account.username, account.plan, "session", account.created_at)
    approval = grants.Approval(client_id, "App", "https://app.example/cb", True, "c" * 43, f"{BASE_URL}/mcp", scope)
    code = grants.approve(rt, caller, approval, "app.example")
    return exchange(rt, code, CODE_PREFIX, "code")


def exchange(rt: Runtime, token: str, prefix: str, kind: str) -> Issued:
    found = grants.load(rt, token, prefix, kind)
    assert found is not None
    issued = grants.exchange(rt, found)
    assert issued is not None
    return issued


def refresh(rt: Runtime, issued: Issued) -> Issued:
    return exchange(rt, issued.refresh_token, REFRESH_PREFIX, "refresh")


def mcp(tc: TestClient, token: str) -> Any:
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    return tc.post("/mcp", json=TOOLS_LIST, headers=headers)


def test_a_refresh_retires_the_earlier_access_token(make_client: ClientFactory) -> None:
    tc, rt = make_client(public_url=BASE_URL)
    accounts.register(rt, {"username": "rotor", "password": "long enough"}, plan="developer")
    first = connect(rt, "rotor", "full")
    assert mcp(tc, first.access_token).status_code == 200
    second = refresh(rt, first)
    refused = mcp(tc, first.access_token)
    assert refused.status_code == 401 and refused.json()["error"] == "invalid or revoked OAuth access token"
    assert mcp(tc, second.access_token).status_code == 200


@SQLITE_ONLY  # the buckets live in memory: the store plays no part
@pytest.mark.parametrize("scope", ["full", "public"])
def test_refreshed_tokens_share_the_accounts_bucket_for_their_scope(make_client: ClientFactory, scope: str) -> None:
    # 6 a minute: one call back every 10 s, none while the test runs
    tc, rt = make_client(public_url=BASE_URL, rate_limit_developer=6, rate_limit_anonymous=100)
    made = accounts.register(rt, {"username": "refresher", "password": "long enough"}, plan="developer")
    session = {"Authorization": f"Bearer {made['token']}"}
    keys = {s: tc.post("/api/v1/api-key", json={"scope": s}, headers=session).json()["key"] for s in ("full", "public")}
    issued = connect(rt, "refresher", scope)
    remaining = []
    for _ in range(2):  # two calls with each of two tokens (then a third), and one with another app's grant
        for _ in range(2):
            answer = mcp(tc, issued.access_token)
            assert answer.status_code == 200, answer.text
            remaining.append(answer.headers["ratelimit-remaining"])
        issued = refresh(rt, issued)
    other = connect(rt, "refresher", scope, client_id="https://other.example/c.json")
    remaining.append(mcp(tc, other.access_token).headers["ratelimit-remaining"])
    assert remaining == ["5", "4", "3", "2", "1"]
    assert mcp(tc, keys[scope]).headers["ratelimit-remaining"] == "0"  # the API key of that scope: the same bucket
    for token in (issued.access_token, keys[scope]):
        refused = mcp(tc, token)
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    other_scope = "public" if scope == "full" else "full"
    assert mcp(tc, keys[other_scope]).status_code == 200  # the other scope's key keeps its own
