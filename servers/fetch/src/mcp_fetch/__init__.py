"""mcp-fetch server."""
