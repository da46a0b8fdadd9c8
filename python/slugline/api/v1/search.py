from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from slugline.api.deps import ApiCaller, RuntimeDep
from slugline.schemas import SearchParams
from slugline.services import search as search_service
from slugline.web.responses import JSON

router = APIRouter(tags=["search"])


@router.get("/search", summary="Ranked search over the caller's links, with highlights; prefix and one-typo matching")
def search(rt: RuntimeDep, caller: ApiCaller, params: Annotated[SearchParams, Query()]) -> JSON:
    return JSON(search_service.search_links(rt, caller, params.model_dump()))
