"""Accounts and session tokens, and the plan gate. A Bearer token becomes a Caller in `accounts.callers`; every write
here that changes what an account's tokens may do tells it (`callers.forget`) once committed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from functools import cache
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from slugline import _core
from slugline.accounts import callers
from slugline.accounts.deletion import CLOSED
from slugline.accounts.keys import key_dict
from slugline.common.caller import Caller, TokenScope
from slugline.common.clock import isoformat, utcnow
from slugline.common.errors import Conflict, Forbidden, Invalid, NotFound, Unauthorized
from slugline.common.inputs import Credentials, Login, PasswordChange, PasswordReset
from slugline.common.models import Account, ApiKey, Link, SessionToken
from slugline.common.validation import parse
from slugline.oauth.models import OAuthGrant
from slugline.runtime import Runtime
from slugline.settings import PLAN_RANK


@cache
def _dummy_hash() -> str:
    """A real hash to verify against when the username is unknown, so a login takes the same time either way
    (made on first use, not at import: every worker and CLI call would pay for it)."""
    return _core.hash_password("slugline-timing-equaliser")


def account_dict(account: Account, scope: TokenScope | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"username": account.username, "plan": account.plan}
    if scope is not None:
        out["scope"] = scope
    out["created_at"] = isoformat(account.created_at)
    return out


def me(caller: Caller) -> dict[str, Any]:
    """GET /me and the MCP tool get_me: the account behind the token, and the token's scope."""
    return {
        "username": caller.username,
        "plan": caller.plan,
        "scope": caller.scope,
        "created_at": isoformat(caller.created_at),
    }


def _new_session(rt: Runtime, session: Session, account: Account) -> dict[str, Any]:
    token = _core.generate_key("session")
    now = utcnow()
    session.execute(delete(SessionToken).where(SessionToken.account_id == account.id, SessionToken.expires_at <= now))
    expires = now + timedelta(hours=rt.settings.session_hours)
    session.add(
        SessionToken(
            account_id=account.id, token_hash=_core.hash_key(rt.secret, token), created_at=now, expires_at=expires
        )
    )
    return {"account": account_dict(account), "token": token, "expires_at": isoformat(expires)}


def register(rt: Runtime, data: Any, plan: str | None = None) -> dict[str, Any]:
    creds = parse(Credentials, data)
    username = creds.username.lower()
    password_hash = _core.hash_password(creds.password)
    try:
        with rt.db.session() as session:
            account = Account(
                username=username,
                password_hash=password_hash,
                plan=plan or rt.settings.default_plan,
                created_at=utcnow(),
                links_version=0,
            )
            session.add(account)
            session.flush()
            return _new_session(rt, session, account)
    except IntegrityError:
        raise Conflict(f"username '{username}' is already taken") from None


def login(rt: Runtime, data: Any) -> dict[str, Any]:
    creds = parse(Login, data)  # registration's rules are not checked here: a name that breaks them is just wrong
    with rt.db.session() as session:
        account = session.scalar(select(Account).where(Account.username == creds.username.lower()))
        ok = _core.verify_password(creds.password, account.password_hash if account else _dummy_hash())
        if account is None or not ok:
            raise Unauthorized("wrong username or password")
        return _new_session(rt, session, account)


def logout(rt: Runtime, caller: Caller, digest: str) -> dict[str, Any]:
    """Revoke the session token the call was made with (`digest` is its keyed hash): it is refused from now on."""
    if caller.scope != "session":
        raise Forbidden("only a session token can be logged out; revoke an API key with DELETE /api-key")
    with rt.db.session() as session:
        session.execute(
            delete(SessionToken).where(SessionToken.token_hash == digest, SessionToken.account_id == caller.account_id)
        )
    callers.forget(rt, caller.account_id)
    return {"logged_out": True}


def change_password(rt: Runtime, caller: Caller, data: Any, keep_digest: str | None = None) -> None:
    """A new password for the caller's account, given the current one. Every other session is signed out (the one
    whose keyed hash is `keep_digest` stays), and every OAuth grant ends with its codes and tokens: an app was let in
    by whoever knew the old password; the owner connects it again. API keys are untouched, they are revoked on their
    own."""
    body = parse(PasswordChange, data)
    with rt.db.session() as session:
        account = session.get_one(Account, caller.account_id)
        if not _core.verify_password(body.current_password, account.password_hash):
            raise Invalid("current_password is not this account's password")
        _replace_password(session, account, body.new_password, keep_digest)
    callers.forget(rt, caller.account_id)


def reset_password(rt: Runtime, username: str, data: Any) -> None:
    """The operator's new password for an account whose owner lost it (`slugline accounts reset-password`): as a
    change of password, with every session signed out. An account its owner is deleting is refused (409), in the
    same statement as the change: a known password would let it be signed in to while the upkeep takes it."""
    body = parse(PasswordReset, data)
    password_hash = _core.hash_password(body.new_password)  # hashed before the write lock is taken
    with rt.db.session() as session:
        account_id = _change_unless_deleting(session, username, "password", password_hash=password_hash)
        _sign_out(session, account_id, None)
    callers.forget(rt, account_id)


