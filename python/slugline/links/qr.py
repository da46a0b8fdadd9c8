"""QR codes of short links, as PNG or SVG: the image of the short URL with `?src=qr`, so scans count as
source `qr`."""

from __future__ import annotations

import io
from typing import Any, Literal

import qrcode
import qrcode.constants
from PIL import Image

from slugline.common.bounds import MAX_QR_MARGIN, MAX_QR_SIZE, MIN_QR_SIZE
from slugline.common.caller import Caller
from slugline.common.errors import Invalid
from slugline.common.inputs import QrParams
from slugline.common.validation import parse, without_nulls
from slugline.links.service import find_link
from slugline.runtime import Runtime


def qr_code(rt: Runtime, caller: Caller, link_id: str, data: dict[str, Any]) -> tuple[bytes, str]:
    """The QR image of the link's short URL: (bytes, media type)."""
    with rt.db.session() as session:
        slug = find_link(session, caller, link_id).slug
    params = parse(QrParams, without_nulls(data))
    try:
        return render_qr(f"{caller.base_url}/{slug}?src=qr", params.format, params.size, params.margin)
    except ValueError as exc:  # e.g. a size too small for the code's modules
        raise Invalid(str(exc)) from None


def qr_matrix(data: str, margin: int = 4) -> list[list[bool]]:
    """Dark (True) and light modules, quiet zone of `margin` modules included."""
    if not 0 <= margin <= MAX_QR_MARGIN:
        raise ValueError(f"margin must be between 0 and {MAX_QR_MARGIN}")
    code = qrcode.QRCode(error_correction=qrcode.constants.ERROR_CORRECT_M, box_size=1, border=margin)
    code.add_data(data)
    code.make(fit=True)
    return [list(map(bool, row)) for row in code.get_matrix()]


def render_qr(data: str, fmt: Literal["png", "svg"], size: int = 256, margin: int = 4) -> tuple[bytes, str]:
    """The QR code of `data` as a `size` by `size` image; returns (bytes, media type)."""
    if not MIN_QR_SIZE <= size <= MAX_QR_SIZE:
        raise ValueError(f"size must be between {MIN_QR_SIZE} and {MAX_QR_SIZE}")
    if fmt not in ("png", "svg"):
        raise ValueError("format must be png or svg")
    matrix = qr_matrix(data, margin)
    if len(matrix) > size:
        raise ValueError(f"size must be at least {len(matrix)} to fit this QR code")
    if fmt == "png":
        return _png(matrix, size), "image/png"
    return _svg(matrix, size), "image/svg+xml"


def _png(matrix: list[list[bool]], size: int) -> bytes:
    count = len(matrix)
    image = Image.new("1", (count, count), 1)
    image.putdata([0 if dark else 1 for row in matrix for dark in row])
    # Nearest-neighbour keeps module edges sharp; any other filter would blur them to grey.
    image = image.resize((size, size), Image.Resampling.NEAREST)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _svg(matrix: list[list[bool]], size: int) -> bytes:
    count = len(matrix)
    runs: list[str] = []
    for y, row in enumerate(matrix):
        x = 0
        while x < count:
            if not row[x]:
                x += 1
                continue
            start = x
            while x < count and row[x]:
                x += 1
            runs.append(f"M{start} {y}h{x - start}v1h-{x - start}z")
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" viewBox="0 0 {count} {count}" '
        f'shape-rendering="crispEdges"><rect width="{count}" height="{count}" fill="#fff"/>'
        f'<path fill="#000" d="{"".join(runs)}"/></svg>'
    ).encode()
