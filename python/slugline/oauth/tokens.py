"""OAuth codes and tokens: made from the API-key machinery under prefixes of their own, stored only as keyed hashes,
and the one function that turns an access token into a Caller (at /mcp only).

A token is `prefix + 32 base62 + 6-char checksum`, the body of a `_core` key: a mistyped token is refused without a
database read. Every use reads the token's row, so a disconnected app is refused at once on every worker and
instance; nothing about a token is cached.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, or_, select
from sqlalchemy.orm import Session

from slugline import _core
from slugline.common.caller import Caller, TokenScope
from slugline.common.clock import as_utc, utcnow
from slugline.common.errors import Unauthorized
from slugline.common.models import Account
from slugline.oauth.models import OAuthGrant, OAuthToken
from slugline.runtime import Runtime

ACCESS_PREFIX, REFRESH_PREFIX, CODE_PREFIX = "svc_oat_", "svc_ort_", "svc_oac_"
ACCESS_TTL = timedelta(hours=1)
REFRESH_TTL = timedelta(days=30)
CODE_TTL = timedelta(minutes=5)
LAST_USED_EVERY = timedelta(minutes=1)  # a grant's last_used_at is written at most this often
_BODY_OF = "svc_live_"  # the key kind whose body (random part and checksum) a token borrows
SCOPES: tuple[TokenScope, ...] = ("full", "public")


def new_token(prefix: str) -> str:
    return prefix + _core.generate_key("full").removeprefix(_BODY_OF)


def well_formed(token: str, prefix: str) -> bool:
    return token.startswith(prefix) and _core.key_kind(_BODY_OF + token.removeprefix(prefix)) == "full"


def digest(rt: Runtime, token: str) -> str:
    return _core.hash_key(rt.secret, token)


def verifies(verifier: str | None, challenge: str) -> bool:
    """RFC 7636 S256: the code's challenge is the verifier's SHA-256, base64url without padding."""
    if verifier is None:
        return False
    made = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=")
    return hmac.compare_digest(made, challenge.encode())


PRM_PATH = "/.well-known/oauth-protected-resource"  # RFC 9728's protected resource metadata


def resource_metadata_url(base: str) -> str:
    """Where an MCP client reads which authorization server issues tokens for this server's MCP endpoint."""
    return f"{base.rstrip('/')}{PRM_PATH}/mcp"


def mcp_resource(base: str) -> str:
    """The audience of every token this server issues (RFC 8707): its MCP endpoint."""
    return f"{base.rstrip('/')}/mcp"


def same_resource(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


@dataclass(frozen=True, slots=True)
class Issued:
    access_token: str
    refresh_token: str
    scope: str
    expires_in: int


def issue(rt: Runtime, session: Session, grant: OAuthGrant, resource: str) -> Issued:
    """A new access token and refresh token for the grant, which rotate both (as the SDK's provider protocol asks):
    the grant's earlier access token goes, so a refresh leaves one live access token where it used to add one more
    for an hour. Its expired tokens go too (codes, refresh tokens, and spent ones, which are kept until then to catch
    a replay): a client refreshing for months would otherwise leave every token it was ever given in the table."""
    now = utcnow()
    session.execute(
        delete(OAuthToken).where(
            OAuthToken.grant_id == grant.id, or_(OAuthToken.expires_at <= now, OAuthToken.kind == "access")
        )
    )
    access, refresh = new_token(ACCESS_PREFIX), new_token(REFRESH_PREFIX)
    for token, kind, ttl in ((access, "access", ACCESS_TTL), (refresh, "refresh", REFRESH_TTL)):
        session.add(
            OAuthToken(
                token_hash=digest(rt, token), grant_id=grant.id, kind=kind, resource=resource, expires_at=now + ttl
            )
        )
    return Issued(access, refresh, grant.scope, int(ACCESS_TTL.total_seconds()))


def expired(expires_at: datetime) -> bool:
    return as_utc(expires_at) <= utcnow()


def authenticate(rt: Runtime, token: str, base_url: str) -> Caller:
    """The caller behind an access token presented at this server's /mcp; 401 for a malformed, unknown, revoked or
    expired token, or one issued for another resource (audience)."""
    if not well_formed(token, ACCESS_PREFIX):
        raise Unauthorized("malformed OAuth access token")
    with rt.db.session() as session:
        row = session.execute(
            select(OAuthToken, OAuthGrant, Account)
            .join(OAuthGrant, OAuthToken.grant_id == OAuthGrant.id)
            .join(Account, OAuthGrant.account_id == Account.id)
            .where(OAuthToken.token_hash == digest(rt, token), OAuthToken.kind == "access")
        ).first()
        if row is None:
            raise Unauthorized("invalid or revoked OAuth access token")
        found, grant, account = row
        if expired(found.expires_at):
            raise Unauthorized("the OAuth access token has expired: refresh it")
        if not same_resource(found.resource, mcp_resource(base_url)):
            raise Unauthorized("the OAuth access token was issued for another resource")
        now = utcnow()
        if grant.last_used_at is None or now - as_utc(grant.last_used_at) > LAST_USED_EVERY:
            grant.last_used_at = now
        scope: TokenScope = "public" if grant.scope == "public" else "full"
        return Caller(account.id, account.username, account.plan, scope, account.created_at, base_url)
