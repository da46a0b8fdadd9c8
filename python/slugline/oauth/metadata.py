"""Bounds on an OAuth client's metadata, whichever way it came: Dynamic Client Registration stores it for good (any
anonymous caller may register), and a Client ID Metadata Document is cached. The SDK's model bounds no length, so
without these one registration could store megabytes, and a name with a NUL would fail the consent's write on
PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Iterator

import orjson
from mcp.shared.auth import OAuthClientInformationFull

from slugline.common.bounds import MAX_CLIENT_LIST, MAX_CLIENT_METADATA, MAX_REDIRECT_URIS, MAX_TITLE, MAX_URL
from slugline.common.patterns import CONTROL

_CONTROL = re.compile(f"[{CONTROL}\\u007f]")
_TEXTS = ("client_name", "scope", "software_id", "software_version")
_URIS = ("client_uri", "logo_uri", "tos_uri", "policy_uri", "jwks_uri")
_LISTS = ("contacts", "grant_types", "response_types")


def problem(client: OAuthClientInformationFull) -> str | None:
    """What puts `client`'s metadata out of bounds, for a human (naming the field); None when it is within them."""
    if len(client.redirect_uris or ()) > MAX_REDIRECT_URIS:
        return f"redirect_uris: at most {MAX_REDIRECT_URIS} URIs"
    for name in _LISTS:
        if len(getattr(client, name) or ()) > MAX_CLIENT_LIST:
            return f"{name}: at most {MAX_CLIENT_LIST} entries"
    for name, value, limit in _fields(client):
        if len(value) > limit:
            return f"{name}: at most {limit} characters"
        if _CONTROL.search(value):
            return f"{name}: must not contain control characters"
    if len(orjson.dumps(client.model_dump(mode="json", exclude_none=True))) > MAX_CLIENT_METADATA:
        return f"the client metadata must be at most {MAX_CLIENT_METADATA // 1024} KiB as JSON"
    return None


def _fields(client: OAuthClientInformationFull) -> Iterator[tuple[str, str, int]]:
    """Every text of the metadata, named, with its limit."""
    for name in _TEXTS:
        if (value := getattr(client, name)) is not None:
            yield name, value, MAX_TITLE
    for name in _LISTS:
        for value in getattr(client, name) or ():
            yield name, str(value), MAX_TITLE
    for name in _URIS:
        if (value := getattr(client, name)) is not None:
            yield name, str(value), MAX_URL
    for value in client.redirect_uris or ():
        yield "redirect_uris", str(value), MAX_URL
