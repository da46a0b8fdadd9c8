"""The OAuth tables, on the same declarative base as the rest of the schema (created by Alembic, like it).

A grant is one connected app: an account's consent for one client, with the scope the owner chose. Codes, access
tokens and refresh tokens hang off a grant and are stored only as keyed hashes; deleting the grant (disconnecting
the app) deletes them all in the same statement, so the next call with any of them is refused on every worker.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from slugline.common.bounds import MAX_TITLE, MAX_URL
from slugline.common.models import Base, Timestamp


class OAuthClient(Base):
    """A client registered through Dynamic Client Registration (RFC 7591). Client ID Metadata Document clients (an
    https `client_id`) are not stored: their document is the registration. Registration is anonymous, so each row
    names who made it (a keyed hash of the address) and when an owner first consented to it: one that none has
    expires (`slugline.oauth.clients`)."""

    __tablename__ = "oauth_clients"

    client_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    client_metadata: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(Timestamp)
    registered_by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    granted_at: Mapped[datetime | None] = mapped_column(Timestamp, nullable=True)

    __table_args__ = (
        Index("ix_oauth_clients_registered_by", "registered_by", "created_at"),
        Index("ix_oauth_clients_unused", "granted_at", "created_at"),
    )


class OAuthGrant(Base):
    __tablename__ = "oauth_grants"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    client_id: Mapped[str] = mapped_column(String(MAX_URL))
    client_name: Mapped[str] = mapped_column(String(MAX_TITLE))
    redirect_host: Mapped[str] = mapped_column(String(MAX_TITLE))
    scope: Mapped[str] = mapped_column(String(8))  # "full" or "public": what an API key of that scope may do
    created_at: Mapped[datetime] = mapped_column(Timestamp)
    last_used_at: Mapped[datetime | None] = mapped_column(Timestamp, nullable=True)

    __table_args__ = (Index("uq_oauth_grants_account_client", "account_id", "client_id", unique=True),)


class OAuthToken(Base):
    """An authorization code, access token or refresh token of a grant. A used code or a rotated refresh token stays
    as `spent` until it expires, so presenting it again is recognised as a replay and revokes the grant."""

    __tablename__ = "oauth_tokens"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    grant_id: Mapped[int] = mapped_column(ForeignKey("oauth_grants.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(8))  # code, access, refresh, spent
    resource: Mapped[str] = mapped_column(String(MAX_URL))  # the audience (RFC 8707): this server's /mcp
    expires_at: Mapped[datetime] = mapped_column(Timestamp)
    # Codes only: PKCE challenge (S256) and the redirect URI the code is bound to.
    code_challenge: Mapped[str | None] = mapped_column(String(128), nullable=True)
    redirect_uri: Mapped[str | None] = mapped_column(String(MAX_URL), nullable=True)
    redirect_explicit: Mapped[bool] = mapped_column(Boolean, default=True)
