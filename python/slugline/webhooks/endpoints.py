"""Webhook endpoints of an account: create (the secret shown once), list, read, change, delete; their delivery log
and "send again". One function per operation, called by REST, the dashboard and the command line. Sessions and
full-access keys only: a public-only key cannot aim the account's events anywhere."""

from __future__ import annotations

import secrets
import time
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, func, select, update

from slugline.common.caller import Caller
from slugline.common.clock import isoformat
from slugline.common.errors import Conflict, Forbidden, Invalid, NotFound
from slugline.common.models import WebhookAttempt, WebhookEndpoint, WebhookMessage
from slugline.common.validation import parse
from slugline.fetch.fetcher import UnsafeURLError, parse_url
from slugline.runtime import Runtime
from slugline.webhooks import signing
from slugline.webhooks.inputs import EVENTS, WebhookCreate, WebhookUpdate

NOT_FOUND = "webhook not found"
MAX_ENDPOINTS = 10  # per account: each change and click batch writes a message for each endpoint
KEPT_ATTEMPTS = 100  # per endpoint, in the delivery log


def require_full(caller: Caller) -> None:
    if caller.scope == "public":
        raise Forbidden("a public-only key cannot manage webhooks")


def moment(seconds: float | None) -> str | None:
    return None if seconds is None else isoformat(datetime.fromtimestamp(seconds, UTC))


def endpoint_dict(e: WebhookEndpoint) -> dict[str, Any]:
    return {
        "id": e.id,
        "url": e.url,
        "description": e.description,
        "events": [name for name in EVENTS if f",{name}," in e.events],
        "enabled": bool(e.enabled),
        "disabled_reason": e.disabled_reason,
        "failing_since": moment(e.failing_since),
        "created_at": moment(e.created_at),
        "updated_at": moment(e.updated_at),
    }


def checked_url(url: str) -> str:
    """`url` if it can be delivered to: http(s), no credentials, a valid host and port. Its addresses are checked
    (public, unless the operator allows private ones) at each delivery, since a name may move."""
    try:
        parse_url(url)
    except UnsafeURLError as exc:
        raise Invalid(str(exc)) from None
    return url


def _events(names: list[str]) -> str:
    return "," + ",".join(name for name in EVENTS if name in names) + ","


def create_endpoint(rt: Runtime, caller: Caller, data: Any) -> dict[str, Any]:
    """A new endpoint and its signing secret, which is shown this once."""
    require_full(caller)
    body = parse(WebhookCreate, data)
    now = time.time()
    endpoint = WebhookEndpoint(
        id="whe_" + secrets.token_hex(8),
        account_id=caller.account_id,
        url=checked_url(body.url),
        description=body.description,
        events=_events(list(body.events)),
        secret_salt=signing.new_salt(),
        base_url=caller.base_url.rstrip("/"),
        enabled=True,
        click_due=0.0,
        expired_through=now,
        created_at=now,
        updated_at=now,
    )
    with rt.db.writing() as session:
        count = session.scalar(select(func.count()).where(WebhookEndpoint.account_id == caller.account_id))
        if (count or 0) >= MAX_ENDPOINTS:
            raise Conflict(f"an account has at most {MAX_ENDPOINTS} webhook endpoints")
        session.add(endpoint)
        session.flush()
        made = endpoint_dict(endpoint)
    return {**made, "secret": signing.secret_text(rt.secret, endpoint.secret_salt)}


def list_endpoints(rt: Runtime, caller: Caller) -> dict[str, Any]:
    require_full(caller)
    with rt.db.session() as session:
        found = session.scalars(
            select(WebhookEndpoint)
            .where(WebhookEndpoint.account_id == caller.account_id)
            .order_by(WebhookEndpoint.created_at)
        )
        return {"data": [endpoint_dict(e) for e in found]}


def _find(session: Any, caller: Caller, endpoint_id: str) -> WebhookEndpoint:
    if "\x00" in endpoint_id:
        raise NotFound(NOT_FOUND)
    found: WebhookEndpoint | None = session.scalar(
        select(WebhookEndpoint).where(
            WebhookEndpoint.id == endpoint_id, WebhookEndpoint.account_id == caller.account_id
        )
    )
    if found is None:
        raise NotFound(NOT_FOUND)
    return found


