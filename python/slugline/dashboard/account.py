"""Settings: the account (plan, password) and the API section, where the owner generates, replaces and revokes the
full-access and public-only keys (`accounts.keys`, as `/api-key`) and finds the MCP configuration for this server."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from slugline.accounts import deletion, keys
from slugline.accounts import service as accounts
from slugline.common.errors import ServiceError
from slugline.dashboard.consent import connected_apps
from slugline.dashboard.pages import field_errors, read_form, redirect, render
from slugline.dashboard.session import Visitor, check_csrf, clear_session, visitor
from slugline.limits import rules as limits
from slugline.web.request import client_ip

router = APIRouter(include_in_schema=False)
SCOPES = {"full": "full-access", "public": "public-only"}
PASSWORD_FIELDS = ("current_password", "new_password")


def _plan_notice(caller: Any) -> str | None:
    """Why this account's keys would be refused (the API's own message), or None when its plan allows API access."""
    try:
        accounts.require_plan(caller)
    except ServiceError as exc:
        return exc.message
    return None


async def _settings(request: Request, who: Visitor, status: int = 200, **context: Any) -> Response:
    caller = who.require()
    listed = await run_in_threadpool(keys.list_keys, who.rt, caller)
    context.setdefault("new_key", None)
    context.setdefault("notice", None)
    return render(
        request,
        who,
        "settings.html",
        status,
        keys={key["scope"]: key for key in listed["keys"]},
        scopes=SCOPES,
        plan_notice=_plan_notice(caller),
        mcp_url=f"{caller.base_url}/mcp",
        connected_apps=await connected_apps(who),
        **context,
    )


@router.get("/app/settings")
async def settings_page(request: Request) -> Response:
    who = await visitor(request)
    notice = "Password changed; your other sessions were signed out." if request.query_params.get("changed") else None
    return await _settings(request, who, notice=notice)


@router.post("/app/settings/password")
async def change_password(request: Request) -> Response:
    who = await visitor(request)
    caller = who.require()
    form = await read_form(request)
    check_csrf(who, form)
    data = {name: form.get(name, "") for name in PASSWORD_FIELDS}
    try:
        await limits.check_login(who.rt, client_ip(request.scope), caller.username)  # a password guess, like a login
        await run_in_threadpool(accounts.change_password, who.rt, caller, data, who.digest)
    except ServiceError as exc:
        return await _settings(request, who, exc.status, errors=field_errors(exc.message, PASSWORD_FIELDS))
    return redirect("/app/settings?changed=1")


@router.post("/app/settings/delete")
async def delete_account(request: Request) -> Response:
    """The owner deletes the account, with its password: closed at once (signed out everywhere, keys void), the rest
    taken by the servers' upkeep within minutes (`accounts.deletion.close_own`)."""
    who = await visitor(request)
    caller = who.require()
    form = await read_form(request)
    check_csrf(who, form)
    try:
        await limits.check_login(who.rt, client_ip(request.scope), caller.username)  # a password guess, like a login
        await run_in_threadpool(deletion.close_own, who.rt, caller, form.get("password", ""))
    except ServiceError as exc:
        return await _settings(request, who, exc.status, errors=field_errors(exc.message, ("password",)))
    response = redirect("/app/login?deleted=1")
    clear_session(request, response)
    return response


@router.post("/app/settings/keys")
async def manage_key(request: Request) -> Response:
    """Generate (replacing the old key) or revoke one scope's key; a new key is in this response only."""
    who = await visitor(request)
    caller = who.require()
    form = await read_form(request)
    check_csrf(who, form)
    scope, action = form.get("scope", ""), form.get("action", "")
    try:
        if action == "generate":
            made = await run_in_threadpool(keys.create_key, who.rt, caller, {"scope": scope})
            return await _settings(request, who, new_key=made)
        if action == "revoke":
            await run_in_threadpool(keys.delete_key, who.rt, caller, scope)
            return await _settings(request, who, notice=f"The {SCOPES.get(scope, scope)} key was revoked.")
        return await _settings(request, who, 422, errors={"": "action must be generate or revoke"})
    except ServiceError as exc:
        return await _settings(request, who, exc.status, errors={"": exc.message})
