"""Input schemas of the MCP tools, published from the same pydantic models the service layer validates with.

So the bounds, enums and help texts an agent sees are the ones REST enforces and documents, and a bad argument
comes back with the REST message: the tools hand the raw arguments to the service functions.
"""

from __future__ import annotations

from typing import Any

from slugline.common.inputs import (
    AnalyticsParams,
    AnalyzeParams,
    LinkCreate,
    LinkName,
    ListParams,
    PageParams,
    QrParams,
    SearchParams,
    object_schema,
    properties,
    update_properties,
)
from slugline.links.bulk import BulkCreate
from slugline.links.idempotency import KEY_PATTERN, MAX_KEY

LINK_ID = {"type": "string", "description": "The link's id (lnk_...), as returned by list_links or create_link"}
UPDATE_NOTE = " Send only the fields to change; null clears title, description, note or hashtags."


def _object(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "additionalProperties": False, "required": required}


NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
LIST_LINKS = object_schema(ListParams)
IDEMPOTENCY_KEY = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_KEY,
    "pattern": KEY_PATTERN,
    "description": "Names this request: a retry with the same key and arguments within 24 hours returns the first "
    "answer instead of making a second link; the same key with other arguments is an error",
}
_LINK = object_schema(LinkCreate)
CREATE_LINK = {**_LINK, "properties": {**_LINK["properties"], "idempotency_key": IDEMPOTENCY_KEY}}
_CREATE_LINKS = object_schema(BulkCreate)
_ONE = {**_LINK, "properties": {k: v for k, v in _LINK["properties"].items() if k != "auto_meta"}}
CREATE_LINKS = {
    **_CREATE_LINKS,
    "properties": {
        **_CREATE_LINKS["properties"],
        "links": {**_CREATE_LINKS["properties"]["links"], "items": _ONE},
        "idempotency_key": IDEMPOTENCY_KEY,
    },
}
UPDATE_LINK = _object({"id": LINK_ID, **update_properties()}, ["id"])
DELETE_LINK = _object({"id": LINK_ID}, ["id"])
_ANALYTICS = object_schema(AnalyticsParams)
OPTIONAL_LINK_ID = {
    "anyOf": [{"type": "string"}, {"type": "null"}],
    "default": None,
    "description": LINK_ID["description"] + ": that link's figures alone; omit it for the whole account's",
}
GET_ANALYTICS = {**_ANALYTICS, "properties": {"link_id": OPTIONAL_LINK_ID, **_ANALYTICS["properties"]}}
GET_LINK = object_schema(LinkName)
SEARCH_LINKS = object_schema(SearchParams)
GET_QR_CODE = _object({"id": LINK_ID, **properties(QrParams)}, ["id"])
GET_LINK_CLICKS = _object({"id": LINK_ID, **properties(PageParams)}, ["id"])
PREVIEW_URL = object_schema(AnalyzeParams)
