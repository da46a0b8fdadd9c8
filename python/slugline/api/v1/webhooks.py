"""Webhook endpoints of the caller's account, their delivery log and "send again" (`slugline.webhooks.endpoints`).
Full-access keys only: the endpoints see every link of the account."""

from __future__ import annotations

from fastapi import APIRouter

from slugline.api.deps import ApiCaller, JsonBody, RuntimeDep
from slugline.api.openapi import body_schema
from slugline.web.responses import JSON
from slugline.webhooks import endpoints
from slugline.webhooks.inputs import WebhookCreate, WebhookUpdate

router = APIRouter(prefix="/webhooks", tags=["webhooks"])


@router.get("", summary="List the account's webhook endpoints (never their secrets)")
def list_webhooks(rt: RuntimeDep, caller: ApiCaller) -> JSON:
    return JSON(endpoints.list_endpoints(rt, caller))


@router.post(
    "",
    status_code=201,
    openapi_extra=body_schema(WebhookCreate),
    summary="Add a webhook endpoint; its signing secret (whsec_...) is shown once",
)
def create_webhook(rt: RuntimeDep, caller: ApiCaller, body: JsonBody) -> JSON:
    return JSON(endpoints.create_endpoint(rt, caller, body), status_code=201)


@router.get("/{webhook_id}", summary="Get one webhook endpoint")
def get_webhook(rt: RuntimeDep, caller: ApiCaller, webhook_id: str) -> JSON:
    return JSON(endpoints.get_endpoint(rt, caller, webhook_id))


@router.patch(
    "/{webhook_id}",
    openapi_extra=body_schema(WebhookUpdate),
    summary="Change a webhook endpoint; enabled: true turns a disabled one back on",
)
def update_webhook(rt: RuntimeDep, caller: ApiCaller, webhook_id: str, body: JsonBody) -> JSON:
    return JSON(endpoints.update_endpoint(rt, caller, webhook_id, body))


@router.delete("/{webhook_id}", summary="Delete a webhook endpoint, its waiting messages and its log")
def delete_webhook(rt: RuntimeDep, caller: ApiCaller, webhook_id: str) -> JSON:
    return JSON(endpoints.delete_endpoint(rt, caller, webhook_id))


@router.get("/{webhook_id}/attempts", summary="The endpoint's last 100 delivery attempts, newest first")
def list_webhook_attempts(rt: RuntimeDep, caller: ApiCaller, webhook_id: str) -> JSON:
    return JSON(endpoints.list_attempts(rt, caller, webhook_id))


@router.post(
    "/{webhook_id}/messages/{message_id}/resend",
    status_code=202,
    summary="Send a message again, with the same webhook-id",
)
def resend_webhook_message(rt: RuntimeDep, caller: ApiCaller, webhook_id: str, message_id: str) -> JSON:
    return JSON(endpoints.resend(rt, caller, webhook_id, message_id), status_code=202)
