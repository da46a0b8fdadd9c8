"""Token-bucket rate limits: capacity `per_minute`, refilled at `per_minute / 60` tokens a second (or, with
`period`, `per_minute` tokens every `period` seconds: registrations are counted per hour).

`MemoryRateLimiter` serves one process; `RedisRateLimiter` shares buckets between workers and hosts,
doing the whole read-refill-take step in one Lua script on Redis's clock. `FailOpenRateLimiter` falls back to the
process's own buckets while Redis cannot be reached, and shares again once it answers.
"""

from __future__ import annotations

import heapq
import logging
import math
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import redis.asyncio as redis

from slugline.common.tally import Tally

log = logging.getLogger("slugline")

# Refusals by rule, read by `slugline.metrics`: the rule is the first part of the bucket's key (`limits.rules`).
REFUSALS = Tally()
RULES = {
    "ip": "anonymous",
    "account": "account",
    "login": "login",
    "argon2": "password_hashes",
    "register": "register",
    "fetches": "anonymous_fetches",
    "unlock": "unlock",
    "oauth": "oauth",
    "fetch": "fetch_slots",  # concurrent auto_meta fetches of an account (`limits.gates`)
    "query": "query_slots",  # concurrent expensive queries of an account
}


def refused(key: str) -> None:
    """Count a refusal of the bucket `key` under its rule's name."""
    prefix = key.split(":", 1)[0]
    REFUSALS.add(RULES.get(prefix, prefix))


# What one bucket of the in-process limiter costs besides its key: its table slot, its state (a tuple of three floats)
# and two entries in the refill heap (tracemalloc over 100,000 buckets: 215 bytes with one entry, 303 with two).
BUCKET_BYTES = 320
MAX_BYTES = 16 << 20  # the default budget: some 40,000 buckets of typical keys
MAX_KEYS = 100_000


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset: int  # whole seconds until the bucket is full again
    retry_after: int  # whole seconds (>= 1) until enough tokens are back when refused, else 0

    def headers(self) -> dict[str, str]:
        found = {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset),
        }
        if not self.allowed:
            found["Retry-After"] = str(self.retry_after)
        return found


class RateLimiter(Protocol):
    async def hit(self, key: str, per_minute: int, cost: int = 1, period: float = 60.0) -> Decision: ...

    async def give_back(self, key: str, per_minute: int, cost: int = 1, period: float = 60.0) -> None: ...

    @property
    def crowded(self) -> bool: ...


def _check(per_minute: int, cost: int, period: float) -> None:
    if per_minute < 1:
        raise ValueError("per_minute must be at least 1")
    if cost < 0:
        raise ValueError("cost must not be negative")
    if period <= 0:
        raise ValueError("period must be positive")


def _decide(allowed: bool, tokens: float, per_minute: int, cost: int, period: float) -> Decision:
    """Turn a bucket's level after the hit into the numbers clients see."""
    rate = per_minute / period
    # The small epsilon keeps float noise (59.99999 tokens) from rounding a wait up a whole second.
    reset = math.ceil(max(0.0, per_minute - tokens) / rate - 1e-9)
    retry_after = 0 if allowed else max(1, math.ceil((cost - tokens) / rate - 1e-9))
    return Decision(allowed, per_minute, max(0, math.floor(tokens + 1e-9)), reset, retry_after)


_State = tuple[float, float, float]  # an in-process bucket: tokens, updated at, full again at


