from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from slugline.analytics import service as analytics
from slugline.api.deps import ApiCaller, RuntimeDep
from slugline.api.openapi import query_schema
from slugline.common.inputs import AnalyticsParams
from slugline.web.responses import JSON

router = APIRouter(tags=["analytics"])


@router.get(
    "/analytics",
    summary="Clicks of a period (`days`, or `from`-`to`): totals, unique visitors, a series by `interval`, devices, "
    "browsers, operating systems, sources, referrers, countries, cities, top links; filtered by source, device, "
    "browser, os, referrer, country, city, variant",
)
async def get_analytics(rt: RuntimeDep, caller: ApiCaller, params: Annotated[AnalyticsParams, Query()]) -> JSON:
    # by_alias: the service reads the period's first day as `from`, the name clients send, not the field's `from_`.
    data = params.model_dump(by_alias=True, exclude_unset=True)
    return JSON(await analytics.get_analytics(rt, caller, data))


@router.get(
    "/links/{link_id}/analytics",
    openapi_extra=query_schema(AnalyticsParams),
    summary="One link's analytics: the parameters and answer of `GET /analytics`, and each of its variants' clicks "
    "and unique visitors (404 for a link the key cannot see)",
)
async def get_link_analytics(rt: RuntimeDep, caller: ApiCaller, link_id: str, request: Request) -> JSON:
    # The query is handed on as sent, as for the link's clicks and QR code: the service finds the link and validates
    # the parameters, in its own order.
    return JSON(await analytics.get_analytics(rt, caller, dict(request.query_params), link_id))
