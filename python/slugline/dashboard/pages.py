"""Rendering a dashboard page: Jinja2 templates shipped in the package, the security headers every page carries, and
reading a form body within the same byte budget as a JSON one."""

from __future__ import annotations

from functools import cache
from typing import Any
from urllib.parse import parse_qsl

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from slugline import __version__
from slugline.common.errors import BadRequest
from slugline.dashboard.session import CSRF_FIELD, Visitor, runtime, set_presession
from slugline.web.request import gather, header

STATIC_VERSION = "6"  # in the asset names: a new version is a new name, so a cached old asset is never used
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",  # pages show keys and private links: never kept by a shared cache
}
FORM_TYPE = "application/x-www-form-urlencoded"


@cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("slugline.dashboard", "templates"),
        autoescape=select_autoescape(default=True),
        undefined=StrictUndefined,  # a misspelt name fails the page in tests instead of rendering blank
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(version=__version__, static_version=STATIC_VERSION, csrf_field=CSRF_FIELD)
    env.filters["when"] = when
    env.filters["flag"] = flag
    return env


def flag(code: str) -> str:
    """A country's flag (two regional indicator symbols) from its ISO code; '' for anything else ('(other)')."""
    if len(code) != 2 or not code.isascii() or not code.isalpha():
        return ""
    return "".join(chr(0x1F1E6 + ord(letter) - ord("A")) for letter in code.upper())


def when(stamp: str | None) -> str:
    """An API timestamp ("2026-11-21T10:00:00Z") as people read it, to the minute."""
    return f"{stamp[:10]} {stamp[11:16]} UTC" if stamp else "never"


def render(request: Request, who: Visitor, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    context.setdefault("errors", {})
    context.setdefault("notice", None)
    page = (
        environment()
        .get_template(template)
        .render(request=request, path=request.url.path, caller=who.caller, csrf=who.csrf, **context)
    )
    response = HTMLResponse(page, status_code=status, headers=SECURITY_HEADERS)
    set_presession(request, response, who)
    return response


def redirect(url: str, status: int = 303) -> Response:
    """303 after a form, so a reload does not send the form again; a page that only sends the visitor on (`/`,
    sign-in when already signed in) answers 302."""
    return RedirectResponse(url, status_code=status, headers=SECURITY_HEADERS)


async def read_form(request: Request) -> dict[str, str]:
    """The urlencoded form as a dict (the last value of a repeated field wins); 413 past the request body budget, 408
    unless it has all arrived within `body_timeout_seconds`. Any other body is an empty form: it cannot carry the
    CSRF token, so it is refused as one without it."""
    ctype = (header(request.scope, b"content-type") or "").split(";")[0].strip().lower()
    if ctype != FORM_TYPE:
        return {}
    raw = await gather(request.stream(), runtime(request).settings.body_timeout_seconds)
    try:
        return dict(parse_qsl(raw.decode(), keep_blank_values=True, max_num_fields=100))
    except (UnicodeDecodeError, ValueError):
        raise BadRequest("the form is not valid UTF-8 form data") from None


def field_errors(message: str, fields: tuple[str, ...]) -> dict[str, str]:
    """The service's message, placed next to the field it names (it starts with the field's name), else at the top
    of the form under ''."""
    for name in fields:
        if message.startswith((f"{name} ", f"{name}:", f"{name}.")):
            return {name: message}
    return {"": message}
