from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from slugline.api.deps import ApiCaller, RuntimeDep
from slugline.api.query import query_model, query_parameters
from slugline.common.inputs import SearchParams
from slugline.search import service as search_service
from slugline.web.responses import JSON

router = APIRouter(tags=["search"])


@router.get(
    "/search",
    summary="Ranked search over the caller's links, with highlights; prefix and one-typo matching",
    openapi_extra={"parameters": query_parameters(SearchParams)},
)
async def search(
    rt: RuntimeDep, caller: ApiCaller, params: Annotated[SearchParams, Depends(query_model(SearchParams))]
) -> JSON:
    return JSON(await search_service.search_links(rt, caller, params))
