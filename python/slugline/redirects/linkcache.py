"""Slug → plain tuple for the redirect path: a dict read on hits, one indexed SELECT (in a thread) on misses.

No answer is older than `TTL`: an entry is dated from before its SELECT ran, so a change committed by any worker or
host is seen within that time; changes made in this worker drop the entry at once (`invalidate`, registered in
`Runtime.link_hooks`). An entry hit in the last `AHEAD` seconds of its life is read again before it runs out,
together with every other such entry of the next `GATHER` seconds, in one SELECT on one thread: traffic spread over
1,000 links would otherwise cost 1,100 thread hops and SELECTs a second, each fighting the serving thread for the
GIL (`benches/http_redirect.py --links 1000`). A link nobody asks for simply runs out. Unknown slugs are cached the
same way, so a flood of them costs one SELECT per slug per TTL. While the database is unreachable, a slug cached in
the last TTL keeps its last answer (no change can commit meanwhile), so redirects of links in use outlive an outage.

The entries take at most `max_bytes` (`SLUGLINE_LINK_CACHE_BYTES`) and `MAX_ENTRIES`, each counted with its strings:
an entry's size is the link's, not a constant (a destination of 2,036 characters outside the BMP becomes a 24 KB
`Location`, an entry of ~33 KB). They are kept in the order they were read, which with one TTL for all is the order
they run out, so making room drops the expired ones first, then the oldest.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import datetime
from typing import Any, NamedTuple

import orjson
from sqlalchemy import bindparam, select
from sqlalchemy import exc as sa_exc

from slugline import _core
from slugline.common.clock import as_utc
from slugline.common.models import Link
from slugline.common.visibility import Visibility
from slugline.redirects.ends import GUARDED, Life, card_page
from slugline.redirects.urls import ascii_url
from slugline.storage.db import Database, unavailable

TTL = 0.9  # seconds; below the 1 s promise, leaving room for the SELECT itself
AHEAD = 0.3  # seconds before it runs out that a hit has its entry read again, ahead of time
GATHER = 0.05  # seconds a read ahead waits for others to join it
READ_AHEAD_MAX = 500  # slugs in one read ahead's SELECT
MAX_ENTRIES = 100_000
MAX_BYTES = 64 << 20  # the default budget (`Settings.link_cache_bytes`)
# What an entry costs besides its strings: its table slot, the (expiry, Entry) pair, the expiry and the Entry tuple
# (tracemalloc: ~220 bytes, with room for the table's growth; `tests/test_link_cache.py` checks it covers them), and
# up to two (slug, expiry) pairs of the eviction order (~90 bytes each).
ENTRY_BYTES = 460
LIFE_BYTES = 200  # a `Life` tuple, its float and int
RULES_BYTES = 600  # a rule compiled in Rust (its condition lists) and its share of the `Routes` tuples

log = logging.getLogger("slugline.redirect")


class Split(NamedTuple):
    """A link's weighted variants, compiled (`_core.Variants`), with each variant's destination and `Location`."""

    compiled: _core.Variants
    destinations: tuple[str, ...]
    locations: tuple[bytes, ...]


class Routes(NamedTuple):
    """A link's redirect rules, compiled (`_core.RedirectRules`), with each rule's destination and `Location`; and
    its variants, which split the link's own destination among visitors no rule holds for. A link with variants but
    no rules has an empty rule list here: either takes the redirect off the plain path, which stays one check."""

    compiled: _core.RedirectRules
    destinations: tuple[str, ...]
    locations: tuple[bytes, ...]
    needs_country: bool  # `compiled.needs_country`, read here without a call into the core
    split: Split | None = None


class Entry(NamedTuple):
    link_id: str
    destination: str
    visibility: str
    password_hash: str | None
    location: bytes  # the destination as a header value, ready to send
    life: Life | None = None  # the link's end and card (`redirects.ends`), if it has any
    rules: Routes | None = None  # where its rules send visitors, if it has any


def _away(exc: BaseException) -> bool:
    """The store cannot be reached. Not this worker's pool being busy (`TimeoutError`): the store then still takes
    changes from other workers, and a cached answer could be stale."""
    return unavailable(exc) and not isinstance(exc, sa_exc.TimeoutError)


class Missing:
    pass


MISSING = Missing()  # `peek` found nothing fresh; distinct from None, which is a cached "no such link"


_COLUMNS = (
    Link.id,
    Link.destination_url,
    Link.visibility,
    Link.password_hash,
    Link.archived,
    Link.expires_at,
    Link.max_clicks,
    Link.clicks_used,
    Link.expired_url,
    Link.preview,
    Link.rules,
    Link.variants,
)
_SELECT = select(*_COLUMNS).where(Link.slug == bindparam("slug"))
_SELECT_MANY = select(Link.slug, *_COLUMNS).where(Link.slug.in_(bindparam("slugs", expanding=True)))


class LinkCache:
    """Not a `common.bounded.BoundedCache`: every redirect's hit must stay one plain dict read, with no Python call."""

    def __init__(
        self,
        db: Database,
        *,
        ttl: float = TTL,
        clock: Callable[[], float] = time.monotonic,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self._db = db
        self._ttl = ttl
        self._clock = clock
        self._max_bytes = max_bytes
        self._entries: dict[str, tuple[float, Entry | None]] = {}
        # (slug, expiry) in the order stored, the oldest first, with pairs of entries since dropped or stored again
        # skipped when met. Not the dict's own order: taking a dict's first key walks past every slot emptied since
        # its last resize (at the entry cap, a long walk at every store), and an OrderedDict's lookups cost every hit
        # more than a plain dict's.
        self._order: deque[tuple[str, float]] = deque()
        self._bytes = 0
        self.evictions = 0  # entries pushed out to make room (`slugline.metrics`)
        self._lock = threading.RLock()  # `invalidate` runs in other threads: the byte count must not drift
        self._loading: dict[str, asyncio.Task[Entry | None]] = {}
        self._counter = itertools.count(1)
        self._generation = 0
        self._due: set[str] = set()  # slugs to read ahead, gathered until the next read ahead starts
        self._reading_ahead: asyncio.Task[None] | None = None

    def peek(self, slug: str) -> Entry | Missing | None:
        """The cached answer if still fresh, else MISSING. No await, no thread: the hot path."""
        hit = self._entries.get(slug)
        if hit is not None:
            left = hit[0] - self._clock()
            if left > 0:
                if left < AHEAD and slug not in self._due:
                    self._read_ahead(slug)
                return hit[1]
        return MISSING

    async def load(self, slug: str) -> Entry | None:
        """Read the slug from the database; concurrent misses for one slug share a single SELECT."""
        task = self._loading.get(slug)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._fetch(slug))
            self._loading[slug] = task
            task.add_done_callback(lambda done: self._forget(slug, done))
        return await asyncio.shield(task)  # a client hanging up must not cancel the others' lookup

    def invalidate(self, slug: str, old_slug: str | None = None) -> None:
        """A link hook: may run in any thread, after the change committed. Under the lock `_store` checks the
        generation under, so an answer read before the change is either stored before this drops it or not at all."""
        with self._lock:
            self._generation = next(self._counter)
            for name in (slug, old_slug):
                if name is not None:
                    self._drop(name)
                    self._loading.pop(name, None)

    def _forget(self, slug: str, done: asyncio.Task[Entry | None]) -> None:
        if self._loading.get(slug) is done:
            del self._loading[slug]

    async def _fetch(self, slug: str) -> Entry | None:
        started, generation = self._clock(), self._generation
        try:
            entry = await asyncio.to_thread(self._select, slug)
        except Exception as exc:
            kept = self._entries.get(slug)
            if kept is None or not _away(exc) or kept[0] < started - self._ttl:
                raise
            # The store is away, and this answer was read at most two TTLs ago (or kept through the outage since), so
            # no change can have committed since: keep serving it, and try the store again after another TTL rather
            # than on every request. An older answer may predate a change made before the outage, so it is not served.
            self._store(slug, started + self._ttl, kept[1])
            return kept[1]
        self._store(slug, started + self._ttl, entry, generation)  # kept unless a change raced the SELECT
        return entry

    def _read_ahead(self, slug: str) -> None:
        """Have this entry read again before it runs out, with the others due meanwhile (called on the loop)."""
        self._due.add(slug)
        task, loop = self._reading_ahead, asyncio.get_running_loop()
        if task is None or task.done() or task.get_loop() is not loop:
            self._reading_ahead = loop.create_task(self._read_due())

    async def _read_due(self) -> None:
        """Reads the due entries, `GATHER` seconds' worth at a time, until none are due."""
        while True:
            await asyncio.sleep(GATHER)
            if not self._due:
                return
            due, self._due = list(self._due), set()
            for start in range(0, len(due), READ_AHEAD_MAX):
                await self._read_many(due[start : start + READ_AHEAD_MAX])

    async def _read_many(self, slugs: list[str]) -> None:
        started, generation = self._clock(), self._generation
        try:
            found = await asyncio.to_thread(self._select_many, slugs)
        except Exception as exc:  # each entry runs out and is read on its own, as without reading ahead
            log.debug("reading %d links ahead failed: %s", len(slugs), type(exc).__name__)
            return
        for slug in slugs:  # none kept if a change raced the SELECT
            self._store(slug, started + self._ttl, found.get(slug), generation)

    def _select_many(self, slugs: list[str]) -> dict[str, Entry]:
        with self._db.engine.connect() as conn:
            rows = conn.execute(_SELECT_MANY, {"slugs": slugs}).all()
        return {row[0]: made for row in rows if (made := _entry(*row[1:])) is not None}

    def _select(self, slug: str) -> Entry | None:
        with self._db.engine.connect() as conn:
            row = conn.execute(_SELECT, {"slug": slug}).first()
        return None if row is None else _entry(*row)

    def _store(self, slug: str, expires: float, entry: Entry | None, generation: int | None = None) -> None:
        """Keep the answer at the young end, making room within the budget from the old end (the expired first); an
        answer larger than the whole budget is served but not kept, nor one read before a change (`generation`, the
        one its read began in, is no longer current)."""
        cost = _cost(slug, entry)
        with self._lock:
            if generation is not None and generation != self._generation:
                return
            self._drop(slug)
            if cost > self._max_bytes:
                return
            entries = self._entries
            while entries and (self._bytes + cost > self._max_bytes or len(entries) >= MAX_ENTRIES):
                self._drop_oldest()
            entries[slug] = (expires, entry)
            self._bytes += cost
            self._order.append((slug, expires))
            if len(self._order) > 2 * len(entries) + 64:  # mostly skipped pairs: made again from the entries
                self._order = deque((name, hit[0]) for name, hit in entries.items())

    def _drop_oldest(self) -> None:
        while self._order:
            slug, expires = self._order.popleft()
            hit = self._entries.get(slug)
            if hit is not None and hit[0] == expires:
                del self._entries[slug]
                self._bytes -= _cost(slug, hit[1])
                self.evictions += 1
                return

    def _drop(self, slug: str) -> None:
        with self._lock:
            found = self._entries.pop(slug, None)
            if found is not None:
                self._bytes -= _cost(slug, found[1])

    @property
    def bytes(self) -> int:
        """What the entries are counted at."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)


def _cost(slug: str, entry: Entry | None) -> int:
    size = ENTRY_BYTES + sys.getsizeof(slug)
    if entry is not None:
        strings = (entry.link_id, entry.destination, entry.visibility, entry.location, entry.password_hash)
        size += sum(map(sys.getsizeof, strings))
        if entry.life is not None:
            size += LIFE_BYTES + sum(map(sys.getsizeof, (entry.life.expired_location, entry.life.card)))
        if entry.rules is not None:
            size += RULES_BYTES * (1 + len(entry.rules.destinations))
            size += sum(map(sys.getsizeof, (*entry.rules.destinations, *entry.rules.locations)))
            if entry.rules.split is not None:
                size += RULES_BYTES + sum(
                    map(sys.getsizeof, (*entry.rules.split.destinations, *entry.rules.split.locations))
                )
    return size


def _routes(
    rules: list[dict[str, Any]] | str | None, variants: list[dict[str, Any]] | str | None = None
) -> Routes | None:
    """A link's stored rules and variants (JSON text from some drivers), compiled; None for neither."""
    listed: list[dict[str, Any]] = (orjson.loads(rules) if isinstance(rules, str) else rules) or []
    weighted: list[dict[str, Any]] = (orjson.loads(variants) if isinstance(variants, str) else variants) or []
    if not listed and not weighted:
        return None
    split = None
    if weighted:
        targets = tuple(str(variant["to"]) for variant in weighted)
        places = tuple(ascii_url(to).encode("ascii") for to in targets)
        split = Split(_core.Variants(orjson.dumps(weighted).decode()), targets, places)
    destinations = tuple(str(rule["to"]) for rule in listed)
    locations = tuple(ascii_url(to).encode("ascii") for to in destinations)
    compiled = _core.RedirectRules(orjson.dumps(listed).decode())
    return Routes(compiled, destinations, locations, compiled.needs_country, split)


