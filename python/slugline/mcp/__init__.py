"""The remote MCP endpoint (`/mcp`): tools over the service layer, Streamable HTTP, stateless."""

from slugline.mcp.http import McpEndpoint

__all__ = ["McpEndpoint"]
