"""mcp-sql server."""
