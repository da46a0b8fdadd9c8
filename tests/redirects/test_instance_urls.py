"""`SLUGLINE_ROOT_URL` (where `/` sends visitors who are not signed in) and `SLUGLINE_NOT_FOUND_URL` (where unknown
slugs send them)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from slugline.settings import Settings
from tests.support.helpers import SQLITE_ONLY, ClientFactory


@SQLITE_ONLY
def test_unset_the_root_signs_in_and_an_unknown_slug_is_404(make_client: ClientFactory) -> None:
    client, _ = make_client()
    assert client.get("/", follow_redirects=False).headers["location"] == "/app/login"
    assert client.get("/nope", follow_redirects=False).status_code == 404


@SQLITE_ONLY
def test_the_root_and_unknown_slugs_go_where_the_instance_says(make_client: ClientFactory) -> None:
    client, _ = make_client(root_url="https://example.org/home", not_found_url="https://example.org/missing")
    root = client.get("/", follow_redirects=False)
    assert (root.status_code, root.headers["location"]) == (302, "https://example.org/home")
    assert client.get("/app", follow_redirects=False).headers["location"] == "/app/login"
    for path in ("/nope", "/nope?x=1"):
        missing = client.get(path, follow_redirects=False)
        assert (missing.status_code, missing.headers["location"]) == (302, "https://example.org/missing")
        assert missing.headers["cache-control"] == "private, no-store"
    assert client.get("/api/v1/nope").status_code == 404  # the API's own 404s are untouched


@pytest.mark.parametrize("value", ["/home", "javascript:alert(1)", "https://"])
def test_the_urls_must_be_absolute(value: str) -> None:
    for name in ("root_url", "not_found_url"):
        with pytest.raises(ValidationError):
            Settings(**{name: value})  # type: ignore[arg-type]
