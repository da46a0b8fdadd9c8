from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool

from slugline.accounts import service as accounts
from slugline.api.deps import JsonBody, RuntimeDep
from slugline.api.openapi import body_schema
from slugline.common.inputs import Credentials
from slugline.common.validation import parse
from slugline.limits import rules as limits
from slugline.web.identity import identify
from slugline.web.request import client_ip
from slugline.web.responses import JSON

router = APIRouter(prefix="/auth", tags=["auth"])


@router.post(
    "/register",
    status_code=201,
    openapi_extra=body_schema(Credentials),
    summary="Create an account; returns a session token",
)
async def register(rt: RuntimeDep, request: Request, body: JsonBody) -> JSON:
    parse(Credentials, body)  # a request refused as invalid does not use up the address's registrations
    async with limits.registering(rt, client_ip(request.scope)):
        return JSON(await run_in_threadpool(accounts.register, rt, body), status_code=201)


@router.post("/login", openapi_extra=body_schema(Credentials), summary="Log in; returns a session token")
async def login(rt: RuntimeDep, request: Request, body: JsonBody) -> JSON:
    username = str(body.get("username", "")) if isinstance(body, dict) else ""
    await limits.check_login(rt, client_ip(request.scope), username)
    return JSON(await run_in_threadpool(accounts.login, rt, body))


@router.post("/logout", summary="Log out: revoke the session token this request carries")
async def logout(rt: RuntimeDep, request: Request) -> JSON:
    identity = await identify(rt, request.scope)
    caller = identity.require()
    assert identity.digest is not None  # a resolved caller always came with a well-formed token
    return JSON(await run_in_threadpool(accounts.logout, rt, caller, identity.digest))
