from __future__ import annotations

from starlette.testclient import TestClient

from tests.support.helpers import Account, create


def test_public_lookup_never_shows_the_note(client: TestClient, alice: Account) -> None:
    create(client, alice, slug="open", title="Open", note="internal", hashtags=["x"], visibility="unlisted")
    res = client.get("/api/v1/public/open")
    assert res.status_code == 200
    body = res.json()
    assert set(body) == {
        "slug",
        "short_url",
        "destination_url",
        "title",
        "description",
        "hashtags",
        "visibility",
        "created_at",
    }
    assert body["short_url"] == "http://sl.test/open" and "internal" not in res.text


def test_password_link_hides_its_destination(client: TestClient, alice: Account) -> None:
    create(
        client,
        alice,
        slug="locked",
        visibility="password",
        password="s3cret!!",
        destination_url="https://secret.example.com/",
    )
    res = client.get("/api/v1/public/locked")
    assert res.json() == {
        "slug": "locked",
        "short_url": "http://sl.test/locked",
        "visibility": "password",
        "requires_password": True,
    }
    assert "secret.example.com" not in res.text


def test_private_and_missing_are_404(client: TestClient, alice: Account) -> None:
    create(client, alice, slug="hidden", visibility="private")
    for slug in ("hidden", "nowhere"):
        res = client.get(f"/api/v1/public/{slug}")
        assert res.status_code == 404 and res.json() == {"error": "link not found"}
