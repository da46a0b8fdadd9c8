"""The dashboard's link form edits redirect rules one a line, the link page lists them, and the API's messages
appear next to the field."""

from __future__ import annotations

from starlette.testclient import TestClient

from slugline.dashboard.rules import rules_of, text_of
from tests.dashboard.pages import new_link, post_link_form
from tests.support.helpers import SQLITE_ONLY

RULES_TEXT = "country=FR,BE device=mobile -> https://example.com/fr\n\n-> https://example.com/all"


def test_the_text_and_the_rules_make_each_other() -> None:
    rules = rules_of(RULES_TEXT)
    assert rules == [
        {"if": {"country": ["FR", "BE"], "device": ["mobile"]}, "to": "https://example.com/fr"},
        {"if": {}, "to": "https://example.com/all"},
    ]
    assert rules_of(text_of(rules)) == rules
    assert rules_of("  \n") is None


@SQLITE_ONLY
def test_the_form_sets_rules_and_the_page_lists_them(owner: TestClient) -> None:
    link_id = new_link(owner, destination_url="https://example.com/", rules=RULES_TEXT)
    page = owner.get(f"/app/links/{link_id}").text
    assert "country FR, BE and device mobile" in page and "anyone" in page
    form = owner.get(f"/app/links/{link_id}/edit").text
    assert "country=FR,BE device=mobile -&gt; https://example.com/fr" in form


@SQLITE_ONLY
def test_form_errors_name_the_rules_field(owner: TestClient) -> None:
    res = post_link_form(owner, rules="country=FRA -> https://example.com/x")
    assert res.status_code == 422 and 'id="e-rules"' in res.text and "country" in res.text
    res = post_link_form(owner, rules="mobile https://example.com/x")
    assert res.status_code == 422 and 'id="e-rules">rules: line 1 must read' in res.text
    res = post_link_form(owner, rules="planet=mars -> https://example.com/x")
    assert res.status_code == 422 and "planet" in res.text
