"""The schema as typed SQLAlchemy models. Alembic migrations in `migrations/` are what create it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    SmallInteger,
    String,
    Text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.sql.expression import false

from slugline.common.bounds import (
    MAX_BROWSER,
    MAX_DESCRIPTION,
    MAX_OS,
    MAX_PLACE,
    MAX_REFERRER,
    MAX_SLUG,
    MAX_SOURCE,
    MAX_TITLE,
    MAX_URL,
    MAX_USERNAME,
)


class Base(DeclarativeBase):
    pass


Timestamp = DateTime(timezone=True)


class Account(Base):
    __tablename__ = "accounts"
    # An id is never given again once its account is deleted (migration 0014; a PostgreSQL sequence never goes
    # back): per-worker caches keyed by account id would otherwise answer a new account with a deleted one's links.
    __table_args__ = ({"sqlite_autoincrement": True},)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(MAX_USERNAME), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    plan: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(Timestamp)
    # Bumped on every change to the account's links, so each worker knows when its search index is stale.
    links_version: Mapped[int] = mapped_column(BigInteger, default=0)


class SessionToken(Base):
    __tablename__ = "sessions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(Timestamp)
    expires_at: Mapped[datetime] = mapped_column(Timestamp)


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    scope: Mapped[str] = mapped_column(String(8))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    last4: Mapped[str] = mapped_column(String(4))
    created_at: Mapped[datetime] = mapped_column(Timestamp)
    last_used_at: Mapped[datetime | None] = mapped_column(Timestamp, nullable=True)

    __table_args__ = (Index("uq_api_keys_account_scope", "account_id", "scope", unique=True),)


class Link(Base):
    __tablename__ = "links"

    id: Mapped[str] = mapped_column(String(15), primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    slug: Mapped[str] = mapped_column(String(MAX_SLUG), unique=True)
    destination_url: Mapped[str] = mapped_column(String(MAX_URL))
    title: Mapped[str | None] = mapped_column(String(MAX_TITLE), nullable=True)
    description: Mapped[str | None] = mapped_column(String(MAX_DESCRIPTION), nullable=True)
    note: Mapped[str | None] = mapped_column(Text, nullable=True)
    hashtags: Mapped[list[str]] = mapped_column(JSON, default=list)
    visibility: Mapped[str] = mapped_column(String(8))
    password_hash: Mapped[str | None] = mapped_column(String(255), nullable=True)
    clicks: Mapped[int] = mapped_column(BigInteger, default=0)
    created_at: Mapped[datetime] = mapped_column(Timestamp)
    updated_at: Mapped[datetime] = mapped_column(Timestamp)
    # The lifecycle (migration 0012, `links.lifecycle`). `clicks_used` is the non-bot visitors a limited link let
    # through, counted by the redirect itself; never written by an update.
    expires_at: Mapped[datetime | None] = mapped_column(Timestamp, nullable=True, index=True)
    max_clicks: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    clicks_used: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    expired_url: Mapped[str | None] = mapped_column(String(MAX_URL), nullable=True)
    archived: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    preview: Mapped[dict[str, str] | None] = mapped_column(JSON, nullable=True)
    # Redirect rules (migration 0016, `common.rules`): [{"if": {...}, "to": URL}, ...], or null for none.
    rules: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, nullable=True)
    # Weighted variants (migration 0018, `redirects.variants`): [{"to": URL, "weight": n}, ...], or null for none.
    variants: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, nullable=True)

    __table_args__ = (Index("ix_links_account_created", "account_id", "created_at"),)


@dataclass(slots=True, kw_only=True)
class LinkRecord:
    """A link's columns as plain attributes, for the writes that go to the tables with Core statements (a create, an
    update): making an ORM `Link` and reading it back cost a create ~8% of its CPU, for bookkeeping nothing used."""

    id: str
    account_id: int
    slug: str
    destination_url: str
    title: str | None = None
    description: str | None = None
    note: str | None = None
    hashtags: list[str] = field(default_factory=list)
    visibility: str
    password_hash: str | None = None
    clicks: int = 0
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    max_clicks: int | None = None
    clicks_used: int = 0
    expired_url: str | None = None
    archived: bool = False
    preview: dict[str, str] | None = None
    rules: list[dict[str, Any]] | None = None
    variants: list[dict[str, Any]] | None = None


class LinkChange(Base):
    """One row per `links_version` bump: which link changed. Other workers read the rows after the version
    they last saw and refresh just those links, instead of reloading the account's whole index."""

    __tablename__ = "link_changes"

    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)
    version: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    link_id: Mapped[str] = mapped_column(String(15))


