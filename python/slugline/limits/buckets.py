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

log = logging.getLogger("slugline")

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

    Not a `common.bounded.BoundedCache`: a bucket still refilling is never evicted, so a flood of keys resets no limit.

    Only buckets that are not full are kept (a full bucket is the same as none), and each goes as soon as it has
    refilled, so the table holds the callers that are spending, not every caller ever seen. A bucket that is not full
    is never dropped to make room: it would come back full, and filling the table (with logins of made-up usernames,
    say) would reset everyone's limits. When the table is full of buckets still refilling, a key without a bucket
    is refused as if its bucket were empty (fail closed, logged once until one is admitted again): its caller waits
    for a moment, where dropping any bucket would hand some caller a full one."""

    def __init__(
        self, *, clock: Callable[[], float] = time.monotonic, max_keys: int = MAX_KEYS, max_bytes: int = MAX_BYTES
    ) -> None:
        self._clock = clock
        self._max_keys = max_keys
        self._max_bytes = max_bytes
        self._buckets: dict[str, _State] = {}
        # (full again at, key), soonest first; an entry whose bucket has changed since is stale and skipped.
        self._refills: list[tuple[float, str]] = []
        self._bytes = 0
        self._refusing = False  # refusing newcomers for want of room (logged once per episode)
        self._lock = threading.Lock()

    async def hit(self, key: str, per_minute: int, cost: int = 1, period: float = 60.0) -> Decision:
        _check(per_minute, cost, period)
        with self._lock:
            now = self._clock()
            self._drop_refilled(now)
            found = self._buckets.get(key)
            if found is None:
                if not self._room_for(key):
                    return _decide(False, 0.0, per_minute, cost, period)
                tokens = float(per_minute)
            else:
                tokens = min(float(per_minute), found[0] + max(0.0, now - found[1]) * per_minute / period)
            allowed = tokens >= cost
            if allowed:
                tokens -= cost
            self._keep(key, found, tokens, now, per_minute, period)
        return _decide(allowed, tokens, per_minute, cost, period)

    def _keep(self, key: str, found: _State | None, tokens: float, now: float, per_minute: int, period: float) -> None:
        """Store the bucket's level after a hit, with when it will be full again; a full one is not kept."""
        if tokens >= per_minute:
            if found is not None:
                del self._buckets[key]
                self._bytes -= _bucket_bytes(key)
            return
        full_at = now + (per_minute - tokens) * period / per_minute
        if found is not None and full_at <= found[2]:  # nothing taken (a refusal): full when the heap says already
            self._buckets[key] = (tokens, now, found[2])
            return
        if found is None:
            self._bytes += _bucket_bytes(key)
        self._buckets[key] = (tokens, now, full_at)
        heapq.heappush(self._refills, (full_at, key))
        if len(self._refills) > 2 * len(self._buckets) + 64:  # stale entries: rebuilt once per table's worth of hits
            self._refills = [(state[2], name) for name, state in self._buckets.items()]
            heapq.heapify(self._refills)

    def _drop_refilled(self, now: float) -> None:
        refills = self._refills
        while refills and refills[0][0] <= now:
            full_at, key = heapq.heappop(refills)
            state = self._buckets.get(key)
            if state is not None and state[2] == full_at:
                del self._buckets[key]
                self._bytes -= _bucket_bytes(key)

    def _room_for(self, key: str) -> bool:
        if len(self._buckets) < self._max_keys and self._bytes + _bucket_bytes(key) <= self._max_bytes:
            self._refusing = False
            return True
        if not self._refusing:
            self._refusing = True
            log.warning(
                "rate-limit table full (%d buckets, %d bytes, none refilled yet): callers without a bucket are refused",
                len(self._buckets),
                self._bytes,
            )
        return False

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


class RedisRateLimiter:
    """Buckets in Redis, so every worker and host draws from the same one."""

    def __init__(self, client: redis.Redis, *, prefix: str = "slugline:rl:") -> None:
        self._client = client
        self._prefix = prefix
        self._script = client.register_script(_SCRIPT)  # EVALSHA, loading the script again on NOSCRIPT

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> RedisRateLimiter:
        # A Redis that is away must cost a request at most about a second, never hang it.
        return cls(redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1), **kwargs)

    async def hit(self, key: str, per_minute: int, cost: int = 1, period: float = 60.0) -> Decision:
        _check(per_minute, cost, period)
        args = [per_minute, cost, round(period * 1_000_000)]
        allowed, tokens = await self._script(keys=[self._prefix + key], args=args)
        return _decide(bool(allowed), float(tokens), per_minute, cost, period)

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
