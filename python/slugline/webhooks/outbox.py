"""The outbox's claims and outcomes: which worker delivers which message, and what became of it.

A claim moves a due message's `due_at` on by a lease (and counts the attempt) in one short transaction: on
PostgreSQL the rows are taken `FOR UPDATE SKIP LOCKED`, so workers and instances claiming together each get other
rows and never wait on one another; on SQLite the claim runs under the writer lock every worker shares. A worker
killed mid-delivery leaves its messages to be claimed again when the lease runs out (at-least-once; the message id
stays the same, so the receiver drops repeats). `link.clicked` messages of an endpoint are claimed one at a time: a
claim holds the endpoint's click turn for the lease, and the outcome gives it back `webhooks_click_interval_seconds`
after the endpoint answered, so its receiver sees one delivery start at least an interval after the last one ended,
however long each took and however late a claim ran (a kill -9 mid-delivery leaves the turn to the lease). An
account with `webhooks_concurrency` deliveries under way in this worker is left out of its claims, so one slow
endpoint holds back no other account.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Connection, Table, and_, delete, false, func, insert, not_, or_, select, update

from slugline.common.models import WebhookAttempt, WebhookEndpoint, WebhookMessage
from slugline.settings import Settings
from slugline.storage.db import Database

MESSAGES = cast(Table, WebhookMessage.__table__)
ENDPOINTS = cast(Table, WebhookEndpoint.__table__)
ATTEMPTS = cast(Table, WebhookAttempt.__table__)
KEPT_ATTEMPTS = 100
KEPT_SECONDS = 3 * 86400  # parked messages (a disabled endpoint's) and any delivered one left are kept this long
CLICKED = "link.clicked"
MAX_ERROR = 300
# What became of an attempt (`finish`), one each, as `slugline_webhook_deliveries_total` counts them: a 2xx; a
# failure due again after the back-off; a failure that disabled its endpoint (failing for the give-up time); a
# failure nothing follows from here (the endpoint deleted meanwhile, or the outcome not written: then the message is
# claimed again when its lease runs out).
DELIVERED, RETRIED, DISABLED, FAILED = "delivered", "retried", "disabled", "failed"
OUTCOMES = (DELIVERED, FAILED, RETRIED, DISABLED)


@dataclass(frozen=True, slots=True)
class Claimed:
    id: str
    endpoint_id: str
    account_id: int
    type: str
    data: str
    created_at: float
    attempts: int  # this one included
    url: str
    secret_salt: str
    base_url: str


def lease_seconds(settings: Settings) -> float:
    """How long a claim holds a message: past any delivery's timeout, with room for the outcome's write."""
    return settings.webhooks_timeout_seconds * 2 + 5


def anything_due(db: Database, now: float) -> bool:
    """A cheap read first: most looks find nothing, and need no write transaction (nor SQLite's writer lock)."""
    with db.reading() as conn:
        found = conn.execute(select(MESSAGES.c.id).where(MESSAGES.c.due_at <= now).limit(1)).first()
    return found is not None


def claim(
    db: Database, settings: Settings, now: float, limit: int, busy: Mapping[int, int] | Collection[int]
) -> list[Claimed]:
    """Up to `limit` due messages of enabled endpoints, now this worker's: for each account, no more than
    `webhooks_concurrency` less its deliveries under way in this worker (`busy`: account -> how many; a collection
    of accounts: at their cap)."""
    cap = settings.webhooks_concurrency
    under_way = dict(busy) if isinstance(busy, Mapping) else dict.fromkeys(busy, cap)
    full = [account for account, n in under_way.items() if n >= cap]
    m, e = MESSAGES.c, ENDPOINTS.c
    paced = and_(m.type == CLICKED, e.click_due > now)
    stmt = (
        select(m.id, m.endpoint_id, m.account_id, m.type, m.data, m.created_at, m.attempts, e.url, e.secret_salt)
        .add_columns(e.base_url)
        .join_from(MESSAGES, ENDPOINTS, e.id == m.endpoint_id)
        .where(m.due_at <= now, e.enabled, not_(paced))
        .order_by(m.due_at)
        .limit(limit)
    )
    if full:
        stmt = stmt.where(m.account_id.not_in(full))
    if db.engine.dialect.name == "postgresql":
        stmt = stmt.with_for_update(of=MESSAGES, skip_locked=True)
    with db.writing() as session:
        conn = session.connection()
        rows = conn.execute(stmt).all()
        chosen: list[Any] = []
        clicks_taken: set[str] = set()
        for row in rows:
            if under_way.get(row.account_id, 0) >= cap:
                continue  # left for a later claim (its lock goes with this transaction)
            if row.type == CLICKED:
                if row.endpoint_id in clicks_taken or not _pace(conn, row.endpoint_id, now, settings):
                    continue
                clicks_taken.add(row.endpoint_id)
            under_way[row.account_id] = under_way.get(row.account_id, 0) + 1
            chosen.append(row)
        if chosen:
            conn.execute(
                update(MESSAGES)
                .where(m.id.in_([row.id for row in chosen]))
                .values(due_at=now + lease_seconds(settings), attempts=m.attempts + 1)
            )
    return [Claimed(*row[:6], row.attempts + 1, *row[7:]) for row in chosen]  # type: ignore[call-arg]


def _pace(conn: Connection, endpoint_id: str, now: float, settings: Settings) -> bool:
    """Takes the endpoint's next `link.clicked` turn, if it has come (one worker gets it), until `finish` gives it
    back; `now` may be late (a claim that waited for the writer lock), which only makes the check stricter."""
    done = conn.execute(
        update(ENDPOINTS)
        .where(ENDPOINTS.c.id == endpoint_id, ENDPOINTS.c.click_due <= now)
        .values(click_due=now + lease_seconds(settings))
    )
    return bool(getattr(done, "rowcount", 0))


def back_off(settings: Settings, attempts: int) -> float:
    """Seconds before the next try after `attempts` failed ones: doubling from `webhooks_retry_seconds`, at most
    `webhooks_retry_max_seconds`, with a tenth of jitter so that a recovered endpoint is not hit all at once."""
    base = min(settings.webhooks_retry_max_seconds, settings.webhooks_retry_seconds * 2 ** min(attempts - 1, 40))
    return float(base) * random.uniform(0.9, 1.1)


def finish(
    db: Database, settings: Settings, msg: Claimed, now: float, status: int | None, error: str | None, ms: int
) -> str:
    """Records the attempt (`now`: a clock read after the endpoint answered or the attempt failed): delivered (a 2xx),
    or due again after the back-off. An endpoint that has failed every
    delivery for `webhooks_give_up_seconds` is disabled, and its waiting messages parked. The outcome (`OUTCOMES`)."""
    ok = status is not None and 200 <= status < 300 and error is None
    outcome = DELIVERED if ok else RETRIED
    m, e = MESSAGES.c, ENDPOINTS.c
    with db.writing() as session:
        conn = session.connection()
        if conn.execute(select(e.id).where(e.id == msg.endpoint_id)).first() is None:
            return DELIVERED if ok else FAILED  # deleted meanwhile, with its messages
        if msg.type == CLICKED:  # the click turn, from when the endpoint answered (`now`: read after its answer)
            turn = now + settings.webhooks_click_interval_seconds
            conn.execute(update(ENDPOINTS).where(e.id == msg.endpoint_id).values(click_due=turn))
        if ok:
            conn.execute(update(MESSAGES).where(m.id == msg.id).values(due_at=None, delivered_at=now))
            conn.execute(
                update(ENDPOINTS)
                .where(e.id == msg.endpoint_id, e.failing_since.is_not(None))
                .values(failing_since=None)
            )
        else:
            retry = now + back_off(settings, msg.attempts)
            conn.execute(update(MESSAGES).where(m.id == msg.id, m.delivered_at.is_(None)).values(due_at=retry))
            # The endpoint's other messages due now wait with it: a failing receiver gets a few tries per back-off,
            # not one per waiting message (each of which could hold a delivery slot for the whole timeout).
            waiting = (m.endpoint_id == msg.endpoint_id, m.due_at <= now, m.delivered_at.is_(None))
            conn.execute(update(MESSAGES).where(*waiting).values(due_at=retry))
            conn.execute(
                update(ENDPOINTS).where(e.id == msg.endpoint_id, e.failing_since.is_(None)).values(failing_since=now)
            )
            since = conn.execute(select(e.failing_since).where(e.id == msg.endpoint_id)).scalar()
            if since is not None and since <= now - settings.webhooks_give_up_seconds:
                disable(conn, msg.endpoint_id, now)
                outcome = DISABLED
        conn.execute(
            insert(ATTEMPTS).values(
                endpoint_id=msg.endpoint_id,
                message_id=msg.id,
                type=msg.type,
                attempted_at=now,
                status=status,
                error=(error or None) and error[:MAX_ERROR],
                ms=ms,
            )
        )
        _trim(conn, msg.endpoint_id)
    return outcome


def disable(conn: Connection, endpoint_id: str, now: float) -> None:
    hours = "every delivery failed for 24 hours"
    conn.execute(
        update(ENDPOINTS)
        .where(ENDPOINTS.c.id == endpoint_id)
        .values(enabled=false(), disabled_reason=f"{hours}: fix the receiver, then turn the endpoint back on")
    )
    conn.execute(
        update(MESSAGES)
        .where(MESSAGES.c.endpoint_id == endpoint_id, MESSAGES.c.delivered_at.is_(None))
        .values(due_at=None)
    )


def _trim(conn: Connection, endpoint_id: str) -> None:
    """The endpoint's delivery log keeps its last `KEPT_ATTEMPTS` attempts; a delivered message leaves the outbox with
    the last attempt that names it (nothing could send it again), so the outbox holds what waits and what the log
    shows, not every event ever delivered."""
    a, m = ATTEMPTS.c, MESSAGES.c
    oldest_kept = (
        select(a.id).where(a.endpoint_id == endpoint_id).order_by(a.id.desc()).offset(KEPT_ATTEMPTS - 1).limit(1)
    ).scalar_subquery()
    gone = conn.execute(
        delete(ATTEMPTS).where(a.endpoint_id == endpoint_id, a.id < oldest_kept).returning(a.message_id)
    ).scalars()
    ids = set(gone)
    if ids:
        still_shown = select(a.message_id).where(a.endpoint_id == endpoint_id)
        conn.execute(delete(MESSAGES).where(m.id.in_(ids), m.delivered_at.is_not(None), m.id.not_in(still_shown)))


def pending(db: Database) -> int:
    """Messages waiting in the outbox: due now or later (claimed, or after a back-off); parked ones not counted."""
    with db.reading() as conn:
        return int(
            conn.execute(select(func.count()).select_from(MESSAGES).where(MESSAGES.c.due_at.is_not(None))).scalar() or 0
        )


def prune(db: Database, now: float) -> int:
    """Messages delivered or parked more than `KEPT_SECONDS` ago leave the outbox (the deliverer calls it now and
    then; delivered messages mostly leave with their last attempt in the log, `_trim`)."""
    m = MESSAGES.c
    old = and_(m.due_at.is_(None), or_(m.delivered_at < now - KEPT_SECONDS, m.created_at < now - KEPT_SECONDS))
    with db.reading() as conn:  # most of the time there are none: no write transaction (nor writer lock) for that
        if conn.execute(select(m.id).where(old).limit(1)).first() is None:
            return 0
    with db.writing() as session:
        done = session.execute(delete(MESSAGES).where(old))
        return int(getattr(done, "rowcount", 0) or 0)
