"""`mcp-fetch` and `python -m mcp_fetch`."""

from __future__ import annotations

from mcp_batteries.runner import main as run_main

from mcp_fetch.config import FetchServerSettings

DESCRIPTION = (
    "MCP server that fetches web pages as clean Markdown: paged, robots.txt-aware and SSRF-safe "
    "(private and internal addresses are refused unless allowed)."
)
EPILOG = """examples:
  mcp-fetch                                      # stdio, for Claude Desktop, Cline, Cursor...
  mcp-fetch --allow-host intranet.example.com    # also reach one internal host
  mcp-fetch --proxy http://proxy:3128 --ignore-robots-txt
  mcp-fetch --transport http --port 8000
"""


def main(argv: list[str] | None = None) -> None:
    from mcp_fetch.server import build_server

    run_main(FetchServerSettings, build_server, description=DESCRIPTION, epilog=EPILOG, argv=argv)


if __name__ == "__main__":
    main()
