from __future__ import annotations

from fastapi import APIRouter

from slugline.accounts import service as accounts
from slugline.api.deps import AnyCaller
from slugline.web.responses import JSON

router = APIRouter(tags=["account"])


@router.get("/me", operation_id="getMe", summary="The authenticated account: username, plan, key scope")
async def me(caller: AnyCaller) -> JSON:  # no I/O once the caller is known: no thread
    return JSON(accounts.me(caller))
