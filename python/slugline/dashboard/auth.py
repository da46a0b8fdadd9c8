"""Signing in, creating an account and signing out: the same service functions and rate limits as /auth."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from slugline.accounts import service as accounts
from slugline.common.errors import ServiceError
from slugline.common.inputs import Credentials
from slugline.common.validation import parse
from slugline.dashboard.pages import field_errors, read_form, redirect, render
from slugline.dashboard.session import check_csrf, clear_session, set_session, visitor
from slugline.limits import rules as limits
from slugline.web.request import client_ip

router = APIRouter(include_in_schema=False)
FIELDS = ("username", "password")
HOME = "/app/"


@router.get("/")
@router.get("/app")
async def root(request: Request) -> Response:
    who = await visitor(request)
    elsewhere = who.rt.settings.root_url
    if who.caller is None and elsewhere and request.url.path == "/":
        return redirect(elsewhere, 302)
    return redirect(HOME if who.caller else "/app/login", 302)


def safe_next(value: str | None) -> str | None:
    """Where to go after signing in (the OAuth consent page sends people here): a path on this site only, never
    another origin (`//host`, `/\\host`) or a scheme."""
    if not value or len(value) > 4096 or not value.startswith("/") or value.startswith(("//", "/\\")):
        return None
    return None if any(c.isspace() or not c.isprintable() for c in value) else value


@router.get("/app/login")
async def login_form(request: Request) -> Response:
    who = await visitor(request)
    next_url = safe_next(request.query_params.get("next"))
    if who.caller:
        return redirect(next_url or HOME, 302)
    deleted = (
        "Your account was deleted: its links, clicks and keys are being removed."
        if request.query_params.get("deleted")
        else None
    )
    return render(request, who, "signin.html", mode="login", username="", next_url=next_url, notice=deleted)


@router.get("/app/register")
async def register_form(request: Request) -> Response:
    who = await visitor(request)
    if who.caller:
        return redirect(HOME, 302)
    return render(request, who, "signin.html", mode="register", username="")


@router.post("/app/login")
async def login(request: Request) -> Response:
    return await _sign_in(request, "login")


@router.post("/app/register")
async def register(request: Request) -> Response:
    return await _sign_in(request, "register")


async def _sign_in(request: Request, mode: str) -> Response:
    who = await visitor(request)
    form = await read_form(request)
    check_csrf(who, form)
    data = {"username": form.get("username", ""), "password": form.get("password", "")}
    rt, ip = who.rt, client_ip(request.scope)
    try:
        if mode == "login":
            await limits.check_login(rt, ip, data["username"])
            made = await run_in_threadpool(accounts.login, rt, data)
        else:
            parse(Credentials, data)  # as in /auth/register: a refused form does not use up the address's quota
            async with limits.registering(rt, ip):
                made = await run_in_threadpool(accounts.register, rt, data)
    except ServiceError as exc:
        errors = field_errors(exc.message, FIELDS)
        return render(
            request,
            who,
            "signin.html",
            exc.status,
            mode=mode,
            username=data["username"],
            errors=errors,
            next_url=safe_next(form.get("next")),
        )
    response = redirect(safe_next(form.get("next")) or HOME)
    set_session(request, response, made["token"])
    return response


@router.post("/app/logout")
async def logout(request: Request) -> Response:
    """Revokes the session in the database, not only the cookie: a copied cookie stops working too."""
    who = await visitor(request)
    response = redirect("/app/login")
    if who.caller is None or who.digest is None:
        clear_session(request, response)
        return response
    check_csrf(who, await read_form(request))
    await run_in_threadpool(accounts.logout, who.rt, who.caller, who.digest)
    clear_session(request, response)
    return response
