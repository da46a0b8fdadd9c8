from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool

from slugline.api.deps import JsonBody, RuntimeDep
from slugline.api.openapi import body_schema
from slugline.api.responses import JSON
from slugline.errors import RateLimited
from slugline.schemas import Credentials
from slugline.services import accounts

router = APIRouter(prefix="/auth", tags=["auth"])


@router.post("/register", status_code=201, openapi_extra=body_schema(Credentials),
             summary="Create an account; returns a session token")
def register(rt: RuntimeDep, body: JsonBody) -> JSON:
    return JSON(accounts.register(rt, body), status_code=201)


@router.post("/login", openapi_extra=body_schema(Credentials), summary="Log in; returns a session token")
async def login(rt: RuntimeDep, request: Request, body: JsonBody) -> JSON:
    # Attempts per IP and username, checked before the password, so guessing is slow whatever the answer.
    username = str(body.get("username", "")).lower()[:64] if isinstance(body, dict) else ""
    ip = request.client.host if request.client else "unknown"
    decision = await rt.limiter.hit(f"login:{ip}:{username}", rt.settings.rate_limit_login)
    if not decision.allowed:
        raise RateLimited("too many login attempts", decision.retry_after)
    return JSON(await run_in_threadpool(accounts.login, rt, body))
