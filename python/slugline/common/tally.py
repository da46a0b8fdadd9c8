"""Event counts kept in this process as plain ints, for the Prometheus families of `slugline.metrics`.

The code that counts pays a dict update; `slugline.metrics` reads the counts once a second (and when it is scraped)
and adds what changed to the shared-memory values every worker writes. A count only grows: the reader works out the
difference itself.
"""

from __future__ import annotations

import threading
from typing import NamedTuple


class Tally:
    """Counts by label; `add` may be called from any thread."""

    __slots__ = ("_lock", "counts")

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def add(self, label: str, n: int = 1) -> None:
        with self._lock:
            self.counts[label] = self.counts.get(label, 0) + n

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self.counts)


class CacheStats(NamedTuple):
    """What every cache reports: lookups answered and not, entries pushed out for room, and what it holds."""

    hits: int
    misses: int
    evictions: int
    bytes: int | None  # None for a cache that does not count its bytes
    entries: int