def get_endpoint(rt: Runtime, caller: Caller, endpoint_id: str) -> dict[str, Any]:
    require_full(caller)
    with rt.db.session() as session:
        return endpoint_dict(_find(session, caller, endpoint_id))


def update_endpoint(rt: Runtime, caller: Caller, endpoint_id: str, data: Any) -> dict[str, Any]:
    """Changes the fields sent. Turned back on, an endpoint's waiting messages are due at once, and its failures
    are forgotten; turned off, they wait (new events are not recorded for it meanwhile)."""
    require_full(caller)
    body = parse(WebhookUpdate, data)
    sent = body.model_fields_set
    if not sent:
        raise Invalid("the update body is empty: send at least one field to change")
    now = time.time()
    with rt.db.writing() as session:
        endpoint = _find(session, caller, endpoint_id)
        if body.url is not None:
            endpoint.url = checked_url(body.url)
        if body.events is not None:
            endpoint.events = _events(list(body.events))
        if "description" in sent:
            endpoint.description = body.description
        if body.enabled is not None and body.enabled != bool(endpoint.enabled):
            _switch(session, endpoint, body.enabled, now)
        endpoint.updated_at = now
        session.flush()
        return endpoint_dict(endpoint)


def _switch(session: Any, endpoint: WebhookEndpoint, on: bool, now: float) -> None:
    endpoint.enabled = on
    if on:
        endpoint.disabled_reason = None
        endpoint.failing_since = None
        waiting = (WebhookMessage.endpoint_id == endpoint.id, WebhookMessage.delivered_at.is_(None))
        session.execute(update(WebhookMessage).where(*waiting).values(due_at=now))
    else:
        endpoint.disabled_reason = "turned off by the account"
        pending = (WebhookMessage.endpoint_id == endpoint.id, WebhookMessage.delivered_at.is_(None))
        session.execute(update(WebhookMessage).where(*pending).values(due_at=None))


def delete_endpoint(rt: Runtime, caller: Caller, endpoint_id: str) -> dict[str, Any]:
    """Deletes the endpoint, its waiting messages and its delivery log."""
    require_full(caller)
    with rt.db.writing() as session:
        endpoint = _find(session, caller, endpoint_id)
        for table in (WebhookMessage, WebhookAttempt):
            session.execute(delete(table).where(table.endpoint_id == endpoint.id))
        session.delete(endpoint)
    return {"deleted": True, "id": endpoint_id}


def attempt_dict(a: WebhookAttempt) -> dict[str, Any]:
    return {
        "id": a.id,
        "message_id": a.message_id,
        "type": a.type,
        "attempted_at": moment(a.attempted_at),
        "status": a.status,
        "error": a.error,
        "duration_ms": a.ms,
    }


def list_attempts(rt: Runtime, caller: Caller, endpoint_id: str) -> dict[str, Any]:
    """The endpoint's last `KEPT_ATTEMPTS` delivery attempts, newest first."""
    require_full(caller)
    with rt.db.session() as session:
        endpoint = _find(session, caller, endpoint_id)
        found = session.scalars(
            select(WebhookAttempt)
            .where(WebhookAttempt.endpoint_id == endpoint.id)
            .order_by(WebhookAttempt.id.desc())
            .limit(KEPT_ATTEMPTS)
        )
        return {"data": [attempt_dict(a) for a in found]}


def resend(rt: Runtime, caller: Caller, endpoint_id: str, message_id: str) -> dict[str, Any]:
    """Sends a message again (delivered or not), with the same id: due at once. 404 once it is no longer kept."""
    require_full(caller)
    if "\x00" in message_id:
        raise NotFound("message not found (a delivered message is kept while the delivery log shows it)")
    with rt.db.writing() as session:
        endpoint = _find(session, caller, endpoint_id)
        if not endpoint.enabled:
            raise Conflict("the endpoint is disabled: turn it on first")
        done = session.execute(
            update(WebhookMessage)
            .where(WebhookMessage.id == message_id, WebhookMessage.endpoint_id == endpoint.id)
            .values(due_at=time.time(), delivered_at=None)
        )
        if not getattr(done, "rowcount", 0):
            raise NotFound("message not found (a delivered message is kept while the delivery log shows it)")
    return {"message_id": message_id, "queued": True}
