"""Metrics put into an app: the families, the request observer, the fold of each worker and `GET /metrics`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import FastAPI
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from slugline.metrics.exposition import authorized, make_families, render
from slugline.metrics.fold import Metrics, RedirectCounts
from slugline.settings import Settings
from slugline.web.logs import RequestLog
from slugline.web.responses import error

PATH = "/metrics"


def install(api: FastAPI, redirects: RedirectCounts, requests: RequestLog, settings: Settings) -> Metrics:
    """Counts in every worker once metrics are on; the route only with a token (else /metrics stays 404)."""
    families, registry = make_families()
    metrics = Metrics(families, redirects)
    requests.observe = metrics.observe
    api.state.metrics = metrics
    if settings.metrics_token:
        api.router.routes.append(Route(PATH, scraper(metrics, registry, settings.metrics_token), methods=["GET"]))
    return metrics


def scraper(metrics: Metrics, registry: CollectorRegistry, token: str) -> Callable[[Request], Awaitable[Response]]:
    async def scrape(request: Request) -> Response:
        if not authorized(request, token):
            return error(
                401,
                "metrics need a valid token: Authorization: Bearer <SLUGLINE_METRICS_TOKEN>",
                {"WWW-Authenticate": "Bearer"},
            )
        metrics.fold()  # this worker's counts up to now; the others' are at most a second old
        return Response(render(registry), media_type=CONTENT_TYPE_LATEST, headers={"Cache-Control": "no-store"})

    return scrape