class IdempotentAnswer(Base):
    """A create's answer, kept for 24 hours under the Idempotency-Key its client sent (`links.idempotency`): a retry
    with the same key and body gets this answer again instead of making a second link. `status` 0: under way."""

    __tablename__ = "idempotency_keys"

    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64))  # of the operation and its body
    status: Mapped[int] = mapped_column(Integer)
    answer: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    created_at: Mapped[datetime] = mapped_column(Timestamp)

    __table_args__ = (Index("ix_idempotency_keys_account_created", "account_id", "created_at"),)


class Click(Base):
    __tablename__ = "clicks"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    # On PostgreSQL the key is not in the schema (migration 0006: checking it doubled the server's work per row of
    # a batch); a trigger deletes a link's clicks with it, and the click writer writes only the rows of links it has
    # locked and found there.
    link_id: Mapped[str] = mapped_column(ForeignKey("links.id", ondelete="CASCADE"))
    clicked_at: Mapped[datetime] = mapped_column(Timestamp)
    device: Mapped[str] = mapped_column(String(8))
    browser: Mapped[str] = mapped_column(String(MAX_BROWSER))
    os: Mapped[str] = mapped_column(String(MAX_OS))
    source: Mapped[str] = mapped_column(String(MAX_SOURCE))
    referrer: Mapped[str | None] = mapped_column(String(MAX_REFERRER), nullable=True)
    visitor: Mapped[str] = mapped_column(String(32))
    # Where the click came from (migration 0017, `clicks.geo`): ISO 3166-1 alpha-2, and the GeoIP database's region
    # and city in English, each null when unknown. The address itself is never stored.
    country: Mapped[str | None] = mapped_column(String(2), nullable=True)
    region: Mapped[str | None] = mapped_column(String(MAX_PLACE), nullable=True)
    city: Mapped[str | None] = mapped_column(String(MAX_PLACE), nullable=True)
    # The index of the link's variant the visitor was sent to (migration 0018), null for a link without variants.
    variant: Mapped[int | None] = mapped_column(SmallInteger, nullable=True)

    # On PostgreSQL the primary key is (link_id, clicked_at, id) and stands in for this index (migration 0008: one
    # structure fewer to write per row of a batch's COPY); on SQLite `id` is the rowid, and the index stays.
    __table_args__ = (Index("ix_clicks_link_time", "link_id", "clicked_at"),)


class ClickCube(Base):
    """A roll-up of one view's clicks over one day or month, in the core's binary form (`slugline._core`,
    `rust_core/cube/`). Scope `""` is every link of the account, `"p"` its public and unlisted links, anything
    else one link's id. Analytics reads these, never the click log."""

    __tablename__ = "click_cubes"

    account_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    scope: Mapped[str] = mapped_column(String(32), primary_key=True)
    level: Mapped[int] = mapped_column(Integer, primary_key=True)  # 0: a UTC day, 1: a month, 2: a month pack
    bucket: Mapped[int] = mapped_column(Integer, primary_key=True)  # days or months since 1970-01-01 (packs: days)
    cube: Mapped[bytes] = mapped_column(LargeBinary)
    uniques: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    links: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    hours: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    sketches: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)


