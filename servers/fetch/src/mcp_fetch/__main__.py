"""`mcp-batteries-fetch` (also `mcp-fetch`, `python -m mcp_fetch`)."""

from __future__ import annotations

from mcp_batteries.definition import ServerDefinition

from mcp_fetch.config import FetchServerSettings

definition = ServerDefinition(
    settings=FetchServerSettings,
    build="mcp_fetch.server:build_server",
    description=(
        "MCP server that fetches web pages and documents (PDF, Word, spreadsheets, slides, EPUB) as "
        "clean Markdown: paged, robots.txt-aware and SSRF-safe (private and internal addresses are "
        "refused unless allowed)."
    ),
    examples=(
        ("", "stdio, for Claude Desktop, Cline, Cursor..."),
        ("--allow-private-host intranet.example.com", "also reach one internal host"),
        ("--proxy http://proxy:3128 --ignore-robots-txt", "through a proxy, without robots.txt"),
        ("--transport http --port 8000", "Streamable HTTP on 127.0.0.1:8000/mcp"),
    ),
)
main = definition.main

if __name__ == "__main__":
    main()
