"""The clicks by country as a world map, drawn on the server as SVG like the clicks chart: no script, no tiles, nothing
fetched. A picture for those who would rather look than read: the Countries table beside it holds the same figures
and is what the map's description points screen readers to.

The shapes (`world-110m.json`, made once by `tools/world_map_data.py` from Natural Earth's 1:110m countries, public
domain) are projected and rounded already: each country is one SVG path keyed by its ISO 3166-1 alpha-2 code, read
once per process. A page only picks each country's shade: five steps from the fewest clicks to the most, on a log
scale (clicks by country are skewed: one country often has most of them), and countries without clicks in land
grey. A country's title gives its name and clicks on hover; one with clicks links to the page filtered by it, as the
table's row does (for the mouse only: keyboards and screen readers have the table's links).

Not drawn: clicks of no known country, the "(other)" row, and countries too small for the 1:110m scale (Singapore,
Malta, Bahrain, most islands); the table lists them all."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

from markupsafe import Markup, escape

from slugline.dashboard.charts import plural

SHAPES_FILE = "world-110m.json"
STEPS = 5
TITLE = "Clicks by country: world map"
DASH = "\N{EN DASH}"  # between the ends of a shade's range in the legend


@dataclass(frozen=True)
class Shapes:
    width: int
    height: int
    countries: tuple[tuple[str, str, str], ...]  # (alpha-2 code, name, SVG path)
    attribution: str


@cache
def shapes() -> Shapes:
    """The map's shapes, read from the package once per process: they never change while it runs."""
    raw = json.loads((files("slugline.dashboard") / SHAPES_FILE).read_text(encoding="utf-8"))
    countries = tuple((str(code), str(name), str(path)) for code, name, path in raw["countries"])
    return Shapes(int(raw["width"]), int(raw["height"]), countries, str(raw["attribution"]))


def clicks_by_country(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """The breakdown's rows ({"country": "FR", "clicks": 3}) by alpha-2 code: the "(other)" row and any value that is
    not a country code (none, "unknown") are left out."""
    out: dict[str, int] = {}
    for row in rows:
        code = row.get("country")
        if isinstance(code, str) and len(code) == 2 and code.isascii() and code.isalpha() and int(row["clicks"]) > 0:
            out[code.upper()] = out.get(code.upper(), 0) + int(row["clicks"])
    return out


def step_bounds(top: int) -> list[int]:
    """The most clicks of each shade but the last (which ends at `top`): top^(k/STEPS) rounded down, so the steps are
    even on a log scale; never `top` itself, which is always the darkest."""
    return [min(math.floor(top ** (k / STEPS) + 1e-9), top - 1) for k in range(1, STEPS)]


def shade(clicks: int, bounds: list[int]) -> int:
    """0 for no clicks, else 1 (fewest) to STEPS (most)."""
    return 0 if clicks <= 0 else 1 + sum(clicks > bound for bound in bounds)


def legend_ranges(top: int, bounds: list[int]) -> list[tuple[int, str]]:
    """(shade, "4-15", with an en dash) for each shade that some count can have."""
    out = []
    for step, (low, high) in enumerate(zip([0, *bounds], [*bounds, top], strict=True), start=1):
        if high > low:
            out.append((step, f"{low + 1}" if high == low + 1 else f"{low + 1}{DASH}{high}"))
    return out


def world_map(
    rows: Iterable[Mapping[str, Any]],
    link: Callable[[str], str | None] = lambda code: None,
    table_id: str = "t-countries",
    map_id: str = "world-map",
) -> Markup:
    """The map of the countries breakdown `rows`, each country with clicks linking to `link(code)` (None: no link),
    its description pointing to the table `table_id`; empty when no click has a country on the map."""
    drawn = shapes()
    counts = clicks_by_country(rows)
    known = {code for code, _, _ in drawn.countries}
    on_map = {code: n for code, n in counts.items() if code in known}
    if not on_map:
        return Markup("")
    top = max(on_map.values())
    bounds = step_bounds(top)
    leader = next(name for code, name, _ in drawn.countries if on_map.get(code) == top)
    shaded = f"{len(on_map)} countries" if len(on_map) > 1 else "1 country"
    desc = (
        f"{shaded} shaded by clicks, darker for more, the most from {leader} ({plural(top, 'click')}). "
        "The Countries table lists every country's clicks."
    )
    parts = [
        f'<figure class="world-map" id="{map_id}">',
        f'<svg role="img" aria-labelledby="{map_id}-title" aria-describedby="{map_id}-desc" '
        f'viewBox="0 0 {drawn.width} {drawn.height}" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="{map_id}-title">{TITLE}</title><desc id="{map_id}-desc">{escape(desc)}</desc>',
    ]
    for code, name, path in drawn.countries:
        clicks = on_map.get(code, 0)
        title = f"<title>{escape(name)}: {plural(clicks, 'click') if clicks else 'no clicks'}</title>"
        shape = f'<path class="s{shade(clicks, bounds)}" data-country="{code}" d="{path}">{title}</path>'
        href = link(code) if clicks else None
        parts.append(f'<a href="{escape(href)}" tabindex="-1">{shape}</a>' if href else shape)
    parts.append('</svg><figcaption><ul class="map-legend" aria-label="Clicks per shade">')
    for step, label in [(0, "no clicks"), *legend_ranges(top, bounds)]:
        parts.append(
            f'<li><svg class="swatch" viewBox="0 0 1 1" aria-hidden="true"><rect class="s{step}" width="1" height="1"/>'
            f"</svg>{label}</li>"
        )
    parts.append(f'</ul><a href="#{table_id}">Countries as a table</a></figcaption></figure>')
    return Markup("".join(parts))
