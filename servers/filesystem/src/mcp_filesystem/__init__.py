"""mcp-filesystem server."""
