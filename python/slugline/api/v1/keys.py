from __future__ import annotations

from fastapi import APIRouter, Request

from slugline.accounts import keys
from slugline.api.deps import JsonBody, KeyManager, RuntimeDep
from slugline.api.openapi import body_schema, query_schema
from slugline.common.inputs import KeyRequest
from slugline.web.responses import JSON

router = APIRouter(tags=["account"])


@router.get("/api-key", summary="List the account's API keys (never the secrets)")
def list_keys(rt: RuntimeDep, caller: KeyManager) -> JSON:
    return JSON(keys.list_keys(rt, caller))


@router.post(
    "/api-key",
    status_code=201,
    openapi_extra=body_schema(KeyRequest),
    summary="Generate the full or public key; replaces that scope's old key; the secret is shown once",
)
def create_key(rt: RuntimeDep, caller: KeyManager, body: JsonBody) -> JSON:
    return JSON(keys.create_key(rt, caller, body), status_code=201)


@router.delete(
    "/api-key",
    openapi_extra=query_schema(KeyRequest, required=True),
    summary="Revoke the key of one scope (`scope` in the query)",
)
def delete_key(rt: RuntimeDep, caller: KeyManager, request: Request) -> JSON:
    # Read by the service, as the link routes read theirs: the scope is checked after the caller, with its message.
    return JSON(keys.delete_key(rt, caller, request.query_params.get("scope")))
