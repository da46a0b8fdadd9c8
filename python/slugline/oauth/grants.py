"""Grants (connected apps) and the codes and tokens issued under them: consent, exchange, rotation, revocation.

A code or refresh token is spent by an UPDATE that only succeeds once, so two racing exchanges cannot both win; a
spent one presented again is a replay (RFC 9700 §4.14, OAuth 2.1 §4.1.3) and revokes the whole grant, but only when
its own client presents it (and, for a code, with its PKCE verifier): anyone else who saw a spent code or token, in
a log or a Referer, could otherwise disconnect the app by presenting it. A code presented with a wrong verifier is
spent there and then: a code gets one try.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import CursorResult, delete, select, update

from slugline.common.caller import Caller
from slugline.common.clock import isoformat, utcnow
from slugline.common.tally import Tally
from slugline.oauth import clients
from slugline.oauth.models import OAuthGrant, OAuthToken
from slugline.oauth.tokens import (
    CODE_PREFIX,
    CODE_TTL,
    Issued,
    digest,
    expired,
    issue,
    new_token,
    verifies,
    well_formed,
)
from slugline.runtime import Runtime

GRANTS = Tally()  # grants approved in this process, by scope (`slugline.metrics`)


@dataclass(frozen=True, slots=True)
class Approval:
    """What the owner approved on the consent page, for one authorization request."""

    client_id: str
    client_name: str
    redirect_uri: str
    redirect_explicit: bool
    code_challenge: str
    resource: str
    scope: str


@dataclass(frozen=True, slots=True)
class Found:
    """A live code or refresh token and its grant."""

    token: OAuthToken
    grant: OAuthGrant


def approve(rt: Runtime, caller: Caller, approval: Approval, redirect_host: str) -> str:
    """Record the grant (replacing this client's earlier one, and its tokens) and return a new authorization code."""
    code, now = new_token(CODE_PREFIX), utcnow()
    with rt.db.session() as session:
        session.execute(
            delete(OAuthGrant).where(
                OAuthGrant.account_id == caller.account_id, OAuthGrant.client_id == approval.client_id
            )
        )
        grant = OAuthGrant(
            account_id=caller.account_id,
            client_id=approval.client_id,
            client_name=approval.client_name,
            redirect_host=redirect_host,
            scope=approval.scope,
            created_at=now,
        )
        session.add(grant)
        session.flush()
        clients.consented(session, approval.client_id)
        session.add(
            OAuthToken(
                token_hash=digest(rt, code),
                grant_id=grant.id,
                kind="code",
                resource=approval.resource,
                expires_at=now + CODE_TTL,
                code_challenge=approval.code_challenge,
                redirect_uri=approval.redirect_uri,
                redirect_explicit=approval.redirect_explicit,
            )
        )
    GRANTS.add(approval.scope)  # committed
    return code


def load(rt: Runtime, token: str, prefix: str, kind: str, client_id: str | None = None) -> Found | None:
    """The live code/refresh token `token`, or None. A spent one revokes its grant: someone replayed it. With
    `client_id`, a token of another client's grant is None and changes nothing."""
    if not well_formed(token, prefix):
        return None
    with rt.db.session() as session:
        row = session.execute(
            select(OAuthToken, OAuthGrant)
            .join(OAuthGrant, OAuthToken.grant_id == OAuthGrant.id)
            .where(OAuthToken.token_hash == digest(rt, token))
        ).first()
        if row is None:
            return None
        found, grant = row
        if client_id is not None and grant.client_id != client_id:
            return None
        if found.kind == "spent":
            session.execute(delete(OAuthGrant).where(OAuthGrant.id == grant.id))
            return None
        if found.kind != kind or expired(found.expires_at):
            return None
        session.expunge_all()
        return Found(found, grant)


def redeem(rt: Runtime, code: str, client_id: str, verifier: str | None) -> Found | None:
    """The authorization code `code` as a token request from `client_id` with PKCE `verifier` presents it, checked in
    this order:

    - unknown, or another client's: None, and nothing changes;
    - a wrong verifier: a live code is spent (one try). The code is returned all the same, for the SDK's handler to
      refuse as "incorrect code_verifier" (and should it not, a spent code can no longer be exchanged);
    - the right verifier on a spent code: a replay, by whoever holds the verifier, which revokes the grant. The code
      is returned for the SDK's remaining checks, and `exchange` then finds it gone ("already used");
    - else the live code, for `exchange` to spend.
    """
    if not well_formed(code, CODE_PREFIX):
        return None
    with rt.db.session() as session:
        row = session.execute(
            select(OAuthToken, OAuthGrant)
            .join(OAuthGrant, OAuthToken.grant_id == OAuthGrant.id)
            .where(OAuthToken.token_hash == digest(rt, code))
        ).first()
        if row is None:
            return None
        found, grant = row
        challenge = found.code_challenge
        if found.kind not in ("code", "spent") or challenge is None or grant.client_id != client_id:
            return None
        session.expunge_all()  # what was read is returned as it was; the statements below change rows only
        if not verifies(verifier, challenge):
            session.execute(
                update(OAuthToken)
                .where(OAuthToken.token_hash == found.token_hash, OAuthToken.kind == "code")
                .values(kind="spent")
            )
        elif found.kind == "spent":
            session.execute(delete(OAuthGrant).where(OAuthGrant.id == grant.id))
        return Found(found, grant)


def exchange(rt: Runtime, found: Found) -> Issued | None:
    """Spend the code or refresh token and issue a new access and refresh token; None if it was spent meanwhile."""
    with rt.db.session() as session:
        done = cast(
            CursorResult[Any],
            session.execute(
                update(OAuthToken)
                .where(OAuthToken.token_hash == found.token.token_hash, OAuthToken.kind == found.token.kind)
                .values(kind="spent")
            ),
        )
        if done.rowcount != 1:
            return None
        grant = session.get(OAuthGrant, found.grant.id)
        if grant is None:
            return None
        return issue(rt, session, grant, found.token.resource)


def revoke(rt: Runtime, token: str) -> None:
    """RFC 7009: the token's whole grant goes (its access and refresh tokens with it); unknown tokens are ignored."""
    with rt.db.session() as session:
        grant_id = session.scalar(select(OAuthToken.grant_id).where(OAuthToken.token_hash == digest(rt, token)))
        if grant_id is not None:
            session.execute(delete(OAuthGrant).where(OAuthGrant.id == grant_id))


def connected(rt: Runtime, caller: Caller) -> list[dict[str, Any]]:
    """The account's connected apps, newest first, for the settings page."""
    with rt.db.session() as session:
        grants = session.scalars(
            select(OAuthGrant).where(OAuthGrant.account_id == caller.account_id).order_by(OAuthGrant.id.desc())
        ).all()
        return [
            {
                "id": g.id,
                "client_name": g.client_name,
                "client_id": g.client_id,
                "redirect_host": g.redirect_host,
                "scope": g.scope,
                "created_at": isoformat(g.created_at),
                "last_used_at": isoformat(g.last_used_at),
            }
            for g in grants
        ]


def disconnect(rt: Runtime, caller: Caller, grant_id: int) -> bool:
    """Delete one of the caller's grants and every token issued under it; False if there is no such grant."""
    with rt.db.session() as session:
        done = cast(
            CursorResult[Any],
            session.execute(
                delete(OAuthGrant).where(OAuthGrant.id == grant_id, OAuthGrant.account_id == caller.account_id)
            ),
        )
        return done.rowcount == 1
