"""JSON responses rendered by orjson, the one error envelope, and streamed downloads."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

import orjson
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send


class JSON(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def error(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSON:
    return JSON({"error": message}, status_code=status, headers=dict(headers or {}))


class Attachment(Protocol):
    """A file made while it is sent (`slugline.analytics.export.Export`), holding resources until closed."""

    media_type: str
    filename: str

    def __aiter__(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None: ...


class Download(StreamingResponse):
    """An attachment streamed as it is made, and closed however the response ends: sent to the end, or not. Starlette
    stops reading the body when the client goes (a failed send, or `http.disconnect` while it sends) and leaves the
    iterator as it is: unclosed, it would keep what it holds until the garbage collector finalized it, which a
    reference cycle (the traceback of the failed send) puts off until a collection runs."""

    def __init__(self, attachment: Attachment) -> None:
        disposition = f'attachment; filename="{attachment.filename}"'
        super().__init__(attachment, media_type=attachment.media_type, headers={"Content-Disposition": disposition})
        self.attachment = attachment

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self.attachment.aclose()
