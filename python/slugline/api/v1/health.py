from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import text

from slugline import __version__
from slugline.api.deps import RuntimeDep
from slugline.storage import migrate
from slugline.web.responses import JSON

router = APIRouter(tags=["health"])
READY_SECONDS = 3.0  # how long a readiness answer is reused: a probe every second costs one database read per 3 s


@router.get(
    "/health", operation_id="getHealth", summary="Liveness and database check (no auth); this worker's click buffer"
)
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


@router.get(
    "/health/live",
    operation_id="getLiveness",
    summary="Liveness probe: 200 whenever the process serves requests (no auth, no database)",
)
async def live() -> JSON:
    return JSON({"status": "ok"})


@router.get(
    "/health/ready",
    operation_id="getReadiness",
    summary="Readiness probe: 200 when the database answers and its schema is current, else 503 (no auth)",
)
async def ready(rt: RuntimeDep, request: Request) -> JSON:
    """The answer is worked out at most once every `READY_SECONDS` per worker: probes stay cheap however often
    they come."""
    state = request.app.state
    cached: tuple[float, str | None] | None = getattr(state, "readiness", None)
    now = time.monotonic()
    if cached is None or now - cached[0] >= READY_SECONDS:
        cached = state.readiness = (now, await run_in_threadpool(migrate.schema_problem, rt.db.engine))
    problem = cached[1]
    if problem is not None:
        return JSON({"error": problem}, status_code=503, headers={"Retry-After": "1"})
    return JSON({"status": "ok"})
