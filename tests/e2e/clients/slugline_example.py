"""A script a user would write with the Python client `openapi-python-client` generates from Slugline's document.

tests/e2e/test_generated_clients.py type-checks it with `mypy --strict` and runs it against a live server: a schema
change that breaks the generated client fails either step.

Usage: python slugline_example.py BASE_URL USERNAME
"""

from __future__ import annotations

import datetime
import sys

from slugline_client import AuthenticatedClient, Client
from slugline_client.api.account import create_key
from slugline_client.api.analytics import get_analytics
from slugline_client.api.auth import register
from slugline_client.api.links import create_link, delete_link, get_link, get_qr_code, list_links, update_link
from slugline_client.models import (
    Analytics,
    Credentials,
    Deleted,
    Error,
    GetQrCodeFormat,
    KeyRequest,
    KeyRequestScope,
    Link,
    LinkCreate,
    LinkPage,
    LinkUpdate,
    NewKey,
    NewLink,
    Session,
    Visibility,
)
from slugline_client.types import File


def main(base_url: str, username: str) -> None:
    session = register.sync(client=Client(base_url=base_url), body=Credentials(username, "correct horse battery"))
    assert isinstance(session, Session), session
    assert session.account.username == username
    assert isinstance(session.expires_at, datetime.datetime)  # format: date-time

    manager = AuthenticatedClient(base_url=base_url, token=session.token)
    key = create_key.sync(client=manager, body=KeyRequest(scope=KeyRequestScope.FULL))
    assert isinstance(key, NewKey), key
    api = AuthenticatedClient(base_url=base_url, token=key.key)

    made = create_link.sync(
        client=api,
        body=LinkCreate(destination_url="https://example.org/generated", title="Generated", hashtags=["client"]),
    )
    assert isinstance(made, NewLink), made
    assert made.destination_url == "https://example.org/generated" and made.visibility == Visibility.PUBLIC
    assert made.short_url.endswith("/" + made.slug)

    locked = create_link.sync(
        client=api,
        body=LinkCreate(
            destination_url="https://example.org/locked", visibility=Visibility.PASSWORD, password="open sesame"
        ),
    )
    assert isinstance(locked, NewLink), locked
    assert locked.visibility == Visibility.PASSWORD

    refused = create_link.sync_detailed(
        client=api, body=LinkCreate(destination_url="https://example.org/x", password="open sesame")
    )
    assert refused.status_code == 422 and isinstance(refused.parsed, Error), refused
    assert "password" in refused.parsed.error

    page = list_links.sync(client=api, q="generated")
    assert isinstance(page, LinkPage), page
    assert [link.id for link in page.data] == [made.id] and page.pagination.total == 1

    got = get_link.sync(made.id, client=api)
    assert isinstance(got, Link), got
    assert isinstance(got.created_at, datetime.datetime) and got.hashtags == ["client"]

    changed = update_link.sync(made.id, client=api, body=LinkUpdate(title="Renamed", visibility=Visibility.UNLISTED))
    assert isinstance(changed, Link), changed
    assert (changed.title, changed.visibility) == ("Renamed", Visibility.UNLISTED)

    figures = get_analytics.sync(client=api, days=7)
    assert isinstance(figures, Analytics), figures
    assert figures.days == 7 and figures.total_clicks == 0 and isinstance(figures.from_, datetime.date)

    png = get_qr_code.sync(made.id, client=api, size=128)
    assert isinstance(png, File) and png.payload.read().startswith(b"\x89PNG"), png
    svg = get_qr_code.sync(made.id, client=api, format_=GetQrCodeFormat.SVG)
    assert isinstance(svg, File) and b"<svg" in svg.payload.read(), svg

    gone = delete_link.sync(made.id, client=api)
    assert isinstance(gone, Deleted) and gone.deleted and gone.id == made.id, gone
    missing = get_link.sync_detailed(made.id, client=api)
    assert missing.status_code == 404 and isinstance(missing.parsed, Error), missing
    print("ok")


def never_called() -> None:
    """Type errors that mypy must report (with --strict, an ignore that silences nothing fails the check)."""
    LinkCreate(destination_url="https://example.org/", bogus=True)  # type: ignore[call-arg]  # not a field
    LinkCreate(destination_url="https://example.org/", title=42)  # type: ignore[arg-type]  # title is a string
    KeyRequest(scope="admin")  # type: ignore[arg-type]  # scope is an enum


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
