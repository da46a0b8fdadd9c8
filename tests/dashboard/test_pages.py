"""The dashboard's pages through HTTP in process: link forms and their errors, keys shown once, the password
change, a link's own figures, and that one account's pages never show another's links."""

from __future__ import annotations

import time

from starlette.testclient import TestClient

from slugline.accounts import service as accounts
from slugline.app import create_app
from slugline.runtime import Runtime
from slugline.settings import Settings
from tests.dashboard.pages import PASSWORD, api_key, csrf_of, new_link, sign_up
from tests.support.helpers import SQLITE_ONLY

CHROME = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"


def test_link_form_errors_carry_the_api_message_next_to_the_field(owner: TestClient) -> None:
    token = csrf_of(owner, "/app/links/new")
    res = owner.post("/app/links/new", data={"csrf_token": token, "destination_url": "ftp://x", "slug": "ok"})
    assert res.status_code == 422
    assert 'id="e-destination_url">destination_url must be an absolute http(s) URL with a host</p>' in res.text
    new_link(owner, destination_url="https://example.com/1", slug="taken")
    res = owner.post(
        "/app/links/new", data={"csrf_token": token, "destination_url": "https://example.com/2", "slug": "taken"}
    )
    assert res.status_code == 409
    assert 'id="e-slug">slug &#39;taken&#39; is already taken</p>' in res.text
    res = owner.post(
        "/app/links/new",
        data={"csrf_token": token, "destination_url": "https://example.com/3", "visibility": "password"},
    )
    assert res.status_code == 422
    assert 'id="e-password">password is required' in res.text


def test_the_links_table_shows_the_same_links_on_every_visit(owner: TestClient) -> None:
    """The first visit reads on a thread; later ones on the event loop, whose rows arrive as JSON bytes."""
    new_link(owner, destination_url="https://example.com/x", slug="again", title="Again")
    for _ in range(3):
        page = owner.get("/app/links")
        assert page.status_code == 200 and "/again" in page.text and "Again" in page.text


def test_create_edit_and_delete_a_link(owner: TestClient) -> None:
    link_id = new_link(
        owner, destination_url="https://example.com/a", slug="ex", title="Ex", hashtags="Rust, #books, rust"
    )
    page = owner.get(f"/app/links/{link_id}")
    assert 'href="/app/links?q=%23rust"' in page.text
    assert 'href="/app/links?q=%23books"' in page.text
    token = csrf_of(owner, f"/app/links/{link_id}/edit")
    edit = {"csrf_token": token, "destination_url": "https://example.com/b", "slug": "", "title": "", "hashtags": ""}
    res = owner.post(f"/app/links/{link_id}/edit", data={**edit, "visibility": "unlisted"}, follow_redirects=False)
    assert res.status_code == 303
    link = owner.get(f"/api/v1/links/{link_id}", headers=api_key(owner)).json()
    assert (link["slug"], link["title"], link["hashtags"], link["visibility"]) == ("ex", None, [], "unlisted")
    res = owner.post(f"/app/links/{link_id}/delete", data={"csrf_token": token}, follow_redirects=False)
    assert res.headers["location"] == "/app/links"
    assert owner.get(f"/app/links/{link_id}").status_code == 404


def test_a_new_key_is_shown_once_and_revoking_it_works(owner: TestClient) -> None:
    auth = api_key(owner, "public")
    key = auth["Authorization"].removeprefix("Bearer ")
    assert key.startswith("svc_pub_")
    assert owner.get("/api/v1/me", headers=auth).json()["scope"] == "public"
    later = owner.get("/app/settings").text
    assert key not in later
    assert f"svc_pub_…{key[-4:]}" in later
    token = csrf_of(owner, "/app/settings")
    res = owner.post("/app/settings/keys", data={"csrf_token": token, "scope": "public", "action": "revoke"})
    assert "public-only key was revoked" in res.text
    assert owner.get("/api/v1/me", headers=auth).status_code == 401
    again = owner.post("/app/settings/keys", data={"csrf_token": token, "scope": "public", "action": "revoke"})
    assert again.status_code == 404
    assert "no public key to delete" in again.text


def test_one_account_never_sees_anothers_link(owner: TestClient, settings: Settings, runtime: Runtime) -> None:
    link_id = new_link(owner, destination_url="https://example.com/mine", slug="mine")
    with TestClient(create_app(settings, runtime), base_url=str(owner.base_url)) as other:
        sign_up(other, "mallory")
        accounts.set_plan(runtime, "mallory", "developer")
        for path in ("", "/edit", "/delete", "/qr.png"):
            assert other.get(f"/app/links/{link_id}{path}").status_code == 404
        res = other.post(
            f"/app/links/{link_id}/delete", data={"csrf_token": csrf_of(other, "/app/links")}, follow_redirects=False
        )
        assert res.status_code == 404
        assert "mine" not in other.get("/app/links").text
    assert owner.get(f"/app/links/{link_id}").status_code == 200


@SQLITE_ONLY
def test_changing_the_password_signs_out_other_sessions(owner: TestClient, runtime: Runtime) -> None:
    elsewhere = accounts.login(runtime, {"username": "ada", "password": PASSWORD})["token"]
    token = csrf_of(owner, "/app/settings")
    wrong = owner.post(
        "/app/settings/password", data={"csrf_token": token, "current_password": "nope", "new_password": "x" * 12}
    )
    assert wrong.status_code == 422
    assert 'id="e-current_password">current_password is not this account' in wrong.text
    short = owner.post(
        "/app/settings/password", data={"csrf_token": token, "current_password": PASSWORD, "new_password": "short"}
    )
    assert short.status_code == 422
    assert 'id="e-new_password">new_password' in short.text
    res = owner.post(
        "/app/settings/password",
        data={"csrf_token": token, "current_password": PASSWORD, "new_password": "a brand new one"},
        follow_redirects=False,
    )
    assert res.headers["location"] == "/app/settings?changed=1"
    assert owner.get("/app/settings").status_code == 200  # this session stays
    assert owner.get("/api/v1/me", headers={"Authorization": f"Bearer {elsewhere}"}).status_code == 401
    assert accounts.login(runtime, {"username": "ada", "password": "a brand new one"})["token"]


def test_a_links_page_counts_that_links_clicks_only(owner: TestClient) -> None:
    one = new_link(owner, destination_url="https://example.com/one", slug="one")
    new_link(owner, destination_url="https://example.com/two", slug="two")
    for slug, times in (("one", 2), ("two", 3)):
        for _ in range(times):
            assert owner.get(f"/{slug}", headers={"User-Agent": CHROME}, follow_redirects=False).status_code == 302
    end = time.monotonic() + 10
    while "Clicks per day, last 30 days: 5 clicks" not in owner.get("/app/analytics").text:
        assert time.monotonic() < end, "the five clicks never landed"
        time.sleep(0.05)
    page = owner.get(f"/app/links/{one}").text
    assert 'aria-label="Clicks per day of /one, last 30 days: 2 clicks from' in page
    assert page.count("<td>desktop</td>") == 2  # the two latest clicks; in devices it is a link that filters
    assert page.count('title="Show only clicks with device desktop">desktop</a>') == 1
