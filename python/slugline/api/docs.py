"""The interactive API docs at /api/v1/docs: Swagger UI served by this server alone, so they work offline and run no
code from another origin on this one, where the dashboard's session cookie and the keys it shows live.

Swagger UI's files are read from the installed fastapi-swagger package (its version pinned by uv.lock, nothing copied
into this repository); the page and the script that starts Swagger UI are ours. Each file is served under a URL naming a
digest of its content, so a browser may keep it for a year and a new version is a new URL. The page's
Content-Security-Policy runs no inline script and loads nothing from another origin.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from html import escape
from importlib.resources import files

import fastapi_swagger
from fastapi import APIRouter
from starlette.responses import HTMLResponse, Response

from slugline import __version__
from slugline.api import API_PREFIX
from slugline.common.errors import NotFound

# Its files' names are not a promised API: pyproject.toml bounds the package, and tests/api/test_docs.py names a move.
SWAGGER_UI = files(fastapi_swagger) / "resources"
OURS = files("slugline.api") / "static"
JS = "text/javascript; charset=utf-8"
CSS = "text/css; charset=utf-8"
SOURCES = {"swagger-ui.css": (SWAGGER_UI, CSS), "swagger-ui-bundle.js": (SWAGGER_UI, JS), "docs.js": (OURS, JS)}
# Swagger UI's stylesheet draws its icons from data: URLs; it reads the OpenAPI document and sends "Try it out"
# calls to this origin.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",  # it names the assets' current digests
}
ASSET_HEADERS = {"Cache-Control": "public, max-age=31536000, immutable", "X-Content-Type-Options": "nosniff"}

router = APIRouter(include_in_schema=False)


@dataclass(frozen=True)
class Asset:
    body: bytes
    media_type: str
    digest: str  # of the body, in its URL


@cache
def assets() -> dict[str, Asset]:
    """Read once per worker, when the docs are first asked for (some 2 MB, kept by no worker that never shows them)."""
    found = {}
    for name, (folder, media_type) in SOURCES.items():
        body = (folder / name).read_bytes()
        found[name] = Asset(body, media_type, hashlib.sha256(body).hexdigest()[:16])
    return found


def asset_url(name: str) -> str:
    return escape(f"{API_PREFIX}/docs/assets/{assets()[name].digest}/{name}")


@cache
def page() -> str:
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Slugline {escape(__version__)} API</title>
<link rel="stylesheet" href="{asset_url("swagger-ui.css")}">
</head>
<body>
<div id="swagger-ui" data-openapi="{escape(API_PREFIX)}/openapi.json"></div>
<script src="{asset_url("swagger-ui-bundle.js")}"></script>
<script src="{asset_url("docs.js")}"></script>
</body>
</html>
"""


@router.get("/docs")
async def docs() -> HTMLResponse:
    return HTMLResponse(page(), headers=PAGE_HEADERS)


@router.get("/docs/assets/{digest}/{name}")
async def asset(digest: str, name: str) -> Response:
    found = assets().get(name)
    if found is None or found.digest != digest:  # an old digest too: its URL promised content this server lost
        raise NotFound("not found")
    return Response(found.body, media_type=found.media_type, headers=ASSET_HEADERS)
