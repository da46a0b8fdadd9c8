"""API keys: at most one full-access and one public-only key per account, shown once, stored as a keyed hash."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import CursorResult, delete, select
from sqlalchemy.exc import IntegrityError

from slugline import _core
from slugline.accounts import callers
from slugline.common.caller import Caller
from slugline.common.clock import isoformat, utcnow
from slugline.common.errors import Conflict, Forbidden, NotFound
from slugline.common.inputs import KeyRequest
from slugline.common.models import ApiKey
from slugline.common.validation import parse
from slugline.runtime import Runtime

KEY_PREFIXES = {"full": "svc_live_", "public": "svc_pub_"}
GENERATE_ATTEMPTS = 3  # two generations racing: the later one replaces the earlier, as a replacement should


def require_key_manager(caller: Caller) -> None:
    if caller.scope == "public":
        raise Forbidden("a public-only key cannot manage API keys")


def key_dict(key: ApiKey) -> dict[str, Any]:
    return {
        "scope": key.scope,
        "prefix": KEY_PREFIXES[key.scope],
        "last4": key.last4,
        "created_at": isoformat(key.created_at),
        "last_used_at": isoformat(key.last_used_at),
    }


def list_keys(rt: Runtime, caller: Caller) -> dict[str, Any]:
    require_key_manager(caller)
    with rt.db.session() as session:
        keys = session.scalars(select(ApiKey).where(ApiKey.account_id == caller.account_id).order_by(ApiKey.scope))
        return {"keys": [key_dict(k) for k in keys]}


def create_key(rt: Runtime, caller: Caller, data: Any) -> dict[str, Any]:
    require_key_manager(caller)
    scope = parse(KeyRequest, data).scope
    secret = _core.generate_key(scope)
    for _ in range(GENERATE_ATTEMPTS):
        try:
            with rt.db.session() as session:
                session.execute(delete(ApiKey).where(ApiKey.account_id == caller.account_id, ApiKey.scope == scope))
                key = ApiKey(
                    account_id=caller.account_id,
                    scope=scope,
                    key_hash=_core.hash_key(rt.secret, secret),
                    last4=secret[-4:],
                    created_at=utcnow(),
                    last_used_at=None,
                )
                session.add(key)
                session.flush()
                made = {**key_dict(key), "key": secret}
        except IntegrityError:
            continue
        callers.forget(rt, caller.account_id)  # the old key of that scope is gone
        return made
    raise Conflict(f"the {scope} key is being replaced by another request; try again")


def delete_key(rt: Runtime, caller: Caller, scope: str | None) -> dict[str, Any]:
    require_key_manager(caller)
    checked = parse(KeyRequest, {"scope": scope} if scope is not None else {}).scope
    with rt.db.session() as session:
        done = cast(
            CursorResult[Any],
            session.execute(delete(ApiKey).where(ApiKey.account_id == caller.account_id, ApiKey.scope == checked)),
        )  # DML answers with a cursor result
        if done.rowcount == 0:
            raise NotFound(f"no {checked} key to delete")
    callers.forget(rt, caller.account_id)
    return {"deleted": True, "scope": checked}
