"""What the tasks tools tell the audit trail they changed (tasks created, changed, completed and
deleted, with ids and list), checked on a real server over HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp_batteries.testing import connect_http, http_server

from .conftest import FAST_START

pytestmark = pytest.mark.anyio


def audit_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_tasks_tools_report_tasks_created_changed_completed_and_deleted(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    args = ("--db", str(tmp_path / "tasks.db"), "--audit-log", str(audit))
    async with (
        http_server("mcp-batteries-tasks", *args, env=FAST_START) as running,
        connect_http(running.url, "legacy") as client,
    ):

        async def call(tool: str, /, **arguments: Any) -> Any:
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, (tool, result.content)
            return result.structured_content

        await call("create_list", name="release")
        task = (await call("add_task", title="Ship it, password=hunter2", list="release"))["id"]
        await call("update_task", task_id=task, priority="high")
        await call("complete_task", task_id=task)
        await call("delete_task", task_id=task)
        await call("list_tasks")  # a read: no line
    lines = audit_lines(audit)
    changes = {line["tool"]: line["changes"] for line in lines}
    assert list(changes) == ["create_list", "add_task", "update_task", "complete_task", "delete_task"]
    (listed,) = changes["create_list"]
    where = {"workspace": listed["workspace"], "list": listed["list"]}
    assert listed == {"action": "list_created", **where}
    (created,) = changes["add_task"]
    assert (
        created["action"] == "created" and created["task"] == str(task) and created["list"] == where["list"]
    )
    (updated,) = changes["update_task"]
    assert updated == {"action": "updated", **where, "task": str(task), "detail": "priority: medium -> high"}
    (completed,) = changes["complete_task"]
    assert completed["action"] == "completed" and completed["status"] == "done"
    assert changes["delete_task"] == [{"action": "deleted", **where, "task": str(task)}]
    assert "hunter2" not in audit.read_text()
