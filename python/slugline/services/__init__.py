"""The one place where link, key and analytics rules live; REST routers and MCP tools only translate."""
