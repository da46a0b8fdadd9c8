"""An example request and answer for every operation of the OpenAPI document, keyed by operation id.

Shown by the docs page and by generated clients' documentation; `tests/api/test_openapi.py` checks that every
operation has one and that each validates against the schema it illustrates.
"""

from __future__ import annotations

import copy
from typing import Any

from slugline.analytics._formats import Cells, csv_header, csv_rows, ndjson_rows

HOST = "https://sl.example"
CREATED = "2026-11-21T10:00:00Z"
WEBHOOK: dict[str, Any] = {
    "id": "whe_3c9a1f2e7b6d5a40",
    "url": "https://hooks.example.com/slugline",
    "description": None,
    "events": ["link.created", "link.clicked"],
    "enabled": True,
    "disabled_reason": None,
    "failing_since": None,
    "created_at": CREATED,
    "updated_at": CREATED,
}
LINK: dict[str, Any] = {
    "id": "lnk_4fQ8xZ2kLm9",
    "slug": "rust-book",
    "short_url": f"{HOST}/rust-book",
    "destination_url": "https://doc.rust-lang.org/book/",
    "title": "The Rust Book",
    "description": "An introductory book about Rust",
    "note": "for the onboarding page",
    "hashtags": ["rust", "books"],
    "visibility": "public",
    "clicks": 42,
    "created_at": CREATED,
    "updated_at": CREATED,
    "expires_at": None,
    "max_clicks": None,
    "expired_url": None,
    "archived": False,
    "preview": None,
    "rules": None,
    "variants": None,
    "status": "active",
}
RULES = [
    {"if": {"country": ["FR", "BE"], "device": ["mobile"]}, "to": "https://doc.rust-lang.org/book/fr/"},
    {"if": {"language": ["de"]}, "to": "https://doc.rust-lang.org/book/de/"},
]
VARIANTS = [
    {"to": "https://doc.rust-lang.org/book/", "weight": 80},
    {"to": "https://rust-book.cs.brown.edu/", "weight": 20},
]
NEW_LINK = {**LINK, "clicks": 0, "rules": RULES, "variants": VARIANTS}
UPDATED = {**LINK, "title": "The Book", "hashtags": ["rust"], "updated_at": "2026-11-22T08:30:00Z"}
PAGINATION = {"page": 1, "per": 20, "total": 1, "pages": 1}
ACCOUNT = {"username": "alice", "plan": "developer", "created_at": CREATED}
SESSION = {"account": ACCOUNT, "token": "svc_sess_" + "x" * 38, "expires_at": "2026-11-22T10:00:00Z"}
KEY = {
    "scope": "full",
    "prefix": "svc_live_",
    "last4": "Q2xT",
    "created_at": CREATED,
    "last_used_at": "2026-11-21T10:05:00Z",
}
ANALYTICS = {
    "days": 2,
    "from": "2026-11-20",
    "to": "2026-11-21",
    "interval": "day",
    "source": None,
    "device": None,
    "browser": None,
    "os": None,
    "referrer": None,
    "country": None,
    "city": None,
    "variant": None,
    "total_clicks": 42,
    "unique_visitors": 30,
    "clicks": [{"date": "2026-11-20", "clicks": 12}, {"date": "2026-11-21", "clicks": 30}],
    "devices": [{"device": "desktop", "clicks": 30}, {"device": "mobile", "clicks": 12}],
    "browsers": [{"browser": "firefox", "clicks": 25}, {"browser": "chrome", "clicks": 17}],
    "operating_systems": [{"os": "linux", "clicks": 22}, {"os": "android", "clicks": 20}],
    "sources": [{"source": "direct", "clicks": 30}, {"source": "qr", "clicks": 12}],
    "referrers": [{"referrer": "news.ycombinator.com", "clicks": 8}],
    "countries": [{"country": "FR", "clicks": 25}, {"country": "DE", "clicks": 17}],
    "cities": [{"city": "Paris", "clicks": 20}, {"city": "Berlin", "clicks": 17}],
    "top_links": [{"id": LINK["id"], "slug": LINK["slug"], "title": LINK["title"], "clicks": 42}],
    "variants": None,
}
# A click of the export, rendered as the export renders it: on a link's second variant, without a referrer or region.
CLICK_ROW: Cells = (
    "2026-11-21T10:04:59Z", "lnk_4fQ8xZ2kLm9", "rust-book", "mobile", "chrome", "android", "qr", None, "FR", None,
    "Paris", 1,
)  # fmt: skip
CSV = (csv_header() + csv_rows([CLICK_ROW])).decode()
SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="256" height="256" viewBox="0 0 33 33">...</svg>'
NDJSON = {
    "exportClicks": ndjson_rows([CLICK_ROW]).decode(),
    "exportLinks": '{"id": "lnk_4fQ8xZ2kLm9", "slug": "rust-book", "destination_url": "https://doc.rust-lang.org/book/"}\n',
}

