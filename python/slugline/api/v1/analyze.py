from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request

from slugline.api.deps import RuntimeDep, get_caller
from slugline.common.inputs import AnalyzeParams
from slugline.fetch import analyze as analyze_service
from slugline.limits import rules as limits
from slugline.web.request import client_ip
from slugline.web.responses import JSON

router = APIRouter(tags=["public"])


async def analyze_caller(request: Request, rt: RuntimeDep) -> None:
    """A key is optional; a given one must be valid. Anonymous callers get a hard per-IP limit, and a session token
    (which registration hands out freely) is an anonymous caller here."""
    if request.headers.get("authorization"):
        caller = await get_caller(request)
        if caller.scope != "session":
            return
    await limits.check_anonymous_analyze(rt, client_ip(request.scope))


@router.get(
    "/analyze",
    operation_id="analyzeUrl",
    dependencies=[Depends(analyze_caller)],
    summary="Fetch a public page's title, description, image, favicon and redirects (key optional)",
)
async def analyze(rt: RuntimeDep, params: Annotated[AnalyzeParams, Query()]) -> JSON:
    return JSON(await analyze_service.analyze(rt, params.model_dump()))
