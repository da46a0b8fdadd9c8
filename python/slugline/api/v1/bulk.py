"""Many links at once: the export of an account's links as a file. Included before `links`, whose `/links/{link_id}`
would take `/links/export` for a link's id."""

from __future__ import annotations

from fastapi import APIRouter, Request

from slugline.api.deps import ApiCaller, RuntimeDep
from slugline.api.openapi import query_schema
from slugline.links import export
from slugline.web.responses import Download

router = APIRouter(prefix="/links", tags=["links"])
SHOWN = (*export.FILTERS, "format")  # the export's parameters; the list's paging and order are not its own


@router.get(
    "/export",
    openapi_extra={
        "parameters": [p for p in query_schema(export.LinkExportParams)["parameters"] if p["name"] in SHOWN]
    },
    summary="Every link the key may see, with every field, oldest first, filtered as GET /links is (q): CSV with "
    "a header row, or NDJSON; streamed",
)
async def export_links(rt: RuntimeDep, caller: ApiCaller, request: Request) -> Download:
    return Download(await export.export_links(rt, caller, dict(request.query_params)))
