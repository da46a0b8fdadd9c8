"""The OAuth endpoints: discovery metadata (RFC 9728, RFC 8414), and the SDK's handlers for registration (RFC 7591),
authorization, token and revocation (RFC 7009), each given a provider for the request's base URL.

Errors here follow RFC 6749 (`{"error": "<code>", "error_description": "..."}`), which OAuth clients parse. Every
endpoint here is anonymous: each draws from the caller's `oauth:` IP bucket, at the anonymous rate, and a body is read
before the SDK sees it, as the REST API and /mcp read theirs (see `_read`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.revoke import RevocationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import ClientAuthenticator
from mcp.server.auth.routes import cors_middleware
from mcp.server.auth.settings import ClientRegistrationOptions
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from slugline.common.errors import RateLimited, ServiceError
from slugline.limits.rules import ip_key
from slugline.oauth import documents
from slugline.oauth.provider import Provider
from slugline.oauth.tokens import PRM_PATH, SCOPES, mcp_resource
from slugline.runtime import Runtime
from slugline.web.request import client_ip, read_body, replay, request_base

AS_PATH = "/.well-known/oauth-authorization-server"
REGISTRATION = ClientRegistrationOptions(enabled=True, valid_scopes=list(SCOPES), default_scopes=list(SCOPES))
NO_STORE = {"Cache-Control": "no-store"}
FORM, JSON_BODY = "application/x-www-form-urlencoded", "application/json"  # what RFC 6749 and RFC 7591 send
Handler = Callable[[Request], Awaitable[Response]]


def _runtime(request: Request) -> Runtime:
    rt: Runtime = request.app.state.runtime
    return rt


def _base(request: Request) -> str:
    return request_base(request.scope, _runtime(request)).rstrip("/")


async def protected_resource(request: Request) -> Response:
    base = _base(request)
    return JSONResponse(
        {
            "resource": mcp_resource(base),
            "authorization_servers": [base],
            "scopes_supported": list(SCOPES),
            "bearer_methods_supported": ["header"],
            "resource_name": "Slugline",
            "resource_documentation": f"{base}/api/v1/docs",
        }
    )


async def authorization_server(request: Request) -> Response:
    base = _base(request)
    auth_methods = ["client_secret_post", "client_secret_basic", "none"]
    return JSONResponse(
        {
            "issuer": base,
            "authorization_endpoint": f"{base}/oauth/authorize",
            "token_endpoint": f"{base}/oauth/token",
            "registration_endpoint": f"{base}/oauth/register",
            "revocation_endpoint": f"{base}/oauth/revoke",
            "scopes_supported": list(SCOPES),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": auth_methods,
            "revocation_endpoint_auth_methods_supported": auth_methods,
            "code_challenge_methods_supported": ["S256"],
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
        }
    )


def _provider(request: Request, code_verifier: str | None = None) -> Provider:
    return Provider(_runtime(request), _base(request), client_ip(request.scope), code_verifier)


def _error(status: int, code: str, description: str, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse({"error": code, "error_description": description}, status, {**NO_STORE, **(headers or {})})


async def _over_limit(request: Request) -> Response | None:
    """The 429 once the caller's IP has spent its `oauth:` bucket, else None (the request counted)."""
    rt = _runtime(request)
    decision = await rt.limiter.hit(f"oauth:{ip_key(client_ip(request.scope))}", rt.settings.rate_limit_anonymous)
    if decision.allowed:
        return None
    message = f"too many requests: retry in {decision.retry_after} s"
    return _error(429, "slow_down", message, {"Retry-After": str(decision.retry_after)})


