"""Opening the task database: choose the engine, then bring its schema up to date (or refuse)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, cast

from mcp_batteries.errors import ConfigError

from mcp_tasks import schema
from mcp_tasks.backend import Backend, Tx
from mcp_tasks.sqlite_backend import SQLiteBackend

if TYPE_CHECKING:
    from mcp_tasks.postgres_backend import PostgresTx

logger = logging.getLogger(__name__)


async def open_backend(
    *, sqlite_path: Path | None = None, database_url: str | None = None, busy_timeout: float = 30.0
) -> Backend:
    """Open SQLite (`sqlite_path`) or PostgreSQL (`database_url`) and migrate it to `schema.LATEST`."""
    backend: Backend
    if database_url:
        # asyncpg only when PostgreSQL is used: a SQLite server starts without it.
        from mcp_tasks.postgres_backend import PostgresBackend

        backend = await PostgresBackend.open(database_url, statement_timeout=max(busy_timeout, 1.0))
    elif sqlite_path is not None:
        backend = await SQLiteBackend.open(sqlite_path, busy_timeout=busy_timeout)
    else:
        raise ConfigError("no task database given")
    try:
        await migrate(backend)
        if isinstance(backend, SQLiteBackend):
            await backend.open_readers()
    except BaseException:
        await backend.close()
        raise
    return backend


async def migrate(backend: Backend, *, target: int = schema.LATEST) -> int:
    """Upgrade the schema to `target` in one exclusive transaction; returns the version found."""
    async with backend.write() as tx:
        if tx.dialect == "postgresql":
            await cast("PostgresTx", tx).lock_migrations()
            await tx.execute(f"CREATE SCHEMA IF NOT EXISTS {schema.PG_SCHEMA}")
            await tx.execute(f"SET LOCAL search_path TO {schema.PG_SCHEMA}")
        await tx.execute(schema.create_meta(tx.dialect))
        raw = await tx.fetchval(f"SELECT value FROM {schema.META_TABLE} WHERE key = 'schema_version'")
        found = int(raw) if raw is not None else 0
        schema.check_version(found, backend.description)
        if found == 0:
            await _refuse_foreign_tables(tx, backend.description)
        for step in range(found, target):
            for sql in schema.statements(tx.dialect, step):
                await tx.execute(sql)
        if target > found:
            await tx.execute(
                f"INSERT INTO {schema.META_TABLE} (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                str(target),
            )
            logger.info("%s: task schema upgraded from version %d to %d", backend.description, found, target)
    return found


async def _refuse_foreign_tables(tx: Tx, where: str) -> None:
    if tx.dialect == "sqlite":
        rows = await tx.fetch("SELECT name FROM sqlite_master WHERE type = 'table'")
    else:
        rows = await tx.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = ?", schema.PG_SCHEMA
        )
    clashing = sorted({str(r[0]) for r in rows} & set(schema.OUR_TABLES))
    if clashing:
        raise ConfigError(
            f"{where} already has table(s) {', '.join(clashing)} that mcp-tasks did not create; "
            "point --db at a new file (or --database-url at a database for the tasks)"
        )
