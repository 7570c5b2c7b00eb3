"""PostgreSQL storage (asyncpg pool): the one shared state of any number of replicas.

Writers of one workspace are serialised by a transaction-scoped advisory lock taken before the
first read; at READ COMMITTED every later statement of the transaction sees everything
committed before the lock was granted, so read-modify-write is safe across replicas, and
different workspaces never wait for each other. Readers use READ ONLY REPEATABLE READ
transactions (one snapshot, no locks). Changes are announced with NOTIFY inside the writing
transaction, so a LISTENing replica hears of them exactly when they commit, never before.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import asyncpg
from mcp_batteries.errors import ConfigError, UpstreamError
from mcp_batteries.safety import redact_url

from mcp_tasks.backend import NOTIFY_CHANNEL, Row
from mcp_tasks.schema import PG_SCHEMA, Dialect

logger = logging.getLogger(__name__)

#: First key of every advisory lock this server takes ("task" in ASCII), so ours never collide
#: with another application's locks on the same database.
LOCK_SPACE = 0x7461736B
#: The advisory lock migrations take (the second key of workspace locks is a text hash).
MIGRATION_LOCK = 0


@lru_cache(maxsize=1024)
def numbered(sql: str) -> str:
    """`?` placeholders -> `$1, $2, ...` (our SQL has no `?` inside string literals)."""
    counter = iter(range(1, 10_000))
    return re.sub(r"\?", lambda _: f"${next(counter)}", sql)


def _translate(exc: Exception) -> Exception:
    return UpstreamError(f"PostgreSQL error: {exc}")


async def _nothing_to_reset(conn: Any) -> None:
    """Pool connections keep no session state (advisory locks and SET LOCAL end with their
    transaction; LISTEN has its own connection), so asyncpg's reset query on every release
    (`SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL`) is a round trip per call
    for nothing."""


class PostgresTx:
    dialect: Dialect = "postgresql"

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        try:
            return list(await self._conn.fetch(numbered(sql), *args))
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise _translate(exc) from exc

    async def fetchrow(self, sql: str, *args: Any) -> Row | None:
        try:
            return await self._conn.fetchrow(numbered(sql), *args)
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise _translate(exc) from exc

    async def fetchval(self, sql: str, *args: Any) -> Any:
        try:
            return await self._conn.fetchval(numbered(sql), *args)
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise _translate(exc) from exc

    async def execute(self, sql: str, *args: Any) -> None:
        try:
            await self._conn.execute(numbered(sql), *args)
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise _translate(exc) from exc

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        try:
            await self._conn.executemany(numbered(sql), list(rows))
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise _translate(exc) from exc

    async def lock(self, workspace: str) -> None:
        await self.execute("SELECT pg_advisory_xact_lock(?::int, hashtext(?::text))", LOCK_SPACE, workspace)

    async def lock_migrations(self) -> None:
        await self.execute("SELECT pg_advisory_xact_lock(?::int, ?::int)", LOCK_SPACE, MIGRATION_LOCK)

    async def allocate_task_ids(self, count: int) -> list[int]:
        rows = await self.fetch(
            f"SELECT nextval(pg_get_serial_sequence('{PG_SCHEMA}.tasks', 'id'))"
            " FROM generate_series(1, ?::int)",
            count,
        )
        return [int(r[0]) for r in rows]

    async def announce(self, payload: str) -> None:
        await self.execute("SELECT pg_notify(?::text, ?::text)", NOTIFY_CHANNEL, payload)


class PostgresBackend:
    dialect: Dialect = "postgresql"
    sqlite_path: Path | None = None

    def __init__(self, dsn: str, pool: Any) -> None:
        self.dsn = dsn
        self.description = f"PostgreSQL {redact_url(dsn)}"
        self._pool = pool

    @classmethod
    async def open(
        cls, dsn: str, *, statement_timeout: float = 30.0, max_connections: int = 10
    ) -> PostgresBackend:
        try:
            pool = await asyncpg.create_pool(
                dsn,
                min_size=1,
                max_size=max_connections,
                timeout=10,
                reset=_nothing_to_reset,
                server_settings={
                    "search_path": PG_SCHEMA,
                    "application_name": "mcp-tasks",
                    "statement_timeout": str(int(statement_timeout * 1000)),
                },
            )
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError, ValueError) as exc:
            raise ConfigError(f"cannot connect to PostgreSQL at {redact_url(dsn)}: {exc}") from exc
        return cls(dsn, pool)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[PostgresTx]:
        async with self._pool.acquire() as conn, conn.transaction():
            yield PostgresTx(conn)

    @asynccontextmanager
    async def read(self) -> AsyncIterator[PostgresTx]:
        async with self._pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
            yield PostgresTx(conn)

    @asynccontextmanager
    async def listening(
        self, on_payload: Callable[[str], None], *, on_lost: Callable[[], None]
    ) -> AsyncIterator[None]:
        """LISTEN on a dedicated connection for as long as the context lasts.

        `on_payload` runs on the event loop for each NOTIFY and `on_lost` if the connection
        dies; neither may block or await.
        """
        try:
            conn = await asyncpg.connect(
                self.dsn, timeout=10, server_settings={"application_name": "mcp-tasks"}
            )
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as exc:
            raise ConfigError(f"cannot LISTEN on PostgreSQL at {redact_url(self.dsn)}: {exc}") from exc

        def deliver(_conn: Any, _pid: int, _channel: str, payload: str) -> None:
            on_payload(payload)

        conn.add_termination_listener(lambda _conn: on_lost())
        await conn.add_listener(NOTIFY_CHANNEL, deliver)
        try:
            yield
        finally:
            try:
                await conn.close(timeout=5)
            except Exception:
                conn.terminate()

    async def close(self) -> None:
        try:
            await self._pool.close()
        except Exception:
            logger.exception("closing the PostgreSQL pool failed")
