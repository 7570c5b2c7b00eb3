"""Changes made elsewhere reach subscribers: another process on the same SQLite file (heard over
stdio), another replica on the same PostgreSQL database (heard over HTTP), in both eras."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from mcp_batteries.testing import ERAS, Era, Notifications, connect, connect_http, http_server, stdio_params
from mcp_tasks.access import Actor
from mcp_tasks.database import open_backend
from mcp_tasks.store import TaskStore

from .conftest import FAST_START, hearing

pytestmark = pytest.mark.anyio

ELSEWHERE = Actor("local:elsewhere", "elsewhere")
#: "Within about a second", with room for this shared, loaded machine.
PROMPTLY_S = 3.0


@pytest.mark.parametrize("era", ERAS)
async def test_a_change_by_another_process_on_the_sqlite_file_is_heard_over_stdio(
    db_path: Path, era: Era
) -> None:
    other = await open_backend(sqlite_path=db_path)  # this test process is the "other" writer
    try:
        store = TaskStore(other)
        task = await store.add_task(ELSEWHERE, "shared")
        heard = Notifications()
        params = stdio_params("mcp-batteries-tasks", "--db", str(db_path), env=FAST_START)
        watched = [f"tasks://tasks/{task.id}", "tasks://lists/inbox"]
        async with (
            connect(params, era, message_handler=heard) as client,
            hearing(client, era, heard, watched),
        ):
            started = time.monotonic()
            await store.update_task(ELSEWHERE, task.id, priority="high")
            await heard.wait_method(
                "notifications/resources/updated", f"tasks://tasks/{task.id}", timeout=PROMPTLY_S
            )
            await heard.wait_method(
                "notifications/resources/updated", "tasks://lists/inbox", timeout=PROMPTLY_S
            )
            assert time.monotonic() - started < PROMPTLY_S
            await store.add_task(ELSEWHERE, "appeared")
            await heard.wait_method("notifications/resources/list_changed", timeout=PROMPTLY_S)
            read = await client.read_resource(f"tasks://tasks/{task.id}")
            assert '"priority": "high"' in read.contents[0].text  # type: ignore[union-attr]
    finally:
        await other.close()


async def test_a_change_on_one_postgres_replica_is_heard_by_a_client_of_another(pg_url: str) -> None:
    replica = ["--database-url", pg_url]
    async with (
        http_server("mcp-batteries-tasks", *replica, env=FAST_START) as first,
        http_server("mcp-batteries-tasks", *replica, env=FAST_START) as second,
        connect_http(second.url, "modern") as writer,
    ):
        created = await writer.call_tool("add_task", {"title": "team task"})
        task_id = created.structured_content["id"]  # type: ignore[index]
        uri = f"tasks://tasks/{task_id}"
        for era in ERAS:
            heard = Notifications()
            async with (
                connect_http(first.url, era, message_handler=heard) as reader,
                hearing(reader, era, heard, [uri]),
            ):
                started = time.monotonic()
                await writer.call_tool("update_task", {"task_id": task_id, "title": f"renamed ({era})"})
                await heard.wait_method("notifications/resources/updated", uri, timeout=PROMPTLY_S)
                assert time.monotonic() - started < PROMPTLY_S
                await writer.call_tool("add_task", {"title": f"new ({era})"})
                await heard.wait_method("notifications/resources/list_changed", timeout=PROMPTLY_S)
                seen = await reader.call_tool("get_task", {"task_id": task_id})
                assert f"renamed ({era})" in seen.content[0].text  # type: ignore[union-attr]