class MemoryRateLimiter:
    """Buckets in this process, at most `max_keys` of them in `max_bytes`.

    Not a `common.bounded.BoundedCache`: which bucket goes to make room matters. Only buckets that are not full are
    kept (a full bucket is the same as none), and each goes as soon as it has refilled, so the table holds the callers
    that are spending, not every caller ever seen.

    When the table is full, a newcomer is never refused for want of room (that refused an account's own calls once
    strangers had filled the table with registrations from many addresses). Instead the least useful bucket goes:
    an anonymous one (any key but an account's, `PROTECTED`) before an account's, and of those the one that would be
    full again soonest, which is the one whose caller gains least by finding it full early. So filling the table
    with sign-ins of made-up names (full again within seconds) never frees a registration bucket spent for the hour.
    The IPv6 addresses that name anonymous buckets are taken in wider blocks while the table is `crowded`
    (`slugline.limits.rules.ip_key`), so one network cannot fill it with its many /64s."""

    PROTECTED = "account:"  # the prefix of the buckets that go only when nothing anonymous is left to drop

    def __init__(
        self, *, clock: Callable[[], float] = time.monotonic, max_keys: int = MAX_KEYS, max_bytes: int = MAX_BYTES
    ) -> None:
        self._clock = clock
        self._max_keys = max_keys
        self._max_bytes = max_bytes
        self._buckets: dict[str, _State] = {}
        # Per kind (protected or not): (full again at, key), soonest first; an entry whose bucket has changed since
        # is stale and skipped.
        self._refills: dict[bool, list[tuple[float, str]]] = {False: [], True: []}
        self._bytes = 0
        self._evicting = False  # making room by dropping buckets (logged once per episode)
        self._lock = threading.Lock()

    @property
    def crowded(self) -> bool:
        """Whether the table is at least half full: anonymous buckets are then named by wider address blocks."""
        return 2 * len(self._buckets) >= self._max_keys or 2 * self._bytes >= self._max_bytes

    async def hit(self, key: str, per_minute: int, cost: int = 1, period: float = 60.0) -> Decision:
        decision = self._hit(key, per_minute, cost, period)
        if not decision.allowed:
            refused(key)
        return decision

    def _hit(self, key: str, per_minute: int, cost: int, period: float) -> Decision:
        _check(per_minute, cost, period)
        with self._lock:
            now = self._clock()
            self._drop_refilled(now)
            found = self._buckets.get(key)
            if found is None:
                tokens = float(per_minute)
            else:
                tokens = min(float(per_minute), found[0] + max(0.0, now - found[1]) * per_minute / period)
            allowed = tokens >= cost
            if allowed:
                tokens -= cost
            if found is None and tokens < per_minute and not self._room_for(key):
                return _decide(False, 0.0, per_minute, cost, period)
            self._keep(key, found, tokens, now, per_minute, period)
        return _decide(allowed, tokens, per_minute, cost, period)

    async def give_back(self, key: str, per_minute: int, cost: int = 1, period: float = 60.0) -> None:
        """Return `cost` tokens taken by a call that turned out not to count (a registration refused as a conflict):
        the bucket is as if the call had not been made, and goes if that leaves it full."""
        _check(per_minute, cost, period)
        with self._lock:
            now = self._clock()
            found = self._buckets.get(key)
            if found is None:
                return
            tokens = min(float(per_minute), found[0] + max(0.0, now - found[1]) * per_minute / period + cost)
            self._keep(key, found, tokens, now, per_minute, period, returned=True)

    def _keep(
        self,
        key: str,
        found: _State | None,
        tokens: float,
        now: float,
        per_minute: int,
        period: float,
        *,
        returned: bool = False,
    ) -> None:
        """Store the bucket's level after a hit, with when it will be full again; a full one is not kept."""
        if tokens >= per_minute:
            if found is not None:
                del self._buckets[key]
                self._bytes -= _bucket_bytes(key)
            return
        full_at = now + (per_minute - tokens) * period / per_minute
        if found is not None and full_at <= found[2] and not returned:  # a refusal: full when the heap says already
            self._buckets[key] = (tokens, now, found[2])
            return
        if found is None:
            self._bytes += _bucket_bytes(key)
        self._buckets[key] = (tokens, now, full_at)
        refills = self._refills[key.startswith(self.PROTECTED)]
        heapq.heappush(refills, (full_at, key))
        if len(refills) > 2 * len(self._buckets) + 64:  # stale entries: rebuilt once per table's worth of hits
            self._rebuild_refills()

    def _rebuild_refills(self) -> None:
        self._refills = {False: [], True: []}
        for name, state in self._buckets.items():
            self._refills[name.startswith(self.PROTECTED)].append((state[2], name))
        for refills in self._refills.values():
            heapq.heapify(refills)

    def _drop_refilled(self, now: float) -> None:
        for refills in self._refills.values():
            while refills and refills[0][0] <= now:
                self._pop(refills)

    def _pop(self, refills: list[tuple[float, str]]) -> bool:
        """Take the soonest entry off a refill heap, dropping its bucket if the entry is current."""
        full_at, key = heapq.heappop(refills)
        state = self._buckets.get(key)
        if state is None or state[2] != full_at:
            return False
        del self._buckets[key]
        self._bytes -= _bucket_bytes(key)
        return True

    def _room_for(self, key: str) -> bool:
        """Make room for `key`'s bucket by dropping others: anonymous ones first, soonest full first, and an account's
        only for another account's. False only when the table holds nothing else it may drop (a table full of
        accounts' buckets refuses an anonymous newcomer, as if its bucket were empty)."""
        need = _bucket_bytes(key)
        dropped = 0
        for protected in (False, True) if key.startswith(self.PROTECTED) else (False,):
            refills = self._refills[protected]
            while refills and (len(self._buckets) >= self._max_keys or self._bytes + need > self._max_bytes):
                dropped += self._pop(refills)
        if dropped and not self._evicting:
            self._evicting = True
            log.warning(
                "rate-limit table full (%d buckets, %d bytes): the buckets soonest full again make room",
                len(self._buckets),
                self._bytes,
            )
        elif not dropped:
            self._evicting = False
        return len(self._buckets) < self._max_keys and self._bytes + need <= self._max_bytes

    def __len__(self) -> int:
        return len(self._buckets)

    @property
    def bytes(self) -> int:
        """The bytes the buckets are counted at."""
        return self._bytes


