"""`GET /analyze`: what a URL's page says about itself, fetched without reaching private addresses."""

from __future__ import annotations

from typing import Any

from slugline.common.errors import Invalid
from slugline.common.inputs import AnalyzeParams
from slugline.common.validation import parse
from slugline.fetch.fetcher import UnsafeURLError
from slugline.links.meta import fetch
from slugline.runtime import Runtime


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
