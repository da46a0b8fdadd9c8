"""Input schemas of the MCP tools, published from the same pydantic models the service layer validates with.

So the bounds and enums an agent sees (per 1-100, sort, dir, visibility, lengths) are the ones REST enforces, and
a bad argument comes back with the REST message: the tools hand the raw arguments to the service functions.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

from slugline.schemas import NOT_NULLABLE, AnalyticsParams, LinkCreate, LinkUpdate, ListParams

FIELD_HELP = {
    "q": "Search: every whitespace-separated term must match (case- and accent-insensitive) somewhere in slug, "
    "title, destination_url, description, note or hashtags; a term '#tag' matches hashtags only",
    "page": "Page number, from 1; a page past the end returns an empty data list",
    "per": "Links per page, 1-100",
    "sort": "Field to sort by",
    "dir": "Sort direction",
    "id": "The link's id (lnk_...), as returned by list_links or create_link",
    "destination_url": "Where the short link redirects: an absolute http(s) URL with a host, at most 2048 characters",
    "slug": "The path of the short URL: 1-64 of A-Z a-z 0-9 _ -, case-sensitive, not a reserved word "
    "(api, mcp, health, ...); on create, omit it to get a random 7-character slug",
    "title": "Title, at most 255 characters",
    "description": "Description, at most 1024 characters",
    "note": "Private note for the account, at most 4096 characters; never shown to visitors",
    "hashtags": "Up to 30 tags of 1-64 characters; a leading '#' is stripped, tags are lowercased and de-duplicated",
    "visibility": "public: listed and redirects; unlisted: redirects but is not advertised; private: only the "
    "account sees it and the short URL answers 404; password: visitors must enter the password",
    "password": "Password visitors must enter (4-128 characters); required when visibility is 'password'; "
    "write-only, never returned",
    "auto_meta": "true: fetch the destination page's title and description (explicit fields win; a failed fetch "
    "never fails the create)",
    "days": "How many days back to count, 1-365, ending today (UTC)",
    "source": "Only count clicks from this source: 'direct', 'qr', a utm_source value or a referrer host "
    "such as 'news.ycombinator.com'",
}

UPDATE_NOTE = " Send only the fields to change; null clears title, description, note or hashtags."


def _properties(model: type[BaseModel]) -> dict[str, Any]:
    props = copy.deepcopy(model.model_json_schema()["properties"])
    for name, prop in props.items():
        prop.pop("title", None)
        prop["description"] = FIELD_HELP[name]
    return props


def _object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def _link_id() -> dict[str, Any]:
    return {"type": "string", "description": FIELD_HELP["id"]}


NO_ARGUMENTS = _object({})
LIST_LINKS = _object(_properties(ListParams))
CREATE_LINK = _object(_properties(LinkCreate), ["destination_url"])
def _update_properties() -> dict[str, Any]:
    """LinkUpdate's fields without defaults (a field left out stays as it is); null only where it clears."""
    props = _properties(LinkUpdate)
    for name, prop in props.items():
        prop.pop("default", None)
        if name in NOT_NULLABLE and "anyOf" in prop:
            [kept] = [branch for branch in prop.pop("anyOf") if branch.get("type") != "null"]
            prop.update(kept)
    return props


UPDATE_LINK = _object({"id": _link_id(), **_update_properties()}, ["id"])
DELETE_LINK = _object({"id": _link_id()}, ["id"])
GET_ANALYTICS = _object(_properties(AnalyticsParams))
