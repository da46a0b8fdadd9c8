"""HTTP plumbing shared by every interface (REST, MCP, redirects): responses, request reading, who is calling,
and the rate-limit middleware. It knows no interface; the interfaces import it, never each other."""
