"""One Settings object, read from `SLUGLINE_*` environment variables."""

from __future__ import annotations

import secrets
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

Plan = Literal["free", "developer", "pro"]
PLAN_RANK: dict[str, int] = {"free": 0, "developer": 1, "pro": 2}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SLUGLINE_", extra="ignore")

    database_url: str = "sqlite:///./data/slugline.db"
    redis_url: str | None = None
    secret_key: str | None = None
    public_url: str | None = None
    # Proxies whose X-Forwarded-For/-Proto are believed (comma-separated IPs or CIDRs, or "*"); unset: none.
    trusted_proxies: str | None = None
    default_plan: Plan = "free"
    fetch_allow_private: bool = False
    session_hours: int = Field(default=24, ge=1, le=24 * 90)
    rate_limit_developer: int = Field(default=600, ge=1)
    rate_limit_pro: int = Field(default=3000, ge=1)
    rate_limit_anonymous: int = Field(default=60, ge=1)
    rate_limit_analyze_anonymous: int = Field(default=10, ge=1, description="anonymous /analyze per IP")
    rate_limit_login: int = Field(default=10, ge=1, description="login attempts per minute per IP and username")
    rate_limit_unlock: int = Field(default=10, ge=1, description="password-link attempts per minute per IP and link")
    # Bytes of search indexes each worker keeps (least recently searched accounts are dropped first).
    search_memory_mb: int = Field(default=256, ge=1, description="search index memory per worker, MiB")
    click_flush_seconds: float = Field(default=1.0, gt=0, le=1.0)
    click_flush_max: int = Field(default=1000, ge=1, le=1000)
    # PostgreSQL connections per worker: the pool, and how many more may be opened at a peak.
    db_pool_size: int = Field(default=10, ge=1)
    db_max_overflow: int = Field(default=20, ge=0)

    def sqlite_path(self) -> Path | None:
        """The database file when the store is SQLite, else None."""
        prefix = "sqlite:///"
        if not self.database_url.startswith(prefix):
            return None
        return Path(self.database_url[len(prefix) :])

    def secret(self) -> bytes:
        """The server secret: the setting, else a random one kept beside the SQLite file (made once)."""
        if self.secret_key:
            return self.secret_key.encode()
        path = self.sqlite_path()
        if path is None:
            raise RuntimeError("SLUGLINE_SECRET_KEY must be set when the database is not SQLite")
        key_file = path.parent / "secret.key"
        key_file.parent.mkdir(parents=True, exist_ok=True)
        try:
            with key_file.open("x") as fh:  # exclusive create: two workers starting together agree on one key
                fh.write(secrets.token_urlsafe(48))
            key_file.chmod(0o600)
        except FileExistsError:
            pass
        return key_file.read_text().strip().encode()


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
