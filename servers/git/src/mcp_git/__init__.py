"""mcp-git server."""
