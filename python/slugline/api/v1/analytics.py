from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from slugline.analytics import service as analytics
from slugline.api.deps import ApiCaller, RuntimeDep
from slugline.common.inputs import AnalyticsParams
from slugline.web.responses import JSON

router = APIRouter(tags=["analytics"])


@router.get("/analytics", summary="Clicks of the last `days` days: totals, daily series, devices, sources, top links")
async def get_analytics(rt: RuntimeDep, caller: ApiCaller, params: Annotated[AnalyticsParams, Query()]) -> JSON:
    return JSON(await analytics.get_analytics(rt, caller, params.model_dump(exclude_unset=True)))
