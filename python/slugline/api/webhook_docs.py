"""The OpenAPI document's top-level `webhooks` (OpenAPI 3.1): what Slugline POSTs to an account's endpoints, one entry
per event, so that a receiver can be generated or checked from the same document as the API.

The bodies are those of `slugline.webhooks.payload`: a link event's `data` is the `Link` the API answers, a
`link.clicked` event's `data` its clicks with their places and variants (`webhooks.clicks.CLICK_FIELDS`). Every
delivery bears the Standard Webhooks headers; a 2xx answer is a delivery, anything else is tried again
(docs/webhooks.md).
"""

from __future__ import annotations

from typing import Any

from slugline.api.examples import LINK
from slugline.common.outputs import Click
from slugline.webhooks.clicks import CLICK_FIELDS, PER_MESSAGE
from slugline.webhooks.inputs import EVENTS
from slugline.webhooks.outbox import CLICKED

LINK_EVENTS = {
    "link.created": "A link was made (API, MCP, dashboard, bulk, import): the link as `GET /links/{id}` shows it",
    "link.updated": "A link's fields changed: the link after the change",
    "link.deleted": "A link was deleted (also by a purge): the link as it was",
    "link.expired": "A link's `expires_at` passed (seen within about 10 s): the link",
}
CLICKS = f"Clicks were recorded: up to {PER_MESSAGE} of them, at most one delivery a second per endpoint"
HEADERS = {
    "webhook-id": "The message id (msg_...), the same on every try: a receiver drops repeats by it",
    "webhook-timestamp": "Seconds since the epoch when this try was signed",
    "webhook-signature": "`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` under the endpoint's secret",
}
AT = "2026-11-27T08:00:00.123Z"
CLICK = {
    "link_id": LINK["id"],
    "clicked_at": "2026-11-27T07:59:59.812345Z",
    "device": "mobile",
    "browser": "chrome",
    "os": "android",
    "source": "qr",
    "referrer": None,
    "country": "FR",
    "region": "Île-de-France",
    "city": "Paris",
    "variant": 1,
}
ANSWERS = {
    "200": {
        "description": "Delivered (any 2xx). Another status, a redirect or no answer within the timeout is a "
        "failure: the message is tried again with back-off, with the same `webhook-id`"
    }
}


def webhooks(models: dict[str, Any]) -> dict[str, Any]:
    """The `webhooks` section; the bodies' schemas are added to `models` (the document's components/schemas)."""
    assert set(LINK_EVENTS) | {CLICKED} == set(EVENTS), "every event documented"
    models["WebhookClick"] = _click()
    models["WebhookClicks"] = _closed(
        {"clicks": {"type": "array", "items": _ref("WebhookClick"), "minItems": 1, "maxItems": PER_MESSAGE}}
    )
    models["WebhookLinkEvent"] = _event(list(LINK_EVENTS), _ref("Link"), "A link event as delivered")
    models["WebhookClickedEvent"] = _event([CLICKED], _ref("WebhookClicks"), "A `link.clicked` event as delivered")
    hooks = {
        event: _hook(event, about, "WebhookLinkEvent", {"type": event, "timestamp": AT, "data": LINK})
        for event, about in LINK_EVENTS.items()
    }
    clicked = {"type": CLICKED, "timestamp": AT, "data": {"clicks": [CLICK]}}
    hooks[CLICKED] = _hook(CLICKED, CLICKS, "WebhookClickedEvent", clicked)
    return hooks


def _hook(event: str, about: str, body: str, example: dict[str, Any]) -> dict[str, Any]:
    return {
        "post": {
            "summary": f"{event}: {about.partition(':')[0]}",
            "description": f"{about}. Signed per Standard Webhooks.",
            "tags": ["webhooks"],
            "parameters": [
                {"name": name, "in": "header", "required": True, "description": text, "schema": {"type": "string"}}
                for name, text in HEADERS.items()
            ],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": _ref(body), "example": example}},
            },
            "responses": ANSWERS,
        }
    }


def _event(types: list[str], data: dict[str, Any], description: str) -> dict[str, Any]:
    schema = _closed(
        {
            "type": {"type": "string", "enum": types},
            "timestamp": {"type": "string", "format": "date-time", "description": "When the event happened (UTC)"},
            "data": data,
        }
    )
    return {**schema, "description": description}


def _click() -> dict[str, Any]:
    """A click as the API's click list shows it, with its link's id; every field present (null where unknown)."""
    shown = Click.model_json_schema(mode="serialization")["properties"]
    props = {"link_id": {"type": "string", "description": "The clicked link's id"}}
    for name in CLICK_FIELDS[1:]:
        prop = dict(shown[name])
        prop.pop("default", None)
        prop.pop("title", None)
        props[name] = prop
    return _closed(props)


def _closed(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}