# operation id -> (request body or None, answer of the success status)
EXAMPLES: dict[str, tuple[Any, Any]] = {
    "getHealth": (None, {"status": "ok", "version": "0.2.0", "database": "ok", "clicks": {"pending": 0, "dropped": 0}}),
    "getLiveness": (None, {"status": "ok"}),
    "getReadiness": (None, {"status": "ok"}),
    "register": ({"username": "alice", "password": "correct horse battery"}, SESSION),
    "login": ({"username": "alice", "password": "correct horse battery"}, SESSION),
    "logout": (None, {"logged_out": True}),
    "getMe": (None, {"username": "alice", "plan": "developer", "scope": "full", "created_at": CREATED}),
    "listKeys": (None, {"keys": [KEY]}),
    "createKey": ({"scope": "full"}, {**KEY, "last_used_at": None, "key": "svc_live_" + "a" * 34 + "Q2xT"}),
    "deleteKey": (None, {"deleted": True, "scope": "full"}),
    "listLinks": (None, {"data": [LINK], "pagination": PAGINATION}),
    "createLink": (
        {
            "destination_url": "https://doc.rust-lang.org/book/",
            "slug": "rust-book",
            "title": "The Rust Book",
            "hashtags": ["rust", "books"],
            "rules": RULES,
            "variants": VARIANTS,
        },
        NEW_LINK,
    ),
    "exportLinks": (None, "id,slug,short_url,destination_url,title\n"),
    "importLinks": (
        {"file": "slug,destination_url\nrust-book,https://doc.rust-lang.org/book/\n", "format": "csv"},
        {
            "dry_run": False,
            "created": 1,
            "skipped": 0,
            "overwritten": 0,
            "conflicts": 1,
            "errors": 0,
            "problems": [
                {"row": 2, "kind": "conflict", "message": "slug 'docs' is already taken (for https://a.example/)"}
            ],
        },
    ),
    "createLinks": (
        {"links": [{"destination_url": "https://doc.rust-lang.org/book/", "slug": "rust-book"}], "atomic": False},
        {"results": [{"index": 0, "status": 201, "link": NEW_LINK}], "succeeded": 1, "failed": 0},
    ),
    "updateLinks": (
        {"ids": [LINK["id"]], "change": {"hashtags": ["rust"]}},
        {"results": [{"index": 0, "status": 200, "link": UPDATED}], "succeeded": 1, "failed": 0},
    ),
    "deleteLinks": (
        {"ids": [LINK["id"]]},
        {"results": [{"index": 0, "status": 200, "deleted": True, "id": LINK["id"]}], "succeeded": 1, "failed": 0},
    ),
    "getLink": (None, LINK),
    "updateLink": ({"title": "The Book", "hashtags": ["rust"]}, UPDATED),
    "deleteLink": (None, {"deleted": True, "id": LINK["id"]}),
    "listClicks": (
        None,
        {
            "data": [
                {
                    "clicked_at": "2026-11-21T10:04:59Z",
                    "device": "mobile",
                    "browser": "chrome",
                    "os": "android",
                    "source": "qr",
                    "referrer": None,
                    "country": "FR",
                    "region": "Île-de-France",
                    "city": "Paris",
                    "variant": None,
                }
            ],
            "pagination": PAGINATION,
        },
    ),
    "getQrCode": (None, SVG),
    "getLinkAnalytics": (
        None,
        {
            **ANALYTICS,
            "variants": [
                {
                    "variant": 0,
                    "to": "https://doc.rust-lang.org/book/",
                    "weight": 80,
                    "clicks": 33,
                    "unique_visitors": 24,
                },
                {
                    "variant": 1,
                    "to": "https://rust-book.cs.brown.edu/",
                    "weight": 20,
                    "clicks": 9,
                    "unique_visitors": 6,
                },
            ],
        },
    ),
    "exportLinkClicks": (None, CSV),
    "exportClicks": (None, CSV),
    "getAnalytics": (None, ANALYTICS),
    "search": (
        None,
        {
            "query": "rust",
            "total": 1,
            "hits": [{"link": LINK, "score": 3.5, "highlights": {"title": "The <mark>Rust</mark> Book"}}],
        },
    ),
    "getPublicLink": (
        None,
        {key: LINK[key] for key in ("slug", "short_url", "destination_url", "title", "description", "hashtags")}
        | {"visibility": "public", "created_at": CREATED},
    ),
    "analyzeUrl": (
        None,
        {
            "url": "https://doc.rust-lang.org/book",
            "final_url": "https://doc.rust-lang.org/book/",
            "status": 200,
            "content_type": "text/html",
            "title": "The Rust Programming Language",
            "description": "An introductory book about Rust",
            "image": None,
            "favicon": "https://doc.rust-lang.org/book/favicon.svg",
            "site_name": None,
            "redirects": ["https://doc.rust-lang.org/book/"],
            "reachable": True,
        },
    ),
    "listWebhooks": (None, {"data": [WEBHOOK]}),
    "createWebhook": (
        {"url": "https://hooks.example.com/slugline", "events": ["link.created", "link.clicked"]},
        {**WEBHOOK, "secret": "whsec_" + "MfKQ9r8GKYqrTxc3Bm7Nz2kP1sYl0v5LfW8+Jd4hQeA="},
    ),
    "getWebhook": (None, WEBHOOK),
    "updateWebhook": ({"enabled": True}, WEBHOOK),
    "deleteWebhook": (None, {"deleted": True, "id": WEBHOOK["id"]}),
    "listWebhookAttempts": (
        None,
        {
            "data": [
                {
                    "id": 7,
                    "message_id": "msg_5f0c8e1b2a3d4c5e6f708192",
                    "type": "link.created",
                    "attempted_at": CREATED,
                    "status": 200,
                    "error": None,
                    "duration_ms": 84,
                }
            ]
        },
    ),
    "resendWebhookMessage": (None, {"message_id": "msg_5f0c8e1b2a3d4c5e6f708192", "queued": True}),
}


def attach(op: dict[str, Any], status: int) -> None:
    """Put the operation's example on its request body and on each media type of its success answer (an image's
    example is SVG text, a file's its first line)."""
    found = EXAMPLES.get(op.get("operationId", ""))
    if found is None:
        return
    request, answer = found
    if request is not None and "requestBody" in op:
        for content in op["requestBody"]["content"].values():  # JSON, or a form (an import's upload)
            content["example"] = request
    success = op["responses"].get(str(status), {})
    # A copy: an answer's description may be shared by operations and media types (see `operations.EXPORT`).
    success["content"] = content_types = copy.deepcopy(success.get("content", {}))
    for media_type, content in content_types.items():
        if media_type == "image/png":
            continue
        if media_type == "application/x-ndjson":
            content["example"] = NDJSON.get(op["operationId"], NDJSON["exportClicks"])
        else:
            content["example"] = answer
