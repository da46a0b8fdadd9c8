"""A request of the handshake-era protocols answered in the request's own task, through the SDK's own kernel.

For a request of a 2025 protocol version the SDK's stateless transport builds, per request, a transport with memory
streams, a JSON-RPC dispatcher and a task in the session manager's task group, to carry one request in and one JSON
answer out: about half of a `tools/call get_me`'s CPU, against the same call on the 2026-07-28 protocol, which the
SDK serves through its kernel in the request's task (`benches/inprocess.py --only mcp mcp_2026` measures both).

`answer` serves the common case the way the SDK serves the 2026 protocol: one JSON-RPC request, not `initialize`,
with a handshake-era `MCP-Protocol-Version` header or none, `Content-Type: application/json`, an Accept that takes
JSON. Everything else (`initialize`, notifications, responses, malformed bodies, other headers) is left to the SDK's
transport, which makes every refusal. What runs is what the SDK's stateless path runs: its kernel
(`runner.serve_one`), a connection born ready at the header's version (`Connection.from_envelope`, as that path builds
it), no back-channel (a JSON answer carries nothing else), the dispatcher's exception mapping with its `code 0`
catch-all, and the transport's serialisation of the answer. `tests/test_mcp_exchange.py` sends the same requests both
ways and compares the answers byte for byte.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import pydantic_core
from mcp.server.connection import Connection
from mcp.server.runner import serve_one
from mcp.server.streamable_http import check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import (
    CONNECTION_CLOSED,
    DEFAULT_NEGOTIATED_VERSION,
    INTERNAL_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
)
from mcp_types.jsonrpc import jsonrpc_message_adapter
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

# The SDK's loggers, so that a log filter or alert on them sees these failures as it did on the SDK's path.
dispatcher_log = logging.getLogger("mcp.shared.jsonrpc_dispatcher")
transport_log = logging.getLogger("mcp.server.streamable_http")
VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower()
TRANSPORT = TransportContext(kind="streamable-http", can_send_request=False)


@dataclass
class _Exchange:
    """The dispatch context of one request answered as JSON: no back-channel, so server-initiated requests raise and
    notifications (progress among them) go nowhere, as in the SDK's JSON-response mode."""

    request_id: RequestId
    message_metadata: ServerMessageMetadata
    transport: TransportContext = TRANSPORT
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    can_send_request: bool = False

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None) -> None:
        return None

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        return None


def _handshake_request(request: Request, body: bytes) -> tuple[str, JSONRPCRequest] | None:
    """The version and request when this POST is one this module answers; None leaves it to the SDK's transport."""
    headers = request.headers
    # No header: the version the spec says to assume, as the SDK's stateless path does; any other value is the SDK's.
    version = headers.get(VERSION_HEADER, DEFAULT_NEGOTIATED_VERSION)
    if version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return None
    # Stricter than both of the SDK's Content-Type checks, so whatever passes here passes there.
    if headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return None
    if not check_accept_headers(request)[0]:
        return None
    try:
        message = jsonrpc_message_adapter.validate_python(pydantic_core.from_json(body), by_name=False)
    except (ValueError, ValidationError):  # the SDK answers these with its own 400s
        return None
    if not isinstance(message, JSONRPCRequest) or message.method == "initialize":
        return None
    return version, message


async def answer(
    manager: StreamableHTTPSessionManager, lifespan_state: Any, scope: Scope, body: bytes, receive: Receive, send: Send
) -> bool:
    """Answer the POST whose body is `body`, if it is one this module serves (see the module); False leaves it."""
    request = Request(scope, receive)
    found = _handshake_request(request, body)
    if found is None:
        return False
    version, message = found
    reply = await _reply(manager, lifespan_state, request, version, message)
    try:
        status, body_out = 200, reply.model_dump_json(by_alias=True, exclude_unset=True)
    except Exception:  # as the SDK's transport answers a failure of its own
        transport_log.exception("Error handling POST request")
        failed = ErrorData(code=INTERNAL_ERROR, message="Error handling POST request")
        status, body_out = (
            500,
            JSONRPCError(jsonrpc="2.0", id=None, error=failed).model_dump_json(by_alias=True, exclude_unset=True),
        )
    await Response(body_out, status, {"Content-Type": "application/json"})(scope, receive, send)
    return True


async def _reply(
    manager: StreamableHTTPSessionManager, lifespan_state: Any, request: Request, version: str, message: JSONRPCRequest
) -> JSONRPCResponse | JSONRPCError:
    """The kernel's answer to `message`, with a handler's exception mapped as the SDK's dispatcher maps it."""
    exchange = _Exchange(message.id, ServerMessageMetadata(request_context=request, can_send_request=False))
    try:
        result = await serve_one(
            manager.app,
            exchange,
            message.method,
            message.params,
            connection=Connection.from_envelope(version, None, None),
            lifespan_state=lifespan_state,
        )
    except asyncio.CancelledError:
        # A cancellation of this request goes on up. One a handler let out of something else it awaited (a shielded
        # task cancelled elsewhere) is answered as the dispatcher answers any cancellation of its handler.
        task = asyncio.current_task()
        if task is None or task.cancelling():
            raise
        closed = ErrorData(code=CONNECTION_CLOSED, message="Connection closed")
        return JSONRPCError(jsonrpc="2.0", id=message.id, error=closed)
    except Exception as exc:
        error = handler_exception_to_error_data(exc)
        if error is None:  # as the SDK's dispatcher answers a handler's unmapped exception
            dispatcher_log.exception("handler for %r raised", message.method)
            error = ErrorData(code=0, message=str(exc))
        return JSONRPCError(jsonrpc="2.0", id=message.id, error=error)
    return JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result)
