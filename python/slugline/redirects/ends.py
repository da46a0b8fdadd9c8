"""What the redirect does for a link with a lifecycle (`links.lifecycle`): an end (a time, a click limit), where it
then sends visitors, and the social card link-preview crawlers get.

Such a link is cached with its `Life`, and with visibility `GUARDED` in place of public or unlisted, so that the
redirect layer's shortest path, which takes only public and unlisted links, never sees it: links without a lifecycle
keep that path as it was. An archived link is cached as no link at all (404, as if it did not exist).
"""

from __future__ import annotations

import html
from typing import NamedTuple

from slugline import _core

GUARDED = "guarded"  # a public or unlisted link with a lifecycle: served by `Redirects.serve`, never the shortest path
GONE_JSON = b'{"error":"this link has expired"}'
GONE_HTML = (
    b'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">'
    b"<title>Link expired</title></head><body><main><h1>Link expired</h1><p>This short link has expired or reached "
    b"its limit of visits.</p></main></body></html>\n"
)


class Life(NamedTuple):
    expires: float | None  # unix time the link ends at
    max_clicks: int | None
    used_up: bool  # the click limit was reached when the entry was read
    expired_location: bytes | None  # `expired_url` as a header value
    card: bytes | None  # the page crawlers get, when the link has a preview


def is_crawler(agent: bytes | None) -> bool:
    """Whether the User-Agent is a link-preview crawler's: the list lives in the Rust core beside the bot list
    (`useragent::PREVIEW_CRAWLERS`)."""
    return _core.is_preview_crawler(agent)


def card_page(preview: dict[str, str], destination: str) -> bytes:
    """A small page of Open Graph and Twitter Card tags, every value escaped; a person who lands on it (a crawler's
    agent in a browser) is sent on to the destination."""
    title = preview.get("title")
    description = preview.get("description")
    image = preview.get("image_url")
    to = html.escape(destination, quote=True)
    tags = [f'<meta property="og:url" content="{to}">', '<meta property="og:type" content="website">']
    if title:
        tags += [
            f'<meta property="og:title" content="{html.escape(title, quote=True)}">',
            f'<meta name="twitter:title" content="{html.escape(title, quote=True)}">',
        ]
    if description:
        tags += [
            f'<meta property="og:description" content="{html.escape(description, quote=True)}">',
            f'<meta name="twitter:description" content="{html.escape(description, quote=True)}">',
        ]
    if image:
        tags += [
            f'<meta property="og:image" content="{html.escape(image, quote=True)}">',
            f'<meta name="twitter:image" content="{html.escape(image, quote=True)}">',
        ]
    tags.append(f'<meta name="twitter:card" content="{"summary_large_image" if image else "summary"}">')
    head = "".join(tags)
    page = (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title or "")}</title>'
        f'{head}<meta http-equiv="refresh" content="0; url={to}"></head>'
        f'<body><p><a href="{to}">{html.escape(title or destination)}</a></p></body></html>\n'
    )
    return page.encode()
