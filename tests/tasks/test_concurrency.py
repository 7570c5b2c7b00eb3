"""No lost update and no torn batch, shown with real second processes (not threads) on SQLite and
PostgreSQL: racing conditional updates, concurrent field-level merges, and kill -9 mid-batch."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import pytest
from mcp_tasks.access import Actor
from mcp_tasks.backend import Backend
from mcp_tasks.database import open_backend
from mcp_tasks.reads import Filters
from mcp_tasks.store import TaskStore

from .conftest import FAST_START

pytestmark = pytest.mark.anyio

WORKER = Path(__file__).with_name("worker.py")
ME = Actor("local:test", "test")


def database_of(backend: Backend) -> str:
    return str(backend.sqlite_path) if backend.sqlite_path is not None else str(backend.dsn)


class Worker:
    """tests/tasks/worker.py in its own process."""

    def __init__(self, database: str, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), database, *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, **FAST_START},
        )  # fmt: skip

    async def _line(self) -> str:
        assert self.process.stdout is not None
        line = await anyio.to_thread.run_sync(self.process.stdout.readline)
        if not line:
            stderr = self.process.stderr.read() if self.process.stderr else ""
            raise AssertionError(f"worker exited: {stderr[-2000:]}")
        return line.strip()

    async def ready(self) -> None:
        with anyio.fail_after(30):
            assert await self._line() == "ready"

    def go(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    async def result(self) -> dict[str, Any]:
        with anyio.fail_after(60):
            report: dict[str, Any] = json.loads(await self._line())
        await anyio.to_thread.run_sync(self.process.wait)
        return report

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()


@asynccontextmanager
async def workers(database: str, *commands: list[str]) -> AsyncIterator[list[Worker]]:
    started = [Worker(database, *command) for command in commands]
    try:
        for worker in started:
            await worker.ready()
        yield started
    finally:
        for worker in started:
            if worker.process.poll() is None:
                worker.kill()


async def test_racing_conditional_updates_from_two_processes_lose_nothing(store: TaskStore) -> None:
    task = await store.add_task(ME, "counter", description="0")
    per_worker = 30
    async with workers(database_of(store.backend), ["increment", task.id, str(per_worker)],
                       ["increment", task.id, str(per_worker)]) as both:  # fmt: skip
        for w in both:
            w.go()
        reports = [await w.result() for w in both]
    final = (await store.get_task(ME, task.id)).task
    # Every applied increment is in the counter: none was overwritten by the other process.
    assert final.description == str(2 * per_worker)
    assert final.version == 1 + 2 * per_worker
    assert sum(r["conflicts"] for r in reports) > 0  # they really raced, and lost races were refused


async def test_concurrent_unconditional_changes_to_one_task_both_apply(store: TaskStore) -> None:
    task = await store.add_task(ME, "tagged")
    async with workers(
        database_of(store.backend), ["tag", task.id, "a", "15"], ["tag", task.id, "b", "15"]
    ) as both:
        for w in both:
            w.go()
        for w in both:
            await w.result()
    final = (await store.get_task(ME, task.id)).task
    assert sorted(final.tags) == sorted([f"a-{i}" for i in range(15)] + [f"b-{i}" for i in range(15)])
    assert final.version == 31


async def _in_flight(backend: Backend) -> bool:
    """Whether another process holds an open write transaction on the database right now."""
    if backend.sqlite_path is not None:
        conn = sqlite3.connect(backend.sqlite_path, timeout=0)
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.rollback()
            return False
        except sqlite3.OperationalError as exc:
            return "locked" in str(exc)
        finally:
            conn.close()
    conn = await asyncpg.connect(backend.dsn, timeout=5)
    try:
        busy = await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND application_name = 'mcp-tasks' AND xact_start IS NOT NULL AND state <> 'idle'"
        )
        return bool(busy)
    finally:
        await conn.close()


async def test_kill_9_in_the_middle_of_a_batch_leaves_all_of_it_or_none(
    store: TaskStore, tmp_path: Path
) -> None:
    size = 4000
    database = database_of(store.backend)
    async with workers(database, ["batch", str(size)]) as (worker,):
        worker.go()
        with anyio.fail_after(30):
            while not await _in_flight(store.backend):  # noqa: ASYNC110 - no event exists to wait on
                await anyio.sleep(0.001)  # polling the database: there is no event to wait on
        worker.kill()
    # A fresh open recovers the database (SQLite: WAL replay; PostgreSQL: the backend rolled back).
    if store.backend.sqlite_path is not None:
        reopened = await open_backend(sqlite_path=store.backend.sqlite_path)
    else:
        reopened = await open_backend(database_url=database)
    try:
        fresh = TaskStore(reopened)
        listed = await fresh.list_tasks(ME, Filters())
        assert listed.total in (0, size)  # never a part of the batch
        after = await fresh.add_task(ME, "life goes on")
        assert after.title == "life goes on"
        if store.backend.sqlite_path is not None:
            check = sqlite3.connect(store.backend.sqlite_path)
            try:
                assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            finally:
                check.close()
    finally:
        await reopened.close()
