"""Rate-limit rules: which bucket a call draws from and how large it is. The buckets themselves are
`slugline.ratelimit`; the middleware and the endpoints with limits of their own only apply these rules."""

from __future__ import annotations

from slugline.caller import Caller
from slugline.errors import RateLimited
from slugline.ratelimit import Decision
from slugline.runtime import Runtime
from slugline.settings import Settings

LOGIN_NAME_CHARS = 64  # of the username that names a login bucket; longer names cannot exist anyway


def api_bucket(settings: Settings, caller: Caller | None, digest: str | None, ip: str) -> tuple[str, int]:
    """Every /api and /mcp call: per token by its account's plan (a free plan gets the anonymous rate); callers
    without a valid token, per IP."""
    if caller is None or digest is None:
        return f"ip:{ip}", settings.rate_limit_anonymous
    per_minute = {"pro": settings.rate_limit_pro, "developer": settings.rate_limit_developer}.get(
        caller.plan, settings.rate_limit_anonymous
    )
    return f"key:{digest[:32]}", per_minute


async def check_login(rt: Runtime, ip: str, username: str) -> None:
    """Attempts per IP and username, checked before the password, so guessing is slow whatever the answer."""
    name = username.lower()[:LOGIN_NAME_CHARS]
    decision = await rt.limiter.hit(f"login:{ip}:{name}", rt.settings.rate_limit_login)
    if not decision.allowed:
        raise RateLimited("too many login attempts", decision.retry_after)


async def check_anonymous_analyze(rt: Runtime, ip: str) -> None:
    decision = await rt.limiter.hit(f"analyze:{ip}", rt.settings.rate_limit_analyze_anonymous)
    if not decision.allowed:
        raise RateLimited("anonymous /analyze is limited", decision.retry_after)


async def unlock_attempt(rt: Runtime, ip: str, link_id: str) -> Decision:
    """Password attempts on a protected link, per IP and link."""
    return await rt.limiter.hit(f"unlock:{ip}:{link_id}", rt.settings.rate_limit_unlock)
