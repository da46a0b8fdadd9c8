"""The token-bucket limiters: in memory (on a fake clock) and in Redis (shared between instances)."""

import tracemalloc
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
import redis.asyncio as redis

from slugline.limits.buckets import (
    BUCKET_BYTES,
    Decision,
    FailOpenRateLimiter,
    MemoryRateLimiter,
    RateLimiter,
    RedisRateLimiter,
    make_rate_limiter,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class RedisCase:
    client: redis.Redis
    prefix: str  # unique per test, so tests never share buckets

    def limiter(self) -> RedisRateLimiter:
        return RedisRateLimiter(self.client, prefix=self.prefix)


@pytest.fixture
async def rds(redis_url: str) -> AsyncIterator[RedisCase]:
    client = redis.Redis.from_url(redis_url, socket_connect_timeout=2, socket_timeout=5)
    prefix = f"slugline:rl:test:{uuid.uuid4().hex}:"
    try:
        yield RedisCase(client, prefix)
        keys = [key async for key in client.scan_iter(match=prefix + "*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


async def burst(limiter: RateLimiter, key: str, per_minute: int, count: int) -> list[Decision]:
    return [await limiter.hit(key, per_minute) for _ in range(count)]


async def check_burst_refused(limiter: RateLimiter) -> None:
    decisions = await burst(limiter, "key-a", 5, 6)
    assert [d.allowed for d in decisions] == [True] * 5 + [False]
    assert [d.remaining for d in decisions] == [4, 3, 2, 1, 0, 0]
    refused = decisions[-1]
    assert refused.retry_after >= 1 and refused.retry_after <= 12  # one token every 12 s
    assert refused.reset <= 60
    assert refused.headers() == {
        "RateLimit-Limit": "5",
        "RateLimit-Remaining": "0",
        "RateLimit-Reset": str(refused.reset),
        "Retry-After": str(refused.retry_after),
    }
    first = decisions[0]
    assert first.retry_after == 0 and "Retry-After" not in first.headers()
    assert first.headers()["RateLimit-Remaining"] == "4"
    other = await limiter.hit("key-b", 5)
    assert other.allowed and other.remaining == 4


@pytest.mark.anyio
async def test_memory_burst_past_limit_is_refused() -> None:
    await check_burst_refused(MemoryRateLimiter(clock=FakeClock()))


@pytest.mark.anyio
async def test_memory_bucket_refills_with_time() -> None:
    clock = FakeClock()
    limiter = MemoryRateLimiter(clock=clock)
    await burst(limiter, "k", 60, 60)
    refused = await limiter.hit("k", 60)
    assert (refused.allowed, refused.retry_after, refused.reset) == (False, 1, 60)
    clock.now += 1
    assert (await limiter.hit("k", 60)).allowed
    assert not (await limiter.hit("k", 60)).allowed
    clock.now += 30
    decision = await limiter.hit("k", 60, cost=10)
    assert (decision.allowed, decision.remaining, decision.reset) == (True, 20, 40)
    clock.now += 3600
    assert (await limiter.hit("k", 60)).remaining == 59  # capped at capacity, not 3600 tokens


@pytest.mark.anyio
async def test_memory_retry_after_covers_the_cost() -> None:
    limiter = MemoryRateLimiter(clock=FakeClock())
    await burst(limiter, "k", 6, 6)  # one token every 10 s
    refused = await limiter.hit("k", 6, cost=3)
    assert (refused.allowed, refused.retry_after) == (False, 30)


@pytest.mark.anyio
async def test_memory_limiter_memory_is_bounded() -> None:
    clock = FakeClock()
    limiter = MemoryRateLimiter(clock=clock, max_keys=100)
    for i in range(1000):
        await limiter.hit(f"key-{i}", 10)
    assert len(limiter) == 100
    await limiter.hit("full", 10, cost=0)
    assert len(limiter) == 100  # full buckets are not stored at all
    small = MemoryRateLimiter(clock=clock, max_bytes=20_000)
    for i in range(1000):
        await small.hit(f"login:203.0.113.9:{'x' * 200}{i}", 10)
    assert small.bytes <= 20_000 and 0 < len(small) < 40  # long keys count for what they take


@pytest.mark.anyio
async def test_filling_the_table_never_resets_a_spent_bucket() -> None:
    """The churn attack: registrations (5 an hour) spent, then logins of 10,250 made-up usernames, each leaving a
    bucket, in about ten seconds. A table that dropped its oldest bucket to make room handed the registrations a full
    bucket again."""
    clock = FakeClock()
    limiter = MemoryRateLimiter(clock=clock, max_keys=1000)
    hourly = [await limiter.hit("register:203.0.113.9", 5, period=3600) for _ in range(6)]
    assert [d.allowed for d in hourly] == [True] * 5 + [False]
    for i in range(10_250):
        clock.now += 0.001
        await limiter.hit(f"login:203.0.113.9:nobody{i}", 10)
    again = await limiter.hit("register:203.0.113.9", 5, period=3600)
    assert not again.allowed and again.retry_after > 600
    assert len(limiter) <= 1000


@pytest.mark.anyio
async def test_refilled_buckets_leave_the_table() -> None:
    clock = FakeClock()
    limiter = MemoryRateLimiter(clock=clock)
    for i in range(50):
        await limiter.hit(f"login:{i}", 10)  # one token back every 6 s: full again then
    await limiter.hit("spent", 10, cost=10)
    for _ in range(100):  # refusals take nothing: the bucket is still full again a minute after it was spent
        clock.now += 0.01
        assert not (await limiter.hit("spent", 10, cost=5)).allowed
    assert len(limiter) == 51
    clock.now += 6.001
    await limiter.hit("another", 10)
    assert len(limiter) == 2  # "spent" (full in a minute) and "another"
    clock.now += 53  # a minute after "spent" was
    await limiter.hit("another", 10, cost=0)
    assert len(limiter) == 0 and limiter.bytes == 0


@pytest.mark.anyio
async def test_a_full_table_drops_the_bucket_soonest_full_for_a_newcomer(caplog: pytest.LogCaptureFixture) -> None:
    """A newcomer is not refused for want of room: the anonymous bucket that would be full again soonest goes (its
    caller gains the least by finding it full early), and the others are kept as they were."""
    clock = FakeClock()
    limiter = MemoryRateLimiter(clock=clock, max_keys=3)
    for name, cost in (("a", 30), ("b", 10), ("c", 50)):
        assert (await limiter.hit(name, 60, cost=cost)).allowed
    newcomer = await limiter.hit("d", 60)
    assert (newcomer.allowed, newcomer.remaining) == (True, 59)
    assert "rate-limit table full" in caplog.text
    assert len(limiter) == 3
    assert [(await limiter.hit(name, 60)).remaining for name in ("a", "c")] == [29, 9]  # kept as they were
    assert (await limiter.hit("b", 60)).remaining == 59  # "b" (10 s from full) was the one dropped


@pytest.mark.anyio
async def test_strangers_filling_the_table_never_refuse_an_account_or_a_newcomer() -> None:
    """The reviewer's flood: registrations from ever new IPv6 /64s filled a 64 KiB table, and every caller without
    a live bucket got 429 (the owner's API, MCP and dashboard calls). Now the strangers' buckets make room for each
    other, an account's bucket is kept through it, and a new caller is let in."""
    clock = FakeClock()
    limiter = MemoryRateLimiter(clock=clock, max_bytes=1 << 16)
    own = "account:1.1700000000000000:full"
    spent = [await limiter.hit(own, 60) for _ in range(20)]
    assert spent[-1].remaining == 40
    for i in range(5_000):
        clock.now += 0.0001
        assert (await limiter.hit(f"register:2001:db8:{i:x}::/64", 5, period=3600)).allowed
    assert limiter.bytes <= 1 << 16
    mine = await limiter.hit(own, 60)
    assert (mine.allowed, mine.remaining) == (True, 39)  # not a fresh bucket: the account's was kept
    assert (await limiter.hit("ip:198.51.100.7", 60)).allowed
    assert (await limiter.hit("account:2.1700000000000000:session", 60)).allowed


@pytest.mark.anyio
async def test_a_table_of_accounts_only_refuses_anonymous_newcomers(caplog: pytest.LogCaptureFixture) -> None:
    """Accounts' buckets go only for other accounts: a table holding nothing else refuses a stranger (as if its
    bucket were empty) and still admits an account."""
    clock = FakeClock()
    limiter = MemoryRateLimiter(clock=clock, max_keys=2)
    for n in (1, 2):
        assert (await limiter.hit(f"account:{n}:full", 60, cost=30)).allowed
    refused = await limiter.hit("ip:203.0.113.9", 60)
    assert (refused.allowed, refused.remaining, refused.retry_after) == (False, 0, 1)
    assert (await limiter.hit("account:3:full", 60)).allowed
    assert len(limiter) == 2
    clock.now += 31  # all full again: gone
    assert (await limiter.hit("ip:203.0.113.9", 60)).allowed


@pytest.mark.anyio
async def test_the_table_is_crowded_from_half_full() -> None:
    limiter = MemoryRateLimiter(clock=FakeClock(), max_keys=4)
    await limiter.hit("a", 60)
    assert not limiter.crowded
    await limiter.hit("b", 60)
    assert limiter.crowded


async def check_give_back(limiter: RateLimiter) -> None:
    await burst(limiter, "given", 5, 3)
    await limiter.give_back("given", 5)
    assert (await limiter.hit("given", 5)).remaining == 2  # 5 - 3 + 1 - 1
    await limiter.give_back("never-hit", 5)  # nothing to give back to: no bucket is made


@pytest.mark.anyio
async def test_memory_give_back_returns_tokens_and_drops_a_full_bucket() -> None:
    limiter = MemoryRateLimiter(clock=FakeClock())
    await check_give_back(limiter)
    assert len(limiter) == 1
    await limiter.hit("once", 5, period=3600)
    await limiter.give_back("once", 5, period=3600)
    assert len(limiter) == 1 and limiter.bytes > 0  # "once" is full again: it holds no room


@pytest.mark.anyio
async def test_redis_give_back_returns_tokens_and_drops_a_full_bucket(rds: RedisCase) -> None:
    limiter = rds.limiter()
    await check_give_back(limiter)
    assert not await rds.client.exists(rds.prefix + "never-hit")
    await limiter.hit("once", 5, period=3600)
    await limiter.give_back("once", 5, period=3600)
    assert not await rds.client.exists(rds.prefix + "once")


@pytest.mark.anyio
async def test_a_bucket_costs_no_more_than_it_is_counted_at() -> None:
    """`BUCKET_BYTES`, what the byte budget counts for a bucket besides its key, covers what one really takes."""
    clock = FakeClock()
    limiter = MemoryRateLimiter(clock=clock, max_keys=10**6, max_bytes=1 << 40)
    keys = [f"login:203.0.113.9:nobody{i}" for i in range(20_000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(2):  # the second hit leaves a stale refill entry behind
            for key in keys:
                await limiter.hit(key, 10)
        taken = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert taken <= len(keys) * BUCKET_BYTES
    assert limiter.bytes >= len(keys) * BUCKET_BYTES


@pytest.mark.anyio
async def test_invalid_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="per_minute"):
        await MemoryRateLimiter().hit("k", 0)
    with pytest.raises(ValueError, match="cost"):
        await MemoryRateLimiter().hit("k", 10, cost=-1)


@pytest.mark.anyio
async def test_redis_burst_past_limit_is_refused(rds: RedisCase) -> None:
    await check_burst_refused(rds.limiter())


@pytest.mark.anyio
async def test_redis_bucket_refills_with_time(rds: RedisCase) -> None:
    # Rewinding the stored timestamp stands in for waiting: the script reads the time from Redis itself.
    limiter = rds.limiter()
    await burst(limiter, "k", 60, 60)
    assert not (await limiter.hit("k", 60)).allowed
    key = rds.prefix + "k"
    stored = await rds.client.hget(key, "at")
    assert stored is not None
    at = int(stored)
    await rds.client.hset(key, "at", str(at - 30_000_000))
    decision = await limiter.hit("k", 60)
    assert decision.allowed and 28 <= decision.remaining <= 30
    assert 0 < await rds.client.pttl(key) <= 32_000


@pytest.mark.anyio
async def test_two_redis_limiters_share_a_bucket(rds: RedisCase) -> None:
    first, second = rds.limiter(), rds.limiter()
    await burst(first, "shared", 3, 2)
    decision = await second.hit("shared", 3)
    assert decision.allowed and decision.remaining == 0
    assert not (await first.hit("shared", 3)).allowed


@pytest.mark.anyio
async def test_make_rate_limiter(rds: RedisCase, redis_url: str) -> None:
    assert isinstance(make_rate_limiter(None), MemoryRateLimiter)
    limiter = make_rate_limiter(redis_url)
    assert isinstance(limiter, FailOpenRateLimiter)  # Redis first, this process's buckets while it is away
    key = f"test:{uuid.uuid4().hex}"
    try:
        assert (await limiter.hit(key, 10)).remaining == 9
        assert await rds.client.exists("slugline:rl:" + key)
    finally:
        await rds.client.delete("slugline:rl:" + key)
        await limiter.aclose()