async def _read(request: Request, media_type: str) -> Request | Response:
    """The request with its body read already, for an SDK handler, or the error that refused it: the one media type
    the RFC names (a multipart form would have its files spilled to disk by Starlette's parser), at most `MAX_BODY`
    bytes and all of it within `body_timeout_seconds` (413 and 408, the REST API's and /mcp's bounds). The SDK's
    handlers read the body with no bound at all."""
    ctype = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
    if ctype != media_type:
        return _error(400, "invalid_request", f"the request body must be sent as {media_type}")
    try:
        body = await read_body(request.scope, request.receive, _runtime(request).settings.body_timeout_seconds)
    except ServiceError as exc:
        return _error(exc.status, "invalid_request", exc.message)
    if body is None:  # the client left before sending it all: the answer goes nowhere
        return _error(400, "invalid_request", "the request body was not sent in full")
    return Request(request.scope, replay(body, request.receive))


async def authorize(request: Request) -> Response:
    if (refused := await _over_limit(request)) is not None:
        return refused
    if request.method == "POST":
        read = await _read(request, FORM)
        if isinstance(read, Response):
            return read
        request = read
    if (refused := await _document_refused(request)) is not None:
        return refused
    return await AuthorizationHandler(_provider(request)).handle(request)


async def _document_refused(request: Request) -> Response | None:
    """Why the request's client_id, a Client ID Metadata Document's URL, cannot be used, as the answer: the SDK would
    only say the client is unknown, also when the caller's IP has spent its fetches (429 here). None otherwise; the
    document is cached then, for the SDK's own lookup."""
    params = await request.form() if request.method == "POST" else request.query_params
    client_id = params.get("client_id")
    if not (isinstance(client_id, str) and documents.is_document_url(client_id)):
        return None
    try:
        await documents.resolve(_runtime(request), client_id, client_ip(request.scope))
    except documents.DocumentError as exc:
        return _error(400, "invalid_client", str(exc))
    except RateLimited as exc:
        return _error(429, "slow_down", exc.message, exc.headers)
    return None


def _limited(handler: Callable[[Provider], Handler], media_type: str) -> Handler:
    async def endpoint(request: Request) -> Response:
        if (refused := await _over_limit(request)) is not None:
            return refused
        read = await _read(request, media_type)
        if isinstance(read, Response):
            return read
        verifier = None
        if media_type == FORM:
            if (refused := await _document_refused(read)) is not None:
                return refused
            # The token request's PKCE verifier, for the provider to check before it treats a spent code as replayed.
            found = (await read.form()).get("code_verifier")
            verifier = found if isinstance(found, str) else None
        try:
            return await handler(_provider(read, verifier))(read)
        except RateLimited as exc:  # registration: the caller's address holds too many unused registrations
            return _error(429, "slow_down", exc.message, exc.headers)

    return endpoint


def _token(p: Provider) -> Handler:
    return TokenHandler(p, ClientAuthenticator(p)).handle


def _register(p: Provider) -> Handler:
    return RegistrationHandler(p, REGISTRATION).handle


def _revoke(p: Provider) -> Handler:
    return RevocationHandler(p, ClientAuthenticator(p)).handle


def routes() -> list[Route]:
    """Every OAuth route; the consent page is the dashboard-side half (`oauth.consent`)."""
    posted: list[tuple[str, Callable[[Provider], Handler], str]] = [
        ("/oauth/token", _token, FORM),
        ("/oauth/register", _register, JSON_BODY),
        ("/oauth/revoke", _revoke, FORM),
    ]
    found: list[Route] = [
        Route(path, cors_middleware(handler, ["GET", "OPTIONS"]), methods=["GET", "OPTIONS"])
        for path, handler in (
            (PRM_PATH, protected_resource),
            (f"{PRM_PATH}/mcp", protected_resource),
            (AS_PATH, authorization_server),
        )
    ]
    found.append(Route("/oauth/authorize", authorize, methods=["GET", "POST"]))
    found.extend(
        Route(path, cors_middleware(_limited(make, media_type), ["POST", "OPTIONS"]), methods=["POST", "OPTIONS"])
        for path, make, media_type in posted
    )
    return found


__all__: list[Any] = ["routes"]
