from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from slugline.api.deps import ApiCaller, RuntimeDep
from slugline.api.openapi import query_schema
from slugline.common.inputs import QrParams
from slugline.links import qr as qr_service

router = APIRouter(prefix="/links", tags=["links"])


@router.get(
    "/{link_id}/qr",
    operation_id="getQrCode",
    openapi_extra=query_schema(QrParams),
    response_class=Response,
    responses={200: {"content": {"image/png": {}, "image/svg+xml": {}}}},
    summary="QR code (PNG or SVG) of the short URL; scans count as source 'qr'",
)
def qr_code(rt: RuntimeDep, caller: ApiCaller, link_id: str, request: Request) -> Response:
    image, media_type = qr_service.qr_code(rt, caller, link_id, dict(request.query_params))
    return Response(image, media_type=media_type)
