"""The links import page: a file chosen, the first rows previewed in the browser (`static/import-1.js`, before
anything is sent), then uploaded to the same code as `POST /api/v1/links/import` (`web.importing`) and answered with
its report. The CSRF token travels in the form, checked once the upload has arrived and before anything is read."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from slugline.common.errors import ServiceError
from slugline.dashboard.pages import render
from slugline.dashboard.session import CSRF_FIELD, check_csrf, visitor
from slugline.links import importer
from slugline.web import importing

router = APIRouter(include_in_schema=False)
FORMAT_NAMES = {
    "csv": "Slugline CSV (links export)",
    "ndjson": "Slugline NDJSON (links export)",
    "shlink": "Shlink CSV",
    "yourls": "YOURLS (CSV or SQL dump)",
    "kutt": "Kutt API JSON",
    "bitly": "Bitly CSV",
}


def _page(request: Request, who: Any, status: int = 200, **context: Any) -> Response:
    formats = [(fmt, FORMAT_NAMES.get(fmt, fmt)) for fmt in importer.FORMATS]
    return render(request, who, "import.html", status, formats=formats, **context)


@router.get("/app/links/import")
async def import_form(request: Request) -> Response:
    who = await visitor(request)
    who.owner()
    return _page(request, who, values={}, report=None)


@router.post("/app/links/import")
async def import_file(request: Request) -> Response:
    who = await visitor(request)
    caller = who.owner()
    seen: dict[str, str] = {}

    def check(fields: dict[str, str]) -> None:
        check_csrf(who, fields)
        del fields[CSRF_FIELD]
        if not fields.get("format"):  # "From the file name"
            fields.pop("format", None)
        seen.update(fields)

    try:
        report = await importing.import_upload(
            who.rt, caller, request.headers.get("content-type", ""), request.stream(), check
        )
    except ServiceError as exc:
        return _page(request, who, exc.status, values=seen, report=None, errors={"": exc.message})
    return _page(request, who, values=seen, report=report)
