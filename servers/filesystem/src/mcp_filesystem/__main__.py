"""`mcp-filesystem DIR [DIR...]` and `python -m mcp_filesystem`."""

from __future__ import annotations

from mcp_batteries.runner import main as run_main

from mcp_filesystem.config import FilesystemSettings

DESCRIPTION = "MCP server for local files: read, write, edit, search and watch files inside DIRs only."
EPILOG = """examples:
  mcp-filesystem ~/project                      # stdio, for Claude Desktop, Cline, Cursor...
  mcp-filesystem ~/project --read-only          # no tool that writes is offered
  mcp-filesystem ~/docs --transport http --port 8000
"""


def main(argv: list[str] | None = None) -> None:
    from mcp_filesystem.server import build_server

    run_main(FilesystemSettings, build_server, description=DESCRIPTION, epilog=EPILOG, argv=argv)


if __name__ == "__main__":
    main()
