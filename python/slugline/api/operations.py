"""What every REST operation answers, for the OpenAPI document: its success model and each error status.

Handlers return orjson responses built from the service layer's dicts, so nothing here costs a request anything;
`tests/e2e/test_openapi_e2e.py` runs schemathesis against a real server to prove the document tells the truth. A
route missing here is documented with every error status and an open object, so it is never under-documented.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from slugline.analytics._formats import COLUMNS
from slugline.common import outputs

Auth = Literal["key", "any", "optional", "none"]

ERRORS = {
    400: "Malformed JSON, or a body that is not application/json",
    401: "Missing, malformed, unknown, revoked or expired token (with WWW-Authenticate: Bearer)",
    403: "The account's plan has no API access, or the token's scope may not do this",
    404: "No such item for this caller (hidden links of a public-only key look exactly like missing ones)",
    408: "The whole body did not arrive within SLUGLINE_BODY_TIMEOUT_SECONDS of the headers",
    409: "Taken (slug, username), or replaced by a concurrent request",
    413: "The body is larger than the service accepts",
    422: "Invalid input: the message names the field and the rule",
    429: "Rate limit exceeded (see Retry-After and the RateLimit-* headers)",
    500: "A fault in the service",
    503: "The database is unavailable: retry shortly (see Retry-After)",
}
DEGRADED = "The database does not answer: the same body, with status 'degraded' and database 'unavailable'"
LIMITED = (429, 500, 503)  # every operation but /health draws from a rate-limit bucket and may reach the database
KEYED = (401, 403, *LIMITED)
BODY = (400, 408, 413, 422)  # every operation that reads a JSON body
TEXT = {"schema": {"type": "string"}}


def _streamed_file(what: str, disposition: str, more: str = "") -> dict[str, Any]:
    """The answer of an export: a file streamed as CSV or NDJSON, named by its Content-Disposition."""
    return {
        "description": f"{what} as a file, streamed: CSV with a header row (`format=csv`) or one JSON object a line "
        f"(`format=ndjson`){more}",
        "headers": {"Content-Disposition": {"description": f"attachment; {disposition}", "schema": {"type": "string"}}},
        "content": {"text/csv": TEXT, "application/x-ndjson": TEXT},
    }


EXPORT = _streamed_file(
    "The clicks",
    'filename="clicks-FIRST-LAST.csv" (or .ndjson), the period\'s dates',
    f"; the columns {', '.join(COLUMNS)}: the place unknown and a click on no variant (a link without variants, or "
    "sent elsewhere by a rule) as an empty cell (CSV) or null (NDJSON), a variant as its index from 0",
)
LINK_EXPORT = _streamed_file(
    "The links",
    'filename="links.csv" (or links.ndjson)',
    "; every column of a link, timestamps to the microsecond",
)

_ITEM = {
    "type": "object",
    "required": ["index", "status"],
    "properties": {
        "index": {"type": "integer", "description": "The item's place in the request, from 0"},
        "status": {"type": "integer", "description": "What the single call would answer: 201 or 200, else its error"},
        "link": {"type": "object", "description": "The link as created or changed"},
        "deleted": {"type": "boolean"},
        "id": {"type": "string", "description": "The deleted link's id"},
        "error": {"type": "string", "description": "Why the item failed, as the single call says it"},
    },
}
BULK = {
    "description": "An answer per item, in the request's order (with `atomic`, every item succeeded: a failure "
    "refuses the call with that item's status and error, and nothing is written)",
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "required": ["results", "succeeded", "failed"],
                "properties": {
                    "results": {"type": "array", "items": _ITEM},
                    "succeeded": {"type": "integer"},
                    "failed": {"type": "integer"},
                },
            }
        }
    },
}
_PROBLEM = {
    "type": "object",
    "required": ["row", "kind", "message"],
    "properties": {
        "row": {"type": "integer", "description": "The row's number in the file, from 1 (0: the file as a whole)"},
        "kind": {"type": "string", "enum": ["conflict", "error"]},
        "message": {"type": "string"},
    },
}
_COUNT = {"type": "integer", "minimum": 0}
IMPORT_REPORT = {
    "description": "What the import did (or, with dry_run, would do): counts of the file's rows, and the first 100 "
    "conflicts and errors",
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "additionalProperties": False,
                "required": ["dry_run", "created", "skipped", "overwritten", "conflicts", "errors", "problems"],
                "properties": {
                    "dry_run": {"type": "boolean"},
                    "created": _COUNT,
                    "skipped": {**_COUNT, "description": "Already there with the same destination"},
                    "overwritten": _COUNT,
                    "conflicts": {**_COUNT, "description": "Slugs taken with another destination, left as they are"},
                    "errors": {**_COUNT, "description": "Rows that are not valid links, left out"},
                    "problems": {"type": "array", "items": _PROBLEM},
                },
            }
        }
    },
}


@dataclass(frozen=True)
class Operation:
    ok: type[BaseModel] | None  # None: an image (the QR code)
    errors: tuple[int, ...]
    auth: Auth
    status: int = 200
    degraded: int | None = None  # a status answered with the `ok` model, not an error: /health without its database
    answer: dict[str, Any] | None = None  # a success that is neither JSON nor an image, documented as given


OPERATIONS: dict[tuple[str, str], Operation] = {
    ("get", "/health"): Operation(outputs.Health, (500,), "none", degraded=503),
    ("get", "/health/live"): Operation(outputs.Probe, (500,), "none"),
    ("get", "/health/ready"): Operation(outputs.Probe, (500, 503), "none"),
    ("post", "/auth/register"): Operation(outputs.Session, (*BODY, 409, *LIMITED), "none", 201),
    ("post", "/auth/login"): Operation(outputs.Session, (*BODY, 401, *LIMITED), "none"),
    ("post", "/auth/logout"): Operation(outputs.LoggedOut, KEYED, "any"),  # 403: an API key (revoke it with DELETE)
    ("get", "/me"): Operation(outputs.Me, KEYED, "any"),
    ("get", "/api-key"): Operation(outputs.KeyList, KEYED, "any"),
    ("post", "/api-key"): Operation(outputs.NewKey, (*BODY, 409, *KEYED), "any", 201),
    ("delete", "/api-key"): Operation(outputs.KeyDeleted, (404, 422, *KEYED), "any"),
    ("get", "/links"): Operation(outputs.LinkPage, (422, *KEYED), "key"),
    ("post", "/links"): Operation(outputs.NewLink, (*BODY, 409, *KEYED), "key", 201),
    ("post", "/links/bulk"): Operation(None, (*BODY, 403, 404, 409, *KEYED), "key", answer=BULK),
    ("patch", "/links/bulk"): Operation(None, (*BODY, 403, 404, 409, *KEYED), "key", answer=BULK),
    ("delete", "/links/bulk"): Operation(None, (*BODY, 404, *KEYED), "key", answer=BULK),
    ("get", "/links/export"): Operation(None, (422, *KEYED), "key", answer=LINK_EXPORT),
    ("post", "/links/import"): Operation(None, (*BODY, 409, *KEYED), "key", answer=IMPORT_REPORT),
    ("get", "/links/{link_id}"): Operation(outputs.Link, (404, *KEYED), "key"),
    ("put", "/links/{link_id}"): Operation(outputs.Link, (*BODY, 404, 409, *KEYED), "key"),
    ("delete", "/links/{link_id}"): Operation(outputs.Deleted, (404, *KEYED), "key"),
    ("get", "/links/{link_id}/clicks"): Operation(outputs.ClickPage, (404, 422, *KEYED), "key"),
    ("get", "/links/{link_id}/qr"): Operation(None, (404, 422, *KEYED), "key"),
    ("get", "/links/{link_id}/analytics"): Operation(outputs.Analytics, (404, 422, *KEYED), "key"),
    ("get", "/links/{link_id}/clicks/export"): Operation(None, (404, 422, *KEYED), "key", answer=EXPORT),
    ("get", "/clicks/export"): Operation(None, (422, *KEYED), "key", answer=EXPORT),
    ("get", "/analytics"): Operation(outputs.Analytics, (422, *KEYED), "key"),
    ("get", "/search"): Operation(outputs.SearchResult, (422, *KEYED), "key"),
    ("get", "/public/{slug}"): Operation(outputs.PublicLink, (404, *LIMITED), "none"),
    ("get", "/analyze"): Operation(outputs.PageInfo, (422, *KEYED), "optional"),
    ("get", "/webhooks"): Operation(outputs.WebhookList, KEYED, "key"),
    ("post", "/webhooks"): Operation(outputs.NewWebhook, (*BODY, 409, *KEYED), "key", 201),
    ("get", "/webhooks/{webhook_id}"): Operation(outputs.Webhook, (404, *KEYED), "key"),
    ("patch", "/webhooks/{webhook_id}"): Operation(outputs.Webhook, (*BODY, 404, *KEYED), "key"),
    ("delete", "/webhooks/{webhook_id}"): Operation(outputs.WebhookDeleted, (404, *KEYED), "key"),
    ("get", "/webhooks/{webhook_id}/attempts"): Operation(outputs.WebhookAttemptList, (404, *KEYED), "key"),
    ("post", "/webhooks/{webhook_id}/messages/{message_id}/resend"): Operation(
        outputs.WebhookResent, (404, 409, *KEYED), "key", 202
    ),
}
UNLISTED = Operation(None, tuple(ERRORS), "optional")
