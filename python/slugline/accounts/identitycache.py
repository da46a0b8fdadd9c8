"""Bearer tokens already resolved in this worker: token digest -> Caller, each answer trusted for under a second.

The rule, which README's "Caching" section repeats for operators:
- An entry is trusted for `TRUST_SECONDS` (< 1 s) from the moment the database read behind it *began*, and never
  past a session token's expiry. After that the next request reads the database again. So a key revoked or rotated,
  a session logged out, or a plan changed in another worker or instance (or with the CLI) is seen everywhere within
  a second, with no message between processes: the database is the one source of truth, read at least once a
  second per token in use.
- A write made in this worker (revoke, rotate, logout, password change, plan change) drops the account's entries
  at once, and bumps a generation so that a read which began before the write cannot store its older answer.
- At most `max_entries` entries and `max_bytes` bytes; past either the oldest stored go first, a tenth of the bound
  at a time, the table made again from the rest (`BoundedCache` with `lru=False`: reads are one dict lookup without
  a lock, and a rebuild every thousand stores costs each under a microsecond). An entry is counted at
  `ANSWER_BYTES` and its strings: a few hundred bytes, under `MAX_BASE_URL` characters of base URL. The base comes
  from the request's Host header, which the client chooses (a server accepted one of 400 KB), so a longer one is not
  kept with the entry (`get` puts each request's own on the answer anyway).
- Refusals (401) are remembered for the same trust period, apart from the answers (so refused tokens cannot push
  good ones out), within bounds of their own of the same size. A refused token never becomes valid: keys and session
  tokens are random and made before anyone holds them (a key created a moment ago has never been asked for), and a
  revoked or expired one stays so. Only a refusal is remembered, never a failure to read.

Read from the event loop (no I/O, one short lock), filled from the threads that read the database.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from slugline.common.bounded import BoundedCache
from slugline.common.caller import Caller
from slugline.common.tally import CacheStats

TRUST_SECONDS = 0.5
MAX_ENTRIES = 10_000
MAX_BYTES = 8 << 20  # each table's: 10,000 answers take ~7 MB, ~11 MB with 512-character base URLs
MAX_BASE_URL = 512  # characters of base URL kept with an entry (a DNS name has at most 253)
# What an entry costs besides its strings (tracemalloc: ~260 bytes for an answer's table slot, its (Caller, until)
# pair, the Caller, its datetime and int; ~100 for a refusal's), with room for the table's growth;
# `tests/accounts/test_identity_cache.py` checks they cover them.
ANSWER_BYTES = 360
REFUSAL_BYTES = 150


def _answer_size(digest: str, entry: tuple[Caller, float]) -> int:
    caller = entry[0]
    strings = (digest, caller.username, caller.plan, caller.base_url)
    return ANSWER_BYTES + sum(sys.getsizeof(text) for text in strings)


def _refusal_size(digest: str, entry: tuple[str, float]) -> int:
    return REFUSAL_BYTES + sys.getsizeof(digest) + sys.getsizeof(entry[0])


@dataclass(frozen=True, slots=True)
class Ticket:
    """Taken before the database read whose answer `put` may store."""

    generation: int
    started: float


class IdentityCache:
    def __init__(
        self,
        max_entries: int = MAX_ENTRIES,
        max_bytes: int = MAX_BYTES,
        trust_seconds: float = TRUST_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 < trust_seconds < 1:
            raise ValueError("trust_seconds must be under one second: revocations must reach every worker within 1 s")
        self.max_entries = max_entries
        self.trust_seconds = trust_seconds
        self._clock = clock
        # digest -> (caller, trusted until); the epoch of `_entries` is the generation `forget_account` bumps
        self._entries: BoundedCache[str, tuple[Caller, float]] = BoundedCache(
            max_entries=max_entries, max_bytes=max_bytes, size=_answer_size, lru=False
        )
        # digest -> (the 401's message, trusted until)
        self._refused: BoundedCache[str, tuple[str, float]] = BoundedCache(
            max_entries=max_entries, max_bytes=max_bytes, size=_refusal_size, lru=False
        )
        self.hits = self.misses = 0  # `get` runs on the event loop only: plain ints

    def get(self, digest: str, base_url: str) -> Caller | None:
        """The caller behind the token whose keyed hash is `digest`, if resolved here less than a trust period ago."""
        found = self._entries.get(digest)
        if found is None:
            self.misses += 1
            return None
        caller, until = found
        if self._clock() >= until:
            self._entries.discard(digest, found)
            self.misses += 1
            return None
        self.hits += 1
        return caller if caller.base_url == base_url else replace(caller, base_url=base_url)

    def stats(self) -> CacheStats:
        """Lookups, evictions and entries of resolved tokens (refusals apart); the bytes of both tables."""
        return CacheStats(self.hits, self.misses, self._entries.evictions, self.bytes, len(self._entries))

    @property
    def bytes(self) -> int:
        """What the answers and the refusals held are counted at."""
        return self._entries.bytes + self._refused.bytes

    def ticket(self) -> Ticket:
        return Ticket(self._entries.epoch, self._clock())

    def put(self, digest: str, caller: Caller, ticket: Ticket, valid_for: float | None = None) -> None:
        """Keep `caller`, read from the database after `ticket` was taken, unless a write of this worker has
        invalidated entries since; `valid_for` caps the trust (seconds left of a session token)."""
        trust = self.trust_seconds if valid_for is None else min(self.trust_seconds, valid_for)
        if trust <= 0:
            return
        if len(caller.base_url) > MAX_BASE_URL:
            caller = replace(caller, base_url="")
        self._entries.put(digest, (caller, ticket.started + trust), epoch=ticket.generation)

    def refusal(self, digest: str) -> str | None:
        """The message of the 401 the token whose keyed hash is `digest` got less than a trust period ago, if any."""
        found = self._refused.get(digest)
        if found is None:
            return None
        message, until = found
        if self._clock() >= until:
            self._refused.discard(digest, found)
            return None
        return message

    def refuse(self, digest: str, message: str, ticket: Ticket) -> None:
        """Remember that a read begun at `ticket` refused the token (401, with `message`)."""
        self._refused.put(digest, (message, ticket.started + self.trust_seconds))

    def forget_account(self, account_id: int) -> None:
        """After a write that changes what the account's tokens may do (or whether they work)."""
        self._entries.invalidate(lambda _, entry: entry[0].account_id == account_id)

    def __len__(self) -> int:
        return len(self._entries)
