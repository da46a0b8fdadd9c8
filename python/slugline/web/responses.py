"""JSON responses rendered by orjson, and the one error envelope."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from starlette.responses import Response


class JSON(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def error(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSON:
    return JSON({"error": message}, status_code=status, headers=dict(headers or {}))