class CubeEpoch(Base):
    """Raised by the click writer whenever it changes one of the account's cubes of a closed day or a past month
    (`slugline.clicks.cubes.save`): answers over closed days kept by a worker (`slugline.analytics.cache`) are
    good while it stays the same. No row: epoch 0."""

    __tablename__ = "cube_epochs"

    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), primary_key=True)
    epoch: Mapped[int] = mapped_column(BigInteger)


class CubeMove(Base):
    """A link that left or joined one of its account's views (deleted, hidden, shown), written by triggers in
    the transaction that changed it; the click writer moves its cubes and deletes the row."""

    __tablename__ = "cube_moves"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    account_id: Mapped[int] = mapped_column(BigInteger, index=True)
    link_id: Mapped[str] = mapped_column(String(32))
    kind: Mapped[str] = mapped_column(String(8))  # delete | hide | show
    public: Mapped[bool]  # delete: whether the link was in the public view


class VisitorSalt(Base):
    """The day's random salt for visitor hashes; old days are deleted, so old hashes cannot be re-linked."""

    __tablename__ = "visitor_salts"

    day: Mapped[date] = mapped_column(Date, primary_key=True)
    salt: Mapped[bytes] = mapped_column(LargeBinary(32))


class WebhookEndpoint(Base):
    """Where an account's events go (`slugline.webhooks`). The signing secret is not stored: it is derived from the
    server secret and `secret_salt`. Times are seconds since the epoch, as the triggers of migration 0015 write."""

    __tablename__ = "webhook_endpoints"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), index=True)
    url: Mapped[str] = mapped_column(String(MAX_URL))
    description: Mapped[str | None] = mapped_column(String(200), nullable=True)
    events: Mapped[str] = mapped_column(String(200))  # ",link.created,link.clicked," (the triggers match on it)
    secret_salt: Mapped[str] = mapped_column(String(64))
    base_url: Mapped[str] = mapped_column(String(MAX_URL))  # of the short URLs in the payloads
    enabled: Mapped[bool] = mapped_column(Boolean)
    disabled_reason: Mapped[str | None] = mapped_column(String(300), nullable=True)
    failing_since: Mapped[float | None] = mapped_column(Float, nullable=True)
    click_due: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    expired_through: Mapped[float] = mapped_column(Float)  # links that expired up to then have their message
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)


class WebhookMessage(Base):
    """The outbox: one event for one endpoint, written in the transaction of the change it tells of. `due_at` is
    when it is next tried (NULL once delivered); a claim moves it on by a lease, so a worker that dies mid-delivery
    leaves it to be tried again."""

    __tablename__ = "webhook_messages"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)  # the `webhook-id`: the same on every try
    endpoint_id: Mapped[str] = mapped_column(ForeignKey("webhook_endpoints.id", ondelete="CASCADE"))
    account_id: Mapped[int] = mapped_column(Integer)
    type: Mapped[str] = mapped_column(String(32))
    data: Mapped[str] = mapped_column(Text)  # JSON: the link's columns, or a click batch
    created_at: Mapped[float] = mapped_column(Float)
    due_at: Mapped[float | None] = mapped_column(Float, nullable=True, index=True)
    attempts: Mapped[int] = mapped_column(Integer)
    delivered_at: Mapped[float | None] = mapped_column(Float, nullable=True)

    __table_args__ = (Index("ix_webhook_messages_endpoint", "endpoint_id", "created_at"),)


class WebhookAttempt(Base):
    """One delivery attempt: the last `webhooks.log.KEPT` of each endpoint are kept."""

    __tablename__ = "webhook_attempts"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    endpoint_id: Mapped[str] = mapped_column(ForeignKey("webhook_endpoints.id", ondelete="CASCADE"))
    message_id: Mapped[str] = mapped_column(String(40))
    type: Mapped[str] = mapped_column(String(32))
    attempted_at: Mapped[float] = mapped_column(Float)
    status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str | None] = mapped_column(String(300), nullable=True)
    ms: Mapped[int] = mapped_column(Integer)

    __table_args__ = (Index("ix_webhook_attempts_endpoint", "endpoint_id", "id"),)
