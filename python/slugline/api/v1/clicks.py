from __future__ import annotations

from fastapi import APIRouter, Request

from slugline.api.deps import ApiCaller, RuntimeDep
from slugline.api.openapi import query_schema
from slugline.schemas import PageParams
from slugline.services import analytics
from slugline.web.responses import JSON

router = APIRouter(prefix="/links", tags=["links"])


@router.get(
    "/{link_id}/clicks",
    openapi_extra=query_schema(PageParams),
    summary="A link's clicks, newest first (bots included, as device 'bot')",
)
def list_clicks(rt: RuntimeDep, caller: ApiCaller, link_id: str, request: Request) -> JSON:
    return JSON(analytics.list_clicks(rt, caller, link_id, dict(request.query_params)))
