"""The web dashboard: server-rendered pages at `/` and `/app/...` for people, on the same service functions as the
REST API and the MCP tools. `install` adds its routes, static assets and error pages to the FastAPI app."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.staticfiles import StaticFiles

from slugline.dashboard import account, analytics, auth, editing, importing, links, webhooks
from slugline.dashboard.pages import redirect, render
from slugline.dashboard.session import CsrfRefused, PageError, SignInRequired, visitor

STATIC_DIR = Path(__file__).parent / "static"
CSRF_MESSAGE = "this form has expired or did not come from this site: reload the page and try again"


def install(app: FastAPI) -> None:
    # editing and importing before links: /app/links/new and /app/links/import must not be taken for a link id
    for module in (auth, editing, importing, links, analytics, account, webhooks):
        app.include_router(module.router)
    app.mount("/app/static", StaticFiles(directory=STATIC_DIR), name="dashboard-static")

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:
        """The icon a browser asks for where a page names none (a JSON answer, the API docs): the dashboard's."""
        return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml")

    @app.exception_handler(SignInRequired)
    async def sign_in(_: Request, __: Exception) -> Response:
        return redirect("/app/login", 302)

    @app.exception_handler(CsrfRefused)
    async def csrf_refused(request: Request, _: Exception) -> Response:
        return render(request, await visitor(request), "error.html", 403, message=CSRF_MESSAGE, plan_notice=False)

    @app.exception_handler(PageError)
    async def page_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, PageError)
        # In the dashboard the owner acts with full access: the one 403 left is the plan gate.
        who, notice = await visitor(request), exc.status == 403
        page = render(request, who, "error.html", exc.status, message=exc.message, plan_notice=notice)
        page.headers.update(exc.headers)
        return page
