"""A second process for the concurrency and crash tests: it opens the same database and acts.

    python worker.py DATABASE COMMAND ARGS...

DATABASE is a SQLite file path or a postgresql:// URL. The worker opens the store, prints
"ready", waits for a line on stdin (so several workers start at the same moment), runs the
command, and prints one JSON line with what it did.

Commands:
    increment TASK N     N conditional read-modify-writes of TASK's description (a counter);
                         each conflict is retried. Reports applied and conflicts.
    tag TASK PREFIX N    N unconditional updates adding tag PREFIX-i (field-level merges).
    batch N              one add_tasks of N tasks (nested 10 per parent), in one transaction.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
from mcp_tasks.access import Actor
from mcp_tasks.database import open_backend
from mcp_tasks.models import NewTask
from mcp_tasks.store import TaskStore
from mcp_tasks.writes import Conflict


async def main(argv: list[str]) -> None:
    database, command, *args = argv
    if database.startswith("postgresql://"):
        backend = await open_backend(database_url=database)
    else:
        backend = await open_backend(sqlite_path=Path(database))
    store = TaskStore(backend)
    actor = Actor(f"worker:{command}", "worker")
    print("ready", flush=True)
    await anyio.to_thread.run_sync(sys.stdin.readline)
    report: dict[str, int] = {}
    try:
        if command == "increment":
            task, n = args[0], int(args[1])
            conflicts = 0
            for _ in range(n):
                while True:
                    current = (await store.get_task(actor, task)).task
                    value = int(current.description or "0")
                    try:
                        await store.update_task(
                            actor, task, description=str(value + 1), expected_version=current.version
                        )
                        break
                    except Conflict:
                        conflicts += 1
            report = {"applied": n, "conflicts": conflicts}
        elif command == "tag":
            task, prefix, n = args[0], args[1], int(args[2])
            for i in range(n):
                await store.update_task(actor, task, add_tags=[f"{prefix}-{i}"])
            report = {"applied": n}
        elif command == "batch":
            n = int(args[0])
            parents = [
                NewTask(title=f"parent {p}", subtasks=[NewTask(title=f"child {p}.{c}") for c in range(9)])
                for p in range(n // 10)
            ]
            added = await store.add_tasks(actor, parents)
            report = {"created": added.created}
        else:
            raise SystemExit(f"unknown command {command!r}")
    finally:
        await backend.close()
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])
