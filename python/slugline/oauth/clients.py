"""Dynamically registered clients (RFC 7591) as rows. Anyone may register, anonymously, up to 16 KiB a time at the
`oauth:` rate of their IP, so a registration is kept for good only once an owner consents to it: one that no owner
has consented to within `UNUSED_TTL` is refused from then on, and deleted by the next registration (as a grant's
expired tokens are deleted when it is issued new ones). An address (its `ip_key`: an IPv4 address, an IPv6 /64)
holds at most `MAX_UNUSED_PER_ADDRESS` unused registrations at a time; past that, registering is 429 until its
oldest expires. A real client registers once and is consented to within minutes, so neither bound touches it.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, delete, or_, select, update
from sqlalchemy.orm import Session

from slugline import _core
from slugline.common.clock import as_utc, utcnow
from slugline.common.errors import RateLimited
from slugline.limits.rules import ip_key
from slugline.oauth.models import OAuthClient
from slugline.runtime import Runtime

UNUSED_TTL = timedelta(hours=24)  # a day to finish connecting: signing in and consenting takes minutes
MAX_UNUSED_PER_ADDRESS = 20  # a handful of apps, each retried a few times; 320 KiB of metadata at most


def registrant(rt: Runtime, ip: str) -> str:
    """Who registers, as stored: a keyed hash of the address's `ip_key`, so the table keeps no address."""
    return _core.keyed_hash(rt.secret, f"oauth-registrant:{ip_key(ip)}")


def _unused(now: datetime) -> ColumnElement[bool]:
    """Registrations no owner has consented to, still within their time."""
    return (OAuthClient.granted_at.is_(None)) & (OAuthClient.created_at > now - UNUSED_TTL)


def store(rt: Runtime, client_id: str, metadata: dict[str, Any], ip: str) -> None:
    """Keep a new registration from `ip`, after deleting the expired ones; RateLimited when that address holds
    `MAX_UNUSED_PER_ADDRESS` unused ones already."""
    now, who = utcnow(), registrant(rt, ip)
    with rt.db.session() as session:
        prune(session, now)
        held = session.scalars(
            select(OAuthClient.created_at)
            .where(OAuthClient.registered_by == who, _unused(now))
            .order_by(OAuthClient.created_at)
            .limit(MAX_UNUSED_PER_ADDRESS)
        ).all()
        if len(held) >= MAX_UNUSED_PER_ADDRESS:
            wait = as_utc(held[0]) + UNUSED_TTL - now
            message = f"this address holds {MAX_UNUSED_PER_ADDRESS} unused client registrations, the most it may"
            raise RateLimited(message, max(1, math.ceil(wait.total_seconds())))
        session.add(OAuthClient(client_id=client_id, client_metadata=metadata, created_at=now, registered_by=who))


def load(rt: Runtime, client_id: str) -> dict[str, Any] | None:
    """A registration's metadata; None when there is none, or it expired unused."""
    now = utcnow()
    with rt.db.session() as session:
        found = session.scalar(
            select(OAuthClient.client_metadata).where(
                OAuthClient.client_id == client_id, or_(OAuthClient.granted_at.is_not(None), _unused(now))
            )
        )
        return None if found is None else dict(found)


def consented(session: Session, client_id: str) -> None:
    """An owner consented to the client: its registration is kept for good (a no-op for a metadata document's)."""
    session.execute(
        update(OAuthClient)
        .where(OAuthClient.client_id == client_id, OAuthClient.granted_at.is_(None))
        .values(granted_at=utcnow())
    )


def prune(session: Session, now: datetime) -> None:
    """Delete the registrations that expired unused."""
    session.execute(
        delete(OAuthClient).where(OAuthClient.granted_at.is_(None), OAuthClient.created_at <= now - UNUSED_TTL)
    )
