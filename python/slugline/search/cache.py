"""The per-account search indexes behind `q` and `/search`: held in the Rust core, one per account and worker,
within a byte budget per worker, kept fresh across workers by `accounts.links_version` and the change feed."""

from __future__ import annotations

import ctypes
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar, cast

from sqlalchemy import Connection, select
from sqlalchemy.orm import Session

from slugline._core import SearchIndex
from slugline.common.clock import epoch_micros
from slugline.common.errors import RateLimited
from slugline.common.models import Account, Link, LinkRecord
from slugline.common.tally import CacheStats
from slugline.common.visibility import PUBLIC_LEVELS
from slugline.search import feed as searchfeed
from slugline.search.queries import Query

T = TypeVar("T")
log = logging.getLogger(__name__)

INDEXED = (
    Link.id,
    Link.slug,
    Link.destination_url,
    Link.title,
    Link.description,
    Link.note,
    Link.hashtags,
    Link.visibility,
    Link.created_at,
)
# Builds and catch-ups take one of these locks, by account id: at most one per account at a time, and a
# fixed number of locks however many accounts come and go.
FLIGHT_LOCKS = 64
# An account's index up to this size is searched on the event loop: a query over it holds the loop about as long as
# a garbage collection's pause. A larger one is searched on a thread, under the account's cap on concurrent queries
# (`limits.querying`): a query's time grows with the links it reads, and on the loop all of it would be time the
# loop serves no one else. The thread path costs each query several times the CPU, so the line is drawn well above
# the accounts most teams have (`benches/inprocess.py` measures the loop's path, `benches/test_search.py` queries
# over 100k links).
LOOP_LINKS = 25_000
# `/search` on the event loop highlights its hits there only up to this much text (bytes of ASCII; other text counts
# eight times, see `SearchIndex.search`): highlighting 100 hits of long accented notes held the loop many times as
# long as the query itself. Past it, the search runs on a thread with the GIL released, as for a large account.
LOOP_HIGHLIGHT_TEXT = 64 * 1024
# A `q` on the event loop checks links' text only up to this much (units of ~8 bytes read, `SearchIndex.filter_page`:
# ~8 MB); past it the query is asked again on a thread, which may read 64 times more before ignoring terms.
LOOP_FILTER_TEXT = 1 << 20
# An account whose index outgrows the budget is answered by a scan: its links read in slices, each indexed on its own
# (at most SLICE_BYTES, or an eighth of the budget) and dropped before the next. A scan costs about what a build does,
# on every query, but holds one slice's index where a build per request held the whole (which grew a worker by many
# times the budget with a few such accounts searching at once). At most BUILDS builds and SCANS scans run at once in a
# worker, so a worker's search memory peaks at the budget plus BUILDS times 1.5 budgets (an index given up on
# while it grows) plus SCANS slices. A build is tried
# again for an oversized account after OVERSIZED_RETRY_SECONDS (its links may have gone).
SLICE_BYTES = 16 << 20
BUILDS = 2
SCANS = 2
SCAN_WAIT_SECONDS = 10.0
SCAN_RETRY_AFTER = 10
OVERSIZED_RETRY_SECONDS = 600.0
OVERSIZED_KEPT = 4096


def index_link(index: SearchIndex, link: Any) -> None:
    """Add or refresh one link; `link` is a Link or a row of the INDEXED columns."""
    index.upsert(
        id=link.id,
        slug=link.slug,
        destination_url=link.destination_url,
        title=link.title,
        description=link.description,
        note=link.note,
        hashtags=list(link.hashtags or ()),
        public=link.visibility in PUBLIC_LEVELS,
        created=epoch_micros(link.created_at),
    )


class _Entry:
    __slots__ = ("bytes", "index", "lock", "version")

    def __init__(self, version: int, index: SearchIndex) -> None:
        self.version = version
        self.index = index
        self.bytes = index.memory_bytes()
        # Serializes writers (which also move `version`); readers need no lock, the index has its own.
        self.lock = threading.Lock()


