"""Rate-limit rules: which buckets a call draws from and how large they are. The buckets themselves are
`slugline.limits.buckets`; the middleware and the endpoints with limits of their own only apply these rules.

A caller's IP names its anonymous bucket; IPv6 callers are bucketed by their /64, the block one subscriber gets, or
by their /48, a site's, while the in-process table is crowded (`MemoryRateLimiter.crowded`): one network's many /64s
then cannot fill it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from ipaddress import IPv6Network, ip_address
from typing import Literal

from slugline.common.caller import Caller
from slugline.common.errors import Conflict, RateLimited
from slugline.limits.buckets import Decision, refused
from slugline.limits.gates import Busy
from slugline.runtime import Runtime

LOGIN_NAME_CHARS = 64  # of the username that names a login bucket; longer names cannot exist anyway
HOUR = 3600.0
KEYED_PLANS = ("developer", "pro")  # plans whose API keys get a bucket of their own, apart from their IP's

BUSY_RETRY_AFTER = 1  # seconds: a slot frees as soon as one request of the account's finishes

Bucket = tuple[str, int]


def ip_key(ip: str, prefix: Literal[64, 48] = 64) -> str:
    """The part of an address that names its buckets: the whole IPv4 address, an IPv6 address's /64 (or /48)."""
    return _ip_key(ip, prefix) if len(ip) <= MAX_REMEMBERED_ADDRESS else _parse_ip_key(ip, prefix)


def address(rt: Runtime, ip: str) -> str:
    """`ip_key` at the width the limiter's table calls for now: a /48 for IPv6 while it is crowded."""
    return ip_key(ip, 48 if rt.limiter.crowded else 64)


MAX_REMEMBERED_ADDRESS = 64  # characters; a longer "address" (a proxy may forward anything) is worked out each time


def _parse_ip_key(ip: str, prefix: int = 64) -> str:
    try:
        addr = ip_address(ip)
    except ValueError:  # not an address (the test client's "testclient"): the string itself
        return ip
    if addr.version == 4:
        return str(addr)
    if addr.ipv4_mapped is not None:
        return str(addr.ipv4_mapped)
    host = 128 - prefix
    return str(IPv6Network((int(addr) >> host << host, prefix)))


_ip_key = functools.lru_cache(maxsize=4096)(_parse_ip_key)  # parsing an address took 2.5% of a `GET /me`


def anonymous_bucket(rt: Runtime, ip: str) -> Bucket:
    return f"ip:{address(rt, ip)}", rt.settings.rate_limit_anonymous


def api_buckets(rt: Runtime, caller: Caller | None, ip: str) -> list[Bucket]:
    """Every /api and /mcp call, and every dashboard page (its session cookie is a session token). An API key of a
    developer or pro account draws from its own bucket at its plan's rate. Anyone else draws from their IP's
    anonymous bucket; a session token or a free-plan key also from its own bucket (at the anonymous rate), so a token
    never lifts a caller out of its IP's limit.

    "Its own bucket" is the account's for the token's scope, not the token's: an account holds one key per scope,
    and a key replaced (POST /api-key) is the same key to the limit, or replacing it once a second would give a
    fresh budget every time. An OAuth access token acts as the key of its grant's scope, so every token of every
    grant of the account, refreshed or not, draws from that key's bucket: a refresh never gives a fresh budget."""
    settings = rt.settings
    anonymous = anonymous_bucket(rt, ip)
    if caller is None:
        return [anonymous]
    rate = {"pro": settings.rate_limit_pro, "developer": settings.rate_limit_developer}
    # The account's id and the microsecond it was made: ids alone repeat across databases, and deployments (or test
    # runs) sharing one Redis would spend each other's buckets.
    account = f"{caller.account_id}.{int(caller.created_at.timestamp() * 1_000_000)}"
    own = (f"account:{account}:{caller.scope}", rate.get(caller.plan, settings.rate_limit_anonymous))
    if caller.scope == "session" or caller.plan not in KEYED_PLANS:
        return [anonymous, own]
    return [own]


