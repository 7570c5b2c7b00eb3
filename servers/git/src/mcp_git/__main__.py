"""`mcp-batteries-git [DIR...] [--repository PATH...]` (also `mcp-git`, `python -m mcp_git`)."""

from __future__ import annotations

from mcp_batteries.definition import ServerDefinition

from mcp_git.config import GitSettings

definition = ServerDefinition(
    settings=GitSettings,
    build="mcp_git.server:build_server",
    description=(
        "MCP server for git repositories: the reference git tools and more (blame, grep, tags, "
        "stash, restore; fetch/pull/push with --allow-network), injection-proof, with live resources."
    ),
    examples=(
        ("--repository ~/project", "one repository, stdio, for Claude Desktop, Cline, Cursor..."),
        ("~/code", "every repository found under ~/code"),
        ("--repository ~/project --read-only", "no tool that changes the repository is offered"),
        ("--repository ~/project --allow-network", "also fetch, pull and push"),
        ("~/code --transport http --port 8000", "Streamable HTTP on 127.0.0.1:8000/mcp"),
    ),
)
main = definition.main

if __name__ == "__main__":
    main()
