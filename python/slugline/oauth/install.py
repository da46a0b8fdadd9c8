"""Adds the OAuth endpoints and the consent and connected-apps pages to the app."""

from __future__ import annotations

from fastapi import FastAPI

from slugline.oauth import consent
from slugline.oauth.routes import routes


def install(app: FastAPI) -> None:
    app.router.routes.extend(routes())
    app.include_router(consent.router)
