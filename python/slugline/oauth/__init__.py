"""OAuth 2.1 for MCP clients that cannot send a static key: discovery metadata, client registration (dynamic and
Client ID Metadata Documents), authorization with the owner's consent, tokens bound to this server's /mcp, refresh
with rotation and revocation. `install.install` adds the routes; `tokens.authenticate` is how /mcp reads a token.
"""
