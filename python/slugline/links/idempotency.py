"""Idempotency keys: a create sent again with the same `Idempotency-Key` gets the first answer again, with its
status, instead of making a second link (REST's header on `POST /links` and `POST /links/bulk`, MCP's
`idempotency_key` argument on create_link and create_links). So a client, or an agent, that retries after a lost
answer never makes a duplicate.

A key is the account's: kept `KEEP` after its first use, at most `MAX_PER_ACCOUNT` of them (the oldest go first).
The same key with another body, or for the other create, is refused with 409 (the key names one request, and this
one conflicts with it; a retry must send the first body again). A request whose first use is still under way
answers 409 too, in other words (retry once it has answered). An answer a retry may not repeat —
429, and 5xx, when nothing is known to be written — is not kept: the key is free again.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import anyio
import anyio.to_thread
import orjson
from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from slugline.common.caller import Caller
from slugline.common.clock import utcnow
from slugline.common.errors import BadRequest, Conflict, Forbidden, Invalid, NotFound, PayloadTooLarge, ServiceError
from slugline.common.models import IdempotentAnswer
from slugline.runtime import Runtime

KEEP = timedelta(hours=24)
MAX_PER_ACCOUNT = 10_000
MAX_KEY = 255
KEY_PATTERN = r"^[\x21-\x7e]+$"  # visible ASCII, as an HTTP header carries it
KEY = re.compile(rf"[\x21-\x7e]{{1,{MAX_KEY}}}")
UNDER_WAY = 0
HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"  # header on an answer given again

Answer = tuple[int, dict[str, Any], bool]  # status, body, and whether it is a replay of the first answer


async def once(
    rt: Runtime,
    caller: Caller,
    key: str | None,
    operation: str,
    body: Any,
    status: int,
    run: Callable[[], Awaitable[dict[str, Any]]],
) -> Answer:
    """`run`'s answer (`status` on success), or with `key`, the answer first given to it. A refusal (`ServiceError`)
    of the first use is kept and raised again on a retry, with its status and words."""
    if key is None:
        return status, await run(), False
    if not KEY.fullmatch(key):
        raise Invalid(f"{HEADER} must be 1-{MAX_KEY} visible ASCII characters")
    fingerprint = fingerprint_of(operation, body)
    found = await anyio.to_thread.run_sync(_claim, rt, caller.account_id, key, fingerprint)
    if found is not None:
        return _replay(key, fingerprint, *found)
    try:
        answer = await run()
    except ServiceError as exc:
        if exc.status == 429 or exc.status >= 500:
            await _release(rt, caller.account_id, key)
        else:
            await _keep(rt, caller.account_id, key, exc.status, {"error": exc.message})
        raise
    except BaseException:
        await _release(rt, caller.account_id, key)
        raise
    await _keep(rt, caller.account_id, key, status, answer)
    return status, answer, False


def fingerprint_of(operation: str, body: Any) -> str:
    """What names a request: its operation and its body, keys in any order."""
    return hashlib.sha256(operation.encode() + b"\0" + orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _replay(key: str, fingerprint: str, kept: str, status: int, answer: bytes | None) -> Answer:
    if kept != fingerprint:
        raise Conflict(f"{HEADER} '{key}' was used for another request: send a new key with a new request")
    if status == UNDER_WAY or answer is None:
        raise Conflict(f"the request with {HEADER} '{key}' is still under way: retry once it has answered")
    body = orjson.loads(answer)
    if status >= 400:
        raise REFUSALS.get(status, Invalid)(body["error"])
    return status, body, True


# The refusals a first use may have answered and a retry answers again (429 and 5xx are not kept).
REFUSALS: dict[int, type[ServiceError]] = {
    error.status: error for error in (BadRequest, Forbidden, NotFound, Conflict, Invalid, PayloadTooLarge)
}


def _claim(rt: Runtime, account_id: int, key: str, fingerprint: str) -> tuple[str, int, bytes | None] | None:
    """The key's kept (fingerprint, status, answer), or None: the key is now this request's (under way). Keys past
    `KEEP`, and the account's oldest past `MAX_PER_ACCOUNT`, go first."""
    now = utcnow()
    table = IdempotentAnswer
    mine = (table.account_id == account_id, table.key == key)
    try:
        with rt.db.writing() as session:
            session.execute(delete(table).where(table.account_id == account_id, table.created_at < now - KEEP))
            found = session.execute(select(table.fingerprint, table.status, table.answer).where(*mine)).first()
            if found is not None:
                return found.fingerprint, found.status, found.answer
            session.add(
                table(account_id=account_id, key=key, fingerprint=fingerprint, status=UNDER_WAY, created_at=now)
            )
            session.flush()
            _bound(session, account_id)
    except IntegrityError:  # claimed by a concurrent request meanwhile (PostgreSQL): its row is the answer
        with rt.db.session() as session:
            found = session.execute(select(table.fingerprint, table.status, table.answer).where(*mine)).first()
        return (found.fingerprint, found.status, found.answer) if found is not None else (fingerprint, UNDER_WAY, None)
    return None


def _bound(session: Session, account_id: int) -> None:
    """At most `MAX_PER_ACCOUNT` keys: the oldest answered ones go."""
    table = IdempotentAnswer
    held = session.scalar(select(func.count()).select_from(table).where(table.account_id == account_id)) or 0
    if held > MAX_PER_ACCOUNT:
        oldest = (
            select(table.key)
            .where(table.account_id == account_id, table.status != UNDER_WAY)
            .order_by(table.created_at)
            .limit(held - MAX_PER_ACCOUNT)
        )
        session.execute(delete(table).where(table.account_id == account_id, table.key.in_(oldest)))


async def _keep(rt: Runtime, account_id: int, key: str, status: int, answer: dict[str, Any]) -> None:
    def keep() -> None:
        with rt.db.writing() as session:
            session.execute(
                update(IdempotentAnswer)
                .where(IdempotentAnswer.account_id == account_id, IdempotentAnswer.key == key)
                .values(status=status, answer=orjson.dumps(answer))
            )

    with anyio.CancelScope(shield=True):  # the link is made: its answer is kept even if the client has gone
        await anyio.to_thread.run_sync(keep)


async def _release(rt: Runtime, account_id: int, key: str) -> None:
    def release() -> None:
        with rt.db.writing() as session:
            session.execute(
                delete(IdempotentAnswer).where(
                    IdempotentAnswer.account_id == account_id,
                    IdempotentAnswer.key == key,
                    IdempotentAnswer.status == UNDER_WAY,
                )
            )

    with anyio.CancelScope(shield=True):
        await anyio.to_thread.run_sync(release)
