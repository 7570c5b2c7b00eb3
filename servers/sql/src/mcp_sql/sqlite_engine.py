"""SQLite engine (aiosqlite).

Read-only walls, all engine-side:
  * reads use a connection opened with `file:...?mode=ro` (the OS-level handle cannot write),
  * `PRAGMA query_only=ON` on that connection,
  * an authorizer (sqlite_auth.py) refusing writes, DDL, ATTACH/DETACH/VACUUM INTO, transaction
    control, writing pragmas (so query_only cannot be switched off) and load_extension,
  * sqlite3 compiles one statement per execute() call, so "SELECT 1; DROP TABLE t" never runs,
  * a progress handler aborts any statement at the statement timeout (LimitExceeded).
With --allow-write a second connection (mode=rw) runs `execute`, still refusing ATTACH/DETACH,
load_extension and file-redirecting pragmas; reads keep using read-only connections.

Reads run on a small pool of such connections (`_Readers`), opened as needed: SQLite lets readers
run side by side, and over HTTP one user's slow query (up to the statement timeout) must hold one
connection, not every other user's reads. A cancelled statement is interrupted, and its connection
goes back to the pool only once it has stopped.

The catalog queries (list/describe, fingerprints) are in sqlite_catalog.py and run on a read-only
connection through `_meta`; sqlite3 errors are translated by sqlite_errors.py.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import aiosqlite
import anyio
from mcp_batteries.errors import AccessDenied, BatteriesError, ConfigError, InvalidInput

from mcp_sql import render
from mcp_sql.batch_guard import check_batch
from mcp_sql.engine_common import (
    EXECUTE_DISABLED,
    CatalogMethods,
    batch_failed,
    commit_failed,
    explain_target,
    page_bounds,
    transaction_ended,
    with_returned_rows,
)
from mcp_sql.guard import sqlite_precheck, strip_statement
from mcp_sql.models import (
    ColumnMeta,
    ExecuteResult,
    QueryResult,
    StatementResult,
)
from mcp_sql.params import json_text_param, split_statement_params
from mcp_sql.results import Page, PageBuilder, ResultLimits, next_chunk_size
from mcp_sql.sqlite_auth import Authorizer
from mcp_sql.sqlite_catalog import SQLiteCatalog
from mcp_sql.sqlite_errors import map_sqlite_error, not_utf8
from mcp_sql.values import sqlite_type_name

_PROGRESS_STEPS = 1000
#: Read connections per database at most (as many as mcp-sql's PostgreSQL pool).
MAX_READERS = 5
_INT64 = (-(2**63), 2**63 - 1)


def _text_with_replacement(data: bytes) -> str:
    # TEXT that is not UTF-8: shown with U+FFFD for each bad byte (docs/sql.md, "Text that is not
    # UTF-8"); CAST(x AS BLOB) reads the exact bytes.
    return data.decode("utf-8", "replace")


def _name_bytes(data: bytes) -> str:
    # Catalog names keep their exact bytes (surrogateescape) so that quote_name can show them.
    return data.decode("utf-8", "surrogateescape")


class _Conn:
    """One aiosqlite connection with its authorizer, its deadline and a lock serialising calls."""

    def __init__(self, conn: aiosqlite.Connection, auth: Authorizer, timeout_s: float) -> None:
        self.conn = conn
        self.auth = auth
        self.timeout_s = timeout_s
        self.deadline = float("inf")
        self.timed_out = False
        self.lock = anyio.Lock()

    def progress(self) -> int:
        # Runs on aiosqlite's worker thread every _PROGRESS_STEPS VM instructions; non-zero aborts.
        if time.monotonic() > self.deadline:
            self.timed_out = True
            return 1
        return 0

    @asynccontextmanager
    async def statement(self, timeout_s: float | None = None) -> AsyncIterator[aiosqlite.Connection]:
        async with self.lock:
            self.deadline = time.monotonic() + min(timeout_s or self.timeout_s, self.timeout_s)
            self.timed_out = False
            self.auth.last_denial = None
            try:
                yield self.conn
            except anyio.get_cancelled_exc_class():
                await self.stop_cancelled()
                raise
            finally:
                self.deadline = float("inf")

    async def stop_cancelled(self) -> None:
        """The caller gave up (a client's cancel): stop the statement still running on this
        connection's thread, and wait until it has, so the next statement starts on a quiet one."""
        self.deadline = 0.0  # the progress handler aborts whatever this connection runs next
        with anyio.CancelScope(shield=True), anyio.move_on_after(self.timeout_s):
            await self.conn.interrupt()
            # Queued behind the interrupted statement on the connection's own thread: returns once
            # that statement has ended (or fails, interrupted too: the thread is idle either way).
            with contextlib.suppress(sqlite3.Error):
                await self.conn.execute_fetchall("SELECT 1")
            self.deadline = float("inf")  # stopped: the next statement sets its own

    @asynccontextmanager
    async def internal(self) -> AsyncIterator[aiosqlite.Connection]:
        """The server's own statements (metadata, BEGIN/COMMIT) bypass the user policy."""
        mode = self.auth.mode
        self.auth.mode = "internal"
        try:
            yield self.conn
        finally:
            self.auth.mode = mode


class _Readers:
    """Read-only connections to one file, opened on demand up to `size`, each used by one
    statement at a time."""

    def __init__(self, uri: str, first: _Conn, size: int) -> None:
        self._uri = uri
        self._timeout_s = first.timeout_s
        self._all = [first]
        self._idle = [first]
        self._slots = anyio.Semaphore(size)

    @asynccontextmanager
    async def acquire(self) -> AsyncIterator[_Conn]:
        async with self._slots:
            c = self._idle.pop() if self._idle else await self._open()
            try:
                yield c
            finally:
                self._idle.append(c)

    async def _open(self) -> _Conn:
        try:
            c = await _connect(self._uri, "read", self._timeout_s)
        except sqlite3.Error as exc:
            raise BatteriesError(f"cannot open another read connection to the database: {exc}") from exc
        self._all.append(c)
        return c

    async def close(self) -> None:
        for c in self._all:
            await c.conn.close()


class SQLiteDatabase(CatalogMethods):
    dialect: Literal["sqlite"] = "sqlite"

    def __init__(
        self,
        name: str,
        path: Path,
        readers: _Readers,
        writer: _Conn | None,
        *,
        allow_write: bool,
        limits: ResultLimits,
    ) -> None:
        self.name = name
        self.sqlite_path: Path | None = path
        self.url_redacted = f"sqlite:///{path}"
        self.allow_write = allow_write
        self.limits = limits
        self._readers = readers
        self._writer = writer
        self._catalog = SQLiteCatalog(self._meta)
        self.safety_notes = [
            "SQLite reads: read-only file handle (mode=ro), PRAGMA query_only, authorizer refusing "
            "writes/ATTACH/writing pragmas/load_extension, one statement per call, statement timeout",
        ]
        if allow_write:
            self.safety_notes.append(
                "SQLite writes allowed; ATTACH/DETACH/VACUUM INTO/load_extension still refused"
            )

    @property
    def max_rows(self) -> int:
        return self.limits.max_rows

    @classmethod
    async def open(
        cls, name: str, path: Path, *, allow_write: bool, statement_timeout_s: float, limits: ResultLimits
    ) -> SQLiteDatabase:
        if not await anyio.Path(path).exists():
            if not allow_write:
                raise ConfigError(
                    f"SQLite file {path} does not exist; a read-only server cannot create it "
                    "(check the path, or start with --allow-write to create an empty database)"
                )
            # The file, never its directory: a mistyped directory is an error, not a new tree.
            # (The embedded default database's directory is made by `urls.ensure_sqlite_file`.)
            if not await anyio.Path(path.parent).is_dir():
                raise ConfigError(
                    f"SQLite file {path} cannot be created: its directory {path.parent} does not exist "
                    "(create it first, or check the path)"
                )
        uri_path = quote(str(path))
        read_uri = f"file:{uri_path}?mode=ro"
        writer: _Conn | None = None
        reader: _Conn | None = None
        try:
            if allow_write:
                # Opened first so that "rwc" can create the file before the read-only handle opens it.
                writer = await _connect(f"file:{uri_path}?mode=rwc", "write", statement_timeout_s)
            reader = await _connect(read_uri, "read", statement_timeout_s)
            # SQLite opens any file lazily; reading the schema now refuses a file that is not a
            # database at start-up instead of at the first call.
            async with reader.internal() as conn:
                await conn.execute_fetchall("SELECT count(*) FROM sqlite_master")
        except sqlite3.Error as exc:
            for c in (writer, reader):
                if c is not None:
                    await c.conn.close()
            if "not a database" in str(exc) or "encrypted" in str(exc):
                raise ConfigError(
                    f"{path} is not a SQLite database ({exc}); give a SQLite database file or a "
                    "postgresql:// URL"
                ) from exc
            raise ConfigError(f"cannot open SQLite database {path}: {exc}") from exc
        readers = _Readers(read_uri, reader, MAX_READERS)
        return cls(name, path, readers, writer, allow_write=allow_write, limits=limits)

    async def close(self) -> None:
        await self._readers.close()
        if self._writer is not None:
            await self._writer.conn.close()

    # -- queries ---------------------------------------------------------------------------

    async def query(
        self, sql: str, params: list[Any] | dict[str, Any] | None = None, *, limit: int, offset: int = 0
    ) -> QueryResult:
        return (await self.query_page(sql, params, limit=limit, offset=offset)).result

    async def query_page(
        self, sql: str, params: list[Any] | dict[str, Any] | None = None, *, limit: int, offset: int = 0
    ) -> Page:
        limit, offset = page_bounds(limit, offset, self.limits.max_rows)
        sqlite_precheck(sql, read_only=True)
        bound = _bind(params)
        async with self._readers.acquire() as c, c.statement() as conn:
            try:
                try:
                    return await self._page(c, strip_statement(sql), bound, limit, offset)
                except sqlite3.OperationalError as exc:
                    if not not_utf8(exc):
                        raise
                # Some TEXT is not UTF-8: read it again, decoding with replacement characters (only
                # then: a Python text factory costs a call per text value).
                conn.text_factory = _text_with_replacement
                try:
                    return await self._page(c, strip_statement(sql), bound, limit, offset)
                finally:
                    conn.text_factory = str
            except sqlite3.Error as exc:
                raise _map_error(exc, c) from exc

    async def _page(self, c: _Conn, sql: str, bound: Any, limit: int, offset: int) -> Page:
        cursor = await c.conn.execute(sql, bound)
        try:
            await _skip(cursor, offset)
            description = cursor.description or ()
            page = PageBuilder(
                [d[0] for d in description],
                [None] * len(description),
                limit=limit,
                offset=offset,
                limits=self.limits,
                infer_type=sqlite_type_name,
            )
            while not page.done:
                wanted = page.wanted()
                chunk = list(await cursor.fetchmany(wanted))
                page.add(chunk, exhausted=len(chunk) < wanted)
        except anyio.get_cancelled_exc_class():
            await c.stop_cancelled()  # before closing the cursor, which waits for the statement
            raise
        finally:
            with anyio.CancelScope(shield=True):  # an open cursor would keep a read transaction
                await cursor.close()
        return page.finish()

    async def execute(
        self, statements: list[str], params: list[Any] | dict[str, Any] | None = None, *, transaction: bool
    ) -> ExecuteResult:
        if not self.allow_write or self._writer is None:
            raise AccessDenied(EXECUTE_DISABLED)
        per_statement = split_statement_params(statements, params, transaction=transaction)
        check_batch(statements, "sqlite", transaction=transaction)
        for sql in statements:
            sqlite_precheck(sql, read_only=False)
        bound = [_bind(p) for p in per_statement]
        c = self._writer
        total = len(statements)
        results: list[StatementResult] = []
        async with c.lock:
            if not transaction:
                try:
                    results.append(await self._run_write(c, 0, statements[0], bound[0]))
                except sqlite3.Error as exc:
                    raise _map_error(exc, c) from exc
                except anyio.get_cancelled_exc_class():
                    await c.stop_cancelled()
                    raise
                return ExecuteResult(statements=results, transaction=False, committed=True)
            try:
                async with c.internal() as conn:
                    await conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise _map_error(exc, c) from exc
            index = 0
            try:
                for index, sql in enumerate(statements):
                    results.append(await self._run_write(c, index, sql, bound[index]))
                    if not c.conn.in_transaction:
                        raise transaction_ended(index, total)
            except sqlite3.Error as exc:
                await self._rollback(c)
                raise batch_failed(_map_error(exc, c), index, total, rolled_back=True) from exc
            except BaseException as exc:
                if isinstance(exc, anyio.get_cancelled_exc_class()):
                    # Stop the running statement first: the rollback would wait for it otherwise.
                    await c.stop_cancelled()
                await self._rollback(c)
                raise
            try:
                async with c.internal() as conn:
                    await conn.execute("COMMIT")
            except sqlite3.Error as exc:
                # e.g. a deferred foreign key that does not hold: the transaction is still open.
                await self._rollback(c)
                raise commit_failed(_map_error(exc, c), total, outcome_known=True) from exc
        return ExecuteResult(statements=results, transaction=True, committed=True)

    async def _rollback(self, c: _Conn) -> None:
        with anyio.CancelScope(shield=True):
            async with c.internal() as conn:
                # SQLite ends the transaction itself after some errors (disk full, I/O); either way
                # nothing of the batch is kept.
                if conn.in_transaction:
                    await conn.execute("ROLLBACK")

    async def _run_write(self, c: _Conn, index: int, sql: str, bound: Any) -> StatementResult:
        text = strip_statement(sql)
        c.deadline = time.monotonic() + c.timeout_s
        c.timed_out = False
        c.auth.last_denial = None
        try:
            cursor = await c.conn.execute(text, bound)
            try:
                wanted = self.limits.max_rows + 1
                rows = list(await cursor.fetchmany(wanted)) if cursor.description else None
                description = cursor.description
                rowcount = cursor.rowcount
            finally:
                await cursor.close()
        finally:
            c.deadline = float("inf")
        command = _command_tag(text)
        affected = (
            rowcount if rowcount >= 0 and command in {"INSERT", "UPDATE", "DELETE", "REPLACE"} else None
        )
        result = StatementResult(index=index, command=command, rows_affected=affected)
        if rows is not None and description:
            columns = [ColumnMeta(name=d[0], type=None) for d in description]
            result = with_returned_rows(result, columns, rows, self.limits)
        return result

    async def explain(self, sql: str, *, analyze: bool = False) -> str:
        if analyze:
            if not self.allow_write:
                raise AccessDenied(
                    "explain with analyze executes the statement, so "
                    "it needs a server started with --allow-write"
                )
            raise InvalidInput(
                "SQLite has no EXPLAIN ANALYZE; call explain without analyze for the query plan"
            )
        text = explain_target(sql)
        sqlite_precheck(text, read_only=not self.allow_write)
        if self.allow_write and self._writer is not None:
            rows = await self._plan(self._writer, text)
        else:
            async with self._readers.acquire() as c:
                rows = await self._plan(c, text)
        return render.plan_tree([(int(r[0]), int(r[1]), str(r[3])) for r in rows]) or "(empty plan)"

    @staticmethod
    async def _plan(c: _Conn, text: str) -> list[Any]:
        async with c.statement() as conn:
            try:
                # One row per plan node: small. One trip to the connection's thread.
                return list(await conn.execute_fetchall(f"EXPLAIN QUERY PLAN {text}"))
            except sqlite3.Error as exc:
                raise _map_error(exc, c) from exc

    # -- catalog (queries in sqlite_catalog.py) ---------------------------------------------------

    async def _meta(self, sql: str, params: Sequence[Any] = (), timeout_s: float | None = None) -> list[Any]:
        async with self._readers.acquire() as c, c.statement(timeout_s) as conn, c.internal():
            try:
                try:
                    # One trip to aiosqlite's thread (execute + fetchall + close), not three.
                    return list(await conn.execute_fetchall(sql, tuple(params)))
                except sqlite3.OperationalError as exc:
                    if not not_utf8(exc):
                        raise
                conn.text_factory = _name_bytes
                try:
                    return list(await conn.execute_fetchall(sql, tuple(params)))
                finally:
                    conn.text_factory = str
            except sqlite3.Error as exc:
                raise _map_error(exc, c) from exc


async def _connect(uri: str, mode: Literal["read", "write"], timeout_s: float) -> _Conn:
    # isolation_level=None: no implicit BEGIN from the sqlite3 module; transactions are explicit.
    conn = await aiosqlite.connect(uri, uri=True, isolation_level=None, timeout=5.0)
    try:
        if mode == "read":
            await conn.execute("PRAGMA query_only = ON")
        else:
            await conn.execute("PRAGMA foreign_keys = ON")
            # RETURNING rows are few (max_rows): decode TEXT that is not UTF-8 with U+FFFD always.
            conn.text_factory = _text_with_replacement
        auth = Authorizer(mode=mode)
        wrapped = _Conn(conn, auth, timeout_s)
        await conn.set_authorizer(auth)
        await conn.set_progress_handler(wrapped.progress, _PROGRESS_STEPS)
        return wrapped
    except BaseException:
        await conn.close()
        raise


async def _skip(cursor: aiosqlite.Cursor, offset: int) -> None:
    """Step over the first `offset` rows in chunks sized by the rows seen: memory stays bounded."""
    skipped = 0
    chunk = 1
    while skipped < offset:
        rows = list(await cursor.fetchmany(min(chunk, offset - skipped)))
        if not rows:
            return
        skipped += len(rows)
        chunk = next_chunk_size(rows)


def _bind(params: Any) -> Sequence[Any] | dict[str, Any]:
    if params is None:
        return ()
    if isinstance(params, dict):
        return {k: _param(v, f":{k}") for k, v in params.items()}
    if isinstance(params, list | tuple):
        return tuple(_param(v, f"{i + 1}") for i, v in enumerate(params))
    raise InvalidInput("params must be a list (for ? placeholders) or an object (for :name placeholders)")


def _param(value: Any, which: str) -> Any:
    if type(value) is int and not _INT64[0] <= value <= _INT64[1]:
        raise InvalidInput(
            f"parameter {which} is {value}, outside SQLite's 64-bit integer range "
            f"({_INT64[0]} to {_INT64[1]}); pass a larger number as a string (text) or a float"
        )
    return json_text_param(value)


def _command_tag(sql: str) -> str:
    words = sql.split()
    if not words:
        return ""
    first = words[0].upper()
    if first in {"CREATE", "DROP", "ALTER"} and len(words) > 1:
        second = words[1].upper()
        if second in {"TEMP", "TEMPORARY", "UNIQUE", "VIRTUAL"} and len(words) > 2:
            return f"{first} {second} {words[2].upper()}"
        return f"{first} {second}"
    if first == "WITH":
        for w in words:
            if w.upper() in {"INSERT", "UPDATE", "DELETE", "REPLACE", "SELECT"}:
                return w.upper()
    return first


def _map_error(exc: sqlite3.Error, c: _Conn) -> BatteriesError:
    return map_sqlite_error(exc, timed_out=c.timed_out, timeout_s=c.timeout_s, last_denial=c.auth.last_denial)
