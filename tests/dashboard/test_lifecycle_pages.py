"""The dashboard's link form and page for a link's lifecycle: expiry, click limit, archiving and the social card."""

from __future__ import annotations

from starlette.testclient import TestClient

from tests.dashboard.pages import csrf_of, new_link, post_link_form
from tests.support.helpers import SQLITE_ONLY


@SQLITE_ONLY
def test_the_form_sets_the_lifecycle_and_the_page_shows_the_card(owner: TestClient) -> None:
    link_id = new_link(
        owner,
        destination_url="https://example.com/sale",
        expires_at="2999-01-02T03:04",
        max_clicks="50",
        expired_url="https://example.com/over",
        preview_title="Big <sale>",
        preview_description="Half off",
        preview_image_url="https://img.example/card.png",
    )
    page = owner.get(f"/app/links/{link_id}").text
    assert "card-preview" in page and "Big &lt;sale&gt;" in page and "Half off" in page
    assert "img.example" in page and "active" in page
    form = owner.get(f"/app/links/{link_id}/edit").text
    assert 'value="2999-01-02T03:04"' in form and 'value="50"' in form
    assert 'value="https://example.com/over"' in form and 'value="Big &lt;sale&gt;"' in form
    token = csrf_of(owner, f"/app/links/{link_id}/edit")
    edited = owner.post(
        f"/app/links/{link_id}/edit",
        data={
            "csrf_token": token,
            "destination_url": "https://example.com/sale",
            "visibility": "public",
            "archived": "1",
        },
        follow_redirects=False,
    )
    assert edited.status_code == 303, edited.text
    page = owner.get(f"/app/links/{link_id}").text
    assert "archived" in page and "card-preview" not in page  # the card cleared with its blank fields
    assert "/app/links/" + link_id not in owner.get("/app/links").text


@SQLITE_ONLY
def test_form_errors_name_the_lifecycle_fields(owner: TestClient) -> None:
    res = post_link_form(owner, max_clicks="0")
    assert res.status_code == 422 and 'id="e-max_clicks"' in res.text
    res = post_link_form(owner, expired_url="ftp://x")
    assert res.status_code == 422 and 'id="e-expired_url">expired_url must be' in res.text


@SQLITE_ONLY
def test_the_list_filters_by_status_and_shows_it(owner: TestClient) -> None:
    new_link(owner, destination_url="https://example.com/on", slug="still-on")
    new_link(owner, destination_url="https://example.com/over", slug="long-over", expires_at="2001-01-01T00:00")
    new_link(owner, destination_url="https://example.com/away", slug="put-away", archived="1")

    def listed(status: str | None = None) -> str:
        return owner.get("/app/links", params={"status": status} if status is not None else {}).text

    default = listed()
    assert "still-on" in default and "long-over" in default and "put-away" not in default
    assert '<span class="badge">expired</span>' in default and '<option value="" selected>' in default
    assert "long-over" in listed("expired") and "still-on" not in listed("expired")
    archived = listed("archived")
    assert "put-away" in archived and "still-on" not in archived
    assert '<option value="archived" selected>' in archived
    assert "still-on" in listed("active") and "long-over" not in listed("active")
