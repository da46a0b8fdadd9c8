"""`link.clicked` messages, written by the click writer in the transaction of the click batch they carry
(`clicks.store.write_batch`): committed with the clicks, or not at all.

Each endpoint of an account that wants `link.clicked` gets one message per `PER_MESSAGE` of the account's clicks
in the batch. The endpoints are looked up in that transaction (a handful of rows), so one made a moment ago hears
of the next batch. The visitor hash is not sent: it is the service's own pseudonym, not the account's. A click's
place (country, region, city) is sent as the click writer stored it, each None where unknown, and so is its variant
(the index of the link's variant it was sent to, None for none).
"""

from __future__ import annotations

import secrets
import time
from collections import defaultdict
from typing import Any

import orjson
from sqlalchemy import Connection, insert, select

from slugline import _core
from slugline.webhooks.outbox import CLICKED, ENDPOINTS, MESSAGES

PER_MESSAGE = 100
CLICK_FIELDS = (
    *("link_id", "clicked_at", "device", "browser", "os", "source", "referrer"),
    *("country", "region", "city", "variant"),
)
# Values of a click in `EncodedClicks.values` (`clicks.store.ROW_VALUES`): the first 7 fields, the visitor hash (not
# sent), then the place, then the variant.
ROW_VALUES = 12
SENT = (*range(7), 8, 9, 10, 11)
_WANTED = select(ENDPOINTS.c.id, ENDPOINTS.c.account_id).where(
    ENDPOINTS.c.enabled, ENDPOINTS.c.events.like(f"%,{CLICKED},%")
)


def clicks_written(conn: Connection, encoded: _core.EncodedClicks, owners: dict[str, tuple[int, bool]]) -> int:
    """Adds the batch's messages (on the batch's connection, in its transaction); the number written."""
    endpoints: dict[int, list[str]] = defaultdict(list)
    for endpoint_id, account_id in conn.execute(_WANTED):
        endpoints[int(account_id)].append(endpoint_id)
    if not endpoints:
        return 0
    links: dict[int, set[str]] = defaultdict(set)
    for link, (account, _) in owners.items():
        if account in endpoints:
            links[account].add(link)
    now = time.time()
    rows = []
    for account, kept in links.items():
        for values in encoded.values(kept, PER_MESSAGE):
            clicks: list[list[Any]] = [[values[i + j] for j in SENT] for i in range(0, len(values), ROW_VALUES)]
            for click in clicks:
                at = str(click[1])
                click[1] = f"{at[:10]}T{at[11:]}Z"
            data = orjson.dumps(clicks).decode()
            rows += [_message(endpoint_id, account, data, now) for endpoint_id in endpoints[account]]
    if rows:
        conn.execute(insert(MESSAGES), rows)
    return len(rows)


def _message(endpoint_id: str, account_id: int, data: str, now: float) -> dict[str, object]:
    return {
        "id": "msg_" + secrets.token_hex(12),
        "endpoint_id": endpoint_id,
        "account_id": account_id,
        "type": CLICKED,
        "data": data,
        "created_at": now,
        "due_at": now,
        "attempts": 0,
        "delivered_at": None,
    }
