"""Many links at once: the export of an account's links as a file, and bulk create, change and delete. Included
before `links`, whose `/links/{link_id}` would take `/links/export` or `/links/bulk` for a link's id."""

from __future__ import annotations

import copy
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel

from slugline.api.deps import ApiCaller, IdempotencyKey, JsonBody, RuntimeDep, idempotency_json
from slugline.api.openapi import body_schema, query_schema
from slugline.common.inputs import LinkCreate, LinkUpdate, object_schema
from slugline.links import bulk, export, idempotency, importer
from slugline.web import importing
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


def _body(model: type[BaseModel], field: str | None = None, like: type[BaseModel] | None = None) -> dict[str, Any]:
    """The envelope's schema, its `field` (the items, or the change) described as `like`'s single-call body is, with
    the rules across fields, less what a bulk call refuses (auto_meta, a slug change)."""
    schema = object_schema(model)
    if field is not None and like is not None:
        one = copy.deepcopy(body_schema(like)["requestBody"]["content"]["application/json"]["schema"])
        one.pop("title", None)
        one["properties"].pop("auto_meta" if like is LinkCreate else "slug", None)
        if field == "links":
            schema["properties"]["links"]["items"] = one
        else:
            schema["properties"][field] = one
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


@router.post(
    "/bulk",
    openapi_extra=_body(bulk.BulkCreate, "links", LinkCreate),
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
    openapi_extra=_body(bulk.BulkUpdate, "change", LinkUpdate),
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


IMPORT_FORM = {
    "type": "object",
    "title": "ImportForm",
    "required": ["file"],
    "properties": {
        "file": {"type": "string", "format": "binary", "description": "The file to import: UTF-8 text"},
        "format": {
            "type": "string",
            "enum": list(importer.FORMATS),
            "description": "What wrote the file: csv or ndjson (GET /links/export), shlink, yourls (its CSV or its SQL "
            "dump's yourls_url rows), kutt or bitly. Default: from the file name (.ndjson, .json for kutt, .sql for "
            "yourls), else csv",
        },
        "dry_run": {"type": "boolean", "default": False, "description": "Report what would happen; write nothing"},
        "overwrite": {
            "type": "boolean",
            "default": False,
            "description": "Change this account's links whose slug the file holds with another destination",
        },
    },
}


@router.post(
    "/import",
    openapi_extra={"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": IMPORT_FORM}}}},
    summary="Import a links file (ours, or a Shlink, YOURLS, Kutt or Bitly export) as a multipart upload, streamed: "
    "the same report as slugline links import; a slug already there with the same destination is skipped, with "
    "another destination a conflict unless overwrite",
)
async def import_links(rt: RuntimeDep, caller: ApiCaller, request: Request) -> JSON:
    content_type = request.headers.get("content-type", "")
    return JSON(await importing.import_upload(rt, caller, content_type, request.stream()))
