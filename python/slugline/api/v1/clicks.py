from __future__ import annotations

from fastapi import APIRouter, Request

from slugline.analytics import service as analytics
from slugline.api.deps import ApiCaller, RuntimeDep
from slugline.api.openapi import query_schema
from slugline.common.inputs import PageParams
from slugline.web.responses import JSON

router = APIRouter(prefix="/links", tags=["links"])


@router.get(
    "/{link_id}/clicks",
    openapi_extra=query_schema(PageParams),
    summary="A link's clicks, newest first (bots included, as device 'bot')",
)
async def list_clicks(rt: RuntimeDep, caller: ApiCaller, link_id: str, request: Request) -> JSON:
    return JSON(await analytics.list_clicks(rt, caller, link_id, dict(request.query_params)))
