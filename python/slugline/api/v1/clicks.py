from __future__ import annotations

from fastapi import APIRouter, Request

from slugline.analytics import export
from slugline.analytics import service as analytics
from slugline.api.deps import ApiCaller, RuntimeDep
from slugline.api.openapi import query_schema
from slugline.common.inputs import ExportParams, PageParams
from slugline.web.responses import JSON, Download

router = APIRouter()
EXPORT = "oldest first, bots included (as device 'bot'): CSV with a header row, or NDJSON; streamed"


@router.get(
    "/links/{link_id}/clicks",
    tags=["links"],
    openapi_extra=query_schema(PageParams),
    summary="A link's clicks, newest first (bots included, as device 'bot')",
)
async def list_clicks(rt: RuntimeDep, caller: ApiCaller, link_id: str, request: Request) -> JSON:
    return JSON(await analytics.list_clicks(rt, caller, link_id, dict(request.query_params)))


# The query string goes to the service as it came, so a hidden link's 404 comes before a 422 and every interface
# reads the parameters with the same model.
@router.get(
    "/links/{link_id}/clicks/export",
    tags=["links"],
    openapi_extra=query_schema(ExportParams),
    summary=f"A link's clicks of a period, {EXPORT}",
)
async def export_link_clicks(rt: RuntimeDep, caller: ApiCaller, link_id: str, request: Request) -> Download:
    return Download(await export.export_clicks(rt, caller, dict(request.query_params), link_id))


@router.get(
    "/clicks/export",
    tags=["analytics"],
    openapi_extra=query_schema(ExportParams),
    summary=f"The account's clicks of a period, {EXPORT}",
)
async def export_clicks(rt: RuntimeDep, caller: ApiCaller, request: Request) -> Download:
    return Download(await export.export_clicks(rt, caller, dict(request.query_params)))
