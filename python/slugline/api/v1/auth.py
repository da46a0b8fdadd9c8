from __future__ import annotations

from fastapi import APIRouter

from slugline.api.deps import JsonBody, RuntimeDep
from slugline.api.openapi import body_schema
from slugline.api.responses import JSON
from slugline.schemas import Credentials
from slugline.services import accounts

router = APIRouter(prefix="/auth", tags=["auth"])


@router.post("/register", status_code=201, openapi_extra=body_schema(Credentials),
             summary="Create an account; returns a session token")
def register(rt: RuntimeDep, body: JsonBody) -> JSON:
    return JSON(accounts.register(rt, body), status_code=201)


@router.post("/login", openapi_extra=body_schema(Credentials), summary="Log in; returns a session token")
def login(rt: RuntimeDep, body: JsonBody) -> JSON:
    return JSON(accounts.login(rt, body))
