"""The world map of clicks by country: its shapes shipped in the package, a shade per country from its clicks (the most
always darkest), nothing drawn for clicks of no known country or the "(other)" row, an accessible name and a
description pointing to the table, names and links escaped, and well-formed markup."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from importlib.resources import files
from itertools import pairwise
from typing import Any

import pytest

from slugline.dashboard import worldmap
from slugline.dashboard.worldmap import DASH, STEPS, TITLE, Shapes, legend_ranges, shade, shapes, step_bounds, world_map

SVG = "{http://www.w3.org/2000/svg}"
# Whole units: `M x y` then relative steps, each ring closed.
PATH = re.compile(r"^(?:M-?\d+ -?\d+l(?:-?\d+(?: |(?=[-z])))+z)+$")


def rows(**clicks: int) -> list[dict[str, Any]]:
    return [{"country": code, "clicks": n} for code, n in clicks.items()]


def parsed(markup: str) -> ET.Element:
    return ET.fromstring(markup)  # the figure is well-formed XML: every name and link escaped


def countries(figure: ET.Element) -> dict[str, ET.Element]:
    return {path.get("data-country", ""): path for path in figure.iter(f"{SVG}path")}


def test_the_shapes_ship_in_the_package_small_and_keyed_by_alpha_2() -> None:
    data = files("slugline.dashboard") / worldmap.SHAPES_FILE
    assert data.is_file() and len(data.read_bytes()) < 150_000
    drawn = shapes()
    codes = [code for code, _, _ in drawn.countries]
    assert len(codes) == len(set(codes)) > 170
    assert all(re.fullmatch(r"[A-Z]{2}", code) for code in codes)
    assert {"FR", "US", "BR", "IN", "CN", "AU", "ZA", "XK", "RU", "FJ"} <= set(codes)
    assert "AQ" not in codes  # Antarctica is left out
    names = {code: name for code, name, _ in drawn.countries}
    assert (names["DE"], names["CD"], names["CY"], names["SO"]) == ("Germany", "DR Congo", "Cyprus", "Somalia")
    assert all(PATH.match(path) for _, _, path in drawn.countries)
    assert "Natural Earth" in drawn.attribution
    assert shapes() is drawn  # read once per process


def test_every_point_is_on_the_map() -> None:
    drawn = shapes()
    for code, _, path in drawn.countries:
        for ring in re.findall(r"M(-?\d+) (-?\d+)l([^z]*)z", path):
            x, y = int(ring[0]), int(ring[1])
            for dx, dy in re.findall(r"(-?\d+) ?(-?\d+)", ring[2]):
                x, y = x + int(dx), y + int(dy)
                assert 0 <= x <= drawn.width and 0 <= y <= drawn.height, code  # no ring across the antimeridian


def test_a_country_is_shaded_by_its_clicks_and_the_most_is_darkest() -> None:
    figure = parsed(world_map(rows(FR=30, DE=12, US=50, BR=3, JP=1)))
    drawn = countries(figure)
    shades = {code: drawn[code].get("class") for code in ("US", "FR", "DE", "BR", "JP", "GB")}
    assert shades == {"US": "s5", "FR": "s5", "DE": "s4", "BR": "s2", "JP": "s1", "GB": "s0"}
    title = drawn["FR"].find(f"{SVG}title")
    assert title is not None and title.text == "France: 30 clicks"
    gb = drawn["GB"].find(f"{SVG}title")
    assert gb is not None and gb.text == "United Kingdom: no clicks"
    assert len(drawn) == len(shapes().countries)


def test_clicks_of_no_known_country_and_other_are_not_drawn() -> None:
    given: list[dict[str, Any]] = [
        {"country": "DE", "clicks": 2},
        {"country": None, "clicks": 5},
        {"country": "unknown", "clicks": 5},
        {"country": "", "clicks": 5},
        {"country": "(other)", "clicks": 9},
        {"country": "SG", "clicks": 40},  # too small to draw at this scale: the table has it
    ]
    figure = parsed(world_map(given))
    drawn = countries(figure)
    assert set(drawn) == {code for code, _, _ in shapes().countries}
    assert [code for code, path in drawn.items() if path.get("class") != "s0"] == ["DE"]
    assert drawn["DE"].get("class") == "s5"  # the most of what is drawn
    assert world_map(rows(SG=3)) == "" and world_map([{"country": "(other)", "clicks": 3}]) == ""
    assert world_map([]) == ""


def test_the_map_has_an_accessible_name_and_points_to_the_table() -> None:
    figure = parsed(world_map(rows(FR=3, DE=1, IT=1), table_id="t-countries"))
    svg = figure.find(f"{SVG}svg")
    assert svg is not None and svg.get("role") == "img"
    title = svg.find(f"{SVG}title")
    desc = svg.find(f"{SVG}desc")
    assert title is not None and desc is not None
    assert svg.get("aria-labelledby") == title.get("id") and title.text == TITLE
    assert svg.get("aria-describedby") == desc.get("id")
    assert desc.text == (
        "3 countries shaded by clicks, darker for more, the most from France (3 clicks). "
        "The Countries table lists every country's clicks."
    )
    assert [a.get("href") for a in figure.iter("a")] == ["#t-countries"]


def test_countries_with_clicks_link_to_the_filtered_page_for_the_mouse_only() -> None:
    markup = world_map(rows(FR=3, DE=1), lambda code: None if code == "DE" else f"?days=7&country={code}")
    figure = parsed(markup)
    links = {a.get("href"): a for a in figure.iter(f"{SVG}a")}
    assert list(links) == ["?days=7&country=FR"]  # DE: no link (the filter applied); no click, no link
    assert links["?days=7&country=FR"].get("tabindex") == "-1"  # keyboards take the table's links
    assert 'href="?days=7&amp;country=FR"' in markup


def test_names_and_links_are_escaped(monkeypatch: pytest.MonkeyPatch) -> None:
    odd = Shapes(10, 10, (("FR", "<b>Fr&ance</b>", "M1 1l2 0 0 2z"), ("DE", "Germany", "M5 5l2 0 0 2z")), "")
    monkeypatch.setattr(worldmap, "shapes", lambda: odd)
    markup = world_map(rows(FR=2, DE=1), lambda code: f'"><script>{code}')
    assert "<b>" not in markup and "<script>" not in markup
    assert "&lt;b&gt;Fr&amp;ance&lt;/b&gt;: 2 clicks" in markup
    drawn = countries(parsed(markup))
    title = drawn["FR"].find(f"{SVG}title")
    assert title is not None and title.text == "<b>Fr&ance</b>: 2 clicks"
    assert [a.get("href") for a in parsed(markup).iter(f"{SVG}a")] == ['"><script>FR', '"><script>DE']


@pytest.mark.parametrize("top", [1, 2, 3, 5, 10, 37, 100, 1000, 123_456])
def test_the_shades_cover_every_count_in_order(top: int) -> None:
    bounds = step_bounds(top)
    levels = [shade(n, bounds) for n in range(1, top + 1)] if top <= 1000 else [shade(n, bounds) for n in (1, top)]
    assert levels == sorted(levels) and levels[-1] == STEPS and levels[0] >= 1
    assert shade(0, bounds) == 0
    ranges = legend_ranges(top, bounds)
    assert ranges[-1][0] == STEPS and ranges[0][1].startswith("1")
    covered = []
    for _, label in ranges:
        low, _, high = label.partition(DASH)
        covered.append((int(low), int(high or low)))
    assert covered[0][0] == 1 and covered[-1][1] == top
    assert all(b[0] == a[1] + 1 for a, b in pairwise(covered))  # no gap, no overlap


def test_a_long_tail_is_spread_over_the_shades() -> None:
    assert step_bounds(1000) == [3, 15, 63, 251]
    assert [shade(n, step_bounds(1000)) for n in (1, 3, 4, 15, 16, 63, 64, 251, 252, 1000)] == [
        1, 1, 2, 2, 3, 3, 4, 4, 5, 5,
    ]  # fmt: skip
