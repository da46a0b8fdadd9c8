"""A grant's expired OAuth tokens, and its earlier access token, are deleted when it is given new ones, so the table
does not keep every token a long-lived client was ever issued; its live refresh tokens, and other grants' tokens,
stay."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select, update

from slugline.accounts import service as accounts
from slugline.common.clock import utcnow
from slugline.common.models import Account
from slugline.oauth.models import OAuthGrant, OAuthToken
from slugline.oauth.tokens import issue
from slugline.runtime import Runtime

RESOURCE = "http://testserver/mcp"


def grant_for(rt: Runtime, account_id: int, client: str) -> int:
    with rt.db.session() as session:
        grant = OAuthGrant(
            account_id=account_id,
            client_id=f"https://{client}/meta.json",
            client_name="client",
            redirect_host="client.example",
            scope="full",
            created_at=utcnow(),
        )
        session.add(grant)
        session.flush()
        issue(rt, session, grant, RESOURCE)
        session.commit()
        return grant.id


def tokens_of(rt: Runtime, grant_id: int) -> int:
    with rt.db.session() as session:
        return int(session.scalar(select(func.count()).where(OAuthToken.grant_id == grant_id)) or 0)


def test_issuing_deletes_the_grants_expired_and_rotated_tokens_only(runtime: Runtime) -> None:
    accounts.register(runtime, {"username": "oauthprune", "password": "long-enough-pw"})
    with runtime.db.session() as session:
        account_id = session.scalar(select(Account.id).where(Account.username == "oauthprune"))
    assert account_id is not None
    mine, other = grant_for(runtime, account_id, "one.example"), grant_for(runtime, account_id, "two.example")
    with runtime.db.session() as session:  # both grants' first pair runs out
        session.execute(update(OAuthToken).values(expires_at=utcnow() - timedelta(seconds=1)))
        session.commit()
    with runtime.db.session() as session:
        grant = session.get(OAuthGrant, mine)
        assert grant is not None
        issue(runtime, session, grant, RESOURCE)
        issue(runtime, session, grant, RESOURCE)  # a second refresh: the first's refresh token is still live
        session.commit()
    assert tokens_of(runtime, mine) == 3  # the first's access token was rotated out by the second
    assert tokens_of(runtime, other) == 2  # another grant's tokens wait for its own next issue
