"""Typed dependencies shared by the routers: the runtime, the caller, and a JSON body read after auth."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import Depends, Request

from slugline.errors import BadRequest, PayloadTooLarge
from slugline.services import accounts
from slugline.services.runtime import Caller, Runtime

MAX_BODY = 1 << 20


def get_runtime(request: Request) -> Runtime:
    rt: Runtime = request.app.state.runtime
    return rt


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


def request_base(request: Request, rt: Runtime) -> str:
    return rt.short_base(f"{request.url.scheme}://{request.url.netloc}")


def get_caller(request: Request, rt: RuntimeDep) -> Caller:
    """Any valid token, session tokens included (for /me and /api-key); API keys must pass the plan gate."""
    caller = accounts.authenticate(rt, request.headers.get("authorization"), request_base(request, rt))
    if caller.scope != "session":
        accounts.require_plan(caller)
    return caller


AnyCaller = Annotated[Caller, Depends(get_caller)]


def get_api_caller(caller: AnyCaller) -> Caller:
    """An API key (not a session token) of an account whose plan allows API access."""
    accounts.require_api_key(caller)
    return caller


ApiCaller = Annotated[Caller, Depends(get_api_caller)]


async def get_json_body(request: Request) -> Any:
    """Declared after the caller in a signature, so a bad body never hides a 401 or 403."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise BadRequest("the request body must be JSON sent with 'Content-Type: application/json'")
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and (len(declared) > 12 or int(declared) > MAX_BODY):
        raise PayloadTooLarge(f"the request body must be at most {MAX_BODY // 1024} KiB")
    raw = bytearray()
    async for chunk in request.stream():  # read with a cap, whatever Content-Length claimed
        raw += chunk
        if len(raw) > MAX_BODY:
            raise PayloadTooLarge(f"the request body must be at most {MAX_BODY // 1024} KiB")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"malformed JSON: {exc}") from None


JsonBody = Annotated[Any, Depends(get_json_body)]
