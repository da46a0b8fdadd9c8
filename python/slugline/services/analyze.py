"""`GET /analyze`: what a URL's page says about itself, fetched without reaching private addresses."""

from __future__ import annotations

from typing import Any

from slugline.errors import Invalid
from slugline.fetcher import UnsafeURLError
from slugline.runtime import Runtime
from slugline.schemas import AnalyzeParams
from slugline.services.meta import fetch
from slugline.services.validation import parse


async def analyze(rt: Runtime, data: Any) -> dict[str, Any]:
    params = parse(AnalyzeParams, data)
    try:
        meta = await fetch(rt, params.url)
    except UnsafeURLError as exc:
        raise Invalid(f"url: {exc}") from None
    body = meta.to_dict()
    if meta.reachable:
        body.pop("fetch_error", None)
    return body