def _replace_password(session: Session, account: Account, password: str, keep_digest: str | None) -> None:
    account.password_hash = _core.hash_password(password)
    _sign_out(session, account.id, keep_digest)


def _sign_out(session: Session, account_id: int, keep_digest: str | None) -> None:
    """After a new password: every session but the one whose keyed hash is `keep_digest` ends, and every OAuth
    grant."""
    others = SessionToken.token_hash != (keep_digest or "")
    session.execute(delete(SessionToken).where(SessionToken.account_id == account_id, others))
    session.execute(delete(OAuthGrant).where(OAuthGrant.account_id == account_id))


def _change_unless_deleting(session: Session, username: str, what: str, **values: Any) -> int:
    """Sets `values` on the account named `username` unless its owner is deleting it (the plan `deletion.CLOSED`,
    which is how the upkeep finds it), in one UPDATE, so the upkeep finishing meanwhile changes nothing: its id, else
    NotFound, or a Conflict (409) saying that its `what` can no longer be changed."""
    named = Account.username == username.lower()
    account_id: int | None = session.scalar(
        update(Account).where(named, Account.plan != CLOSED).values(**values).returning(Account.id)
    )
    if account_id is None:
        if session.scalar(select(Account.id).where(named)) is None:
            raise NotFound(f"no account named '{username}'")
        raise Conflict(f"account '{username.lower()}' is being deleted: its {what} can no longer be changed")
    return account_id


def _named(session: Session, username: str) -> Account:
    account = session.scalar(select(Account).where(Account.username == username.lower()))
    if account is None:
        raise NotFound(f"no account named '{username}'")
    return account


def list_accounts(rt: Runtime) -> Iterator[dict[str, Any]]:
    """Every account, by username, with its number of links and its API keys' scopes (`slugline accounts list`).
    Read in chunks, one summary at a time: an instance's thousands of accounts never sit in memory together."""
    links = select(func.count()).where(Link.account_id == Account.id).scalar_subquery()
    keys = select(func.count()).where(ApiKey.account_id == Account.id).scalar_subquery()
    rows = select(Account, links, keys).order_by(Account.username).execution_options(yield_per=500)
    with rt.db.engine.connect() as conn, Session(conn) as session:
        for account, link_count, key_count in session.execute(rows):
            yield account_dict(account) | {"links": link_count, "keys": key_count}


def show_account(rt: Runtime, username: str) -> dict[str, Any]:
    """One account (`slugline accounts show`): its plan, links, API keys and signed-in sessions."""
    with rt.db.session() as session:
        account = _named(session, username)
        now = utcnow()
        link_count = session.scalar(select(func.count()).where(Link.account_id == account.id))
        keys = session.scalars(select(ApiKey).where(ApiKey.account_id == account.id).order_by(ApiKey.scope))
        live = select(func.count()).where(SessionToken.account_id == account.id, SessionToken.expires_at > now)
        return account_dict(account) | {
            "links": link_count,
            "keys": [key_dict(key) for key in keys],
            "sessions": session.scalar(live),
        }


def set_plan(rt: Runtime, username: str, plan: str) -> None:
    """`slugline accounts set-plan`. An account its owner deleted keeps the plan `deletion.CLOSED` until the upkeep
    has taken it (that plan is how the upkeep finds it): changing it would leave the account closed but half there
    for good, so it is refused (409), in the same statement as the change, whatever the upkeep does meanwhile."""
    if plan not in PLAN_RANK:
        raise ValueError(f"plan must be one of {', '.join(PLAN_RANK)}")
    with rt.db.session() as session:
        account_id = _change_unless_deleting(session, username, "plan", plan=plan)
    callers.forget(rt, account_id)


def operator(rt: Runtime, username: str) -> Caller:
    """Full access to an account's links for the operator's commands (`slugline links`, `slugline clicks export`):
    no token and no plan gate, as whoever runs them reads the database anyway. Short URLs on `SLUGLINE_PUBLIC_URL`."""
    with rt.db.session() as session:
        account = _named(session, username)
        base = rt.short_base("http://localhost")
        return Caller(account.id, account.username, account.plan, "full", account.created_at, base)


def require_plan(caller: Caller) -> None:
    """The plan gate for every call made with an API key (REST and MCP): developer or pro."""
    if PLAN_RANK.get(caller.plan, 0) < PLAN_RANK["developer"]:
        raise Forbidden(f"API access needs the developer plan or higher (this account is on '{caller.plan}')")


def as_owner(caller: Caller) -> Caller:
    """The owner signed in to the dashboard acts on the account's links with full access, after the same plan gate
    as every API key: the web pages follow the API's plan rule."""
    require_plan(caller)
    return replace(caller, scope="full")


def require_api_key(caller: Caller) -> None:
    """Links, analytics, search and MCP take API keys only, of a plan that allows them."""
    if caller.scope == "session":
        raise Forbidden("session tokens only work for /me and /api-key; create an API key with POST /api-key")
    require_plan(caller)
