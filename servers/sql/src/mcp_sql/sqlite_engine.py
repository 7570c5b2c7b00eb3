"""SQLite engine (aiosqlite).

Read-only walls, all engine-side:
  * reads use a connection opened with `file:...?mode=ro` (the OS-level handle cannot write),
  * `PRAGMA query_only=ON` on that connection,
  * an authorizer (sqlite_auth.py) refusing writes, DDL, ATTACH/DETACH/VACUUM INTO, transaction
    control, writing pragmas (so query_only cannot be switched off) and load_extension,
  * sqlite3 compiles one statement per execute() call, so "SELECT 1; DROP TABLE t" never runs,
  * a progress handler aborts any statement at the statement timeout (LimitExceeded).
With --allow-write a second connection (mode=rw) runs `execute`, still refusing ATTACH/DETACH,
load_extension and file-redirecting pragmas; reads keep using the read-only connection.
"""

from __future__ import annotations

import functools
import hashlib
import sqlite3
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import aiosqlite
import anyio
import sqlglot
from mcp_batteries.errors import (
    AccessDenied,
    BatteriesError,
    ConfigError,
    InvalidInput,
    LimitExceeded,
    NotFound,
    UpstreamError,
)
from sqlglot import exp

from mcp_sql import render
from mcp_sql.guard import sqlite_precheck, strip_statement
from mcp_sql.models import (
    CheckConstraint,
    ColumnInfo,
    ColumnMeta,
    ExecuteResult,
    ForeignKey,
    IndexInfo,
    QueryResult,
    SchemaInfo,
    StatementResult,
    TableDescription,
    TableInfo,
    TableKind,
)
from mcp_sql.params import json_text_param, split_statement_params
from mcp_sql.sqlite_auth import Authorizer
from mcp_sql.values import rows_to_json, sqlite_type_name

