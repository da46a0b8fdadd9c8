"""Deleting an account with everything it holds (`slugline accounts delete NAME`), in bounded transactions.

One statement (`DELETE FROM accounts`) would do it through the schema's cascades and triggers, but an account with a
million links and their clicks would then be one transaction holding the SQLite file (or PostgreSQL's row locks)
for as long as it runs. So:

1. The account is closed in one transaction: its API keys, sessions, OAuth grants (with their tokens), stored
   idempotent answers and webhook endpoints (with their outbox and log, so its links' deletion tells nobody) go,
   and its password is replaced by one nobody knows, so no token or sign-in reaches it while the rest goes; every
   worker stops trusting its tokens within `identitycache.TRUST_SECONDS`.
2. Its links go `LINKS` at a time. The clicks of a batch go first, `CLICKS` rows a transaction; then the links, with
   the per-link roll-up cubes and the cube moves their deletion records (nothing is left for the click writer to move:
   the account's own views go with it at the end). After each transaction the deletion waits as long as that took, so
   it holds the writer at most half the time and the servers' writes (the click flusher's too) go on between.
3. Then the account row, whose cascades and triggers take what is left: its change feed, its views' cubes, and any
   link made through the operator's commands meanwhile.

Stopped half way, it is run again: the account stays closed and the rest is taken where it stopped. Its id is never
given to another account (migration 0014), so no worker's cache keyed by account id can answer for it again.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, select, tuple_, update

from slugline import _core
from slugline.accounts import callers
from slugline.common.errors import NotFound
from slugline.common.models import (
    Account,
    ApiKey,
    Click,
    ClickCube,
    CubeMove,
    IdempotentAnswer,
    Link,
    SessionToken,
    WebhookEndpoint,
)
from slugline.oauth.models import OAuthGrant
from slugline.runtime import Runtime

LINKS = 500  # links deleted per transaction
CLICKS = 20_000  # clicks deleted per transaction


def delete_account(rt: Runtime, username: str, links: int = LINKS, clicks: int = CLICKS) -> dict[str, Any]:
    """Deletes the account named `username` and all it holds: how many links and clicks went. Blocking, and as long
    as the account is large (the command line runs it); each transaction is bounded."""
    if links < 1 or clicks < 1:
        raise ValueError("batch sizes must be positive")
    account_id, name = _close(rt, username)
    callers.forget(rt, account_id)
    gone_links = gone_clicks = 0
    while batch := _next_links(rt, account_id, links):
        ids = [link_id for link_id, _ in batch]
        while (done := _paced(_delete_clicks, rt, ids, clicks)) == clicks:
            gone_clicks += done
        gone_clicks += done
        _paced(_delete_links, rt, account_id, ids)
        for _, slug in batch:  # this process's redirect cache; the other workers' entries run out within their TTL
            for hook in rt.link_hooks:
                hook(slug, None)
        gone_links += len(batch)
    with rt.db.writing() as session:
        session.execute(delete(Account).where(Account.id == account_id))
    callers.forget(rt, account_id)
    return {"username": name, "deleted": True, "links": gone_links, "clicks": gone_clicks}


def _close(rt: Runtime, username: str) -> tuple[int, str]:
    unknown = _core.hash_password(secrets.token_urlsafe(32))  # hashed before the write lock is taken
    with rt.db.writing() as session:
        row = session.execute(
            update(Account)
            .where(Account.username == username.lower())
            .values(password_hash=unknown)
            .returning(Account.id, Account.username)
        ).first()
        if row is None:
            raise NotFound(f"no account named '{username}'")
        account_id = int(row[0])
        for table in (ApiKey, SessionToken, OAuthGrant, IdempotentAnswer, WebhookEndpoint):
            session.execute(delete(table).where(table.account_id == account_id))
        return account_id, str(row[1])


def _next_links(rt: Runtime, account_id: int, limit: int) -> list[tuple[str, str]]:
    with rt.db.session() as session:
        rows = session.execute(select(Link.id, Link.slug).where(Link.account_id == account_id).limit(limit))
        return [(str(link_id), str(slug)) for link_id, slug in rows]


def _paced(step: Any, rt: Runtime, *args: Any) -> int:
    """Runs one transaction of the deletion, then waits as long as it took."""
    began = time.monotonic()
    done = int(step(rt, *args))
    time.sleep(min(time.monotonic() - began, 1.0))
    return done


def _delete_clicks(rt: Runtime, ids: Sequence[str], limit: int) -> int:
    """Up to `limit` clicks of these links, found through the click log's index on (link, time) and deleted by key:
    the rowid on SQLite, (link, time, id) on PostgreSQL."""
    if rt.db.engine.dialect.name == "sqlite":
        key: Any = Click.id
        some: Any = select(Click.id)
    else:
        key = tuple_(Click.link_id, Click.clicked_at, Click.id)
        some = select(Click.link_id, Click.clicked_at, Click.id)
    with rt.db.writing() as session:
        found = session.execute(delete(Click).where(key.in_(some.where(Click.link_id.in_(ids)).limit(limit))))
        return int(found.rowcount)  # type: ignore[attr-defined]


def _delete_links(rt: Runtime, account_id: int, ids: Sequence[str]) -> int:
    """The links, their own cubes and the moves their deletion recorded. On PostgreSQL the links' rows are locked in
    id order first, the order the click writer locks them in, so the two never deadlock."""
    with rt.db.writing() as session:
        if rt.db.engine.dialect.name == "postgresql":
            session.execute(select(Link.id).where(Link.id.in_(ids)).order_by(Link.id).with_for_update())
        session.execute(delete(Link).where(Link.id.in_(ids), Link.account_id == account_id))
        session.execute(delete(CubeMove).where(CubeMove.account_id == account_id, CubeMove.link_id.in_(ids)))
        session.execute(delete(ClickCube).where(ClickCube.account_id == account_id, ClickCube.scope.in_(ids)))
    return len(ids)
