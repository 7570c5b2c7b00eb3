"""Fixtures for mcp-sql: SQLite files in tmp_path, a throw-away PostgreSQL and MySQL database per session.

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


# -- MySQL / MariaDB ------------------------------------------------------------------------------
# MCP_TEST_MYSQL_URL (default mysql://root@127.0.0.1:3306/test) names an administrative account;
# the session CREATEs a uniquely named database and a least-privilege user (SELECT and SHOW VIEW on
# that database only, as docs/sql.md tells operators to create), and DROPs both at the end.
MYSQL_ADMIN_URL = os.environ.get("MCP_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")


@dataclass(frozen=True)
class MyEnv:
    url: str
    """The test database as the administrative user."""
    reader_url: str
    """The test database as the least-privilege user (its password in the URL)."""
    database: str
    reader: str
    reader_password: str


def _my_url(url: str, database: str, user: str | None = None, password: str | None = None) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    if user is not None:
        netloc = f"{user}:{password}@{netloc}" if password else f"{user}@{netloc}"
    elif "@" in parts.netloc:
        netloc = parts.netloc
    return urlunsplit(parts._replace(netloc=netloc, path=f"/{database}"))


async def my_admin_exec(sql: str, url: str = MYSQL_ADMIN_URL) -> list[list[tuple[Any, ...]]]:
    """Run `sql` (several statements allowed) as the administrative user; the rows of each result."""
    import asyncmy
    from mcp_sql.mysql_target import parse_mysql_url

    target = parse_mysql_url(url)
    conn = await asyncmy.connect(**target.connect_kwargs(), autocommit=True, charset="utf8mb4")
    out: list[list[tuple[Any, ...]]] = []
    try:
        cursor = conn.cursor()
        await cursor.execute(sql)
        while True:
            if cursor.description:
                out.append([tuple(r) for r in await cursor.fetchall()])
            if not await cursor.nextset():
                break
    finally:
        conn.close()
    return out


@pytest.fixture(scope="session")
def my_env() -> Iterator[MyEnv]:
    suffix = uuid.uuid4().hex[:10]
    database = f"mcp_sql_test_{suffix}"
    reader = f"mcp_ro_{suffix}"
    password = uuid.uuid4().hex
    try:
        asyncio.run(
            my_admin_exec(
                f"CREATE DATABASE `{database}`; CREATE USER '{reader}'@'%' IDENTIFIED BY '{password}'; "
                f"GRANT SELECT, SHOW VIEW ON `{database}`.* TO '{reader}'@'%'"
            )
        )
    except Exception as exc:
        if os.environ.get("CI"):
            pytest.fail(f"MySQL at {MYSQL_ADMIN_URL} is required in CI and unreachable: {exc}")
        pytest.skip(f"MySQL not reachable at {MYSQL_ADMIN_URL}: {exc}")
    env = MyEnv(
        _my_url(MYSQL_ADMIN_URL, database),
        _my_url(MYSQL_ADMIN_URL, database, reader, password),
        database, reader, password,
    )  # fmt: skip
    try:
        yield env
    finally:
        asyncio.run(
            my_admin_exec(f"DROP DATABASE IF EXISTS `{database}`; DROP USER IF EXISTS '{reader}'@'%'")
        )


SEED_MYSQL = """
CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL);
INSERT INTO t VALUES (1, 'alice'), (2, 'bob'), (3, 'carol');
CREATE SEQUENCE s;
CREATE PROCEDURE p() MODIFIES SQL DATA DELETE FROM t;
CREATE FUNCTION f() RETURNS INT MODIFIES SQL DATA BEGIN DELETE FROM t; RETURN 1; END;
"""


class MyAdmin:
    """Administrative access to the test database from outside the code under test."""

    def __init__(self, env: MyEnv) -> None:
        self.env = env

    async def rows(self, sql: str = "SELECT id, name FROM t ORDER BY id") -> list[tuple[Any, ...]]:
        return (await my_admin_exec(sql, self.env.url))[0]

    async def value(self, sql: str) -> Any:
        return (await self.rows(sql))[0][0]

    async def exec(self, sql: str) -> None:
        await my_admin_exec(sql, self.env.url)

    async def reseed(self) -> None:
        db = self.env.database
        await my_admin_exec(
            f"DROP DATABASE IF EXISTS `{db}`; CREATE DATABASE `{db}`; USE `{db}`; {SEED_MYSQL}"
        )


@pytest.fixture
async def my_admin(my_env: MyEnv) -> MyAdmin:
    admin = MyAdmin(my_env)
    await admin.reseed()
    return admin


async def _open_my(url: str, *, allow_write: bool, timeout: float = 5) -> Database:
    return await open_database(
        "main", url, allow_write=allow_write, statement_timeout_s=timeout, max_rows=100
    )


@pytest.fixture
async def my_ro(my_admin: MyAdmin) -> AsyncIterator[Database]:
    """Read-only, connected as the administrative user (root): the walls must hold without privileges."""
    db = await _open_my(my_admin.env.url, allow_write=False)
    try:
        yield db
    finally:
        await db.close()


@pytest.fixture
async def my_reader(my_admin: MyAdmin) -> AsyncIterator[Database]:
    """Read-only, connected as the least-privilege user."""
    db = await _open_my(my_admin.env.reader_url, allow_write=False)
    try:
        yield db
    finally:
        await db.close()


@pytest.fixture
async def my_rw(my_admin: MyAdmin) -> AsyncIterator[Database]:
    db = await _open_my(my_admin.env.url, allow_write=True)
    try:
        yield db
    finally:
        await db.close()
