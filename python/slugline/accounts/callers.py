"""Turning a Bearer token into a Caller: the one place that does, for REST, MCP and the dashboard.

`parse` and `cached` do no I/O, so a request whose token this worker resolved under a second ago needs no thread
and no database (`accounts.identitycache` has the rule that keeps that exact); `resolve` reads the database with
one statement and stores the answer. Only a token's own validity is checked here (401): plan and scope rules are
`accounts.require_plan` and friends.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import bindparam, select, update

from slugline import _core
from slugline.accounts.identitycache import Ticket
from slugline.common.caller import Caller, TokenScope
from slugline.common.clock import as_utc, utcnow
from slugline.common.errors import Unauthorized
from slugline.common.models import Account, ApiKey, SessionToken
from slugline.runtime import Runtime

LAST_USED_EVERY = timedelta(minutes=1)  # a key's last_used_at is written at most this often
MISSING = "missing API key: send 'Authorization: Bearer <key>'"

_ACCOUNT = (Account.id, Account.username, Account.plan, Account.created_at)
_BY_KEY = (
    select(*_ACCOUNT, ApiKey.id.label("key_id"), ApiKey.key_hash, ApiKey.last_used_at)
    .join_from(ApiKey, Account, ApiKey.account_id == Account.id)
    .where(ApiKey.key_hash == bindparam("digest"))
)
_BY_SESSION = (
    select(*_ACCOUNT, SessionToken.expires_at)
    .join_from(SessionToken, Account, SessionToken.account_id == Account.id)
    .where(SessionToken.token_hash == bindparam("digest"))
)
_TOUCH_KEY = update(ApiKey).where(ApiKey.id == bindparam("key_id")).values(last_used_at=bindparam("now"))


@dataclass(frozen=True, slots=True)
class Token:
    """A well-formed token: its kind (full, public or session), its keyed hash, and the token itself."""

    kind: TokenScope
    digest: str
    secret: str


def parse(rt: Runtime, authorization: str | None) -> Token:
    """401 for a missing or malformed token; no I/O."""
    scheme, _, secret = (authorization or "").partition(" ")
    secret = secret.strip()
    if scheme.lower() != "bearer" or not secret:
        raise Unauthorized(MISSING)
    kind = _core.key_kind(secret)
    if kind is None:
        raise Unauthorized("malformed API key")
    return Token(kind, _core.hash_key(rt.secret, secret), secret)


def cached(rt: Runtime, token: Token, base_url: str) -> Caller | None:
    """The caller, when this worker resolved the token recently enough to trust the answer; 401 when it refused the
    token as recently (a refused token never becomes valid); None: `resolve` it. No I/O."""
    found = rt.identities.get(token.digest, base_url)
    if found is None and (refused := rt.identities.refusal(token.digest)) is not None:
        raise Unauthorized(refused)
    return found


def resolve(rt: Runtime, token: Token, base_url: str) -> Caller:
    """The caller read from the database (401 for an unknown, revoked or expired token), stored for the next
    requests. Blocking: call it from a worker thread."""
    ticket = rt.identities.ticket()  # before the read: an answer is trusted from when its read began
    valid_for = None
    with rt.db.engine.begin() as conn:
        if token.kind == "session":
            session = conn.execute(_BY_SESSION, {"digest": token.digest}).first()
            valid_for = (as_utc(session.expires_at) - utcnow()).total_seconds() if session is not None else 0.0
            if session is None or valid_for <= 0:
                raise _refused(rt, token, ticket, "invalid or expired session token")
            row = session.id, session.username, session.plan, session.created_at
        else:
            key = conn.execute(_BY_KEY, {"digest": token.digest}).first()
            if key is None or not _core.verify_key(rt.secret, token.secret, key.key_hash):
                raise _refused(rt, token, ticket, "invalid or revoked API key")
            now = utcnow()
            if key.last_used_at is None or now - as_utc(key.last_used_at) > LAST_USED_EVERY:
                conn.execute(_TOUCH_KEY, {"key_id": key.key_id, "now": now})
            row = key.id, key.username, key.plan, key.created_at
    caller = Caller(row[0], row[1], row[2], token.kind, row[3], base_url)
    rt.identities.put(token.digest, caller, ticket, valid_for)
    return caller


def _refused(rt: Runtime, token: Token, ticket: Ticket, message: str) -> Unauthorized:
    """The 401 for a token the database does not know (any more), remembered: the token's next calls within the
    trust period are refused without a thread or a read."""
    rt.identities.refuse(token.digest, message, ticket)
    return Unauthorized(message)


def authenticate(rt: Runtime, authorization: str | None, base_url: str) -> Caller:
    """401 for a missing, malformed, unknown, revoked or expired token; checks nothing else. Blocking on a miss."""
    token = parse(rt, authorization)
    return cached(rt, token, base_url) or resolve(rt, token, base_url)


def forget(rt: Runtime, account_id: int) -> None:
    """Call after committing a change to the account's tokens or plan: this worker stops trusting its answers at
    once (other workers within `identitycache.TRUST_SECONDS`)."""
    rt.identities.forget_account(account_id)
