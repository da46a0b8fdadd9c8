"""`link.expired` messages: no write happens when a link's `expires_at` passes, so the deliverer looks.

Each endpoint that wants the event remembers up to when it has been told (`expired_through`); a scan takes the
endpoint's row (PostgreSQL: `FOR UPDATE SKIP LOCKED`, so one worker scans it; SQLite: under the writer lock),
writes a message for each of the account's links whose `expires_at` fell since, and moves the mark on, in one
transaction: each expiry is told once.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any, cast

import orjson
from sqlalchemy import insert, select, update

from slugline.common.models import Link
from slugline.links.service import SHOWN
from slugline.storage.db import Database
from slugline.webhooks.outbox import ENDPOINTS, MESSAGES

EXPIRED = "link.expired"
MAX_PER_SCAN = 1000  # links told of per endpoint and scan; the mark moves only as far as those


def _value(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def scan(db: Database, now: float) -> int:
    """Writes the messages of links expired since each endpoint's mark; the number written."""
    e = ENDPOINTS.c
    due = (e.enabled, e.events.like(f"%,{EXPIRED},%"), e.expired_through < now)
    with db.reading() as conn:  # most scans find no such endpoint: no write transaction for that
        if conn.execute(select(e.id).where(*due).limit(1)).first() is None:
            return 0
    wanted = select(e.id, e.account_id, e.expired_through).where(*due).limit(100)
    if db.engine.dialect.name == "postgresql":
        wanted = wanted.with_for_update(skip_locked=True)
    written = 0
    with db.writing() as session:
        conn = session.connection()
        for endpoint_id, account_id, through in conn.execute(wanted).all():
            since, until = datetime.fromtimestamp(through, UTC), datetime.fromtimestamp(now, UTC)
            rows = conn.execute(
                select(*SHOWN)
                .where(Link.account_id == account_id, Link.expires_at > since, Link.expires_at <= until)
                .order_by(Link.expires_at)
                .limit(MAX_PER_SCAN)
            ).all()
            mark = now
            if len(rows) == MAX_PER_SCAN:
                last = cast(datetime, rows[-1][SHOWN.index(Link.expires_at)])
                mark = (last if last.tzinfo else last.replace(tzinfo=UTC)).timestamp()
            messages = [
                {
                    "id": "msg_" + secrets.token_hex(12),
                    "endpoint_id": endpoint_id,
                    "account_id": account_id,
                    "type": EXPIRED,
                    "data": orjson.dumps([_value(v) for v in row]).decode(),
                    "created_at": now,
                    "due_at": now,
                    "attempts": 0,
                    "delivered_at": None,
                }
                for row in rows
            ]
            if messages:
                conn.execute(insert(MESSAGES), messages)
            conn.execute(update(ENDPOINTS).where(e.id == endpoint_id).values(expired_through=mark))
            written += len(messages)
    return written
