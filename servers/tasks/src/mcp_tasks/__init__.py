"""mcp-tasks: shared task lists for agents and people."""
