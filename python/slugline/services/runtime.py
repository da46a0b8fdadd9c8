"""Process-wide state every service function receives, and who is calling."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from ipaddress import IPv4Network, IPv6Network, ip_network
from typing import Literal

from slugline.db import Database
from slugline.ratelimit import RateLimiter, make_rate_limiter
from slugline.services.search import SearchCache
from slugline.settings import Settings

Scope = Literal["full", "public", "session"]


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes; everything stored is UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def isoformat(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return as_utc(moment).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated account behind a request, and the base of the short URLs it should see."""

    account_id: int
    username: str
    plan: str
    scope: Scope
    created_at: datetime
    base_url: str = "http://localhost"

    @property
    def public_only(self) -> bool:
        return self.scope == "public"


@dataclass
class Runtime:
    settings: Settings
    db: Database
    secret: bytes
    limiter: RateLimiter
    search: SearchCache = field(default_factory=SearchCache)
    # Called with (slug, previous slug or None) after a link is saved or deleted in this worker.
    link_hooks: list[Callable[[str, str | None], None]] = field(default_factory=list)

    @classmethod
    def create(cls, settings: Settings) -> Runtime:
        return cls(settings=settings, db=Database(settings), secret=settings.secret(),
                   limiter=make_rate_limiter(settings.redis_url))

    def fetch_networks(self) -> list[IPv4Network | IPv6Network]:
        """Private networks the fetcher may reach: none, unless the test-only setting allows loopback."""
        if not self.settings.fetch_allow_private:
            return []
        return [ip_network("127.0.0.0/8"), ip_network("::1/128")]

    def short_base(self, request_base: str) -> str:
        return (self.settings.public_url or request_base).rstrip("/")

    async def aclose(self) -> None:
        closer = getattr(self.limiter, "aclose", None)
        if closer is not None:
            await closer()
        self.db.dispose()

    def close(self) -> None:
        self.db.dispose()
