from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.concurrency import run_in_threadpool

from slugline.api.deps import ApiCaller, JsonBody, RuntimeDep
from slugline.api.openapi import body_schema
from slugline.api.query import query_model, query_parameters
from slugline.common.inputs import LinkCreate, LinkUpdate, ListParams
from slugline.limits import rules as limits
from slugline.links import meta
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
    page = await links.list_links_now(rt, caller, params)
    if page is not None:
        return JSON(page)
    async with limits.querying(rt, caller.account_id, params.q):
        return JSON(await run_in_threadpool(links.list_links, rt, caller, params.model_dump(exclude_unset=True)))


@router.post("", status_code=201, openapi_extra=body_schema(LinkCreate), summary="Create a link")
async def create_link(rt: RuntimeDep, caller: ApiCaller, body: JsonBody) -> JSON:
    return JSON(await meta.create_link(rt, caller, body), status_code=201)


@router.get("/{link_id}", summary="Get one link")
async def get_link(rt: RuntimeDep, caller: ApiCaller, link_id: str) -> JSON:
    link = await links.get_link_now(rt, caller, link_id)
    return JSON(link if link is not None else await run_in_threadpool(links.get_link, rt, caller, link_id))


@router.put(
    "/{link_id}",
    openapi_extra=body_schema(LinkUpdate),
    summary="Update a link: send only the fields to change; null clears title, description, note, hashtags",
)
async def update_link(rt: RuntimeDep, caller: ApiCaller, link_id: str, body: JsonBody) -> JSON:
    updated = await links.update_link_now(rt, caller, link_id, body)
    return JSON(
        updated if updated is not None else await run_in_threadpool(links.update_link, rt, caller, link_id, body)
    )


@router.delete("/{link_id}", summary="Delete a link permanently, with its clicks")
async def delete_link(rt: RuntimeDep, caller: ApiCaller, link_id: str) -> JSON:
    return JSON(await run_in_threadpool(links.delete_link, rt, caller, link_id))