COUNT_CAP = 100_000
_SKIP_CHUNK = 1000
_PROGRESS_STEPS = 1000
_STAT1_PRESENT = "SELECT 1 FROM sqlite_master WHERE type='table' AND name='sqlite_stat1'"
EXECUTE_DISABLED = (
    "execute is disabled: the server is read-only; start it with --allow-write to run "
    "INSERT/UPDATE/DELETE/DDL"
)


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
    async def statement(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self.lock:
            self.deadline = time.monotonic() + self.timeout_s
            self.timed_out = False
            self.auth.last_denial = None
            try:
                yield self.conn
            finally:
                self.deadline = float("inf")

    @asynccontextmanager
    async def internal(self) -> AsyncIterator[aiosqlite.Connection]:
        """The server's own statements (metadata, BEGIN/COMMIT) bypass the user policy."""
        mode = self.auth.mode
        self.auth.mode = "internal"
        try:
            yield self.conn
        finally:
            self.auth.mode = mode


class SQLiteDatabase:
    dialect: Literal["sqlite"] = "sqlite"

    def __init__(
        self, name: str, path: Path, reader: _Conn, writer: _Conn | None, *, allow_write: bool, max_rows: int
    ) -> None:
        self.name = name
        self.sqlite_path: Path | None = path
        self.url_redacted = f"sqlite:///{path}"
        self.allow_write = allow_write
        self.max_rows = max_rows
        self._reader = reader
        self._writer = writer
        self.safety_notes = [
            "SQLite reads: read-only file handle (mode=ro), PRAGMA query_only, authorizer refusing "
            "writes/ATTACH/writing pragmas/load_extension, one statement per call, statement timeout",
        ]
        if allow_write:
            self.safety_notes.append(
                "SQLite writes allowed; ATTACH/DETACH/VACUUM INTO/load_extension still refused"
            )

    @classmethod
    async def open(
        cls, name: str, path: Path, *, allow_write: bool, statement_timeout_s: float, max_rows: int
    ) -> SQLiteDatabase:
        if not await anyio.Path(path).exists():
            if not allow_write:
                raise ConfigError(
                    f"SQLite file {path} does not exist; a read-only server cannot create it "
                    "(check the path, or start with --allow-write to create an empty database)"
                )
            path.parent.mkdir(parents=True, exist_ok=True)
        uri_path = quote(str(path))
        writer: _Conn | None = None
        reader: _Conn | None = None
        try:
            if allow_write:
                # Opened first so that "rwc" can create the file before the read-only handle opens it.
                writer = await _connect(f"file:{uri_path}?mode=rwc", "write", statement_timeout_s)
            reader = await _connect(f"file:{uri_path}?mode=ro", "read", statement_timeout_s)
        except sqlite3.Error as exc:
            for c in (writer, reader):
                if c is not None:
                    await c.conn.close()
            raise ConfigError(f"cannot open SQLite database {path}: {exc}") from exc
        return cls(name, path, reader, writer, allow_write=allow_write, max_rows=max_rows)

    async def close(self) -> None:
        for c in (self._reader, self._writer):
            if c is not None:
                await c.conn.close()

    # -- queries ---------------------------------------------------------------------------

    async def query(
        self, sql: str, params: list[Any] | dict[str, Any] | None = None, *, limit: int, offset: int = 0
    ) -> QueryResult:
        limit, offset = _page(limit, offset, self.max_rows)
        sqlite_precheck(sql, read_only=True)
        bound = _bind(params)
        c = self._reader
        async with c.statement() as conn:
            try:
                cursor = await conn.execute(strip_statement(sql), bound)
                try:
                    skipped = 0
                    # Skipped rows are stepped through in chunks and dropped: memory stays bounded.
                    while skipped < offset:
                        chunk = list(await cursor.fetchmany(min(_SKIP_CHUNK, offset - skipped)))
                        if not chunk:
                            break
                        skipped += len(chunk)
                    rows = list(await cursor.fetchmany(limit + 1))
                    description = cursor.description or ()
                finally:
                    await cursor.close()
            except sqlite3.Error as exc:
                raise _map_error(exc, c) from exc
        truncated = len(rows) > limit
        rows = rows[:limit]
        columns = []
        for i, d in enumerate(description):
            sample = next((r[i] for r in rows if r[i] is not None), None)
            columns.append(ColumnMeta(name=d[0], type=sqlite_type_name(sample)))
        # model_construct: the rows were just made JSON-safe here; re-validating them costs a copy.
        return QueryResult.model_construct(
            columns=columns,
            rows=rows_to_json(rows),
            row_count=len(rows),
            offset=offset,
            truncated=truncated,
            next_offset=offset + len(rows) if truncated else None,
        )

    async def execute(
        self, statements: list[str], params: list[Any] | dict[str, Any] | None = None, *, transaction: bool
    ) -> ExecuteResult:
        if not self.allow_write or self._writer is None:
            raise AccessDenied(EXECUTE_DISABLED)
        per_statement = split_statement_params(statements, params, transaction=transaction)
        for sql in statements:
            sqlite_precheck(sql, read_only=False)
        c = self._writer
        results: list[StatementResult] = []
        async with c.lock:
            if transaction:
                async with c.internal() as conn:
                    await conn.execute("BEGIN IMMEDIATE")
            try:
                for index, (sql, p) in enumerate(zip(statements, per_statement, strict=True)):
                    results.append(await self._run_write(c, index, sql, p, many=len(statements) > 1))
                if transaction:
                    async with c.internal() as conn:
                        await conn.execute("COMMIT")
            except BaseException:
                if transaction:
                    with anyio.CancelScope(shield=True):
                        async with c.internal() as conn:
                            if conn.in_transaction:
                                await conn.execute("ROLLBACK")
                raise
        return ExecuteResult(statements=results, transaction=transaction, committed=True)

    async def _run_write(self, c: _Conn, index: int, sql: str, params: Any, *, many: bool) -> StatementResult:
        text = strip_statement(sql)
        c.deadline = time.monotonic() + c.timeout_s
        c.timed_out = False
        c.auth.last_denial = None
        try:
            cursor = await c.conn.execute(text, _bind(params))
            try:
                rows = list(await cursor.fetchmany(self.max_rows + 1)) if cursor.description else None
                description = cursor.description
                rowcount = cursor.rowcount
            finally:
                await cursor.close()
        except sqlite3.Error as exc:
            err = _map_error(exc, c)
            if many:
                err = type(err)(f"statement {index + 1} failed, the transaction was rolled back: {err}")
            raise err from exc
        finally:
            c.deadline = float("inf")
        command = _command_tag(text)
        affected = (
            rowcount if rowcount >= 0 and command in {"INSERT", "UPDATE", "DELETE", "REPLACE"} else None
        )
        result = StatementResult(index=index, command=command, rows_affected=affected)
        if rows is not None and description:
            result = result.model_copy(
                update={
                    "columns": [ColumnMeta(name=d[0], type=None) for d in description],
                    "rows": rows_to_json(rows[: self.max_rows]),
                    "rows_truncated": len(rows) > self.max_rows,
                }
            )
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
        text = strip_statement(sql)
        if text.upper().startswith("EXPLAIN"):
            raise InvalidInput("give the statement to explain without the EXPLAIN keyword")
        sqlite_precheck(text, read_only=not self.allow_write)
        c = self._writer if self.allow_write and self._writer is not None else self._reader
        async with c.statement() as conn:
            try:
                cursor = await conn.execute(f"EXPLAIN QUERY PLAN {text}")
                rows = await cursor.fetchall()  # one row per plan node: small
                await cursor.close()
            except sqlite3.Error as exc:
                raise _map_error(exc, c) from exc
        return render.plan_tree([(int(r[0]), int(r[1]), str(r[3])) for r in rows]) or "(empty plan)"

    # -- catalog -----------------------------------------------------------------------------

    async def _meta(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        c = self._reader
        async with c.statement() as conn, c.internal():
            try:
                # One trip to aiosqlite's thread (execute + fetchall + close), not three.
                return list(await conn.execute_fetchall(sql, tuple(params)))
            except sqlite3.Error as exc:
                raise _map_error(exc, c) from exc

    async def list_schemas(self) -> list[SchemaInfo]:
        rows = await self._meta(
            "SELECT count(*) FROM sqlite_master WHERE type IN ('table','view') "
            "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
        )
        return [SchemaInfo(name="main", owner=None, comment=None, table_count=int(rows[0][0]))]

    def _check_schema(self, schema: str | None) -> None:
        if schema not in (None, "", "main"):
            raise NotFound(f"schema {schema!r} does not exist: a SQLite database has one schema, 'main'")

    async def list_tables(self, schema: str | None = None) -> list[TableInfo]:
        self._check_schema(schema)
        rows = await self._meta(
            "SELECT name, type, sql FROM sqlite_master WHERE type IN ('table','view') "
            "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
        )
        stats = await self._stat1()
        tables = []
        for name, kind, sql in rows:
            estimate, estimate_kind = await self._estimate(name, _kind(kind, sql), stats)
            tables.append(
                TableInfo(
                    schema_name="main",
                    name=name,
                    kind=_kind(kind, sql),
                    row_estimate=estimate,
                    row_estimate_kind=estimate_kind,
                    comment=None,
                )
            )
        return tables

    async def _stat1(self, table: str | None = None) -> dict[str, int]:
        """Row counts that ANALYZE recorded, of every table or only of `table`."""
        present = await self._meta(_STAT1_PRESENT)
        if not present:
            return {}
        if table is None:
            rows = await self._meta("SELECT tbl, stat FROM sqlite_stat1")
        else:
            rows = await self._meta("SELECT tbl, stat FROM sqlite_stat1 WHERE tbl = ?", [table])
        stats: dict[str, int] = {}
        for tbl, stat in rows:
            head = str(stat or "").split(" ", 1)[0]
            if head.isdigit():
                stats[str(tbl)] = max(stats.get(str(tbl), 0), int(head))
        return stats

    async def _estimate(
        self, name: str, kind: TableKind, stats: dict[str, int]
    ) -> tuple[int | None, Literal["statistics", "exact", "at_least"] | None]:
        if name in stats:
            return stats[name], "statistics"
        if kind != "table":
            return None, None  # counting a view runs its whole query
        try:
            rows = await self._meta(
                f"SELECT count(*) FROM (SELECT 1 FROM {render.quote_ident(name)} LIMIT {COUNT_CAP + 1})"
            )
        except BatteriesError:
            return None, None
        count = int(rows[0][0])
        return (COUNT_CAP, "at_least") if count > COUNT_CAP else (count, "exact")

    async def describe_table(self, table: str, schema: str | None = None) -> TableDescription:
        self._check_schema(schema)
        found = await self._meta(
            "SELECT name, type, sql FROM sqlite_master WHERE type "
            "IN ('table','view') AND name = ? COLLATE NOCASE",
            [table],
        )
        if not found:
            names = [r[0] for r in await self._meta(
                "SELECT name FROM sqlite_master WHERE type IN ('table','view') "
                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name LIMIT 50"
            )]  # fmt: skip
            raise NotFound(f"table {table!r} does not exist; tables: {', '.join(names) or '(none)'}")
        name, raw_kind, create_sql = found[0]
        kind = _kind(raw_kind, create_sql)
        # Every catalog lookup below binds the name as a parameter: no quoting, no injection.
        cols = await self._meta(
            'SELECT name, type, "notnull", dflt_value, pk, hidden FROM pragma_table_xinfo(?) ORDER BY cid',
            [name],
        )
        columns = [
            ColumnInfo(
                name=c[0],
                type=c[1] or "",
                nullable=not c[2] and not c[4],
                default=c[3],
                generated="(see DDL)" if c[5] in (2, 3) else None,
            )
            for c in cols
            if c[5] != 1
        ]
        primary_key = [c[0] for c in sorted((c for c in cols if c[4]), key=lambda c: c[4])]
        fk_rows = await self._meta(
            'SELECT id, "table", "from", "to", on_update, on_delete '
            "FROM pragma_foreign_key_list(?) ORDER BY id, seq",
            [name],
        )
        fks: dict[int, ForeignKey] = {}
        for fid, ref_table, col, ref_col, on_update, on_delete in fk_rows:
            fk = fks.get(fid) or ForeignKey(
                name=None, columns=[], ref_schema=None, ref_table=ref_table, ref_columns=[],
                on_update=on_update, on_delete=on_delete,
            )  # fmt: skip
            fk.columns.append(col)
            fk.ref_columns.append(ref_col if ref_col is not None else "(primary key)")
            fks[fid] = fk
        # One query for every index: its flags, its CREATE statement and its key columns in order.
        idx_rows = await self._meta(
            'SELECT il.name, il."unique", il.origin, m.sql, x.name FROM pragma_index_list(?) AS il '
            "JOIN pragma_index_xinfo(il.name) AS x ON x.key = 1 "
            "LEFT JOIN sqlite_master AS m ON m.type = 'index' AND m.name = il.name "
            "ORDER BY il.name, x.seqno",
            [name],
        )
        indexes: dict[str, IndexInfo] = {}
        for idx_name, unique, origin, definition, col in idx_rows:
            idx = indexes.get(idx_name) or IndexInfo(
                name=idx_name, columns=[], unique=bool(unique), primary=origin == "pk",
                definition=definition or None,
            )  # fmt: skip
            idx.columns.append(col if col is not None else "<expression>")
            indexes[idx_name] = idx
        estimate, _ = await self._estimate(name, kind, await self._stat1(name))
        desc = TableDescription(
            schema_name="main",
            name=name,
            kind=kind,
            comment=None,
            columns=columns,
            primary_key=primary_key,
            foreign_keys=list(fks.values()),
            indexes=list(indexes.values()),
            checks=list(_checks(create_sql)) if raw_kind == "table" else [],
            row_estimate=estimate,
            view_definition=create_sql if raw_kind == "view" else None,
        )
        # SQLite keeps the original CREATE statements: the exact DDL beats any reconstruction.
        parts = [create_sql.rstrip(";") + ";"] if create_sql else [render.table_ddl(desc, dialect="sqlite")]
        parts += [i.definition.rstrip(";") + ";" for i in indexes.values() if i.definition]
        if estimate is not None:
            parts.append(f"-- about {estimate} rows")
        return desc.model_copy(update={"ddl": "\n".join(parts)})

    async def _catalog_rows(self) -> list[tuple[str, str, str, str | None]]:
        rows = await self._meta(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY tbl_name, type, name"
        )
        return [(str(r[0]), str(r[1]), str(r[2]), r[3]) for r in rows]

    async def table_fingerprints(self) -> dict[str, str]:
        groups: dict[str, hashlib._Hash] = {}
        for kind, name, tbl_name, sql in await self._catalog_rows():
            if tbl_name.startswith("sqlite_"):
                continue
            h = groups.setdefault(f"main.{tbl_name}", hashlib.sha256())
            h.update(f"{kind}\x00{name}\x00{sql}\x01".encode())
        return {k: v.hexdigest()[:16] for k, v in groups.items()}

    async def schema_fingerprint(self) -> str:
        version = await self._meta("PRAGMA schema_version")
        h = hashlib.sha256(f"v{version[0][0]}".encode())
        for row in await self._catalog_rows():
            h.update("\x00".join(str(x) for x in row).encode() + b"\x01")
        return h.hexdigest()[:16]


async def _connect(uri: str, mode: Literal["read", "write"], timeout_s: float) -> _Conn:
    # isolation_level=None: no implicit BEGIN from the sqlite3 module; transactions are explicit.
    conn = await aiosqlite.connect(uri, uri=True, isolation_level=None, timeout=5.0)
    try:
        if mode == "read":
            await conn.execute("PRAGMA query_only = ON")
        else:
            await conn.execute("PRAGMA foreign_keys = ON")
        auth = Authorizer(mode=mode)
        wrapped = _Conn(conn, auth, timeout_s)
        await conn.set_authorizer(auth)
        await conn.set_progress_handler(wrapped.progress, _PROGRESS_STEPS)
        return wrapped
    except BaseException:
        await conn.close()
        raise


def _page(limit: int, offset: int, max_rows: int) -> tuple[int, int]:
    if limit < 1:
        raise InvalidInput("limit must be at least 1")
    if offset < 0:
        raise InvalidInput("offset must be 0 or more")
    return min(limit, max_rows), offset


def _bind(params: Any) -> Sequence[Any] | dict[str, Any]:
    if params is None:
        return ()
    if isinstance(params, dict):
        return {k: json_text_param(v) for k, v in params.items()}
    if isinstance(params, list | tuple):
        return tuple(json_text_param(v) for v in params)
    raise InvalidInput("params must be a list (for ? placeholders) or an object (for :name placeholders)")


def _kind(raw: str, sql: str | None) -> TableKind:
    if raw == "view":
        return "view"
    if sql and sql.lstrip().upper().startswith("CREATE VIRTUAL"):
        return "virtual table"
    return "table"


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


@functools.lru_cache(maxsize=256)
def _checks(create_sql: str | None) -> tuple[CheckConstraint, ...]:
    """CHECK constraints of a CREATE TABLE statement (SQLite has no catalog of them).

    Parsing is the slowest part of describe_table, so tables without the word are not parsed, and
    results are cached by statement text: the same text always has the same checks.
    """
    if not create_sql or "check" not in create_sql.lower():
        return ()
    try:
        tree = sqlglot.parse_one(create_sql, read="sqlite")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return ()
    checks = []
    for node in tree.find_all(exp.CheckColumnConstraint):
        parent = node.parent
        name = parent.name if isinstance(parent, exp.Constraint) else None
        checks.append(CheckConstraint(name=name or None, expression=node.sql("sqlite")))
    return tuple(checks)


def _map_error(exc: sqlite3.Error, c: _Conn) -> BatteriesError:
    message = str(exc)
    lowered = message.lower()
    if isinstance(exc, sqlite3.ProgrammingError) and "one statement at a time" in lowered:
        return InvalidInput("found several statements; send exactly one statement per call")
    if c.timed_out or "interrupted" in lowered:
        return LimitExceeded(
            f"the statement ran longer than the {c.timeout_s:g} s statement timeout and was stopped; "
            "narrow it with WHERE/LIMIT or avoid unbounded recursion"
        )
    if "not authorized" in lowered or "authorization denied" in lowered:
        return AccessDenied(c.auth.last_denial or f"refused by the read-only policy: {message}")
    if "readonly database" in lowered or "query_only" in lowered:
        return AccessDenied("the database is opened read-only: " + EXECUTE_DISABLED)
    if isinstance(exc, sqlite3.ProgrammingError) and "binding" in lowered:
        return InvalidInput(f"parameters do not match the statement's placeholders: {message}")
    if isinstance(exc, sqlite3.InterfaceError):
        return InvalidInput(f"unsupported parameter value: {message}")
    code = getattr(exc, "sqlite_errorname", None)
    return UpstreamError(f"SQLite error{f' ({code})' if code else ''}: {message}")
