"""`BoundedCache`: a key -> value table of at most `max_entries` entries and `max_bytes` bytes, the oldest (or the least
recently used) going first, safe to use from the event loop and from worker threads at once.

- Size: each entry costs `size(key, value)` bytes, a function of the entry alone (called again when the entry goes, so
  it must give the same answer then). An entry costing more than the whole byte budget is not stored: it would push
  every other entry out, and then itself.
- Order, chosen per cache:
  - `lru=True`: a read that returns an entry makes it the youngest; one entry goes at a time. Reads take the lock.
  - `lru=False`: entries age from when they were stored, and a read is one plain dict lookup with no lock (atomic
    under the GIL), for readers on a hot path. Past a bound, the oldest go a tenth of the bound at a time (only what
    exceeds it, for bounds under ten) and the table is made again from the rest: taking a dict's first key one
    eviction at a time walks past every slot emptied since the table's last resize (a walk that grows with every
    eviction), while a rebuild, needed again only after a tenth of the bound more stores, spreads its one pass over
    the table across them. Readers hold the old table or the new one, both whole.
- The race guard: a value read from the source of truth before an invalidation must not be stored after it. Take
  `epoch` before the read and give it to `put`; `invalidate` bumps the epoch under the lock `put` checks it under, so
  a value read before an invalidation is either stored before the invalidation drops it, or not at all.

Values must not be None: `get` answers None for "not here".
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar, cast

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_NOTHING: object = object()


def _free(_key: object, _value: object) -> int:
    return 0


class BoundedCache(Generic[K, V]):
    def __init__(
        self,
        *,
        max_entries: int | None = None,
        max_bytes: int | None = None,
        size: Callable[[K, V], int] | None = None,
        lru: bool = True,
    ) -> None:
        if max_entries is not None and max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        if max_bytes is not None and (max_bytes < 0 or size is None):
            raise ValueError("max_bytes needs a size function and must not be negative")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.lru = lru
        self._size: Callable[[K, V], int] = _free if size is None else size
        self._data: dict[K, V] = OrderedDict() if lru else {}  # insertion (or use) order is age: oldest first
        self._bytes = 0
        self._epoch = 0
        self._lock = threading.Lock()
        self.evictions = 0  # entries pushed out to make room

    def get(self, key: K, accept: Callable[[V], bool] | None = None) -> V | None:
        """The value under `key`, or None; with `accept`, only a value it accepts (a refused one is neither returned
        nor made the youngest, but is kept)."""
        if not self.lru:
            found = self._data.get(key)
            return found if found is None or accept is None or accept(found) else None
        with self._lock:
            found = self._data.get(key)
            if found is None or (accept is not None and not accept(found)):
                return None
            cast("OrderedDict[K, V]", self._data).move_to_end(key)
            return found

    def peek(self, key: K) -> V | None:
        """The value under `key`, or None, without making it the youngest."""
        return self._data.get(key)

    @property
    def epoch(self) -> int:
        """Taken before reading a value that `put` may store: `put(..., epoch=)` stores nothing once it has moved."""
        return self._epoch

    def put(self, key: K, value: V, *, epoch: int | None = None, replaces: Callable[[V], bool] | None = None) -> bool:
        """Store `value` as the youngest entry, making room from the oldest; whether it was stored. Not stored: a
        value read before an invalidation (`epoch` is no longer current), one too large for the whole byte budget
        (the entry it replaces is dropped all the same), or one the value already held is kept over (`replaces`
        answers False for the held value)."""
        cost = self._size(key, value) if self.max_bytes is not None else 0
        with self._lock:
            if epoch is not None and epoch != self._epoch:
                return False
            data = self._data
            held = data.get(key)
            if held is not None and replaces is not None and not replaces(held):
                return False
            if held is not None:
                del data[key]
                self._bytes -= self._size(key, held) if self.max_bytes is not None else 0
            if self.max_bytes is not None and cost > self.max_bytes:
                return False
            data[key] = value
            self._bytes += cost
            if self.lru:
                self._evict_oldest()
            else:
                self._trim()
            return True

    def discard(self, key: K, value: object = _NOTHING) -> None:
        """Drop the entry under `key`; given `value`, only if that very object is still what is held (an entry
        found stale is dropped without dropping a newer one stored meanwhile)."""
        with self._lock:
            held = self._data.get(key)
            if held is not None and (value is _NOTHING or held is value):
                del self._data[key]
                self._bytes -= self._size(key, held) if self.max_bytes is not None else 0

    def invalidate(self, where: Callable[[K, V], bool]) -> None:
        """Drop the entries `where` accepts, and bump the epoch: nothing read before this is stored after it."""
        with self._lock:
            self._epoch += 1
            stale = [(key, value) for key, value in self._data.items() if where(key, value)]
            for key, value in stale:
                del self._data[key]
                self._bytes -= self._size(key, value) if self.max_bytes is not None else 0

    def ordered_keys(self) -> list[K]:
        """The keys held, the oldest first."""
        with self._lock:
            return list(self._data)

    @property
    def bytes(self) -> int:
        """What the entries held are counted at (0 without a byte budget)."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._data)

    def _over(self, entries: int, used: int) -> bool:
        return (self.max_entries is not None and entries > self.max_entries) or (
            self.max_bytes is not None and used > self.max_bytes
        )

    def _evict_oldest(self) -> None:
        """LRU order (caller holds the lock): the oldest out, one at a time, never the entry just stored."""
        data = cast("OrderedDict[K, V]", self._data)
        while len(data) > 1 and self._over(len(data), self._bytes):
            key, value = data.popitem(last=False)
            self.evictions += 1
            self._bytes -= self._size(key, value) if self.max_bytes is not None else 0

    def _trim(self) -> None:
        """Insertion order (caller holds the lock): past a bound, the oldest out down to a tenth below it, never the
        entry just stored, in a new table."""
        data = self._data
        if not self._over(len(data), self._bytes):
            return
        at_least = 0 if self.max_entries is None else len(data) - (self.max_entries - self.max_entries // 10)
        at_most = len(data) - 1
        if self.max_bytes is None:
            drop = min(max(at_least, 0), at_most)
            self._data = dict(itertools.islice(data.items(), drop, None))
            self.evictions += drop
            return
        keep_bytes = self.max_bytes - self.max_bytes // 10
        drop, used = 0, self._bytes
        for key, value in data.items():
            if drop >= at_most or (drop >= at_least and used <= keep_bytes):
                break
            used -= self._size(key, value)
            drop += 1
        self._data = dict(itertools.islice(data.items(), drop, None))
        self._bytes = used
        self.evictions += drop
