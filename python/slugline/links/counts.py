"""How many links an account has (all of them, or those a public-only key sees), remembered per version of the
account's links.

Every link write bumps `accounts.links_version` in its own transaction, so a count stored with the version it
was read at is exact for as long as the version read by a later request is the same, on any worker or host: a
stale count can never be served. At most `MAX_ENTRIES` counts are kept, the least recently used dropped first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

MAX_ENTRIES = 10_000


class LinkCounts:
    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._max = max_entries
        self._counts: OrderedDict[tuple[int, bool], tuple[int, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, account_id: int, public_only: bool, version: int) -> int | None:
        """The count stored at exactly this version, or None."""
        key = (account_id, public_only)
        with self._lock:
            found = self._counts.get(key)
            if found is None or found[0] != version:
                return None
            self._counts.move_to_end(key)
            return found[1]

    def put(self, account_id: int, public_only: bool, version: int, count: int) -> None:
        key = (account_id, public_only)
        with self._lock:
            found = self._counts.get(key)
            if found is not None and found[0] > version:
                return  # a newer count is already here
            self._counts[key] = (version, count)
            self._counts.move_to_end(key)
            while len(self._counts) > self._max:
                self._counts.popitem(last=False)

    def __len__(self) -> int:
        return len(self._counts)
