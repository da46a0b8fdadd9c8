"""The Webhooks page: the account's endpoints (add one, its secret shown once; turn off and on; delete), why one was
disabled, and each endpoint's delivery log with "Send again" (`webhooks.endpoints`, as `/api/v1/webhooks`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from slugline.common.errors import ServiceError
from slugline.dashboard.pages import field_errors, read_form, redirect, render
from slugline.dashboard.session import PageError, Visitor, check_csrf, visitor
from slugline.webhooks import endpoints
from slugline.webhooks.inputs import EVENTS

router = APIRouter(include_in_schema=False)


async def _list(request: Request, who: Visitor, status: int = 200, **context: Any) -> Response:
    listed = await run_in_threadpool(endpoints.list_endpoints, who.rt, who.require())
    context.setdefault("new", None)
    context.setdefault("form", {"url": "", "events": list(EVENTS)})
    return render(request, who, "webhooks.html", status, hooks=listed["data"], events=EVENTS, **context)


@router.get("/app/webhooks")
async def webhooks_page(request: Request) -> Response:
    return await _list(request, await visitor(request))


@router.post("/app/webhooks")
async def add_webhook(request: Request) -> Response:
    who = await visitor(request)
    caller = who.require()
    form = await read_form(request)
    check_csrf(who, form)
    data = {"url": form.get("url", "").strip(), "events": [e for e in EVENTS if form.get(f"event:{e}")]}
    try:
        made = await run_in_threadpool(endpoints.create_endpoint, who.rt, caller, data)
    except ServiceError as exc:
        errors = field_errors(exc.message, ("url", "events"))
        return await _list(request, who, exc.status, errors=errors, form=data)
    return await _list(request, who, 201, new=made)


@router.post("/app/webhooks/{webhook_id}")
async def change_webhook(request: Request, webhook_id: str) -> Response:
    """`action`: on, off or delete."""
    who = await visitor(request)
    caller = who.require()
    form = await read_form(request)
    check_csrf(who, form)
    action = form.get("action", "")
    try:
        if action == "delete":
            await run_in_threadpool(endpoints.delete_endpoint, who.rt, caller, webhook_id)
            return redirect("/app/webhooks")
        if action not in ("on", "off"):
            return await _list(request, who, 422, errors={"": "action must be on, off or delete"})
        await run_in_threadpool(endpoints.update_endpoint, who.rt, caller, webhook_id, {"enabled": action == "on"})
    except ServiceError as exc:
        raise PageError(exc.status, exc.message) from None
    return redirect(f"/app/webhooks/{webhook_id}")


@router.get("/app/webhooks/{webhook_id}")
async def webhook_page(request: Request, webhook_id: str) -> Response:
    who = await visitor(request)
    caller = who.require()
    try:
        hook = await run_in_threadpool(endpoints.get_endpoint, who.rt, caller, webhook_id)
        log = await run_in_threadpool(endpoints.list_attempts, who.rt, caller, webhook_id)
    except ServiceError as exc:
        raise PageError(exc.status, exc.message) from None
    sent = request.query_params.get("resent")
    notice = f"Message {sent} is queued to be sent again." if sent else None
    return render(request, who, "webhook.html", hook=hook, attempts=log["data"], notice=notice)


@router.post("/app/webhooks/{webhook_id}/resend")
async def resend_message(request: Request, webhook_id: str) -> Response:
    who = await visitor(request)
    caller = who.require()
    form = await read_form(request)
    check_csrf(who, form)
    message_id = form.get("message_id", "")
    try:
        await run_in_threadpool(endpoints.resend, who.rt, caller, webhook_id, message_id)
    except ServiceError as exc:
        raise PageError(exc.status, exc.message) from None
    return redirect(f"/app/webhooks/{webhook_id}?resent={message_id}")
