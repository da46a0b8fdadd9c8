"""The dashboard's link form edits variants one a line (`WEIGHT URL`), the link page lists them with their clicks, and
the API's messages appear next to the field."""

from __future__ import annotations

from starlette.testclient import TestClient

from slugline.dashboard.rules import variants_of, variants_text
from tests.dashboard.pages import new_link, post_link_form
from tests.support.helpers import SQLITE_ONLY

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
