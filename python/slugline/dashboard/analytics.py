"""The account's analytics: the figures of `GET /analytics` for a period and an optional source, with a chart."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from slugline.analytics import service as analytics
from slugline.common.errors import RateLimited, ServiceError
from slugline.dashboard.charts import clicks_chart
from slugline.dashboard.pages import render
from slugline.dashboard.session import PageError, visitor

router = APIRouter(include_in_schema=False)
PERIODS = (7, 30, 90, 365)


@router.get("/app/analytics")
async def analytics_page(request: Request) -> Response:
    who = await visitor(request)
    caller = who.owner()
    query = {"days": request.query_params.get("days") or "30", "source": request.query_params.get("source") or None}
    try:
        stats = await analytics.get_analytics(who.rt, caller, query)
    except RateLimited as exc:
        raise PageError.of(exc) from None
    except ServiceError as exc:
        return render(
            request,
            who,
            "analytics.html",
            exc.status,
            stats=None,
            query=query,
            periods=PERIODS,
            errors={"": exc.message},
        )
    chart = clicks_chart(stats["clicks"], f"Clicks per day, last {stats['days']} days")
    return render(request, who, "analytics.html", stats=stats, query=query, periods=PERIODS, chart=chart)