# KEYS[1] bucket; ARGV capacity, cost, period in microseconds.
# Returns {allowed, tokens as a string (Lua numbers would be truncated)}.
_SCRIPT = """
local capacity = tonumber(ARGV[1])
local cost = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000000 + tonumber(now_parts[2])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - at) * capacity / period)
local allowed = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'at', string.format('%d', now))
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) * period / 1000 / capacity) + 1000)
return {allowed, string.format('%.17g', tokens)}
"""


# The same bucket given `cost` tokens back (ARGV as above); a bucket full again is deleted.
_GIVE_BACK = """
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
if not state[1] then return 0 end
local capacity = tonumber(ARGV[1])
local period = tonumber(ARGV[3])
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) * 1000000 + tonumber(now_parts[2])
local tokens = math.min(capacity, tonumber(state[1]) + math.max(0, now - tonumber(state[2])) * capacity / period
  + tonumber(ARGV[2]))
if tokens >= capacity then
  redis.call('DEL', KEYS[1])
  return 1
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'at', string.format('%d', now))
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) * period / 1000 / capacity) + 1000)
return 1
"""


class RedisRateLimiter:
    """Buckets in Redis, so every worker and host draws from the same one."""

    def __init__(self, client: redis.Redis, *, prefix: str = "slugline:rl:") -> None:
        self._client = client
        self._prefix = prefix
        self._script = client.register_script(_SCRIPT)  # EVALSHA, loading the script again on NOSCRIPT
        self._give_back = client.register_script(_GIVE_BACK)

    crowded = False  # Redis keeps what it is given; its own memory limits are its operator's

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> RedisRateLimiter:
        # A Redis that is away must cost a request at most about a second, never hang it.
        return cls(redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1), **kwargs)

    async def hit(self, key: str, per_minute: int, cost: int = 1, period: float = 60.0) -> Decision:
        _check(per_minute, cost, period)
        args = [per_minute, cost, round(period * 1_000_000)]
        allowed, tokens = await self._script(keys=[self._prefix + key], args=args)
        if not allowed:
            refused(key)
        return _decide(bool(allowed), float(tokens), per_minute, cost, period)

    async def give_back(self, key: str, per_minute: int, cost: int = 1, period: float = 60.0) -> None:
        _check(per_minute, cost, period)
        await self._give_back(keys=[self._prefix + key], args=[per_minute, cost, round(period * 1_000_000)])

    async def aclose(self) -> None:
        await self._client.aclose()


class FailOpenRateLimiter:
    """Shared buckets while Redis answers; this process's own buckets while it does not (fail-open: an outage of
    the limiter's store must not take the API down, and each worker still enforces its own limit meanwhile)."""

    RETRY_SECONDS = 1.0  # how long to stay on local buckets before trying Redis again

    def __init__(
        self, shared: RedisRateLimiter, local: MemoryRateLimiter, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._shared, self._local, self._clock = shared, local, clock
        self._local_until: float | None = None  # set while Redis is away

    async def hit(self, key: str, per_minute: int, cost: int = 1, period: float = 60.0) -> Decision:
        if self._local_until is not None and self._clock() < self._local_until:
            return await self._local.hit(key, per_minute, cost, period)
        try:
            decision = await self._shared.hit(key, per_minute, cost, period)
        except (redis.RedisError, OSError) as exc:
            if self._local_until is None:
                log.warning("Redis unreachable (%s): rate limits fall back to this worker's own buckets", exc)
            self._local_until = self._clock() + self.RETRY_SECONDS
            return await self._local.hit(key, per_minute, cost, period)
        if self._local_until is not None:
            log.warning("Redis answers again: rate limits are shared again")
            self._local_until = None
        return decision

    @property
    def crowded(self) -> bool:
        return self._local_until is not None and self._local.crowded

    async def give_back(self, key: str, per_minute: int, cost: int = 1, period: float = 60.0) -> None:
        """To whichever store the call was taken from as far as anyone can tell: the local buckets while Redis is
        away, else Redis (a failure to give back is only logged: the caller waits a little longer)."""
        if self._local_until is not None:
            await self._local.give_back(key, per_minute, cost, period)
            return
        try:
            await self._shared.give_back(key, per_minute, cost, period)
        except (redis.RedisError, OSError) as exc:
            log.warning("Redis unreachable (%s): a refused call's token was not given back", exc)

    async def aclose(self) -> None:
        await self._shared.aclose()


def _bucket_bytes(key: str) -> int:
    return BUCKET_BYTES + sys.getsizeof(key)


def make_rate_limiter(redis_url: str | None, max_bytes: int = MAX_BYTES) -> RateLimiter:
    """Redis-backed (failing open to in-process buckets) when a URL is configured, otherwise in-process; the
    in-process buckets within `max_bytes`."""
    local = MemoryRateLimiter(max_bytes=max_bytes)
    if not redis_url:
        return local
    return FailOpenRateLimiter(RedisRateLimiter.from_url(redis_url), local)
