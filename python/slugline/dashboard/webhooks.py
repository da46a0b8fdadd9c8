"""The Webhooks page: the account's endpoints (add one, its secret shown once; turn off and on; delete), why one was
disabled, and each endpoint's delivery log with "Send again" (`webhooks.endpoints`, as `/api/v1/webhooks`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from slugline.common.caller import Caller
from slugline.common.errors import ServiceError
from slugline.dashboard.pages import field_errors, read_form, redirect, render
from slugline.dashboard.session import PageError, Visitor, check_csrf, visitor
from slugline.webhooks import endpoints
from slugline.webhooks.inputs import EVENTS

router = APIRouter(include_in_schema=False)
T = TypeVar("T")


async def _list(request: Request, who: Visitor, status: int = 200, **context: Any) -> Response:
    listed = await run_in_threadpool(endpoints.list_endpoints, who.rt, who.require())
    context.setdefault("new", None)
    context.setdefault("form", {"url": "", "events": list(EVENTS)})
    return render(request, who, "webhooks.html", status, hooks=listed["data"], events=EVENTS, **context)


@router.get("/app/webhooks")
async def webhooks_page(request: Request) -> Response:
    return await _list(request, await visitor(request))


async def _signed_form(request: Request) -> tuple[Visitor, Caller, dict[str, str]]:
    """A form posted by the signed-in visitor, its CSRF token checked."""
    who = await visitor(request)
    caller = who.require()
    form = await read_form(request)
    check_csrf(who, form)
    return who, caller, form


async def _service(call: Callable[..., T], *args: Any) -> T:
    """A service call on a thread; its refusal an error page with the service's status, message and headers."""
    try:
        return await run_in_threadpool(call, *args)
    except ServiceError as exc:
        raise PageError.of(exc) from None


@router.post("/app/webhooks")
async def add_webhook(request: Request) -> Response:
    who, caller, form = await _signed_form(request)
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
    who, caller, form = await _signed_form(request)
    action = form.get("action", "")
    if action == "delete":
        await _service(endpoints.delete_endpoint, who.rt, caller, webhook_id)
        return redirect("/app/webhooks")
    if action not in ("on", "off"):
        return await _list(request, who, 422, errors={"": "action must be on, off or delete"})
    await _service(endpoints.update_endpoint, who.rt, caller, webhook_id, {"enabled": action == "on"})
    return redirect(f"/app/webhooks/{webhook_id}")


@router.get("/app/webhooks/{webhook_id}")
async def webhook_page(request: Request, webhook_id: str) -> Response:
    who = await visitor(request)
    caller = who.require()
    hook = await _service(endpoints.get_endpoint, who.rt, caller, webhook_id)
    log = await _service(endpoints.list_attempts, who.rt, caller, webhook_id)
    sent = request.query_params.get("resent")
    notice = f"Message {sent} is queued to be sent again." if sent else None
    return render(request, who, "webhook.html", hook=hook, attempts=log["data"], notice=notice)


@router.post("/app/webhooks/{webhook_id}/resend")
async def resend_message(request: Request, webhook_id: str) -> Response:
    who, caller, form = await _signed_form(request)
    message_id = form.get("message_id", "")
    await _service(endpoints.resend, who.rt, caller, webhook_id, message_id)
    return redirect(f"/app/webhooks/{webhook_id}?resent={message_id}")
