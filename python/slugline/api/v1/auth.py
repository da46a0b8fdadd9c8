from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool

from slugline.api.deps import JsonBody, RuntimeDep
from slugline.api.openapi import body_schema
from slugline.schemas import Credentials
from slugline.services import accounts, limits
from slugline.web.request import client_ip
from slugline.web.responses import JSON

router = APIRouter(prefix="/auth", tags=["auth"])


@router.post(
    "/register",
    status_code=201,
    openapi_extra=body_schema(Credentials),
    summary="Create an account; returns a session token",
)
def register(rt: RuntimeDep, body: JsonBody) -> JSON:
    return JSON(accounts.register(rt, body), status_code=201)


@router.post("/login", openapi_extra=body_schema(Credentials), summary="Log in; returns a session token")
async def login(rt: RuntimeDep, request: Request, body: JsonBody) -> JSON:
    username = str(body.get("username", "")) if isinstance(body, dict) else ""
    await limits.check_login(rt, client_ip(request.scope), username)
    return JSON(await run_in_threadpool(accounts.login, rt, body))
