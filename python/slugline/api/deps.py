"""Typed dependencies shared by the routers: the runtime, the caller, and a JSON body read after auth."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Header, Request

from slugline.accounts import keys
from slugline.accounts import service as accounts
from slugline.common.caller import Caller
from slugline.links import idempotency
from slugline.runtime import Runtime
from slugline.web.identity import identify
from slugline.web.request import read_json
from slugline.web.responses import JSON


# Dependencies that do no I/O are `async def`: FastAPI runs a plain `def` one in the shared thread pool, a hop per
# request that queues behind whatever else holds the pool's threads.
async def get_runtime(request: Request) -> Runtime:
    rt: Runtime = request.app.state.runtime
    return rt


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


# The callers below take the request and nothing else: FastAPI resolves every sub-dependency per request, and the
# chain caller -> runtime cost ~20% of a `GET /links/{id}`. The identity itself is resolved once per request
# (`identify` keeps it in the scope), whichever of them asks.
async def get_caller(request: Request) -> Caller:
    """Any valid token, session tokens included (for /me and /api-key); API keys must pass the plan gate."""
    rt: Runtime = request.app.state.runtime
    caller = (await identify(rt, request.scope)).require()
    if caller.scope != "session":
        accounts.require_plan(caller)
    return caller


AnyCaller = Annotated[Caller, Depends(get_caller)]


async def get_api_caller(request: Request) -> Caller:
    """An API key (not a session token) of an account whose plan allows API access."""
    caller = await get_caller(request)
    accounts.require_api_key(caller)
    return caller


ApiCaller = Annotated[Caller, Depends(get_api_caller)]


async def get_key_manager(request: Request) -> Caller:
    """A session token or a full key: declared before a body, so a public key gets its 403 before a 400 or 422."""
    caller = await get_caller(request)
    keys.require_key_manager(caller)
    return caller


KeyManager = Annotated[Caller, Depends(get_key_manager)]


async def get_json_body(request: Request) -> Any:
    """Declared after the caller in a signature, so a bad body never hides a 401 or 403."""
    rt: Runtime = request.app.state.runtime
    return await read_json(request.scope, request.stream(), rt.settings.body_timeout_seconds)


JsonBody = Annotated[Any, Depends(get_json_body)]


IdempotencyKey = Annotated[
    str | None,
    Header(
        alias=idempotency.HEADER,
        min_length=1,
        max_length=idempotency.MAX_KEY,
        pattern=idempotency.KEY_PATTERN,
        description=f"Up to {idempotency.MAX_KEY} visible ASCII characters naming this request: a retry with the same "
        "key and body within 24 hours gets the first answer (with Idempotent-Replayed: true) instead of a second "
        "link; the same key with another body is 409",
    ),
]


def idempotency_json(answer: idempotency.Answer) -> JSON:
    status, body, replayed = answer
    return JSON(body, status_code=status, headers={idempotency.REPLAYED: "true"} if replayed else None)
