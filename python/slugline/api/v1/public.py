from __future__ import annotations

from fastapi import APIRouter, Request

from slugline.api.deps import RuntimeDep
from slugline.links import public
from slugline.web.request import request_base
from slugline.web.responses import JSON

router = APIRouter(tags=["public"])


@router.get(
    "/public/{slug}",
    operation_id="getPublicLink",
    summary="What anyone may know of a short link (no auth); never the note",
)
def public_link(rt: RuntimeDep, request: Request, slug: str) -> JSON:
    return JSON(public.public_link(rt, slug, request_base(request.scope, rt)))
