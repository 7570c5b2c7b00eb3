"""SQLite storage (aiosqlite): WAL, a busy timeout, one writer connection and a few readers.

Several mcp-tasks processes may share one file. Writes are `BEGIN IMMEDIATE` transactions:
the write lock is taken before the first read, so a read-modify-write in one process can never
interleave with another process's (the other waits up to the busy timeout). WAL lets readers
work while a writer holds the lock. `synchronous=NORMAL` in WAL mode survives a killed process
(a transaction is in the file whole or not at all); only a power cut may lose the last commits.

Reads take one of `READERS` read-only connections (each aiosqlite connection is one thread), so
reads run side by side: with a single reader, every read transaction waited for the one before
it, and under 50 busy clients a listing took ~300 ms at the median for a few ms of work.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiosqlite
import anyio
from mcp_batteries.errors import ConfigError, UpstreamError

from mcp_tasks.backend import Row
from mcp_tasks.schema import Dialect

logger = logging.getLogger(__name__)

#: Read-only connections, each able to hold one read transaction at a time.
READERS = 4


def _translate(exc: sqlite3.Error, busy_timeout: float) -> Exception:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return UpstreamError(
            f"the task database stayed locked by another process for more than {busy_timeout:g} s; "
            "try again (or raise --busy-timeout)"
        )
    return UpstreamError(f"SQLite error: {text}")


class SQLiteTx:
    dialect: Dialect = "sqlite"

    def __init__(self, conn: aiosqlite.Connection, busy_timeout: float) -> None:
        self._conn = conn
        self._busy_timeout = busy_timeout
        self._next_id: int | None = None

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        try:
            return list(await self._conn.execute_fetchall(sql, args))
        except sqlite3.Error as exc:
            raise _translate(exc, self._busy_timeout) from exc

    async def fetchrow(self, sql: str, *args: Any) -> Row | None:
        rows = await self.fetch(sql, *args)
        return rows[0] if rows else None

    async def fetchval(self, sql: str, *args: Any) -> Any:
        row = await self.fetchrow(sql, *args)
        return None if row is None else row[0]

    async def execute(self, sql: str, *args: Any) -> None:
        await self.fetch(sql, *args)

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        try:
            async with self._conn.executemany(sql, rows):
                pass
        except sqlite3.Error as exc:
            raise _translate(exc, self._busy_timeout) from exc

    async def lock(self, workspace: str) -> None:
        """Nothing to do: BEGIN IMMEDIATE already holds the whole file's write lock."""

    async def allocate_task_ids(self, count: int) -> list[int]:
        if self._next_id is None:
            highest = await self.fetchval(
                "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'tasks'), 0), "
                "coalesce((SELECT max(id) FROM tasks), 0))"
            )
            self._next_id = int(highest or 0) + 1
        first = self._next_id
        self._next_id += count
        return list(range(first, first + count))

    async def announce(self, payload: str) -> None:
        """Other processes learn of changes by watching the file; nothing to send."""


class SQLiteBackend:
    dialect: Dialect = "sqlite"

    def __init__(self, path: Path, writer: aiosqlite.Connection, busy_timeout: float) -> None:
        self.sqlite_path: Path | None = path
        self.description = f"SQLite file {path}"
        self._path = path
        self._writer = writer
        self._readers: list[aiosqlite.Connection] = []
        # The idle readers: a read takes one and gives it back (opened after migration).
        self._idle_readers, self._next_idle_reader = anyio.create_memory_object_stream[aiosqlite.Connection](
            READERS
        )
        self._busy_timeout = busy_timeout
        self._write_lock = anyio.Lock()

    @classmethod
    async def open(cls, path: Path, *, busy_timeout: float) -> SQLiteBackend:
        # The file, never its directory: a mistyped --db is an error, not a new directory tree.
        # (The default data directory is made by `service.py` before this.)
        if not await anyio.Path(path.parent).is_dir():
            raise ConfigError(
                f"the task database {path} cannot be created: its directory {path.parent} does not "
                "exist (create it first, or check --db)"
            )
        try:
            writer = await _connect(str(path), uri=False, busy_timeout=busy_timeout)
            mode = await writer.execute_fetchall("PRAGMA journal_mode = WAL")
        except sqlite3.Error as exc:
            raise ConfigError(f"cannot open the task database {path}: {exc}") from exc
        if not mode or str(next(iter(mode))[0]).lower() != "wal":
            logger.warning("%s: WAL journal mode unavailable; readers will wait for writers", path)
        await writer.execute_fetchall("PRAGMA synchronous = NORMAL")
        return cls(path, writer, busy_timeout)

    async def open_readers(self) -> None:
        """Open the read-only connections (after migration: the tables exist by then)."""
        target = f"file:{quote(str(self._path))}?mode=ro"
        while len(self._readers) < READERS:
            reader = await _connect(target, uri=True, busy_timeout=self._busy_timeout)
            self._readers.append(reader)
            self._idle_readers.send_nowait(reader)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[SQLiteTx]:
        async with self._write_lock:
            await self._run(self._writer, "BEGIN IMMEDIATE")
            try:
                yield SQLiteTx(self._writer, self._busy_timeout)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await self._rollback(self._writer)
                raise
            with anyio.CancelScope(shield=True):  # a commit is never torn by a cancelled call
                await self._run(self._writer, "COMMIT")

    @asynccontextmanager
    async def read(self) -> AsyncIterator[SQLiteTx]:
        if not self._readers:  # before the readers exist (migration): on the writer
            async with self._write_lock, self._read_on(self._writer) as tx:
                yield tx
            return
        conn = await self._next_idle_reader.receive()
        try:
            async with self._read_on(conn) as tx:
                yield tx
        finally:
            self._idle_readers.send_nowait(conn)

    @asynccontextmanager
    async def _read_on(self, conn: aiosqlite.Connection) -> AsyncIterator[SQLiteTx]:
        await self._run(conn, "BEGIN")
        try:
            yield SQLiteTx(conn, self._busy_timeout)
        finally:
            with anyio.CancelScope(shield=True):
                await self._rollback(conn)

    async def _run(self, conn: aiosqlite.Connection, sql: str) -> None:
        try:
            await conn.execute_fetchall(sql)
        except sqlite3.Error as exc:
            raise _translate(exc, self._busy_timeout) from exc

    async def _rollback(self, conn: aiosqlite.Connection) -> None:
        try:
            if conn.in_transaction:
                await conn.execute_fetchall("ROLLBACK")
        except Exception:
            logger.exception("rollback failed")

    async def close(self) -> None:
        for conn in (*self._readers, self._writer):
            try:
                await conn.close()
            except Exception:
                logger.exception("closing the task database failed")
        self._readers = []
        self._idle_readers.close()
        self._next_idle_reader.close()


async def _connect(target: str, *, uri: bool, busy_timeout: float) -> aiosqlite.Connection:
    conn = await aiosqlite.connect(target, uri=uri, isolation_level=None, timeout=busy_timeout)
    conn.row_factory = sqlite3.Row
    await conn.execute_fetchall("PRAGMA foreign_keys = ON")
    await conn.execute_fetchall(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    return conn
