from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from slugline.api.deps import ApiCaller, IdempotencyKey, JsonBody, RuntimeDep, idempotency_json
from slugline.api.openapi import body_schema
from slugline.api.query import query_model, query_parameters
from slugline.common.inputs import LinkCreate, LinkUpdate, ListParams
from slugline.links import idempotency
from slugline.links import service as links
from slugline.web.responses import JSON

router = APIRouter(prefix="/links", tags=["links"])


@router.get(
    "",
    summary="List links: paginated, sortable, searchable with q",
    openapi_extra={"parameters": query_parameters(ListParams)},
)
async def list_links(
    rt: RuntimeDep, caller: ApiCaller, params: Annotated[ListParams, Depends(query_model(ListParams))]
) -> JSON:
    return JSON(await links.list_links(rt, caller, params))


@router.post(
    "",
    status_code=201,
    openapi_extra=body_schema(LinkCreate),
    summary="Create a link (with an Idempotency-Key, a retry gets the first answer instead of a second link)",
)
async def create_link(rt: RuntimeDep, caller: ApiCaller, body: JsonBody, key: IdempotencyKey = None) -> JSON:
    answer = await idempotency.once(
        rt, caller, key, "create_link", body, 201, lambda: links.create_link(rt, caller, body)
    )
    return idempotency_json(answer)


@router.get("/{link_id}", summary="Get one link")
async def get_link(rt: RuntimeDep, caller: ApiCaller, link_id: str) -> JSON:
    return JSON(await links.get_link(rt, caller, link_id))


@router.put(
    "/{link_id}",
    openapi_extra=body_schema(LinkUpdate),
    summary="Update a link: send only the fields to change; null clears title, description, note, hashtags",
)
async def update_link(rt: RuntimeDep, caller: ApiCaller, link_id: str, body: JsonBody) -> JSON:
    return JSON(await links.update_link(rt, caller, link_id, body))


@router.delete("/{link_id}", summary="Delete a link permanently, with its clicks")
async def delete_link(rt: RuntimeDep, caller: ApiCaller, link_id: str) -> JSON:
    return JSON(await links.delete_link(rt, caller, link_id))
