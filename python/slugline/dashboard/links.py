"""The links table, a link's page (fields, QR code, its figures as on the analytics page, latest clicks) and its QR
images: `links.service`, `analytics.service` and `links.qr`, as `GET /links`, `/links/{id}/analytics` and `/qr` use
them."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from slugline.analytics import service as analytics
from slugline.common.errors import RateLimited, ServiceError
from slugline.common.inputs import ListParams
from slugline.dashboard.figures import Figures, get_figures
from slugline.dashboard.pages import render
from slugline.dashboard.session import PageError, visitor
from slugline.links import export, qr
from slugline.links import service as links
from slugline.web.responses import Download

router = APIRouter(include_in_schema=False)
PER_PAGE = 20
LIST_KEYS = tuple(ListParams.model_fields)  # q, page, per, sort, dir: the query string of GET /links
LATEST_CLICKS = 10
QR_PREVIEW_SIZE = 256


@router.get("/app/")
@router.get("/app/links")
async def list_page(request: Request) -> Response:
    who = await visitor(request)
    caller = who.owner()
    query: dict[str, Any] = {k: v for k, v in request.query_params.items() if k in LIST_KEYS and v != ""}
    query.setdefault("per", PER_PAGE)
    errors: dict[str, str] = {}
    status = 200
    try:
        found = links.plain(await links.list_links(who.rt, caller, query))
    except RateLimited as exc:
        raise PageError.of(exc) from None
    except ServiceError as exc:  # a bad sort or page: the table is empty and the message says why
        errors[""], status = exc.message, exc.status
        found = {"data": [], "pagination": {"page": 1, "per": PER_PAGE, "total": 0, "pages": 0}}

    def page_link(page: int) -> str:
        return "?" + urlencode({**query, "page": page})

    return render(request, who, "links.html", status, found=found, query=query, errors=errors, page_link=page_link)


@router.get("/app/links/export.{fmt}")
async def export_file(request: Request, fmt: str) -> Response:
    """Every link, as `GET /api/v1/links/export` gives it (the list's `q` with it). Before `/app/links/{link_id}`,
    which would take `export.csv` for an id."""
    who = await visitor(request)
    query = {"format": fmt, "q": request.query_params.get("q") or None}
    try:
        return Download(await export.export_links(who.rt, who.owner(), query))
    except ServiceError as exc:
        raise PageError.of(exc) from None


async def link_or_404(who: Any, link_id: str) -> dict[str, Any]:
    try:
        found: dict[str, Any] = await links.get_link(who.rt, who.owner(), link_id)
    except ServiceError as exc:
        raise PageError.of(exc) from None
    return found


@router.get("/app/links/{link_id}")
async def link_page(request: Request, link_id: str) -> Response:
    who = await visitor(request)
    link = await link_or_404(who, link_id)
    fig = Figures.read(request.query_params)
    stats, error = await get_figures(who, fig, link_id)
    try:
        latest = await analytics.list_clicks(who.rt, who.owner(), link_id, {"per": LATEST_CLICKS})
    except ServiceError as exc:
        raise PageError.of(exc) from None
    notice = None
    if failed := request.query_params.get("meta_error"):  # set by the create form when auto_meta could not fetch
        notice = f"The link is made, but its title and description could not be fetched: {failed[:200]}"
    chart = fig.chart(stats, f" of /{link['slug']}") if stats else None
    context = {"link": link, "stats": stats, "fig": fig, "error": error, "chart": chart, "notice": notice}
    return render(request, who, "link.html", 422 if error else 200, latest=latest["data"], **context)


@router.get("/app/links/{link_id}/qr.{fmt}")
async def qr_image(request: Request, link_id: str, fmt: str) -> Response:
    """The QR preview and its downloads; `?download=1` saves it as a file named after the slug."""
    who = await visitor(request)
    link = await link_or_404(who, link_id)
    params = {"format": fmt, "size": request.query_params.get("size") or QR_PREVIEW_SIZE}
    try:
        body, media_type = await run_in_threadpool(qr.qr_code, who.rt, who.owner(), link_id, params)
    except ServiceError as exc:
        raise PageError.of(exc) from None
    headers = {
        "Cache-Control": "private, no-store",
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": "default-src 'none'",
    }
    if request.query_params.get("download"):
        headers["Content-Disposition"] = f'attachment; filename="{link["slug"]}.{fmt}"'
    return Response(body, media_type=media_type, headers=headers)
