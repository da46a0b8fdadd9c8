"""The account's analytics: the figures of `GET /analytics` for the period, interval and filters in the query string
(`figures.Figures`), with a chart, a table per breakdown whose rows filter the page, and top links."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from slugline.dashboard.figures import Figures, get_figures
from slugline.dashboard.pages import render
from slugline.dashboard.session import visitor

router = APIRouter(include_in_schema=False)


@router.get("/app/analytics")
async def analytics_page(request: Request) -> Response:
    who = await visitor(request)
    fig = Figures.read(request.query_params)
    stats, error = await get_figures(who, fig)
    if stats is None:  # parameters refused: the controls stay, with the service's message
        return render(request, who, "analytics.html", 422, stats=None, fig=fig, error=error)
    return render(request, who, "analytics.html", stats=stats, fig=fig, error="", chart=fig.chart(stats))
