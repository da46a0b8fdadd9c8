"""Redeeming a code or a refresh token at /oauth/token: the client and the PKCE verifier are checked before a spent
one is taken for a replay, so only whoever holds the verifier can make a replay revoke the grant; a wrong verifier
spends the code (a code gets one try). And a password change ends the account's grants, as it ends its sessions."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest
from sqlalchemy import select
from starlette.testclient import TestClient

from slugline.accounts import service as accounts
from slugline.common.caller import Caller
from slugline.common.errors import Unauthorized
from slugline.common.models import Account
from slugline.oauth import grants, tokens
from slugline.runtime import Runtime
from tests.support.helpers import BASE_URL

REDIRECT = "http://localhost:3030/callback"
VERIFIER = "v" * 43
CHALLENGE = base64.urlsafe_b64encode(hashlib.sha256(VERIFIER.encode()).digest()).decode().rstrip("=")
PASSWORD = "correct horse"


def owner(rt: Runtime, username: str) -> Caller:
    """A developer account, as the consent page's caller."""
    accounts.register(rt, {"username": username, "password": PASSWORD}, plan="developer")
    with rt.db.session() as session:
        account = session.scalars(select(Account).where(Account.username == username)).one()
        return Caller(account.id, account.username, account.plan, "session", account.created_at)


def register(tc: TestClient) -> dict[str, str]:
    made: dict[str, str] = tc.post("/oauth/register", json={"client_name": "App", "redirect_uris": [REDIRECT]}).json()
    return made


def consent(rt: Runtime, caller: Caller, client_id: str) -> str:
    """The owner allows the client: its new code, as the consent page gives it."""
    approval = grants.Approval(client_id, "App", REDIRECT, True, CHALLENGE, f"{BASE_URL}/mcp", "full")
    return grants.approve(rt, caller, approval, "localhost:3030")


def redeem(tc: TestClient, made: dict[str, str], code: str, verifier: str = VERIFIER) -> Any:
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": made["client_id"],
        "client_secret": made["client_secret"],
        "code_verifier": verifier,
    }
    return tc.post("/oauth/token", data=form)


def refresh(tc: TestClient, made: dict[str, str], token: str) -> Any:
    form = {"grant_type": "refresh_token", "refresh_token": token, "client_id": made["client_id"]}
    return tc.post("/oauth/token", data={**form, "client_secret": made["client_secret"]})


def works(rt: Runtime, access_token: str) -> bool:
    try:
        tokens.authenticate(rt, access_token, BASE_URL)
    except Unauthorized:
        return False
    return True


def test_a_wrong_verifier_spends_the_code(client: TestClient, runtime: Runtime) -> None:
    made = register(client)
    code = consent(runtime, owner(runtime, "onetry"), made["client_id"])
    wrong = redeem(client, made, code, verifier="w" * 43)
    assert wrong.status_code == 400 and wrong.json() == {
        "error": "invalid_grant",
        "error_description": "incorrect code_verifier",
    }
    late = redeem(client, made, code)  # the right verifier, after the code's one try
    assert late.status_code == 400 and late.json()["error"] == "invalid_grant"
    assert "access_token" not in late.json()


def test_a_spent_code_revokes_the_grant_only_for_its_client_with_its_verifier(
    client: TestClient, runtime: Runtime
) -> None:
    made, other = register(client), register(client)
    code = consent(runtime, owner(runtime, "replayed"), made["client_id"])
    issued = redeem(client, made, code)
    assert issued.status_code == 200, issued.text
    access = issued.json()["access_token"]
    # Whoever saw the spent code (a log, a Referer) but is another client, or lacks the verifier: refused, and the
    # grant the code gave goes on working.
    for attempt in (redeem(client, other, code), redeem(client, made, code, verifier="w" * 43)):
        assert attempt.status_code == 400 and attempt.json()["error"] == "invalid_grant", attempt.text
        assert works(runtime, access)
    # The code's own client with its verifier: a real replay, which revokes what the code gave.
    replay = redeem(client, made, code)
    assert replay.status_code == 400 and replay.json() == {
        "error": "invalid_grant",
        "error_description": "this authorization code was already used",
    }
    assert not works(runtime, access)


def test_a_spent_refresh_token_revokes_the_grant_only_for_its_client(client: TestClient, runtime: Runtime) -> None:
    made, other = register(client), register(client)
    code = consent(runtime, owner(runtime, "rotated"), made["client_id"])
    first = redeem(client, made, code).json()
    second = refresh(client, made, first["refresh_token"]).json()
    assert works(runtime, second["access_token"])
    stranger = refresh(client, other, first["refresh_token"])
    assert stranger.status_code == 400 and stranger.json()["error"] == "invalid_grant"
    assert works(runtime, second["access_token"])
    replay = refresh(client, made, first["refresh_token"])
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert not works(runtime, second["access_token"])


@pytest.mark.parametrize("keep", [True, False])
def test_a_password_change_ends_the_accounts_grants(client: TestClient, runtime: Runtime, keep: bool) -> None:
    made = register(client)
    caller, bystander = owner(runtime, "changer"), owner(runtime, "bystander")
    mine = redeem(client, made, consent(runtime, caller, made["client_id"])).json()
    theirs = redeem(client, made, consent(runtime, bystander, made["client_id"])).json()
    pending = consent(runtime, caller, register(client)["client_id"])  # a code not yet redeemed
    change = {"current_password": PASSWORD, "new_password": "a brand new one"}
    accounts.change_password(runtime, caller, change, keep_digest="kept" if keep else None)
    assert not works(runtime, mine["access_token"])
    assert refresh(client, made, mine["refresh_token"]).json()["error"] == "invalid_grant"
    assert grants.load(runtime, pending, tokens.CODE_PREFIX, "code") is None
    assert grants.connected(runtime, caller) == []
    assert works(runtime, theirs["access_token"])  # another account's grant of the same client stays