async def draw(rt: Runtime, buckets: list[Bucket], drawn: Sequence[Decision] = ()) -> Decision:
    """Draw from each bucket in turn (after those already `drawn`, all allowed); the first refusal stops there, so a
    refused call costs no more tokens."""
    decisions = list(drawn)
    for bucket, per_minute in buckets:
        decisions.append(await rt.limiter.hit(bucket, per_minute))
        if not decisions[-1].allowed:
            break
    return tightest(decisions)


async def charge(rt: Runtime, caller: Caller, ip: str | None, items: int) -> None:
    """A bulk call counts as one request per item: the call itself drew one token from each of its buckets (the
    middleware), so its other `items - 1` are drawn here, from the same buckets, before any work. `ip` None: an
    operator's command, which no limit applies to. Past a bucket's budget nothing more is drawn and the call is 429;
    a call larger than a whole minute's budget is refused as such (it could never pass)."""
    if ip is None or items <= 1:
        return
    drawn: list[Bucket] = []
    for bucket, per_minute in api_buckets(rt, caller, ip):
        if items > per_minute:
            decision = Decision(False, per_minute, 0, 0, 60)
        else:
            decision = await rt.limiter.hit(bucket, per_minute, items - 1)
        if not decision.allowed:
            for taken, rate in drawn:  # a refused call costs no more than its one request
                await rt.limiter.give_back(taken, rate, items - 1)
            raise RateLimited(
                f"a bulk call counts one request per item: {items} items, and this key may make {per_minute} "
                "requests a minute",
                decision.retry_after,
            )
        drawn.append((bucket, per_minute))


def tightest(decisions: list[Decision]) -> Decision:
    """The decision whose numbers a response shows when several buckets apply: a refusal (the longest wait), else
    the bucket with the fewest requests left, which is exactly how many more the caller may make."""
    refused = [d for d in decisions if not d.allowed]
    if refused:
        return max(refused, key=lambda d: d.retry_after)
    return min(decisions, key=lambda d: (d.remaining, -d.reset))


async def _password_hashes(rt: Runtime, ip: str, cost: int = 1) -> Decision:
    """argon2 is the most expensive thing an anonymous caller can ask for: bound it per IP, whichever form asks.
    With `cost=0`, whether one hash is left, spending nothing: refused when none is."""
    per_minute = rt.settings.rate_limit_password_hashes
    decision = await rt.limiter.hit(f"argon2:{address(rt, ip)}", per_minute, cost)
    if cost == 0 and decision.remaining < 1:  # the next token is at most one interval away
        refused("argon2")
        return Decision(False, per_minute, 0, decision.reset, max(1, math.ceil(60 / per_minute)))
    return decision


async def check_login(rt: Runtime, ip: str, username: str) -> None:
    """Attempts per IP and username, checked before the password, so guessing is slow whatever the answer.

    The IP's password-hash budget is looked at first, without spending it: once it is spent, an attempt makes no
    bucket for its username. Otherwise every made-up name would leave a bucket behind, and the in-process limiter's
    table would fill with them (see `MemoryRateLimiter`)."""
    decision = await _password_hashes(rt, ip, cost=0)
    if not decision.allowed:
        raise RateLimited("too many password checks from this address", decision.retry_after)
    name = username.lower()[:LOGIN_NAME_CHARS]
    decision = await rt.limiter.hit(f"login:{address(rt, ip)}:{name}", rt.settings.rate_limit_login)
    if not decision.allowed:
        raise RateLimited("too many login attempts", decision.retry_after)
    decision = await _password_hashes(rt, ip)
    if not decision.allowed:
        raise RateLimited("too many password checks from this address", decision.retry_after)


@asynccontextmanager
async def registering(rt: Runtime, ip: str) -> AsyncIterator[None]:
    """Registrations per IP and hour: each one hands out a session token and costs an argon2 hash. One refused as a
    conflict (the username is taken) gives its registration back: it made nothing, and it leaves no bucket behind
    for the table to hold (its password hash stays spent: the hash was made)."""
    bucket, per_hour = f"register:{address(rt, ip)}", rt.settings.rate_limit_register
    decision = await rt.limiter.hit(bucket, per_hour, period=HOUR)
    if not decision.allowed:
        raise RateLimited("too many registrations from this address", decision.retry_after)
    decision = await _password_hashes(rt, ip)
    if not decision.allowed:
        await rt.limiter.give_back(bucket, per_hour, period=HOUR)
        raise RateLimited("too many password checks from this address", decision.retry_after)
    try:
        yield
    except Conflict:
        await rt.limiter.give_back(bucket, per_hour, period=HOUR)
        raise


