"""One migration path for both engines: an older database is upgraded at start, a newer one and a
foreign one are refused with a clear message (and the console script exits 2 with one line)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

import anyio
import asyncpg
import pytest
from mcp_batteries.errors import ConfigError
from mcp_batteries.testing import script_path
from mcp_tasks import schema
from mcp_tasks.access import Actor
from mcp_tasks.backend import Backend
from mcp_tasks.database import migrate, open_backend
from mcp_tasks.postgres_backend import PostgresBackend
from mcp_tasks.reads import Filters
from mcp_tasks.sqlite_backend import SQLiteBackend
from mcp_tasks.store import TaskStore

from .conftest import ENGINES, FAST_START

pytestmark = pytest.mark.anyio

ME = Actor("local:test", "test")


async def raw_backend(
    engine: str, request: pytest.FixtureRequest, tmp_path: Path
) -> tuple[Backend, dict[str, str]]:
    """A backend opened without migrating, and the arguments that open the same database."""
    if engine == "sqlite":
        path = tmp_path / "old.db"
        return await SQLiteBackend.open(path, busy_timeout=5), {"sqlite_path": str(path)}
    url = request.getfixturevalue("pg_url")
    return await PostgresBackend.open(url), {"database_url": url}


async def reopen(where: dict[str, str]) -> Backend:
    if "sqlite_path" in where:
        return await open_backend(sqlite_path=Path(where["sqlite_path"]))
    return await open_backend(database_url=where["database_url"])


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_database_of_an_older_version_is_upgraded_at_start_with_its_tasks(
    engine: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    old, where = await raw_backend(engine, request, tmp_path)
    try:
        assert await migrate(old, target=1) == 0
        async with old.write() as tx:  # what version 1 wrote
            await tx.execute(
                "INSERT INTO task_lists (workspace, name, title, created_at, created_by, updated_at,"
                " updated_by) VALUES ('default', 'inbox', 'Inbox', 't', 'old', 't', 'old')"
            )
            await tx.execute(
                "INSERT INTO tasks (list_id, position, title, status, priority, created_at, created_by,"
                " updated_at, updated_by) VALUES (1, 1024, 'from v1', 'todo', 'high', 't', 'old', 't', 'old')"
            )
            await tx.execute(
                "INSERT INTO tasks (list_id, parent_id, position, title, status, priority, created_at,"
                " created_by, updated_at, updated_by)"
                " VALUES (1, 1, 1024, 'child', 'todo', 'low', 't', 'old', 't', 'old')"
            )
    finally:
        await old.close()
    upgraded = await reopen(where)
    try:
        async with upgraded.read() as tx:
            assert await tx.fetchval("SELECT value FROM task_meta WHERE key = 'schema_version'") == str(
                schema.LATEST
            )
        store = TaskStore(upgraded)
        assert [r[2] for r in (await store.list_tasks(ME, Filters())).rows] == ["from v1", "child"]
        nxt = await store.next_task(ME)  # version 3's readiness counters were computed for old rows
        assert nxt.task is not None and nxt.task.title == "child" and nxt.candidates == 1
        changed = await store.set_status(ME, 1, "done", include_subtasks=True)  # version 2's history works
        assert changed.task.completed
        assert (await store.history(ME, "2000-01-01"))[0][-1].detail == "status: todo -> done"
    finally:
        await upgraded.close()


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_database_of_a_newer_version_is_refused(
    engine: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    current, where = await raw_backend(engine, request, tmp_path)
    try:
        await migrate(current)
        async with current.write() as tx:
            await tx.execute("UPDATE task_meta SET value = '99' WHERE key = 'schema_version'")
    finally:
        await current.close()
    with pytest.raises(
        ConfigError, match=f"version 99, but this mcp-tasks knows versions up to {schema.LATEST}.*Upgrade"
    ):
        await reopen(where)
    if "sqlite_path" not in where:
        return  # the console script's handling is the same for both engines; shown once, on SQLite
    done = subprocess.run(  # noqa: ASYNC221 - the test waits for the process on purpose
        [script_path("mcp-batteries-tasks"), "--db", where["sqlite_path"]], input="", capture_output=True,
        text=True, timeout=60,
        env={**os.environ, **FAST_START},
    )  # fmt: skip
    assert done.returncode == 2
    assert (
        done.stderr.count("\n") == 1 and "schema version 99" in done.stderr and "Traceback" not in done.stderr
    )


async def test_a_sqlite_file_with_someone_elses_tasks_table_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other-app.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE tasks (id INTEGER PRIMARY KEY, what TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(ConfigError, match=r"already has table.*tasks.*mcp-tasks did not create"):
        await open_backend(sqlite_path=path)


async def test_two_openers_migrating_one_new_postgres_database_at_the_same_time_agree(pg_url: str) -> None:
    opened: list[Backend] = []

    async def open_one() -> None:
        opened.append(await open_backend(database_url=pg_url))

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(open_one)
            tg.start_soon(open_one)
        conn = await asyncpg.connect(pg_url)
        try:
            assert await conn.fetchval("SELECT value FROM mcp_tasks.task_meta") == str(schema.LATEST)
        finally:
            await conn.close()
    finally:
        for backend in opened:
            await backend.close()
