"""One Settings object, read from `SLUGLINE_*` environment variables."""

from __future__ import annotations

import os
import secrets
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

Plan = Literal["free", "developer", "pro"]
PLAN_RANK: dict[str, int] = {"free": 0, "developer": 1, "pro": 2}
# Clicks that start a write before the second is up: large batches cost much less CPU a click than small ones when
# traffic is spread over many links (`test_write_sqlite_spread` in benches/test_click_path.py measures it; each
# write rewrites every cube its links touch). A quarter of `click_buffer_bytes` held starts one too
# (`slugline.clicks.buffer`), so under heavy traffic the writes go once a second, each as large as a second's clicks.
CLICK_FLUSH_MAX = 100_000
MIN_DB_THREADS = 2  # a worker's database threads: one account's queries never hold the last one
MIN_SECRET_BYTES = 32  # HMAC-SHA256 keys and cookie signatures are only as strong as the secret behind them


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SLUGLINE_", extra="ignore")

    # Where links, accounts and clicks are stored: sqlite:///path (the embedded default) or postgresql://...
    database_url: str = "sqlite:///./data/slugline.db"
    # Redis shared by every instance (rate limits, cache invalidation); unset: each instance keeps its own.
    redis_url: str | None = None
    # At least 32 bytes: keys API-key hashes, visitor hashes and cookie signatures. Unset on SQLite: generated once
    # and kept beside the database file; required on PostgreSQL, where several instances must share it.
    secret_key: str | None = None
    # The URL short links are made with (e.g. https://sho.rt); unset: each request's own scheme and host.
    public_url: str | None = None
    # Where `/` sends visitors who are not signed in (an absolute http(s) URL, e.g. the organisation's site); unset:
    # the dashboard's sign-in page. Signed-in people still get the dashboard.
    root_url: str | None = Field(default=None, pattern=r"^https?://[^\s/?#]+[^\s]*$")
    # Where an unknown short link sends visitors (302, an absolute http(s) URL); unset: the 404 page (JSON for API
    # clients). Private and archived links count as unknown.
    not_found_url: str | None = Field(default=None, pattern=r"^https?://[^\s/?#]+[^\s]*$")
    # Proxies whose X-Forwarded-For/-Proto are believed (comma-separated IPs or CIDRs, or "*"); unset: none.
    trusted_proxies: str | None = None
    # An MMDB file (GeoLite2 or DB-IP, Country or City) giving a visitor's country for redirect rules; read again
    # when the file changes. Unset: the `slugline[geo]` extra's database if installed, else countries only from a
    # trusted CDN's header.
    geoip_db: str | None = None
    # A header a trusted proxy (`trusted_proxies`) sets to the visitor's country, believed before CF-IPCountry,
    # CloudFront-Viewer-Country and X-Vercel-IP-Country.
    country_header: str | None = Field(default=None, pattern=r"^[A-Za-z0-9-]{1,64}$")
    # Log lines as `text` (time [LEVEL] logger: message) or `json` (one object per line, with the request's id,
    # route, status, duration and account).
    log_format: Literal["text", "json"] = "text"
    # One log line per request (method, path without its query, route, status, duration, request id, account).
    access_log: bool = False
    # Put clients' IP addresses in log lines (the access log, and the context of other lines in JSON).
    log_ips: bool = False
    # Serves Prometheus metrics at GET /metrics to requests bearing `Authorization: Bearer <this token>`; unset (and
    # no `metrics_bind`): no metrics, /metrics is 404.
    metrics_token: str | None = None
    # host:port where `slugline serve` answers metrics scrapes without a token, apart from the service's address
    # (e.g. 127.0.0.1:9464); unset: only /metrics with `metrics_token`.
    metrics_bind: str | None = None
    # The plan of a newly registered account (free has no API access; an admin raises it with `slugline set-plan`).
    default_plan: Plan = "free"
    # For tests only: lets the metadata fetcher reach loopback addresses.
    fetch_allow_private: bool = False
    # Hours a dashboard or /auth/login session token stays valid.
    session_hours: int = Field(default=24, ge=1, le=24 * 90)
    # Calls per minute of an account on the developer plan (REST and MCP together, per key scope).
    rate_limit_developer: int = Field(default=600, ge=1)
    # Calls per minute of an account on the pro plan.
    rate_limit_pro: int = Field(default=3000, ge=1)
    # Calls per minute of one IP address without a developer or pro API key (anonymous callers, sessions, free keys).
    rate_limit_anonymous: int = Field(default=60, ge=1)
    # URLs fetched for anonymous callers, per IP: /analyze without a key and OAuth Client ID Metadata Documents.
    rate_limit_analyze_anonymous: int = Field(default=10, ge=1, description="anonymous fetches per IP")
    rate_limit_login: int = Field(default=10, ge=1, description="login attempts per minute per IP and username")
    rate_limit_unlock: int = Field(default=10, ge=1, description="password-link attempts per minute per IP and link")
    rate_limit_register: int = Field(default=5, ge=1, description="registrations per hour per IP")
    rate_limit_password_hashes: int = Field(default=30, ge=1, description="argon2 hashes per minute per IP")
    # Bytes of rate-limit buckets each worker keeps in process (all of them without Redis, the fallback's with it).
    rate_limit_bytes: int = Field(default=16 << 20, ge=1 << 16)
    # Per account and worker: concurrent auto_meta fetches; past the cap a request waits up to `busy_wait_seconds`
    # for a slot, then gets 429.
    fetch_concurrency: int = Field(default=4, ge=1)
    # Per account and worker: concurrent expensive queries (search, q, analytics, click logs), waited for likewise.
    query_concurrency: int = Field(default=4, ge=1)
    busy_wait_seconds: float = Field(default=2.0, ge=0, le=30)
    # Ports the metadata fetcher may connect to (comma-separated).
    fetch_ports: str = "80,443"
    # Bytes of a links file sent to `POST /links/import` or the dashboard's import page (streamed to a temporary file).
    import_max_mb: int = Field(default=256, ge=1, description="largest import upload, MiB")
    # Seconds a client has to send a request body (JSON or a password form) once the headers are in; then 408.
    body_timeout_seconds: float = Field(default=10.0, gt=0, le=300)
    # Bytes of clicks buffered per worker before new ones are dropped (and counted in /health).
    click_buffer_bytes: int = Field(default=64 << 20, ge=1 << 16)
    # Bytes of the redirect cache per worker, each entry counted with its strings (oldest dropped first).
    link_cache_bytes: int = Field(default=64 << 20, ge=1 << 20)
    # Bytes of search indexes each worker keeps (least recently searched accounts are dropped first).
    search_memory_mb: int = Field(default=256, ge=1, description="search index memory per worker, MiB")
    # Bytes of analytics answers over closed days each worker keeps (`slugline.analytics.cache`).
    analytics_cache_mb: int = Field(default=64, ge=1, description="analytics answers kept per worker, MiB")
    # Seconds between writes of buffered clicks: a click reaches the database within this time.
    click_flush_seconds: float = Field(default=1.0, gt=0, le=1.0)
    # Clicks that start a write before `click_flush_seconds` is up.
    click_flush_max: int = Field(default=CLICK_FLUSH_MAX, ge=1, le=CLICK_FLUSH_MAX)
    # Days the raw click log keeps a click (a link's click list, exports); older clicks are deleted a few minutes
    # at a time, and analytics keep counting them (they read roll-ups). On PostgreSQL a month's clicks go together,
    # once the last of them is that old. Unset: every click is kept.
    click_log_days: int | None = Field(default=None, ge=1)
    # PostgreSQL connections each worker keeps open.
    db_pool_size: int = Field(default=20, ge=MIN_DB_THREADS)
    # PostgreSQL connections a worker may open beyond the pool at a peak.
    db_max_overflow: int = Field(default=10, ge=0)
    # Default: 4 on SQLite, db_pool_size on PostgreSQL. At least two (so is the pool): an account's queries may hold
    # all but one of them (`limits.query_cap`), and with one thread that would be all of them.
    db_threads: int | None = Field(default=None, ge=MIN_DB_THREADS)

    # Webhooks (`slugline.webhooks`). Deliveries may reach private and loopback addresses (for tests, or a
    # receiver on the operator's own network); unset: public addresses only, as the metadata fetcher.
    webhooks_allow_private: bool = False
    # Seconds a delivery may take, connection included; a slower endpoint's attempt fails (and is tried again).
    webhooks_timeout_seconds: float = Field(default=10.0, gt=0, le=60)
    # Per account and worker: deliveries under way at once; the rest of that account's wait, other accounts' not.
    webhooks_concurrency: int = Field(default=4, ge=1, le=64)
    # Seconds before the first retry of a failed delivery; each later one waits twice as long, up to the maximum.
    webhooks_retry_seconds: float = Field(default=5.0, gt=0)
    webhooks_retry_max_seconds: float = Field(default=3600.0, gt=0)
    # Seconds an endpoint may fail every delivery before it is disabled (the account sees it in the dashboard).
    webhooks_give_up_seconds: float = Field(default=86400.0, gt=0)
    # Seconds between looks for messages that are due, when none came in the last look.
    webhooks_poll_seconds: float = Field(default=1.0, gt=0, le=60)
    # Seconds between two `link.clicked` deliveries to one endpoint (each carries up to 100 clicks).
    webhooks_click_interval_seconds: float = Field(default=1.0, gt=0, le=60)

    @field_validator("database_url")
    @classmethod
    def _a_database_url(cls, url: str) -> str:
        """A URL SQLAlchemy can open, checked where it is read: not a traceback from deep in the engine."""
        try:
            make_url(url)
        except ArgumentError:
            raise ValueError("must be sqlite:///path or postgresql://user@host/database") from None
        return url

    def sqlite_path(self) -> Path | None:
        """The database file when the store is SQLite, else None."""
        prefix = "sqlite:///"
        if not self.database_url.startswith(prefix):
            return None
        return Path(self.database_url[len(prefix) :])

    def metrics_on(self) -> bool:
        return bool(self.metrics_token) or bool(self.metrics_bind)

    def metrics_address(self) -> tuple[str, int] | None:
        """`metrics_bind` as (host, port); RuntimeError (the CLI exits 2) when it is not host:port."""
        if not self.metrics_bind:
            return None
        host, _, port = self.metrics_bind.rpartition(":")
        host = host.strip("[]")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise RuntimeError(f"SLUGLINE_METRICS_BIND must be host:port, not {self.metrics_bind!r}")
        return host, int(port)

    def fetch_port_set(self) -> frozenset[int]:
        try:
            return frozenset(int(p) for p in self.fetch_ports.split(",") if p.strip())
        except ValueError:
            raise RuntimeError(f"SLUGLINE_FETCH_PORTS must list port numbers, not {self.fetch_ports!r}") from None

    def secret(self) -> bytes:
        """The server secret: the setting, else a random one kept beside the SQLite file (made once). Raises
        RuntimeError (the CLI exits 2) for a secret under `MIN_SECRET_BYTES`, whichever way it came."""
        if self.secret_key is not None:
            return _strong(self.secret_key.encode(), "SLUGLINE_SECRET_KEY")
        path = self.sqlite_path()
        if path is None:
            raise RuntimeError("SLUGLINE_SECRET_KEY must be set when the database is not SQLite")
        key_file = path.parent / "secret.key"
        key_file.parent.mkdir(parents=True, exist_ok=True)
        if not key_file.exists():
            _create_key_file(key_file)
        return _strong(key_file.read_text().strip().encode(), str(key_file))


def _strong(secret: bytes, source: str) -> bytes:
    if len(secret) < MIN_SECRET_BYTES:
        raise RuntimeError(
            f"the server secret from {source} is {len(secret)} bytes; it must be at least {MIN_SECRET_BYTES} "
            f"(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(48))'`)"
        )
    return secret


def _create_key_file(key_file: Path) -> None:
    """Written in full to a private temporary file, then linked into place: a reader sees the whole key or no
    file, and of two workers starting together the first link wins and both read its key."""
    tmp = key_file.with_name(f".{key_file.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(48))
            fh.flush()
            os.fsync(fh.fileno())
        os.link(tmp, key_file)
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
