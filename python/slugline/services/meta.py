"""`auto_meta`: fill a new link's title and description from its destination; never fails a create."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from slugline.bounds import MAX_DESCRIPTION, MAX_TITLE
from slugline.fetcher import UnsafeURLError, fetch_metadata
from slugline.runtime import Runtime

log = logging.getLogger(__name__)


def autofill(rt: Runtime, fields: dict[str, Any]) -> None:
    """Explicit fields win; a refused or failed fetch leaves the fields as they are."""
    if fields.get("title") and fields.get("description"):
        return
    try:
        meta = asyncio.run(fetch_metadata(fields["destination_url"], allow_networks=rt.fetch_networks()))
    except UnsafeURLError as exc:
        log.info("auto_meta skipped: %s", exc)
        return
    except Exception:  # a fetch must never fail the create
        log.exception("auto_meta fetch failed")
        return
    if meta.title and not fields.get("title"):
        fields["title"] = meta.title[:MAX_TITLE]
    if meta.description and not fields.get("description"):
        fields["description"] = meta.description[:MAX_DESCRIPTION]
