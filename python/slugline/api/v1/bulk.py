"""Many links at once: the export of an account's links as a file, and bulk create, change and delete. Included
before `links`, whose `/links/{link_id}` would take `/links/export` or `/links/bulk` for a link's id."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel

from slugline.api.deps import ApiCaller, IdempotencyKey, JsonBody, RuntimeDep, idempotency_json
from slugline.api.openapi import query_schema
from slugline.common.inputs import LinkCreate, object_schema
from slugline.links import bulk, export, idempotency
from slugline.web.request import client_ip
from slugline.web.responses import JSON, Download

router = APIRouter(prefix="/links", tags=["links"])
SHOWN = (*export.FILTERS, "format")  # the export's parameters; the list's paging and order are not its own


@router.get(
    "/export",
    openapi_extra={
        "parameters": [p for p in query_schema(export.LinkExportParams)["parameters"] if p["name"] in SHOWN]
    },
    summary="Every link the key may see, with every field, oldest first, filtered as GET /links is (q): CSV with "
    "a header row, or NDJSON; streamed",
)
async def export_links(rt: RuntimeDep, caller: ApiCaller, request: Request) -> Download:
    return Download(await export.export_links(rt, caller, dict(request.query_params)))


def _body(model: type[BaseModel], items: dict[str, Any] | None = None) -> dict[str, Any]:
    schema = object_schema(model)
    if items is not None:  # each item's own schema: a create body
        schema["properties"]["links"]["items"] = items
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


@router.post(
    "/bulk",
    openapi_extra=_body(bulk.BulkCreate, object_schema(LinkCreate)),
    summary=f"Create up to {bulk.MAX_ITEMS} links: an answer per item (index, status, link or error), or with "
    "atomic all or none; counts one request per item",
)
async def create_links(
    rt: RuntimeDep, caller: ApiCaller, request: Request, body: JsonBody, key: IdempotencyKey = None
) -> JSON:
    ip = client_ip(request.scope)
    made = await idempotency.once(
        rt, caller, key, "create_links", body, 200, lambda: bulk.create_links(rt, caller, body, ip)
    )
    return idempotency_json(made)


@router.patch(
    "/bulk",
    openapi_extra=_body(bulk.BulkUpdate),
    summary="Make one change (a PUT /links/{id} body but slug) to many links: an answer per id, or with atomic all "
    "or none; counts one request per id",
)
async def update_links(rt: RuntimeDep, caller: ApiCaller, request: Request, body: JsonBody) -> JSON:
    return JSON(await bulk.update_links(rt, caller, body, client_ip(request.scope)))


@router.delete(
    "/bulk",
    openapi_extra=_body(bulk.BulkDelete),
    summary="Delete many links, with their clicks: an answer per id, or with atomic all or none; counts one request "
    "per id",
)
async def delete_links(rt: RuntimeDep, caller: ApiCaller, request: Request, body: JsonBody) -> JSON:
    return JSON(await bulk.delete_links(rt, caller, body, client_ip(request.scope)))
