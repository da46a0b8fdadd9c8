"""Who is calling: the request's Bearer token resolved to a Caller once, kept on the ASGI scope for everyone after.

The rate-limit middleware resolves it first (it needs the plan); the REST dependencies and the MCP gate read the
same answer. Resolving checks the token only (401); plan and scope rules are the service layer's.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import anyio.to_thread
from starlette.types import Scope

from slugline import _core
from slugline.accounts import callers
from slugline.common.caller import Caller
from slugline.common.errors import Unauthorized
from slugline.oauth import tokens
from slugline.runtime import Runtime
from slugline.web.request import header, request_base

IDENTITY_KEY = "slugline.identity"
REST_REFUSES_OAUTH = "OAuth access tokens are for the MCP endpoint (/mcp) only: the REST API takes API keys"


@dataclass(frozen=True, slots=True)
class Identity:
    caller: Caller | None  # None: no token, or one that failed
    failure: Unauthorized | None  # why a token that was sent is refused
    digest: str | None = None  # keyed hash of a well-formed key or session token: the session a logout revokes

    def require(self) -> Caller:
        """The caller, or the 401 for a missing or invalid token."""
        if self.caller is None:
            raise self.failure or Unauthorized("missing API key: send 'Authorization: Bearer <key>'")
        return self.caller


async def identify(rt: Runtime, scope: Scope) -> Identity:
    """Resolved once per request: from this worker's identity cache without a thread when it can be trusted
    (see `slugline.accounts.identitycache`), else from the database in one worker thread."""
    found: Identity | None = scope.get(IDENTITY_KEY)
    if found is None:
        found = _at_once(rt, scope)
        if found is None:
            found = await _resolved_once(rt, scope)
        scope[IDENTITY_KEY] = found
    return found


# Resolutions under way: (event loop, runtime, Authorization header) -> the answer, once the one read is done. An
# entry lives as long as its read (so there are never more than requests in flight).
_flights: dict[tuple[int, int, str], asyncio.Future[Identity | None]] = {}


async def _resolved_once(rt: Runtime, scope: Scope) -> Identity:
    """Resolved on a worker thread, once per token however many of its requests arrive meanwhile: when a token's
    answer runs out of trust, every request in flight with it would otherwise take a thread and read the database
    (64 connections: 64 reads queued on the database threads, fighting the event loop for the GIL). The others wait
    for the first's answer, and take it from the identity cache as usual, with their own base URL."""
    authorization = header(scope, b"authorization") or ""
    if authorization.partition(" ")[2].strip().startswith(tokens.ACCESS_PREFIX):
        return await anyio.to_thread.run_sync(_resolve, rt, scope)  # OAuth: the answer depends on the path too
    loop = asyncio.get_running_loop()
    key = (id(loop), id(rt), authorization)
    flight = _flights.get(key)
    if flight is not None:
        shared = await asyncio.shield(flight)
        if shared is not None and shared.caller is None:
            return shared  # the same token, refused: the same answer
        again = _at_once(rt, scope) if shared is not None else None
        if again is not None:
            return again
        return await anyio.to_thread.run_sync(_resolve, rt, scope)
    flight = loop.create_future()
    _flights[key] = flight
    found: Identity | None = None
    try:
        resolved = await anyio.to_thread.run_sync(_resolve, rt, scope)
        found = resolved
        return resolved
    finally:
        del _flights[key]
        flight.set_result(found)  # None (this request failed or was cancelled): the others resolve on their own


def _at_once(rt: Runtime, scope: Scope) -> Identity | None:
    """The identity when it needs no I/O: no token, a malformed one, or one resolved here a moment ago."""
    authorization = header(scope, b"authorization")
    if authorization is None:
        return Identity(None, None)
    scheme, _, secret = authorization.partition(" ")
    if secret.strip().startswith(tokens.ACCESS_PREFIX) and scheme.lower() == "bearer":
        return None  # OAuth access tokens are read from the database every time
    try:
        token = callers.parse(rt, authorization)
        caller = callers.cached(rt, token, request_base(scope, rt))
    except Unauthorized as exc:  # missing, malformed, or refused a moment ago
        return Identity(None, exc)
    return None if caller is None else Identity(caller, None, token.digest)


def always_anonymous(scope: Scope) -> bool:
    """Whether the call draws from its IP's anonymous bucket whatever its token turns out to be: no token, a
    malformed one or a session token (`limits.api_buckets`). Only an API key or an OAuth token may turn out to have
    a bucket of its own. No I/O."""
    scheme, _, secret = (header(scope, b"authorization") or "").partition(" ")
    secret = secret.strip()
    if scheme.lower() != "bearer" or not secret:
        return True
    return not secret.startswith(tokens.ACCESS_PREFIX) and _core.key_kind(secret) in (None, "session")


def _resolve(rt: Runtime, scope: Scope) -> Identity:
    authorization = header(scope, b"authorization") or ""
    scheme, _, secret = authorization.partition(" ")
    if secret.strip().startswith(tokens.ACCESS_PREFIX) and scheme.lower() == "bearer":
        return _resolve_oauth(rt, scope, secret.strip())
    try:
        token = callers.parse(rt, authorization)
        base = request_base(scope, rt)
        return Identity(callers.cached(rt, token, base) or callers.resolve(rt, token, base), None, token.digest)
    except Unauthorized as exc:
        return Identity(None, exc)


def _resolve_oauth(rt: Runtime, scope: Scope, token: str) -> Identity:
    """An OAuth access token is bound to this server's /mcp (its audience); the REST API takes API keys only."""
    if scope.get("path", "").rstrip("/") != "/mcp":
        return Identity(None, Unauthorized(REST_REFUSES_OAUTH))
    try:
        return Identity(tokens.authenticate(rt, token, request_base(scope, rt)), None)
    except Unauthorized as exc:
        return Identity(None, exc)
