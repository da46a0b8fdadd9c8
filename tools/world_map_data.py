"""Makes the dashboard's world map shapes (`python/slugline/dashboard/world-110m.json`) from Natural Earth's 1:110m
countries, once; the file is committed and nothing reads these sources at run time.

    npm pack world-atlas@2.0.2 i18n-iso-countries@7.14.0
    .venv/bin/python -m tools.world_map_data world-atlas-2.0.2.tgz i18n-iso-countries-7.14.0.tgz \
        > python/slugline/dashboard/world-110m.json

- `world-atlas` (ISC) carries Natural Earth's Admin 0 countries (public domain) as TopoJSON, each country keyed by its
  ISO 3166-1 numeric code; `i18n-iso-countries` (MIT) gives the numeric to alpha-2 table (clicks carry alpha-2).
- Three shapes have no numeric code: Kosovo is `XK` (the code GeoIP databases give it); Northern Cyprus and Somaliland
  are drawn as part of `CY` and `SO`, the countries a GeoIP database places their visitors in.
- Antarctica is left out: no one clicks from there, and it would take a fifth of the map's height.
- Projection: Equal Earth (Šavrič, Patterson and Jenny, 2018), equal-area, so a country's shade is not exaggerated by
  its latitude. Each shared border (a TopoJSON arc) is simplified once (Douglas-Peucker, `TOLERANCE` map units), so
  neighbours still meet, then rounded to whole units and written as an SVG path with relative steps.

The output: {"attribution", "width", "height", "countries": [[alpha-2, name, path], ...]} sorted by code.
"""

from __future__ import annotations

import io
import json
import math
import sys
import tarfile
from itertools import pairwise
from typing import Any

WIDTH = 2000  # map units across: a border is drawn to 1/2000 of the map's width
TOLERANCE = 1.0  # map units a simplified border may stray from the original
MARGIN = 2
NO_CODE = {"Kosovo": "XK", "N. Cyprus": "CY", "Somaliland": "SO"}
LEFT_OUT = {"AQ"}
# Natural Earth's short labels, spelt out for a tooltip
NAMES = {
    "Bosnia and Herz.": "Bosnia and Herzegovina",
    "Central African Rep.": "Central African Republic",
    "Dem. Rep. Congo": "DR Congo",
    "Dominican Rep.": "Dominican Republic",
    "Eq. Guinea": "Equatorial Guinea",
    "eSwatini": "Eswatini",
    "Falkland Is.": "Falkland Islands",
    "Fr. S. Antarctic Lands": "French Southern Territories",
    "Macedonia": "North Macedonia",
    "S. Sudan": "South Sudan",
    "Solomon Is.": "Solomon Islands",
    "W. Sahara": "Western Sahara",
}
ATTRIBUTION = (
    "Made with Natural Earth (public domain): Admin 0 countries 1:110m, version 4.1.0, as TopoJSON by the world-atlas "
    "package 2.0.2 (ISC); projected (Equal Earth), simplified and rounded by tools/world_map_data.py."
)
# Equal Earth's polynomial coefficients
A1, A2, A3, A4 = 1.340264, -0.081106, 0.000893, 0.003796
M = math.sqrt(3) / 2

Point = tuple[float, float]


def equal_earth(lon: float, lat: float) -> Point:
    """(x, y) on the unit sphere's Equal Earth map, y up."""
    lam, phi = math.radians(lon), math.radians(lat)
    theta = math.asin(M * math.sin(phi))
    t2 = theta * theta
    t6 = t2 * t2 * t2
    x = lam * math.cos(theta) / (M * (A1 + 3 * A2 * t2 + t6 * (7 * A3 + 9 * A4 * t2)))
    y = theta * (A1 + A2 * t2 + t6 * (A3 + A4 * t2))
    return x, y


def decode_arcs(topology: dict[str, Any]) -> list[list[Point]]:
    """Each arc's points in degrees: TopoJSON quantizes them and stores each as the step from the one before."""
    (kx, ky), (dx, dy) = topology["transform"]["scale"], topology["transform"]["translate"]
    arcs = []
    for arc in topology["arcs"]:
        x = y = 0
        points = []
        for step in arc:
            x, y = x + step[0], y + step[1]
            points.append((x * kx + dx, y * ky + dy))
        arcs.append(points)
    return arcs


def simplify(points: list[Point], tolerance: float) -> list[Point]:
    """Douglas-Peucker, keeping both ends (where arcs meet)."""
    if len(points) < 3:
        return points
    keep = [False] * len(points)
    keep[0] = keep[-1] = True
    stack = [(0, len(points) - 1)]
    while stack:
        first, last = stack.pop()
        (ax, ay), (bx, by) = points[first], points[last]
        length = math.hypot(bx - ax, by - ay)
        worst, at = 0.0, -1
        for i in range(first + 1, last):
            px, py = points[i]
            if length == 0:
                d = math.hypot(px - ax, py - ay)
            else:
                d = abs((bx - ax) * (ay - py) - (ax - px) * (by - ay)) / length
            if d > worst:
                worst, at = d, i
        if worst > tolerance:
            keep[at] = True
            stack += [(first, at), (at, last)]
    return [p for p, k in zip(points, keep, strict=True) if k]


