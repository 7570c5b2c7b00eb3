"""`mcp-batteries-tasks` (also `mcp-tasks`, `python -m mcp_tasks`)."""

from __future__ import annotations

from mcp_batteries.definition import ServerDefinition

from mcp_tasks.config import TasksSettings

definition = ServerDefinition(
    settings=TasksSettings,
    build="mcp_tasks.server:build_server",
    description=(
        "MCP server for task lists that agents and people share: atomic changes, no lost updates, "
        "live resources across processes and replicas."
    ),
    examples=(
        ("", "stdio; tasks in the user's data directory (SQLite)"),
        ("--db ./project-tasks.db", "a SQLite file of your choice (several processes may share it)"),
        (
            "--database-url postgresql://tasks@db/tasks --transport http --host 0.0.0.0 "
            "--allowed-hosts tasks.example.com:*",
            "a team: one PostgreSQL database behind any number of replicas",
        ),
        ("--read-only", "only the reading tools"),
    ),
)
main = definition.main

if __name__ == "__main__":
    main()
