"""Token-bucket rate limits: capacity `per_minute`, refilled at `per_minute / 60` tokens a second (or, with
`period`, `per_minute` tokens every `period` seconds: registrations are counted per hour).

`MemoryRateLimiter` serves one process; `RedisRateLimiter` shares buckets between workers and hosts,
doing the whole read-refill-take step in one Lua script on Redis's clock. `FailOpenRateLimiter` falls back to the
process's own buckets while Redis cannot be reached, and shares again once it answers.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import redis.asyncio as redis

log = logging.getLogger("slugline")


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


class MemoryRateLimiter:
    """Buckets in this process; least recently used ones are dropped past `max_keys`."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, max_keys: int = 10_000) -> None:
        self._clock = clock
        self._max_keys = max_keys
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, updated at)
        self._lock = threading.Lock()

    async def hit(self, key: str, per_minute: int, cost: int = 1, period: float = 60.0) -> Decision:
        _check(per_minute, cost, period)
        with self._lock:
            now = self._clock()
            tokens, updated = self._buckets.pop(key, (float(per_minute), now))
            tokens = min(float(per_minute), tokens + max(0.0, now - updated) * per_minute / period)
            allowed = tokens >= cost
            if allowed:
                tokens -= cost
            if tokens < per_minute:  # a full bucket is the same as no bucket, so only keep partial ones
                self._buckets[key] = (tokens, now)
                if len(self._buckets) > self._max_keys:
                    self._buckets.popitem(last=False)
        return _decide(allowed, tokens, per_minute, cost, period)

    def __len__(self) -> int:
        return len(self._buckets)


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


def make_rate_limiter(redis_url: str | None) -> RateLimiter:
    """Redis-backed (failing open to in-process buckets) when a URL is configured, otherwise in-process."""
    if not redis_url:
        return MemoryRateLimiter()
    return FailOpenRateLimiter(RedisRateLimiter.from_url(redis_url), MemoryRateLimiter())
