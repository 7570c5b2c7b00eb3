"""Fixtures for mcp-tasks: a SQLite file per test, a PostgreSQL database per session.

PostgreSQL: MCP_TEST_POSTGRES_DSN (default postgresql://postgres@127.0.0.1:5432/test) names an
administrative connection; the session creates a uniquely named database and drops it at the end.
Each test that uses it starts from an empty `mcp_tasks` schema.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit, urlunsplit

import anyio
import asyncpg
import pytest
from mcp import Client
from mcp_batteries.testing import Era, Notifications, legacy_subscribe
from mcp_tasks import schema
from mcp_tasks.backend import Backend
from mcp_tasks.database import open_backend
from mcp_tasks.store import TaskStore

ADMIN_DSN = os.environ.get("MCP_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
ENGINES = ("sqlite", "postgresql")


async def _admin(sql: str, dsn: str = ADMIN_DSN) -> None:
    conn = await asyncpg.connect(dsn, timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def admin_now(sql: str, dsn: str = ADMIN_DSN) -> None:
    """Run `sql` from synchronous code, even when an event loop is running in this thread."""
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, _admin(sql, dsn)).result()


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A throw-away database for the whole session; its DSN."""
    name = f"mcp_tasks_test_{uuid.uuid4().hex[:10]}"
    admin_now(f'CREATE DATABASE "{name}"')
    parts = urlsplit(ADMIN_DSN)
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        admin_now(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_url(pg_database: str) -> str:
    """The session database with an empty task schema."""
    admin_now("DROP SCHEMA IF EXISTS mcp_tasks CASCADE", pg_database)
    return pg_database


async def _empty_tasks(dsn: str) -> None:
    """Empty the task tables, keeping the migrated schema (much faster than migrating again)."""
    conn = await asyncpg.connect(dsn, timeout=5)
    try:
        try:
            version = await conn.fetchval(
                "SELECT value FROM mcp_tasks.task_meta WHERE key = 'schema_version'"
            )
        except asyncpg.UndefinedTableError:
            version = None
        if version == str(schema.LATEST):
            await conn.execute(
                "TRUNCATE mcp_tasks.task_tags, mcp_tasks.task_deps, mcp_tasks.tasks, mcp_tasks.task_lists,"
                " mcp_tasks.task_changes RESTART IDENTITY CASCADE"
            )
        else:
            await conn.execute("DROP SCHEMA IF EXISTS mcp_tasks CASCADE")
    finally:
        await conn.close()


@pytest.fixture
def pg_tasks(pg_database: str) -> str:
    """The session database with empty task tables (migrated at most once per session)."""
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, _empty_tasks(pg_database)).result()
    return pg_database


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "tasks.db"


@pytest.fixture(params=ENGINES)
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    if request.param == "sqlite":
        opened = await open_backend(sqlite_path=tmp_path / "tasks.db")
    else:
        opened = await open_backend(database_url=request.getfixturevalue("pg_tasks"))
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
async def store(backend: Backend) -> TaskStore:
    return TaskStore(backend)


def store_url(backend: Backend) -> list[str]:
    """Command-line arguments that open the same database in another process."""
    if backend.sqlite_path is not None:
        return ["--db", str(backend.sqlite_path)]
    return ["--database-url", backend.dsn]


@asynccontextmanager
async def hearing(
    client: Client, era: Era, heard: Notifications, uris: Sequence[str], *, listing: bool = True
) -> AsyncIterator[None]:
    """Subscribe `client` to `uris` (and list changes) so that `heard` collects both eras' events.

    Handshake era: `resources/subscribe` (the client's message_handler must be `heard`; every such
    connection also hears list changes). 2026-07-28: a `subscriptions/listen` stream whose events are
    fed into `heard` as the same notification shapes.
    """
    if era == "legacy":
        for uri in uris:
            await legacy_subscribe(client, uri)
        yield
        return
    async with (
        client.listen(resource_subscriptions=list(uris), resources_list_changed=listing) as events,
        anyio.create_task_group() as tg,
    ):

        async def pump() -> None:
            async for event in events:
                kind = type(event).__name__
                if kind == "ResourceUpdated":
                    uri = str(event.uri)  # type: ignore[union-attr]
                    await heard(
                        SimpleNamespace(
                            method="notifications/resources/updated", params=SimpleNamespace(uri=uri)
                        )
                    )
                elif kind == "ResourcesListChanged":
                    await heard(SimpleNamespace(method="notifications/resources/list_changed", params=None))

        tg.start_soon(pump)
        yield
        tg.cancel_scope.cancel()


def updated(heard: Notifications) -> list[str]:
    return [
        str(n.params.uri)
        for n in heard.received
        if getattr(n, "method", "") == "notifications/resources/updated"
    ]


#: Subprocess servers keep compiled bytecode between starts (this sandbox sets
#: PYTHONDONTWRITEBYTECODE, which makes every start compile ~400 modules from source).
FAST_START = {
    "PYTHONDONTWRITEBYTECODE": "",
    "PYTHONPYCACHEPREFIX": str(Path(tempfile.gettempdir()) / "mcp-tasks-tests-pycache"),
}
