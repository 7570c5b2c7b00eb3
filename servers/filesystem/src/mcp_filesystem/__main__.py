"""`mcp-batteries-filesystem DIR [DIR...]` (also `mcp-filesystem`, `python -m mcp_filesystem`)."""

from __future__ import annotations

from mcp_batteries.definition import ServerDefinition

from mcp_filesystem.config import FilesystemSettings

definition = ServerDefinition(
    settings=FilesystemSettings,
    build="mcp_filesystem.server:build_server",
    description="MCP server for local files: read, write, edit, search and watch files inside DIRs only.",
    examples=(
        ("~/project", "stdio, for Claude Desktop, Cline, Cursor..."),
        ("~/project --read-only", "no tool that writes is offered"),
        ("~/docs --transport http --port 8000", "Streamable HTTP on 127.0.0.1:8000/mcp"),
    ),
)
main = definition.main

if __name__ == "__main__":
    main()
