"""QR rendering: PNG and SVG of exactly the asked size, module for module the matrix, and the bounds."""

import io
import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from PIL import Image

from slugline.links.qr import qr_matrix, render_qr

URL = "https://sl.example/abc123?src=qr"
SVG = "{http://www.w3.org/2000/svg}"


def png_modules(png: bytes, count: int) -> list[list[bool]]:
    """Sample the pixel at each module's centre."""
    image = Image.open(io.BytesIO(png)).convert("L")
    scale = image.width / count
    centre = [int((i + 0.5) * scale) for i in range(count)]
    return [[image.getpixel((x, y)) == 0 for x in centre] for y in centre]


def svg_modules(svg: bytes, count: int) -> list[list[bool]]:
    path = ET.fromstring(svg).find(f"{SVG}path")
    assert path is not None
    modules = [[False] * count for _ in range(count)]
    for x, y, width in re.findall(r"M(\d+) (\d+)h(\d+)v1h-\d+z", path.attrib["d"]):
        for i in range(int(x), int(x) + int(width)):
            modules[int(y)][i] = True
    return modules


@pytest.mark.parametrize(("size", "margin"), [(256, 4), (64, 0), (300, 16), (2048, 4), (97, 2)])
def test_png_is_exactly_size_pixels_and_matches_the_matrix(size: int, margin: int) -> None:
    png, media_type = render_qr(URL, "png", size=size, margin=margin)
    assert media_type == "image/png"
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert Image.open(io.BytesIO(png)).size == (size, size)
    matrix = qr_matrix(URL, margin)
    assert png_modules(png, len(matrix)) == matrix
    assert not any(matrix[0]) if margin else any(matrix[0])  # the quiet zone is light


@pytest.mark.parametrize(("size", "margin"), [(256, 4), (64, 0), (1000, 16)])
def test_svg_has_size_viewbox_and_matches_the_matrix(size: int, margin: int) -> None:
    svg, media_type = render_qr(URL, "svg", size=size, margin=margin)
    assert media_type == "image/svg+xml"
    root = ET.fromstring(svg)
    matrix = qr_matrix(URL, margin)
    count = len(matrix)
    assert root.tag == f"{SVG}svg"
    assert (root.attrib["width"], root.attrib["height"]) == (str(size), str(size))
    assert root.attrib["viewBox"] == f"0 0 {count} {count}"
    assert svg_modules(svg, count) == matrix


def test_png_decodes_back_to_the_data() -> None:
    zxingcpp = pytest.importorskip("zxingcpp", reason="zxing-cpp is not installed; the matrix tests still run")
    png, _ = render_qr(URL, "png", size=128)
    results = zxingcpp.read_barcodes(Image.open(io.BytesIO(png)).convert("L"))
    assert [r.text for r in results] == [URL]


@pytest.mark.parametrize("size", [0, 63, 2049, -1])
def test_size_out_of_range_is_refused(size: int) -> None:
    with pytest.raises(ValueError, match="size must be between 64 and 2048"):
        render_qr(URL, "png", size=size)


@pytest.mark.parametrize("margin", [-1, 17])
def test_margin_out_of_range_is_refused(margin: int) -> None:
    with pytest.raises(ValueError, match="margin must be between 0 and 16"):
        render_qr(URL, "svg", margin=margin)


def test_unknown_format_is_refused() -> None:
    unchecked_format: Any = "gif"  # what an untyped caller could send
    with pytest.raises(ValueError, match="format"):
        render_qr(URL, unchecked_format, size=128)


def test_data_too_large_for_size_is_refused() -> None:
    with pytest.raises(ValueError, match="size must be at least"):
        render_qr("x" * 1000, "png", size=64)
