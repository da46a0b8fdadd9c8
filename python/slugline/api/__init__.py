"""The REST API: one router per resource under `api/v1/`, each a thin translation of the concepts' operations."""

from __future__ import annotations

from fastapi import APIRouter

from slugline.api.v1 import (
    analytics,
    analyze,
    auth,
    bulk,
    clicks,
    health,
    keys,
    links,
    me,
    public,
    qr,
    search,
    webhooks,
)

API_PREFIX = "/api/v1"


def routers() -> list[APIRouter]:
    # `bulk` before `links`: its fixed paths (/links/export) would otherwise be read as a link's id.
    modules = (bulk, links, me, search, health, auth, keys, clicks, qr, analytics, public, analyze, webhooks)
    return [module.router for module in modules]
