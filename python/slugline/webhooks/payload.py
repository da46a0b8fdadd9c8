"""A message's body as delivered: `{"type", "timestamp", "data"}`, the same bytes on every try.

A link event's `data` is the link's JSON as the API shows it, made from the columns the trigger kept (its
`status` as of the event); `link.clicked` carries `{"clicks": [...]}`, up to 100 clicks of the account's links, each
with every field of `CLICK_FIELDS` (a message written before clicks had places, or before they were sent with their
variant, gets them as None).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from slugline.links import lifecycle
from slugline.links.service import PLAIN, link_json
from slugline.webhooks.clicks import CLICK_FIELDS
from slugline.webhooks.outbox import CLICKED, Claimed


def body(msg: Claimed) -> bytes:
    when = datetime.fromtimestamp(msg.created_at, UTC)
    stored = orjson.loads(msg.data)
    data: dict[str, Any]
    if msg.type == CLICKED:
        data = {"clicks": [_click(click) for click in stored]}
    else:
        data = link_json(tuple(stored), msg.base_url)
        data.update(lifecycle.lifecycle_json(tuple(stored[PLAIN:]), when))
    stamp = when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return orjson.dumps({"type": msg.type, "timestamp": stamp, "data": data})


def _click(values: list[Any]) -> dict[str, Any]:
    found = dict(zip(CLICK_FIELDS, values, strict=False))
    return {field: found.get(field) for field in CLICK_FIELDS}
