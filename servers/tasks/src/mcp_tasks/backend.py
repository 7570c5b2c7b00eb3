"""The storage interface both engines implement: transactions, and nothing engine-specific above.

    async with backend.write() as tx:   # exclusive for the workspace: one writer at a time
        await tx.lock(workspace)         # PostgreSQL: per-workspace advisory lock (SQLite: the
                                         # transaction already holds the database's write lock)
        row = await tx.fetchrow("SELECT ... WHERE id = ?", 42)
        await tx.execute("UPDATE ...", ...)
    async with backend.read() as tx:    # one consistent snapshot, never blocks writers

SQL is written once with `?` placeholders; the PostgreSQL backend rewrites them to `$1, $2...`.
Rows support `row["column"]` on both engines.

Why no lost update is possible: every read-modify-write happens inside `write()` after the
lock. SQLite's `BEGIN IMMEDIATE` takes the file's write lock before the first read, and
PostgreSQL's transaction-scoped advisory lock does the same for one workspace across all
replicas; reads after it see every change committed before it. Conditional updates then also
check `version = ?` in the UPDATE itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Protocol

from mcp_tasks.schema import Dialect

Row = Any


class Tx(Protocol):
    dialect: Dialect

    async def fetch(self, sql: str, *args: Any) -> list[Row]: ...
    async def fetchrow(self, sql: str, *args: Any) -> Row | None: ...
    async def fetchval(self, sql: str, *args: Any) -> Any: ...
    async def execute(self, sql: str, *args: Any) -> None: ...
    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    async def lock(self, workspace: str) -> None:
        """Serialise writers of `workspace` until this transaction ends."""

    async def allocate_task_ids(self, count: int) -> list[int]:
        """Fresh, never-reused task ids for rows inserted in this transaction."""

    async def announce(self, payload: str) -> None:
        """Tell other processes, at commit, that changes were made (PostgreSQL NOTIFY)."""


#: Receives each announcement payload made by any process (PostgreSQL LISTEN).
Listener = Callable[[str], Awaitable[None] | None]


class Backend(Protocol):
    dialect: Dialect
    #: The SQLite file (watch it and its -wal to hear other processes); None on PostgreSQL.
    sqlite_path: Path | None
    description: str

    def read(self) -> AbstractAsyncContextManager[Tx]: ...
    def write(self) -> AbstractAsyncContextManager[Tx]: ...
    async def close(self) -> None: ...


NOTIFY_CHANNEL = "mcp_tasks_changes"


def in_list(values: Sequence[Any]) -> str:
    """`(?, ?, ?)` for an IN clause of `values` (never empty: callers check)."""
    return "(" + ", ".join("?" for _ in values) + ")"