class SearchCache:
    """Not a `common.bounded.BoundedCache`: an index's bytes are measured in Rust and change after it is stored.

    Account id -> (links_version, SearchIndex), least recently used first out once the indexes together
    hold more than `budget_bytes`. A stale index catches up through the change feed (O(changed links));
    it is rebuilt only when the feed cannot tell, and then by one request while the others wait for it."""

    def __init__(self, budget_bytes: int = 256 << 20) -> None:
        self.budget_bytes = budget_bytes
        self._entries: OrderedDict[int, _Entry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._flights = [threading.Lock() for _ in range(FLIGHT_LOCKS)]
        self.builds = 0  # full loads so far (tests and benchmarks watch it)
        self.scans = 0  # queries answered by a scan
        self.slices = 0  # slices those scans read
        self.hits = self.misses = self.evictions = 0  # `stats`
        # Accounts whose index outgrew the budget, with when (a bounded number, least recent first out).
        self._oversized: OrderedDict[int, float] = OrderedDict()
        self._builds = threading.BoundedSemaphore(BUILDS)
        self._scans = threading.BoundedSemaphore(SCANS)

    @property
    def held_bytes(self) -> int:
        return self._bytes

    def stats(self) -> CacheStats:
        """A search answered from an index held up to date is a hit; one that had to catch up, build or scan a miss."""
        return CacheStats(self.hits, self.misses, self.evictions, self._bytes, len(self._entries))

    def use(self, session: Session | Connection, account_id: int, query: Query[T]) -> T:
        """Answer `query` from the account's index, brought up to the account's current version first; or, for an
        account whose index does not fit the budget, by a scan (`_slices`) that holds a slice's index at a time."""
        version = session.scalar(select(Account.links_version).where(Account.id == account_id)) or 0
        entry = self._get(account_id)
        if entry is None or entry.version < version:
            with self._lock:  # searches run in several threads at once
                self.misses += 1
            entry = self._refresh(session, account_id, version)
        else:
            with self._lock:
                self.hits += 1
        if entry is None:
            return self._scan(session, account_id, query)
        return query.run(entry.index)

    def held(self, account_id: int) -> tuple[int, SearchIndex] | None:
        """The account's index as held (its version, and it), or None: answers from it are exact only if the
        account's links version read with them is not newer (else `use` brings it up). None as well past
        `LOOP_LINKS` links: the event loop's callers then take a thread."""
        entry = self._get(account_id)
        if entry is None or len(entry.index) > LOOP_LINKS:
            return None
        return entry.version, entry.index

    def changed(
        self,
        account_id: int,
        new_version: int,
        link: Link | LinkRecord | None,
        removed_id: str | None = None,
        wait: bool = True,
    ) -> None:
        """Apply this worker's own change in place when the index was exactly one version behind (otherwise
        the next `use` catches up through the feed, as it also does when `wait` is False and a thread holds the
        index)."""
        entry = self._get(account_id, touch=False)
        if entry is None or not entry.lock.acquire(blocking=wait):
            return
        try:
            if entry.version != new_version - 1:
                return
            if link is not None:
                index_link(entry.index, link)
            if removed_id is not None:
                entry.index.remove(removed_id)
            entry.version = new_version
        finally:
            entry.lock.release()
        self._resize(account_id, entry)

    def _get(self, account_id: int, touch: bool = True) -> _Entry | None:
        with self._lock:
            entry = self._entries.get(account_id)
            if entry is not None and touch:
                self._entries.move_to_end(account_id)
            return entry

    def _refresh(self, session: Session | Connection, account_id: int, version: int) -> _Entry | None:
        with self._flights[account_id % FLIGHT_LOCKS]:
            entry = self._get(account_id)
            if entry is not None and entry.version >= version:
                return entry  # brought up to date by the request this one waited for
            if entry is not None:
                feed = searchfeed.changed_since(session, account_id, entry.version, version)
                if feed is not None:
                    self._catch_up(session, account_id, entry, *feed)
                    return entry
            if self._too_large(account_id):
                return None
            return self._build(session, account_id, version)

    def _catch_up(
        self, session: Session | Connection, account_id: int, entry: _Entry, newest: int, ids: set[str]
    ) -> None:
        # `+ 0`: the ids are the key (with the account's index, SQLite reads every link of the account)
        rows = (
            session.execute(select(*INDEXED).where(Link.account_id + 0 == account_id, Link.id.in_(ids))) if ids else ()
        )
        with entry.lock:
            _refresh_links(entry.index, ids, rows)
            entry.version = max(entry.version, newest)
        self._resize(account_id, entry)

    def _build(self, session: Session | Connection, account_id: int, version: int) -> _Entry | None:
        """The account's whole index, kept; None once it outgrows the budget (the account is then scanned, and its
        index not tried again for `OVERSIZED_RETRY_SECONDS`). At most `BUILDS` run at once in a worker, so what
        builds hold beside the budget is bounded however many accounts search at once."""
        with self._builds:
            index = SearchIndex()
            # Streamed: the rows of a big account never sit in memory all at once next to the index they fill.
            rows = select(*INDEXED).where(Link.account_id == account_id).execution_options(yield_per=500)
            # While it grows, buffers hold spare room (up to as much again): measured exactly once shrunk.
            growing = self.budget_bytes * 3 // 2
            result = session.execute(rows)
            try:
                for link in result:
                    index_link(index, link)
                    if index.memory_bytes() > growing:
                        self._give_up(account_id, index.memory_bytes())
                        return None
            finally:
                result.close()
            index.shrink_to_fit()
            _give_back_freed_memory()
            entry = _Entry(version, index)
            self.builds += 1
            if entry.bytes > self.budget_bytes:
                self._give_up(account_id, entry.bytes)
                return None
            self._store(account_id, entry)
            return entry

    def _give_up(self, account_id: int, size: int) -> None:
        log.warning(
            "search index of account %s passed %d bytes, more than SLUGLINE_SEARCH_MEMORY_MB: scanning it instead",
            account_id,
            size,
        )
        with self._lock:
            old = self._entries.pop(account_id, None)
            self._bytes -= old.bytes if old is not None else 0
            self._oversized[account_id] = time.monotonic()
            self._oversized.move_to_end(account_id)
            while len(self._oversized) > OVERSIZED_KEPT:
                self._oversized.popitem(last=False)

    def _too_large(self, account_id: int) -> bool:
        """Whether the account's index outgrew the budget lately (it may have shrunk since: tried again later)."""
        with self._lock:
            since = self._oversized.get(account_id)
            if since is not None and time.monotonic() - since >= OVERSIZED_RETRY_SECONDS:
                del self._oversized[account_id]
                since = None
            return since is not None

    def _scan(self, session: Session | Connection, account_id: int, query: Query[T]) -> T:
        """`query` answered from indexes of consecutive slices of the account's links, read in its page order, one
        slice held at a time. At most `SCANS` at once in a worker; a caller that waits `SCAN_WAIT_SECONDS` for one
        is told to come back (429)."""
        if not self._scans.acquire(timeout=SCAN_WAIT_SECONDS):
            raise RateLimited("searches of accounts too large to keep indexed are all under way", SCAN_RETRY_AFTER)
        try:
            self.scans += 1
            return query.scan(self._slices(session, account_id, query.newest_first))
        finally:
            self._scans.release()

    def _slices(self, session: Session | Connection, account_id: int, newest_first: bool) -> Iterator[SearchIndex]:
        order = (Link.created_at.desc(), Link.id.desc()) if newest_first else (Link.created_at, Link.id)
        rows = select(*INDEXED).where(Link.account_id == account_id).order_by(*order).execution_options(yield_per=500)
        limit = min(SLICE_BYTES, max(self.budget_bytes // 8, 1))
        index = SearchIndex()
        result = session.execute(rows)
        try:
            for link in result:
                index_link(index, link)
                if index.memory_bytes() >= limit:
                    self.slices += 1
                    yield index
                    index = SearchIndex()
        finally:
            result.close()
        if len(index):
            self.slices += 1
            yield index

    def _store(self, account_id: int, entry: _Entry) -> None:
        with self._lock:
            old = self._entries.pop(account_id, None)
            self._bytes -= old.bytes if old is not None else 0
            self._entries[account_id] = entry
            self._bytes += entry.bytes
            self._evict()

    def _resize(self, account_id: int, entry: _Entry) -> None:
        size = entry.index.memory_bytes()
        with self._lock:
            if self._entries.get(account_id) is not entry:
                return  # evicted or replaced meanwhile: not counted
            self._bytes += size - entry.bytes
            entry.bytes = size
            self._evict()

    def _evict(self) -> None:
        """Drops least recently used indexes until the budget holds (caller holds `_lock`)."""
        while self._bytes > self.budget_bytes and self._entries:
            _, old = self._entries.popitem(last=False)
            self._bytes -= old.bytes
            self.evictions += 1


def _load_malloc_trim() -> Callable[[int], int] | None:
    try:
        return cast("Callable[[int], int]", ctypes.CDLL(None).malloc_trim)
    except (OSError, AttributeError, TypeError):  # not glibc (musl, macOS, Windows): nothing to call
        return None


_malloc_trim = _load_malloc_trim()


def _give_back_freed_memory() -> None:
    """Hands the memory a build freed (its growing buffers, copied into their final size by `shrink_to_fit`) back to
    the system: glibc keeps freed memory for reuse, and after a build of random text that was 3-5 MB per 8 MB of text
    on top of the index itself. Once per build: it walks the heap (milliseconds for a large one)."""
    if _malloc_trim is not None:
        _malloc_trim(0)


def _refresh_links(index: SearchIndex, ids: set[str], rows: Iterable[Any]) -> None:
    """Re-index the links `ids` from their current rows; those without a row were deleted."""
    present = set()
    for row in rows:
        index_link(index, row)
        present.add(row.id)
    for link_id in ids - present:
        index.remove(link_id)
