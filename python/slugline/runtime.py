"""Process-wide state every service function receives: settings, database, secret, limiter and caches."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from ipaddress import IPv4Network, IPv6Network, ip_network

from slugline.accounts.identitycache import IdentityCache
from slugline.analytics.cache import AnswerCache
from slugline.limits.buckets import RateLimiter, make_rate_limiter
from slugline.limits.gates import Gates
from slugline.links.counts import LinkCounts
from slugline.search.cache import SearchCache
from slugline.settings import Settings
from slugline.storage.db import Database

# What the test-only `fetch_allow_private` setting lets the fetcher reach.
LOOPBACK_NETWORKS = (ip_network("127.0.0.0/8"), ip_network("::1/128"))


@dataclass
class Runtime:
    settings: Settings
    db: Database
    secret: bytes
    limiter: RateLimiter
    search: SearchCache = field(default_factory=SearchCache)
    analytics: AnswerCache = field(default_factory=lambda: AnswerCache(64 << 20))  # answers over closed days
    gates: Gates = field(default_factory=Gates)  # per-account caps on concurrent fetches and searches
    identities: IdentityCache = field(default_factory=IdentityCache)  # tokens resolved in the last half second
    link_counts: LinkCounts = field(default_factory=LinkCounts)  # links per account, per links version
    archived_counts: LinkCounts = field(default_factory=LinkCounts)  # archived links per account, per links version
    # Called with (slug, previous slug or None) after a link is saved or deleted in this worker.
    link_hooks: list[Callable[[str, str | None], None]] = field(default_factory=list)

    @classmethod
    def create(cls, settings: Settings) -> Runtime:
        return cls(
            settings=settings,
            db=Database(settings),
            secret=settings.secret(),
            limiter=make_rate_limiter(settings.redis_url, settings.rate_limit_bytes),
            search=SearchCache(settings.search_memory_mb << 20),
            analytics=AnswerCache(settings.analytics_cache_mb << 20),
        )

    def fetch_networks(self) -> list[IPv4Network | IPv6Network]:
        """Private networks the fetcher may reach: none, unless the test-only setting allows loopback."""
        return list(LOOPBACK_NETWORKS) if self.settings.fetch_allow_private else []

    def short_base(self, request_base: str) -> str:
        return (self.settings.public_url or request_base).rstrip("/")

    async def aclose(self) -> None:
        closer = getattr(self.limiter, "aclose", None)
        if closer is not None:
            await closer()
        self.db.dispose()

    def close(self) -> None:
        self.db.dispose()