def _entry(
    link_id: str,
    destination: str,
    visibility: str,
    password_hash: str | None,
    archived: bool = False,
    expires_at: datetime | None = None,
    max_clicks: int | None = None,
    clicks_used: int = 0,
    expired_url: str | None = None,
    preview: dict[str, str] | None = None,
    rules: list[dict[str, Any]] | str | None = None,
    variants: list[dict[str, Any]] | str | None = None,
) -> Entry | None:
    """The cached answer for a link's row (None for an archived link: to visitors it does not exist). A link with
    rules keeps its visibility: the shortest path evaluates them too (`Redirects.count`)."""
    if archived:
        return None
    location = ascii_url(destination).encode("ascii")
    routes = _routes(rules, variants)
    if expires_at is None and max_clicks is None and not preview:
        return Entry(link_id, destination, visibility, password_hash, location, None, routes)
    life = Life(
        expires=None if expires_at is None else as_utc(expires_at).timestamp(),
        max_clicks=max_clicks,
        used_up=max_clicks is not None and (clicks_used or 0) >= max_clicks,
        expired_location=None if expired_url is None else ascii_url(expired_url).encode("ascii"),
        card=None if not preview else card_page(preview, destination),
    )
    if visibility in (Visibility.PUBLIC, Visibility.UNLISTED):
        visibility = GUARDED  # off the shortest path, which knows nothing of ends
    return Entry(link_id, destination, visibility, password_hash, location, life, routes)