def ring_points(ring: list[int], arcs: list[list[Point]]) -> list[Point]:
    """A ring's points from its arcs (a negative index ~i is arc i backwards), each shared end once."""
    out: list[Point] = []
    for index in ring:
        arc = arcs[index] if index >= 0 else arcs[~index][::-1]
        out.extend(arc if not out else arc[1:])
    return out


def antimeridian_rings(points: list[Point]) -> list[list[Point]]:
    """A ring that crosses the antimeridian (one step of over 180 degrees of longitude, as Fiji's and Russia's do)
    as the two rings it is on the map: made continuous (past 180), then held to each side of the line. [] for a ring
    that does not cross it."""
    if not any(abs(b[0] - a[0]) > 180 for a, b in pairwise(points)):
        return []
    shift, last, whole = 0.0, points[0][0], []
    for lon, lat in points:
        if lon - last > 180:
            shift -= 360
        elif last - lon > 180:
            shift += 360
        last = lon
        whole.append((lon + shift, lat))
    if whole[0][0] > 0:  # it starts east of the line and goes past 180
        return [[(min(lon, 180.0), lat) for lon, lat in whole], [(max(lon - 360, -180.0), lat) for lon, lat in whole]]
    return [[(max(lon, -180.0), lat) for lon, lat in whole], [(min(lon + 360, 180.0), lat) for lon, lat in whole]]


def ring_path(points: list[Point]) -> str:
    """`M x y l dx dy ... z` in whole units, repeated points dropped; '' for a ring that rounds to under 3 points."""
    rounded: list[tuple[int, int]] = []
    for x, y in points:
        p = (round(x), round(y))
        if not rounded or rounded[-1] != p:
            rounded.append(p)
    if len(rounded) > 1 and rounded[0] == rounded[-1]:
        rounded.pop()
    if len(set(rounded)) < 3:
        return ""
    (x0, y0), steps = rounded[0], []
    for (ax, ay), (bx, by) in pairwise(rounded):
        steps.append(f"{bx - ax} {by - ay}")
    return f"M{x0} {y0}l" + " ".join(steps).replace(" -", "-") + "z"


def build(world: dict[str, Any], codes: dict[str, str]) -> dict[str, Any]:
    collection = world["objects"]["countries"]["geometries"]
    raw = decode_arcs(world)
    projected = [[equal_earth(lon, lat) for lon, lat in arc] for arc in raw]
    # Scale and bounds from what is drawn: every country but those left out.
    shapes: list[tuple[str, str, list[list[int]]]] = []
    for geometry in collection:
        name = geometry["properties"]["name"]
        code = codes[geometry["id"]] if "id" in geometry else NO_CODE[name]
        if code in LEFT_OUT:
            continue
        polygons = geometry["arcs"] if geometry["type"] == "MultiPolygon" else [geometry["arcs"]]
        shapes.append((code, name, [ring for polygon in polygons for ring in polygon]))
    used = {i if i >= 0 else ~i for _, _, rings in shapes for ring in rings for i in ring}
    xs = [x for i in used for x, _ in projected[i]]
    ys = [y for i in used for _, y in projected[i]]
    scale = (WIDTH - 2 * MARGIN) / (max(xs) - min(xs))
    left, top = min(xs), max(ys)
    height = math.ceil((top - min(ys)) * scale) + 2 * MARGIN

    def place(point: Point) -> Point:
        return (point[0] - left) * scale + MARGIN, (top - point[1]) * scale + MARGIN

    arcs = [simplify([place(p) for p in arc], TOLERANCE) for arc in projected]
    names = {code: NAMES.get(name, name) for code, name, _ in shapes if name not in NO_CODE}
    countries: dict[str, list[str]] = {}
    for code, name, rings in shapes:
        paths = []
        for ring in rings:
            if split := antimeridian_rings(ring_points(ring, raw)):  # simplified as a whole: its arcs cross the map
                parts = [simplify([place(equal_earth(*p)) for p in part], TOLERANCE) for part in split]
            else:
                parts = [ring_points(ring, arcs)]
            paths += [p for part in parts if (p := ring_path(part))]
        if not paths:
            raise SystemExit(f"{name} ({code}) rounds to nothing at this width")
        names.setdefault(code, name)  # Kosovo; Northern Cyprus and Somaliland take their country's name
        countries.setdefault(code, []).extend(paths)
    return {
        "attribution": ATTRIBUTION,
        "width": WIDTH,
        "height": height,
        "countries": [[code, names[code], "".join(paths)] for code, paths in sorted(countries.items())],
    }


def member(archive: str, name: str) -> Any:
    with tarfile.open(archive) as tar:
        found = tar.extractfile(f"package/{name}")
        if found is None:
            raise SystemExit(f"{archive} has no package/{name}")
        return json.load(io.TextIOWrapper(found, encoding="utf-8"))


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        raise SystemExit(__doc__)
    world = member(argv[0], "countries-110m.json")
    codes = {numeric: alpha2 for alpha2, _, numeric, *_ in member(argv[1], "codes.json")}
    out = build(world, codes)
    sys.stdout.write(json.dumps(out, ensure_ascii=False, separators=(",", ":")).replace('],["', '],\n["') + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
