from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool

from slugline.api.deps import RuntimeDep, get_caller, request_base
from slugline.api.responses import JSON
from slugline.errors import RateLimited
from slugline.schemas import AnalyzeParams
from slugline.services import analyze as analyze_service
from slugline.services import finder
from slugline.services.runtime import Runtime

router = APIRouter(tags=["public"])


@router.get("/public/{slug}", summary="What anyone may know of a short link (no auth); never the note")
def public_link(rt: RuntimeDep, request: Request, slug: str) -> JSON:
    return JSON(finder.public_link(rt, slug, request_base(request, rt)))


async def analyze_caller(request: Request, rt: RuntimeDep) -> None:
    """A key is optional; a given one must be valid. Anonymous callers get a hard per-IP limit."""
    if request.headers.get("authorization"):
        await run_in_threadpool(get_caller, request, rt)
        return
    await _anonymous_analyze_limit(rt, request)


async def _anonymous_analyze_limit(rt: Runtime, request: Request) -> None:
    ip = request.client.host if request.client else "unknown"
    decision = await rt.limiter.hit(f"analyze:{ip}", rt.settings.rate_limit_analyze_anonymous)
    if not decision.allowed:
        raise RateLimited("anonymous /analyze is limited", decision.retry_after)


@router.get("/analyze", dependencies=[Depends(analyze_caller)],
            summary="Fetch a public page's title, description, image, favicon and redirects (key optional)")
async def analyze(rt: RuntimeDep, params: Annotated[AnalyzeParams, Query()]) -> JSON:
    return JSON(await analyze_service.analyze(rt, params.model_dump()))
