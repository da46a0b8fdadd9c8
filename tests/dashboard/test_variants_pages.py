"""The dashboard's link form edits variants one a line (`WEIGHT URL`), the link page lists them with their clicks (and
each of its latest clicks its variant), and the API's messages appear next to the field."""

from __future__ import annotations

import re
import time

from starlette.testclient import TestClient

from slugline.dashboard.rules import variants_of, variants_text
from tests.dashboard.pages import new_link, post_link_form
from tests.support.helpers import CHROME, SQLITE_ONLY, click_recorder

VARIANTS_TEXT = "70 https://example.com/a\n\n30 https://example.com/b"


def test_the_text_and_the_variants_make_each_other() -> None:
    variants = variants_of(VARIANTS_TEXT)
    assert variants == [{"to": "https://example.com/a", "weight": 70}, {"to": "https://example.com/b", "weight": 30}]
    assert variants_of(variants_text(variants)) == variants
    assert variants_of("  \n") is None


@SQLITE_ONLY
def test_the_form_sets_variants_and_the_page_counts_their_clicks(owner: TestClient) -> None:
    link_id = new_link(owner, destination_url="https://example.com/", variants=VARIANTS_TEXT)
    form = owner.get(f"/app/links/{link_id}/edit").text
    assert "70 https://example.com/a\n30 https://example.com/b" in form
    page = owner.get(f"/app/links/{link_id}").text
    assert "70 →" in page and 'aria-labelledby="variants-heading"' in page  # the link's variants, then their clicks


@SQLITE_ONLY
def test_form_errors_name_the_variants_field(owner: TestClient) -> None:
    res = post_link_form(owner, variants="0 https://example.com/a\n1 https://example.com/b")
    assert res.status_code == 422 and 'id="e-variants"' in res.text and "weight" in res.text
    res = post_link_form(owner, variants="https://example.com/a")
    assert res.status_code == 422 and 'id="e-variants">variants: line 1 must read' in res.text


def _latest_clicks(page: str) -> tuple[list[str], list[list[str]]]:
    """The "Latest clicks" table of a link's page: its column names, and each row's cells as text."""
    table = page.split("<h2>Latest clicks</h2>", 1)[1].split("</table>", 1)[0]
    cells = re.compile(r"<t([hd])[^>]*>(.*?)</t[hd]>", re.S)
    rows = [cells.findall(row) for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)]
    return [text for _, text in rows[0]], [[re.sub(r"<[^>]+>", "", text) for _, text in row] for row in rows[1:]]


@SQLITE_ONLY
def test_the_latest_clicks_name_their_variant_when_the_link_has_variants(owner: TestClient) -> None:
    split = new_link(owner, destination_url="https://example.com/", variants=VARIANTS_TEXT)
    plain = new_link(owner, destination_url="https://example.com/plain")
    recorder = click_recorder(owner)
    now = time.time()
    # newest first on the page: variant 1 (shown as 2), a click a rule sent elsewhere (none), variant 0 (shown as 1)
    for n, (link_id, variant) in enumerate([(split, 0), (split, None), (split, 1), (plain, None)]):
        recorder.queue.record(link_id, CHROME.encode(), b"", None, False, f"198.18.0.{n}", now - 10 + n, None, variant)
    assert owner.portal is not None
    owner.portal.call(recorder.flush)

    names, rows = _latest_clicks(owner.get(f"/app/links/{split}").text)
    assert names[-1] == "Variant" and [row[-1] for row in rows] == ["2", "", "1"]
    names, rows = _latest_clicks(owner.get(f"/app/links/{plain}").text)
    assert "Variant" not in names and len(rows) == 1 and len(rows[0]) == len(names)
