"""What the dashboard tests share: reading a page's CSRF token, signing up, posting the link form, creating a link and
generating a key through the forms."""

from __future__ import annotations

import re

import httpx2
from starlette.testclient import TestClient

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
PASSWORD = "correct horse battery"


def csrf_of(client: TestClient, path: str) -> str:
    page = client.get(path)
    assert page.status_code == 200, page.text
    found = CSRF.search(page.text)
    assert found, f"no CSRF token on {path}"
    return found[1]


def sign_up(client: TestClient, username: str) -> None:
    """Create an account through the form; the client keeps the session cookie."""
    token = csrf_of(client, "/app/register")
    res = client.post(
        "/app/register",
        data={"username": username, "password": PASSWORD, "csrf_token": token},
        follow_redirects=False,
    )
    assert res.status_code == 303, res.text
    assert res.headers["location"] == "/app/"


def post_link_form(client: TestClient, **form: str) -> httpx2.Response:
    """The new-link form posted with its CSRF token: a public link to https://example.com/ but for what `form` says;
    the answer itself (a redirect to the new link, or the form again with its messages)."""
    base = {"csrf_token": csrf_of(client, "/app/links/new"), "destination_url": "https://example.com/"}
    return client.post("/app/links/new", data={**base, "visibility": "public", **form}, follow_redirects=False)


def new_link(client: TestClient, **form: str) -> str:
    res = post_link_form(client, **form)
    assert res.status_code == 303, res.text
    return str(res.headers["location"]).rsplit("/", 1)[1]


def api_key(client: TestClient, scope: str = "full") -> dict[str, str]:
    page = client.post(
        "/app/settings/keys",
        data={"csrf_token": csrf_of(client, "/app/settings"), "scope": scope, "action": "generate"},
    )
    key = page.text.split('id="new-key" type="text" class="key" readonly value="', 1)[1].split('"', 1)[0]
    return {"Authorization": f"Bearer {key}"}
