"""MCP Batteries shared runtime."""
