"""`mcp-sql [URL | name=URL ...]` and `python -m mcp_sql`."""

from __future__ import annotations

from mcp_batteries.runner import main as run_main

from mcp_sql.config import SqlSettings

DESCRIPTION = "MCP server for SQLite and PostgreSQL: read-only queries, schema as live resources."
EPILOG = """examples:
  mcp-sql sqlite:////abs/path/app.db                 # stdio, for Claude Desktop, Cline, Cursor...
  mcp-sql postgresql://mcp_ro@localhost/app          # PostgreSQL, read-only
  mcp-sql --db app=./app.db --db wh=postgresql://localhost/wh
  mcp-sql ./app.db --allow-write                     # also offer the execute tool
  mcp-sql                                            # an embedded SQLite file
"""


def main(argv: list[str] | None = None) -> None:
    from mcp_sql.server import build_server

    run_main(SqlSettings, build_server, description=DESCRIPTION, epilog=EPILOG, argv=argv)


if __name__ == "__main__":
    main()
