"""Who is calling an MCP tool, resource or prompt: the HTTP layer (`slugline.mcp.http`) checks the key and puts the
caller and the runtime on the ASGI scope, where each handler finds them through its SDK context."""

from __future__ import annotations

from mcp.server.mcpserver import Context

from slugline.common.caller import Caller
from slugline.runtime import Runtime

CALLER_KEY = "slugline.caller"  # set on the ASGI scope by the HTTP layer once the key is checked
RUNTIME_KEY = "slugline.runtime"


def principal(ctx: Context) -> tuple[Runtime, Caller]:
    request = ctx.request_context.request
    scope = getattr(request, "scope", None) or {}
    if CALLER_KEY not in scope:  # only reachable if the server is used without slugline.mcp.http in front
        raise RuntimeError("MCP tool called without an authenticated caller")
    return scope[RUNTIME_KEY], scope[CALLER_KEY]
