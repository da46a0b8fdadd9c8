"""`auto_meta`: fill a new link's title and description from its destination; never fails a create."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from slugline import __version__
from slugline.fetcher import UnsafeURLError, fetch_metadata
from slugline.services.runtime import Runtime

log = logging.getLogger(__name__)
USER_AGENT = f"Slugline/{__version__} (+link preview)"


def autofill(rt: Runtime, fields: dict[str, Any]) -> None:
    """Explicit fields win; a refused or failed fetch leaves the fields as they are."""
    if fields.get("title") and fields.get("description"):
        return
    try:
        meta = asyncio.run(fetch_metadata(fields["destination_url"], allow_networks=rt.fetch_networks(),
                                          user_agent=USER_AGENT))
    except UnsafeURLError as exc:
        log.info("auto_meta skipped: %s", exc)
        return
    except Exception:  # a fetch must never fail the create
        log.exception("auto_meta fetch failed")
        return
    if meta.title and not fields.get("title"):
        fields["title"] = meta.title[:255]
    if meta.description and not fields.get("description"):
        fields["description"] = meta.description[:1024]
