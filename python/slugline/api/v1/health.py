from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import text

from slugline import __version__
from slugline.api.deps import RuntimeDep
from slugline.web.responses import JSON

router = APIRouter(tags=["health"])


@router.get("/health", summary="Liveness and database check (no auth); this worker's click buffer")
async def health(rt: RuntimeDep, request: Request) -> JSON:
    def ping() -> bool:
        try:
            with rt.db.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
            return True
        except Exception:
            return False

    ok = await run_in_threadpool(ping)
    body: dict[str, object] = {
        "status": "ok" if ok else "degraded",
        "version": __version__,
        "database": "ok" if ok else "unavailable",
    }
    clicks = getattr(request.app.state, "clicks", None)
    if clicks is not None:  # clicks waiting to be written, and clicks lost (buffer at its byte budget) in this worker
        body["clicks"] = {"pending": len(clicks), "dropped": clicks.dropped}
    return JSON(body, status_code=200 if ok else 503)
