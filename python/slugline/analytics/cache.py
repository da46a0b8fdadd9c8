"""Answers over closed days, kept by each worker within a byte budget (`SLUGLINE_ANALYTICS_CACHE_MB`).

A period's answer is its closed days' (up to the day before yesterday, UTC) added to its recent days', which are
read fresh each time: a year's question then reads two day cubes instead of 365. The closed part of a cube changes
only when the click writer writes a late click or moves a link's cubes (deleted, hidden, shown), and every such
write raises the account's epoch (`slugline.clicks.cubes.save`, `cube_epochs`): an entry is good while its
account's epoch is the one it was made at, read before the cubes it was made from. An answer with cube moves
pending (`analytics.cubes.View.moves`) is not cached at all. Entries are dropped least recently used first once
the budget is full; one larger than an eighth of the budget is not kept.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable
from itertools import islice
from typing import Any

from sqlalchemy.orm import Session

from slugline.analytics import cubes
from slugline.common.tally import CacheStats

# Days back from today (UTC) read fresh: today and yesterday (`clicks.cubes.closed` raises epochs for any earlier
# day, so a write that began yesterday and commits after a read still makes what the read kept stale).
FRESH_DAYS = 2


def last_closed_day() -> int:
    """The latest epoch day an entry may hold."""
    return int(time.time() // 86_400) - FRESH_DAYS


def epoch_of(session: Session, account_id: int) -> int:
    """The account's epoch (`CubeEpoch`; 0 without a row)."""
    found = cubes.query(session, "SELECT epoch FROM cube_epochs WHERE account_id = ?", [account_id])
    return int(found[0][0]) if found else 0


SAMPLED = 16  # items of a container measured; the rest counted as their average


def size_of(value: Any) -> int:
    """Bytes an entry holds, roughly: containers, and the strings, numbers and tuples in them. A container's items
    are alike (a breakdown's rows, every link's clicks): past `SAMPLED` of them the rest are counted as the average
    of those, so sizing a year's answer over 10,000 links costs microseconds, not the milliseconds of visiting them."""
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        items: list[Any] = [item for pair in islice(value.items(), SAMPLED) for item in pair]
        count = len(value)
    elif isinstance(value, list | tuple):
        items, count = list(value[:SAMPLED]), len(value)
    else:
        return size
    if not count:
        return size
    sampled = sum(size_of(item) for item in items)
    return size + sampled * count // min(count, SAMPLED)


class AnswerCache:
    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._entries: OrderedDict[Hashable, tuple[int, Any, int]] = OrderedDict()  # key: (epoch, value, bytes)
        self._bytes = 0
        self._lock = threading.Lock()  # answers are made on worker threads
        self.hits = self.misses = self.evictions = 0

    def get(self, key: Hashable, epoch: int) -> Any | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] != epoch:
                self.misses += 1
                if entry is not None:
                    self._drop(key)
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[1]

    def put(self, key: Hashable, epoch: int, value: Any) -> None:
        size = size_of(value)
        if size > self.budget // 8:
            return
        with self._lock:
            if key in self._entries:
                self._drop(key)
            self._entries[key] = (epoch, value, size)
            self._bytes += size
            while self._bytes > self.budget:
                self._drop(next(iter(self._entries)))
                self.evictions += 1

    def _drop(self, key: Hashable) -> None:
        self._bytes -= self._entries.pop(key)[2]

    @property
    def bytes(self) -> int:
        return self._bytes

    def stats(self) -> CacheStats:
        return CacheStats(self.hits, self.misses, self.evictions, self._bytes, len(self._entries))
