"""Grants (connected apps) and the codes and tokens issued under them: consent, exchange, rotation, revocation.

A code or refresh token is spent by an UPDATE that only succeeds once, so two racing exchanges cannot both win; a
spent one presented again is a replay (RFC 9700 §4.14, OAuth 2.1 §4.1.3) and revokes the whole grant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import CursorResult, delete, select, update

from slugline.common.caller import Caller
from slugline.common.clock import isoformat, utcnow
from slugline.oauth.models import OAuthGrant, OAuthToken
from slugline.oauth.tokens import CODE_PREFIX, CODE_TTL, Issued, digest, expired, issue, new_token, well_formed
from slugline.runtime import Runtime


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
    return code


def load(rt: Runtime, token: str, prefix: str, kind: str) -> Found | None:
    """The live code/refresh token `token`, or None. A spent one revokes its grant: someone replayed it."""
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
        if found.kind == "spent":
            session.execute(delete(OAuthGrant).where(OAuthGrant.id == grant.id))
            return None
        if found.kind != kind or expired(found.expires_at):
            return None
        session.expunge_all()
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
