from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from slugline.api.deps import ApiCaller, RuntimeDep
from slugline.schemas import AnalyticsParams
from slugline.services import analytics
from slugline.web.responses import JSON

router = APIRouter(tags=["analytics"])


@router.get("/analytics", summary="Clicks of the last `days` days: totals, daily series, devices, sources, top links")
def get_analytics(rt: RuntimeDep, caller: ApiCaller, params: Annotated[AnalyticsParams, Query()]) -> JSON:
    return JSON(analytics.get_analytics(rt, caller, params.model_dump(exclude_unset=True)))
