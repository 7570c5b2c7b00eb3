"""`mcp-batteries-sql [URL | name=URL ...]` (also `mcp-sql`, `python -m mcp_sql`)."""

from __future__ import annotations

from mcp_batteries.definition import ServerDefinition

from mcp_sql.config import SqlSettings

definition = ServerDefinition(
    settings=SqlSettings,
    build="mcp_sql.server:build_server",
    description=(
        "MCP server for SQLite, PostgreSQL, MySQL and MariaDB: read-only queries, schema as live resources."
    ),
    examples=(
        ("sqlite:////abs/path/app.db", "stdio, for Claude Desktop, Cline, Cursor..."),
        ("postgresql://mcp_ro@localhost/app", "PostgreSQL, read-only"),
        ("mysql://mcp_ro@localhost/app", "MySQL or MariaDB (also mariadb://), read-only"),
        ("--db app=./app.db --db wh=postgresql://localhost/wh", "two named databases"),
        ("./app.db --allow-write", "also offer the execute tool"),
        ("", "an embedded SQLite file in the user's data directory"),
    ),
)
main = definition.main

if __name__ == "__main__":
    main()