async def check_anonymous_fetch(rt: Runtime, ip: str, message: str) -> None:
    """A fetch of a URL an anonymous caller chose (`/analyze` without a key, an OAuth Client ID Metadata Document):
    each costs a DNS lookup and up to 5 s of a stranger's server, whichever endpoint asks, so they share one budget
    per IP. RateLimited with `message` past it."""
    decision = await rt.limiter.hit(f"fetches:{address(rt, ip)}", rt.settings.rate_limit_analyze_anonymous)
    if not decision.allowed:
        raise RateLimited(message, decision.retry_after)


async def check_anonymous_analyze(rt: Runtime, ip: str) -> None:
    await check_anonymous_fetch(rt, ip, "anonymous /analyze is limited")


async def unlock_attempt(rt: Runtime, ip: str, link_id: str) -> Decision:
    """Password attempts on a protected link, per IP and link, and within the IP's argon2 budget (looked at first,
    as for logins: a spent budget makes no bucket per link)."""
    decision = await _password_hashes(rt, ip, cost=0)
    if not decision.allowed:
        return decision
    decision = await rt.limiter.hit(f"unlock:{address(rt, ip)}:{link_id}", rt.settings.rate_limit_unlock)
    if not decision.allowed:
        return decision
    return await _password_hashes(rt, ip)


@asynccontextmanager
async def _capped(rt: Runtime, key: str, cap: int, what: str) -> AsyncIterator[None]:
    try:
        async with rt.gates.hold(key, cap, rt.settings.busy_wait_seconds):
            yield
    except Busy:
        refused(key)
        raise RateLimited(f"too many {what} under way for this account", BUSY_RETRY_AFTER) from None


@asynccontextmanager
async def fetching(rt: Runtime, account_id: int) -> AsyncIterator[None]:
    """A slot for one auto_meta fetch: at most `fetch_concurrency` per account and worker."""
    async with _capped(rt, f"fetch:{account_id}", rt.settings.fetch_concurrency, "auto_meta fetches"):
        yield


def query_cap(rt: Runtime) -> int:
    """Expensive queries one account may run at once in this worker: `query_concurrency`, and never as many as the
    worker has database threads (at least two, see `Settings.db_threads`), so one account's searches always leave a
    thread for every other request (another account's list, /health), whatever the pool's size."""
    return max(1, min(rt.settings.query_concurrency, rt.db.threads - 1))


EXPENSIVE = "searches and analytics queries"


@asynccontextmanager
async def spare_query(rt: Runtime, account_id: int) -> AsyncIterator[bool]:
    """Another of the account's query slots if one is free now (True), never waiting for one: for a second thread
    of a query that already holds a slot (`analysing`), which runs on one thread without it. So one account's
    queries still hold at most `query_cap` database threads, and a query never holds a slot while it waits for
    another (two such queries could each wait for the other's)."""
    held = AsyncExitStack()
    try:
        await held.enter_async_context(rt.gates.hold(f"query:{account_id}", query_cap(rt), 0))
    except Busy:
        yield False
        return
    async with held:
        yield True


@asynccontextmanager
async def querying(rt: Runtime, account_id: int, q: object) -> AsyncIterator[None]:
    """A slot for an expensive query (a search, or a list filtered with `q`, from the API, MCP or the dashboard): at
    most `query_cap` per account and worker; a query without terms is cheap and takes none."""
    if not (isinstance(q, str) and q.strip()):
        yield
        return
    async with _capped(rt, f"query:{account_id}", query_cap(rt), EXPENSIVE):
        yield


@asynccontextmanager
async def analysing(rt: Runtime, account_id: int) -> AsyncIterator[None]:
    """A slot for analytics or a page of a link's click log (API, MCP or dashboard). Their work grows with the
    account's traffic, not with a page: unique visitors count the distinct hashes of every click in the period, and
    a click-log page counts the link's clicks. So they share the searches' slots: one account's expensive queries of
    every kind hold at most `query_cap` database threads of a worker."""
    async with _capped(rt, f"query:{account_id}", query_cap(rt), EXPENSIVE):
        yield
