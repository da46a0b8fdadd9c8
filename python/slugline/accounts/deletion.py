"""Deleting an account with everything it holds, in bounded transactions: by the operator (`slugline accounts delete
NAME`, which runs it to the end) or by its owner (the dashboard's settings: the account is closed at once, and every
worker's click upkeep takes the rest a step at a time, `finish_closed`, so no request does unbounded work).

One statement (`DELETE FROM accounts`) would do it through the schema's cascades and triggers, but an account with a
million links and their clicks would then be one transaction holding the SQLite file (or PostgreSQL's row locks)
for as long as it runs. So:

1. The account is closed in one transaction: its API keys, sessions, OAuth grants (with their tokens), stored
   idempotent answers and webhook endpoints (with their outbox and log, so its links' deletion tells nobody) go,
   and its password is replaced by one nobody knows, so no token or sign-in reaches it while the rest goes; every
   worker stops trusting its tokens within `identitycache.TRUST_SECONDS`.
2. Its links go `LINKS` at a time. The clicks of a batch go first, `CLICKS` rows a transaction; then the links, with
   the per-link roll-up cubes and the cube moves their deletion records (nothing is left for the click writer to move:
   the account's own views go with it at the end). After each transaction the command waits as long as that took, so
   it holds the writer at most half the time and the servers' writes (the click flusher's too) go on between; the
   upkeep runs at most `retention.STEP_SECONDS` after each of its worker's flushes.
3. Then the account row, whose cascades and triggers take what is left: its change feed, its views' cubes, and any
   link made through the operator's commands meanwhile.

Stopped half way, it is run again (a closed account's upkeep resumes by itself): the account stays closed and the rest
is taken where it stopped. Its id is never
given to another account (migration 0014), so no worker's cache keyed by account id can answer for it again.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, delete, select, tuple_, update
from sqlalchemy.exc import DBAPIError

from slugline import _core
from slugline.accounts import callers
from slugline.common.caller import Caller
from slugline.common.errors import Invalid, NotFound
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
from slugline.storage import quiettriggers
from slugline.storage.db import Database

LINKS = 500  # links deleted per transaction
CLICKS = 20_000  # clicks deleted per transaction
DEADLOCK, DEADLOCK_TRIES = "40P01", 3  # PostgreSQL's deadlock_detected, and how often closing is tried
CLOSED = "deleting"  # the plan of an account its owner deleted while the servers take the rest (`finish_closed`)
Hooks = Sequence[Callable[[str, str | None], None]]
# PostgreSQL's per-row triggers of a link's deletion skip the account's rows for the rest of the transaction (0022).
_DELETING_PG = quiettriggers.naming(quiettriggers.DELETING)


@dataclass
class Gone:
    links: int = 0
    clicks: int = 0


def delete_account(rt: Runtime, username: str, links: int = LINKS, clicks: int = CLICKS) -> dict[str, Any]:
    """Deletes the account named `username` and all it holds: how many links and clicks went. Blocking, and as long
    as the account is large (the command line runs it); each transaction is bounded, and followed by a wait as long."""
    if links < 1 or clicks < 1:
        raise ValueError("batch sizes must be positive")
    account_id, name = _close(rt.db, username)
    callers.forget(rt, account_id)
    gone = Gone()
    for took in _removal(rt.db, account_id, gone, links, clicks, rt.link_hooks):
        time.sleep(min(took, 1.0))
    callers.forget(rt, account_id)
    return {"username": name, "deleted": True, "links": gone.links, "clicks": gone.clicks}


def close_own(rt: Runtime, caller: Caller, password: str) -> None:
    """The owner deletes their own account (the dashboard's settings), with its password: it is closed at once and
    marked `CLOSED`; every worker's click upkeep takes the rest (`finish_closed`, within `retention.PASS_SECONDS`)."""
    with rt.db.session() as session:
        stored = session.scalar(select(Account.password_hash).where(Account.id == caller.account_id))
    if stored is None or not _core.verify_password(password, stored):
        raise Invalid("password is not this account's password")
    _close(rt.db, caller.username, plan=CLOSED)
    callers.forget(rt, caller.account_id)


def finish_closed(db: Database, hooks: Hooks = (), links: int = LINKS, clicks: int = CLICKS) -> Iterator[float]:
    """Takes away the accounts their owners deleted, a transaction a step (how long it took): a worker's click
    upkeep runs this a little at a time, telling its redirect cache (`hooks`). Two workers at one account only find
    each other's rows gone."""
    with db.session() as session:
        closed = list(session.scalars(select(Account.id).where(Account.plan == CLOSED).order_by(Account.id)))
    for account_id in closed:
        yield from _removal(db, account_id, Gone(), links, clicks, hooks)


def _close(db: Database, username: str, plan: str | None = None) -> tuple[int, str]:
    """Closes the account in one transaction. On PostgreSQL a webhook delivery finishing meanwhile locks the
    endpoint's row then its message's, while deleting the endpoint here cascades the other way; PostgreSQL then
    cancels one of the two (a deadlock, SQLSTATE 40P01), and this transaction, which changes nothing until it
    commits, is run again."""
    unknown = _core.hash_password(secrets.token_urlsafe(32))  # hashed before the write lock is taken
    values: dict[str, Any] = {"password_hash": unknown} | ({"plan": plan} if plan else {})
    for attempt in range(DEADLOCK_TRIES):
        try:
            return _close_once(db, username, values)
        except DBAPIError as exc:
            if attempt + 1 == DEADLOCK_TRIES or getattr(exc.orig, "sqlstate", None) != DEADLOCK:
                raise
    raise AssertionError("unreachable")


def _close_once(db: Database, username: str, values: dict[str, Any]) -> tuple[int, str]:
    with db.writing() as session:
        row = session.execute(
            update(Account).where(Account.username == username.lower()).values(**values).returning(Account.id)
        ).first()
        if row is None:
            raise NotFound(f"no account named '{username}'")
        account_id = int(row[0])
        for table in (ApiKey, SessionToken, OAuthGrant, IdempotentAnswer, WebhookEndpoint):
            session.execute(delete(table).where(table.account_id == account_id))
        return account_id, username.lower()


def _removal(db: Database, account_id: int, gone: Gone, links: int, clicks: int, hooks: Hooks) -> Iterator[float]:
    """The account's links in batches (each batch's clicks first), then the account: one step a transaction."""
    while batch := _next_links(db, account_id, links):
        ids = [link_id for link_id, _ in batch]
        # Up to the first step that finds none: a short step does not mean none are left, as another worker at the
        # same account (the upkeep of each) may have taken some of its rows.
        done = clicks
        while done:
            began = time.monotonic()
            done = _delete_clicks(db, ids, clicks)
            gone.clicks += done
            yield time.monotonic() - began
        began = time.monotonic()
        gone.links += _delete_links(db, account_id, ids)
        yield time.monotonic() - began
        for _, slug in batch:  # this process's redirect cache; the other workers' entries run out within their TTL
            for hook in hooks:
                hook(slug, None)
    with db.writing() as session:
        session.execute(delete(Account).where(Account.id == account_id))


def _next_links(db: Database, account_id: int, limit: int) -> list[tuple[str, str]]:
    with db.session() as session:
        rows = session.execute(select(Link.id, Link.slug).where(Link.account_id == account_id).limit(limit))
        return [(str(link_id), str(slug)) for link_id, slug in rows]


def _delete_clicks(db: Database, ids: Sequence[str], limit: int) -> int:
    """Up to `limit` clicks of these links, found through the click log's index on (link, time). On SQLite by rowid.
    On PostgreSQL a key join against the partitioned log planned as a hash join reading every partition whole (each
    step as long as the whole log, whoever's clicks it holds): instead the `limit`-th key of these links' clicks is
    found (their clicks only, through each partition's index, keeping `limit` keys at most), and the links' clicks up
    to it go by the index too."""
    with db.writing() as session:
        if db.engine.dialect.name == "sqlite":
            some = select(Click.id).where(Click.link_id.in_(ids)).limit(limit)
            found = session.execute(delete(Click).where(Click.id.in_(some)))
            return int(found.rowcount)  # type: ignore[attr-defined]
        key = (Click.link_id, Click.clicked_at, Click.id)
        last = session.execute(
            select(*key).where(Click.link_id.in_(ids)).order_by(*key).offset(limit - 1).limit(1)
        ).first()
        upto = Click.link_id.in_(ids) if last is None else and_(Click.link_id.in_(ids), tuple_(*key) <= tuple(last))
        found = session.execute(delete(Click).where(upto))
        return int(found.rowcount)  # type: ignore[attr-defined]


def _delete_links(db: Database, account_id: int, ids: Sequence[str]) -> int:
    """The links, their own cubes and the moves their deletion recorded. On PostgreSQL the links' rows are locked in
    id order first, the order the click writer locks them in, so the two never deadlock; and the account is named
    for the transaction (`_DELETING_PG`), so the per-row triggers that would record a cube move and look for a
    webhook endpoint (there is none left) are skipped."""
    with db.writing() as session:
        if db.engine.dialect.name == "postgresql":
            session.execute(select(Link.id).where(Link.id.in_(ids)).order_by(Link.id).with_for_update())
            session.execute(_DELETING_PG, {"account": str(account_id)})
        # `account_id + 0`: the account is checked on each row found by id, never used to find them (SQLite,
        # without statistics, would walk the account's index, every link left, in each batch).
        session.execute(delete(Link).where(Link.id.in_(ids), Link.account_id + 0 == account_id))
        session.execute(delete(CubeMove).where(CubeMove.account_id == account_id, CubeMove.link_id.in_(ids)))
        session.execute(delete(ClickCube).where(ClickCube.account_id == account_id, ClickCube.scope.in_(ids)))
    return len(ids)
