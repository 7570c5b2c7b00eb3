"""Fixtures for mcp-sql: SQLite files in tmp_path and a throw-away PostgreSQL database per session.

PostgreSQL: MCP_TEST_POSTGRES_DSN (default postgresql://postgres@127.0.0.1:5432/test) names an
administrative connection; the session CREATEs a uniquely named database and a uniquely named
reader role, and DROPs both at the end. Locally an unreachable server skips the PostgreSQL tests;
with CI set it fails them.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest
from mcp_sql.database import Database, open_database

ADMIN_DSN = os.environ.get("MCP_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")


@dataclass(frozen=True)
class PgEnv:
    dsn: str
    admin_dsn: str
    database: str
    reader_role: str


def _with_database(dsn: str, database: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path=f"/{database}"))


async def _admin(sql: str, dsn: str = ADMIN_DSN) -> None:
    conn = await asyncpg.connect(dsn, timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def pg_env() -> Iterator[PgEnv]:
    suffix = uuid.uuid4().hex[:10]
    database = f"mcp_sql_test_{suffix}"
    role = f"mcp_sql_reader_test_{suffix}"
    try:
        asyncio.run(_admin(f'CREATE DATABASE "{database}"'))
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL at {ADMIN_DSN} is required in CI and unreachable: {exc}")
        pytest.skip(f"PostgreSQL not reachable at {ADMIN_DSN}: {exc}")
    env = PgEnv(_with_database(ADMIN_DSN, database), ADMIN_DSN, database, role)
    try:
        yield env
    finally:
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
        asyncio.run(_admin(f'DROP ROLE IF EXISTS "{role}"'))


SEED_PG = """
DROP SCHEMA IF EXISTS public CASCADE;
DROP SCHEMA IF EXISTS other CASCADE;
CREATE SCHEMA public;
CREATE TABLE t (id int PRIMARY KEY, name text NOT NULL);
INSERT INTO t VALUES (1, 'alice'), (2, 'bob'), (3, 'carol');
CREATE SEQUENCE s;
"""


class PgAdmin:
    """Superuser access to the test database from outside the code under test."""

    def __init__(self, env: PgEnv) -> None:
        self.env = env

    async def rows(self, sql: str = "SELECT id, name FROM t ORDER BY id") -> list[tuple[object, ...]]:
        conn = await asyncpg.connect(self.env.dsn, timeout=5)
        try:
            return [tuple(r) for r in await conn.fetch(sql)]
        finally:
            await conn.close()

    async def value(self, sql: str) -> object:
        return (await self.rows(sql))[0][0]

    async def exec(self, sql: str) -> None:
        await _admin(sql, self.env.dsn)


@pytest.fixture
async def pg_admin(pg_env: PgEnv) -> PgAdmin:
    admin = PgAdmin(pg_env)
    await admin.exec(SEED_PG)
    return admin


@pytest.fixture
async def pg_seeded(pg_admin: PgAdmin) -> PgEnv:
    return pg_admin.env


@pytest.fixture
async def pg_ro(pg_seeded: PgEnv) -> AsyncIterator[Database]:
    db = await open_database(
        "main", pg_seeded.dsn, allow_write=False, statement_timeout_s=5, max_rows=100,
        pg_reader_role=pg_seeded.reader_role,
    )  # fmt: skip
    try:
        yield db
    finally:
        await db.close()


@pytest.fixture
async def pg_rw(pg_seeded: PgEnv) -> AsyncIterator[Database]:
    db = await open_database(
        "main", pg_seeded.dsn, allow_write=True, statement_timeout_s=5, max_rows=100,
        pg_reader_role=pg_seeded.reader_role,
    )  # fmt: skip
    try:
        yield db
    finally:
        await db.close()


def make_sqlite(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
        INSERT INTO t VALUES (1, 'alice'), (2, 'bob'), (3, 'carol');
        """
    )
    conn.commit()
    conn.close()
    return path


def _sqlite_rows(path: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT id, name FROM t ORDER BY id").fetchall()
    finally:
        conn.close()


SEED_ROWS = [(1, "alice"), (2, "bob"), (3, "carol")]


@pytest.fixture
def sqlite_rows() -> Callable[[Path], list[tuple[object, ...]]]:
    """Reads table t through a separate plain sqlite3 connection."""
    return _sqlite_rows


@pytest.fixture
def sqlite_file(tmp_path: Path) -> Path:
    return make_sqlite(tmp_path / "data.db")


@pytest.fixture
async def sqlite_ro(sqlite_file: Path) -> AsyncIterator[Database]:
    db = await open_database("main", str(sqlite_file), allow_write=False, statement_timeout_s=2, max_rows=100)
    try:
        yield db
    finally:
        await db.close()


@pytest.fixture
async def sqlite_rw(sqlite_file: Path) -> AsyncIterator[Database]:
    db = await open_database("main", str(sqlite_file), allow_write=True, statement_timeout_s=2, max_rows=100)
    try:
        yield db
    finally:
        await db.close()


def as_lists(rows: Sequence[Sequence[Any]] | None) -> list[list[Any]] | None:
    """Rows as lists of lists, as they travel in JSON (the engines may hand out tuples)."""
    return None if rows is None else [list(row) for row in rows]
