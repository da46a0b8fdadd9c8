"""Content negotiation for the redirect's 404: JSON unless the client ranks HTML strictly above it."""

from __future__ import annotations

import re


def prefers_json(accept: bytes) -> bool:
    """False only when the Accept header explicitly ranks HTML (text/html, application/xhtml+xml) strictly above
    JSON. JSON is accepted at the q of the most specific range that covers it: a JSON type (application/json,
    `+json`), else `application/*`, else `*/*`. No header, ties and malformed headers all mean JSON."""
    html = 0.0
    json: tuple[int, float] = (-1, 0.0)  # (specificity, highest q at that specificity)
    for item in accept.decode("latin-1").lower().split(","):
        media, *params = (part.strip() for part in item.split(";"))
        q = _quality(params)
        if q is None:
            continue
        if media in ("text/html", "application/xhtml+xml"):
            html = max(html, q)
            continue
        level = _JSON_RANGES.get(media, 2 if media.startswith("application/") and media.endswith("+json") else -1)
        if level >= 0 and (level, q) > json:
            json = (level, q)
    return not html > json[1]


_JSON_RANGES = {"*/*": 0, "application/*": 1, "application/json": 2}
_QVALUE = re.compile(r"0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?")


def _quality(params: list[str]) -> float | None:
    """The entry's q (1.0 when absent); None when it is not a valid qvalue, so the entry is ignored."""
    for param in params:
        name, sep, value = param.partition("=")
        if sep and name.strip() == "q":
            value = value.strip()
            return float(value) if value.isascii() and _QVALUE.fullmatch(value) else None
    return 1.0
