"""The person's half of the flow, in the dashboard's look: the consent page after sign-in, and the connected apps in
settings. The owner chooses full access or public links only; the plan gate applies as for API keys."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlsplit

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from mcp.server.auth.provider import construct_redirect_uri
from mcp.shared.auth import OAuthClientInformationFull
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from slugline.accounts import service as accounts
from slugline.common.caller import Caller
from slugline.common.errors import ServiceError
from slugline.dashboard.pages import CSP, read_form, redirect, render
from slugline.dashboard.session import PageError, Visitor, check_csrf, visitor
from slugline.oauth import grants, pending, redirects
from slugline.oauth.provider import Provider
from slugline.oauth.tokens import SCOPES
from slugline.web.request import client_ip, request_base

router = APIRouter(include_in_schema=False)
EXPIRED = "this authorization request has expired or was changed: start connecting again from the app"


def _caller(who: Visitor) -> Caller:
    """The signed-in owner, after the plan gate (a free account sees the plan notice instead of the choice)."""
    caller = who.require()
    try:
        accounts.require_plan(caller)
    except ServiceError as exc:
        raise PageError(exc.status, exc.message) from None
    return caller


async def _request(who: Visitor, signed: str, request: Request) -> tuple[pending.Pending, OAuthClientInformationFull]:
    found = pending.verify(who.rt, signed)
    provider = Provider(who.rt, request_base(request.scope, who.rt), client_ip(request.scope))
    client = None if found is None else await provider.get_client(found.client_id)
    if found is None or client is None:
        raise PageError(400, EXPIRED)
    return found, client


def _host(url: str) -> str:
    return urlsplit(url).netloc


@router.get("/oauth/consent")
async def consent_page(request: Request) -> Response:
    who = await visitor(request)
    if who.caller is None:
        return redirect(f"/app/login?next={quote(request.url.path + '?' + request.url.query, safe='')}")
    _caller(who)
    signed = request.query_params.get("request", "")
    found, client = await _request(who, signed, request)
    response = render(
        request,
        who,
        "oauth_consent.html",
        client_name=client.client_name or _host(found.client_id) or found.client_id,
        client_id=found.client_id,
        redirect_host=_host(found.redirect_uri),
        chosen="public" if found.scope.split() == ["public"] else "full",
        signed=signed,
    )
    # Chromium applies form-action to the redirect that follows the form: allow the client's redirect URI, by the
    # origin (or an app's scheme) rebuilt from its checked parts, never by text copied from it into the header.
    if (source := redirects.csp_source(found.redirect_uri)) is not None:
        response.headers["Content-Security-Policy"] = CSP.replace("form-action 'self'", f"form-action 'self' {source}")
    return response


@router.post("/oauth/consent")
async def consent(request: Request) -> Response:
    who = await visitor(request)
    form = await read_form(request)
    check_csrf(who, form)
    caller = _caller(who)
    base = request_base(request.scope, who.rt).rstrip("/")
    found, client = await _request(who, form.get("request", ""), request)
    if form.get("decision") != "allow":
        target = construct_redirect_uri(found.redirect_uri, error="access_denied", state=found.state, iss=base)
        return RedirectResponse(target, 303, {"Cache-Control": "no-store"})
    scope = form.get("scope", "")
    if scope not in SCOPES:
        raise PageError(422, "scope must be full or public")
    approval = grants.Approval(
        client_id=found.client_id,
        client_name=(client.client_name or _host(found.client_id) or found.client_id)[:255],
        redirect_uri=found.redirect_uri,
        redirect_explicit=found.redirect_explicit,
        code_challenge=found.code_challenge,
        resource=found.resource,
        scope=scope,
    )
    code = await run_in_threadpool(grants.approve, who.rt, caller, approval, _host(found.redirect_uri)[:255])
    target = construct_redirect_uri(found.redirect_uri, code=code, state=found.state, iss=base)
    return RedirectResponse(target, 303, {"Cache-Control": "no-store"})


async def connected_apps(who: Visitor) -> list[dict[str, Any]]:
    """For the settings page: the account's connected apps."""
    return await run_in_threadpool(grants.connected, who.rt, who.require())


@router.post("/app/settings/apps/{grant_id}/disconnect")
async def disconnect(request: Request, grant_id: int) -> Response:
    who = await visitor(request)
    caller = who.require()
    check_csrf(who, await read_form(request))
    if not await run_in_threadpool(grants.disconnect, who.rt, caller, grant_id):
        raise PageError(404, "connected app not found")
    return redirect("/app/settings?disconnected=1#apps-h")
