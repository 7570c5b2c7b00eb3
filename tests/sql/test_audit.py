"""What `execute` tells the audit trail it changed, checked on a real server over HTTP."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from mcp_batteries.testing import connect_http, http_server

pytestmark = pytest.mark.anyio


def audit_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_execute_reports_rows_affected_and_objects_created_dropped_and_altered(tmp_path: Path) -> None:
    database = tmp_path / "shop.db"
    with sqlite3.connect(database) as conn:
        conn.executescript("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT); CREATE TABLE old (x);")
    audit = tmp_path / "audit.jsonl"
    args = (str(database), "--allow-write", "--audit-log", str(audit))
    async with (
        http_server("mcp-batteries-sql", *args) as running,
        connect_http(running.url, "legacy") as client,
    ):
        batch = [
            "INSERT INTO items (name) VALUES ('a'), ('b'), ('c')",
            "UPDATE items SET name = 'z' WHERE id > 1",
            "CREATE TABLE tags (id INTEGER, label TEXT)",
            "ALTER TABLE tags ADD COLUMN colour TEXT",
            "DROP TABLE old",
            "DELETE FROM items WHERE id = 1",
        ]
        assert not (await client.call_tool("execute", {"statements": batch})).is_error
        await client.call_tool("query", {"sql": "SELECT count(*) FROM items"})
        failed = await client.call_tool("execute", {"statements": ["INSERT INTO nowhere VALUES (1)"]})
        assert failed.is_error
    done, refused = audit_lines(audit)
    main = {"database": done["changes"][0]["database"]}
    table = {"object": "table"}
    assert done["changes"] == [
        {"action": "insert", **main, "statement": 0, "command": "INSERT", "rows": 3, "table": "items"},
        {"action": "update", **main, "statement": 1, "command": "UPDATE", "rows": 2, "table": "items"},
        {"action": "create", **table, "name": "tags", **main, "statement": 2, "command": "CREATE TABLE"},
        {"action": "alter", **table, "name": "tags", **main, "statement": 3, "command": "ALTER TABLE"},
        {"action": "drop", **table, "name": "old", **main, "statement": 4, "command": "DROP TABLE"},
        {"action": "delete", **main, "statement": 5, "command": "DELETE", "rows": 1, "table": "items"},
    ]
    assert refused["outcome"] == "tool_error" and refused["changes"] == []
