from __future__ import annotations

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import text

from slugline import __version__
from slugline.api.deps import RuntimeDep
from slugline.web.responses import JSON

router = APIRouter(tags=["health"])


@router.get("/health", summary="Liveness and database check (no auth)")
async def health(rt: RuntimeDep) -> JSON:
    def ping() -> bool:
        try:
            with rt.db.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
            return True
        except Exception:
            return False

    ok = await run_in_threadpool(ping)
    body = {"status": "ok" if ok else "degraded", "version": __version__, "database": "ok" if ok else "unavailable"}
    return JSON(body, status_code=200 if ok else 503)
