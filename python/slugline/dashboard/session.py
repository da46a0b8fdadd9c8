"""Who is signed in to the dashboard, and the CSRF token every state-changing form carries.

The session is the `svc_sess_` token of `accounts.service` in an HttpOnly, SameSite=Lax cookie, so a page resolves
it exactly as the API resolves a Bearer token. A form's CSRF token is a keyed hash of the session token's digest
(signed in) or of a random pre-session cookie (the sign-in and create-account forms), so another site can neither
read nor forge it.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from fastapi.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from slugline import _core
from slugline.accounts import callers
from slugline.accounts import service as accounts
from slugline.common.caller import Caller
from slugline.common.errors import ServiceError, Unauthorized
from slugline.limits import rules as limits
from slugline.runtime import Runtime
from slugline.web.request import client_ip, request_base

VISITOR_KEY = "slugline.visitor"  # the request's Visitor, on its ASGI scope
SESSION_COOKIE = "slugline_session"
PRESESSION_COOKIE = "slugline_csrf"
CSRF_FIELD = "csrf_token"


class SignInRequired(Exception):
    """No valid session: the page answers with a redirect to the sign-in form."""


class CsrfRefused(Exception):
    """A state-changing form arrived without this visitor's CSRF token."""


class PageError(Exception):
    """A page that cannot be shown (a link not found, a plan without access, a rate limit): an error page with the
    service's status, message and headers (Retry-After)."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})

    @classmethod
    def of(cls, exc: ServiceError) -> PageError:
        return cls(exc.status, exc.message, exc.headers)


@dataclass(frozen=True, slots=True)
class Visitor:
    """A request to the dashboard: the caller when signed in, and the token its forms must carry."""

    rt: Runtime
    caller: Caller | None
    digest: str | None  # keyed hash of the session token, to revoke it or keep it on a password change
    csrf: str
    new_presession: str | None = None  # a pre-session cookie to set on the response

    def require(self) -> Caller:
        if self.caller is None:
            raise SignInRequired
        return self.caller

    def owner(self) -> Caller:
        """The caller acting on the account's links and figures: the API's plan rule applies."""
        try:
            return accounts.as_owner(self.require())
        except ServiceError as exc:
            raise PageError.of(exc) from None


def runtime(request: Request) -> Runtime:
    rt: Runtime = request.app.state.runtime
    return rt


def _csrf_for(rt: Runtime, seed: str) -> str:
    return _core.keyed_hash(rt.secret, f"dashboard-csrf:{seed}")


async def visitor(request: Request) -> Visitor:
    """Who is asking, worked out once per request. The first time, the request also draws from the buckets an API
    call with the same token would (its IP's, and a signed-in session's own: `limits.api_buckets`), so the dashboard
    is no way around the API's rate limits; over them, a 429 page with Retry-After."""
    found: Visitor | None = request.scope.get(VISITOR_KEY)
    if found is None:
        found = request.scope[VISITOR_KEY] = await _identify(request)  # the error page asks again: no second draw
        rt = found.rt
        buckets = limits.api_buckets(rt, found.caller, client_ip(request.scope))
        decision = await limits.draw(rt, buckets)
        if not decision.allowed:
            message = f"rate limit exceeded: retry in {decision.retry_after} s"
            raise PageError(429, message, {"Retry-After": str(decision.retry_after)})
    return found


async def _identify(request: Request) -> Visitor:
    rt = runtime(request)
    token = request.cookies.get(SESSION_COOKIE, "")
    if _core.key_kind(token) == "session":
        base = request_base(request.scope, rt)
        try:
            parsed = callers.parse(rt, f"Bearer {token}")
            caller = callers.cached(rt, parsed, base) or await run_in_threadpool(callers.resolve, rt, parsed, base)
        except Unauthorized:  # expired or revoked: a visitor like any other
            pass
        else:
            return Visitor(rt, caller, parsed.digest, _csrf_for(rt, parsed.digest))
    seed = request.cookies.get(PRESESSION_COOKIE, "")
    fresh = None
    if not 32 <= len(seed) <= 128:
        seed = fresh = secrets.token_urlsafe(32)
    return Visitor(rt, None, None, _csrf_for(rt, f"pre:{seed}"), fresh)


def check_csrf(who: Visitor, form: dict[str, str]) -> None:
    if not hmac.compare_digest(form.get(CSRF_FIELD, "").encode(), who.csrf.encode()):
        raise CsrfRefused


def secure(request: Request) -> bool:
    return request.url.scheme == "https"


def set_session(request: Request, response: Response, token: str) -> None:
    rt = runtime(request)
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=rt.settings.session_hours * 3600,
        path="/",
        httponly=True,
        samesite="lax",
        secure=secure(request),
    )


def set_presession(request: Request, response: Response, who: Visitor) -> None:
    if who.new_presession is not None:
        response.set_cookie(
            PRESESSION_COOKIE, who.new_presession, path="/app", httponly=True, samesite="lax", secure=secure(request)
        )


def clear_session(request: Request, response: Response) -> None:
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="lax", secure=secure(request))
