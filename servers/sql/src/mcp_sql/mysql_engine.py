"""MySQL and MariaDB engine (asyncmy): reads, the catalog's queries, explain.

Connections, the read-only session and the per-call transaction, timeouts and kills are in
mysql_pool.py; the statement checks in mysql_guard.py; the catalog queries in mysql_catalog.py;
write mode in mysql_write.py; value forms in mysql_values.py. Which wall holds which kind of
statement is in docs/sql.md ("MySQL and MariaDB: which wall holds what").

A page is read from an unbuffered result: rows cross the wire as they are fetched, and when the
page is full with rows still coming, the statement is stopped (KILL QUERY) and what is in flight
is drained, so a `SELECT` of millions of rows costs one page. Rows before `offset` are read and
skipped (MySQL has no cursor to move on the server in the text protocol).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from asyncmy.cursors import SSCursor

from mcp_sql import present
from mcp_sql.engine_common import CatalogMethods, check_analyze_allowed, explain_target, page_bounds
from mcp_sql.models import ExecuteResult, QueryResult
from mcp_sql.mysql_catalog import MySQLCatalog
from mcp_sql.mysql_errors import DRIVER_ERRORS
from mcp_sql.mysql_guard import check_mysql_explain_target, check_mysql_read
from mcp_sql.mysql_params import bind
from mcp_sql.mysql_pool import MySQLPool
from mcp_sql.mysql_target import parse_mysql_url
from mcp_sql.mysql_values import result_columns
from mcp_sql.mysql_write import MySQLWriter
from mcp_sql.results import Page, PageBuilder, ResultLimits, next_chunk_size


class MySQLDatabase(CatalogMethods):
    dialect: Literal["mysql"] = "mysql"
    sqlite_path: Path | None = None

    def __init__(self, name: str, pool: MySQLPool, *, allow_write: bool, limits: ResultLimits) -> None:
        self.name = name
        self.url_redacted = pool.url_redacted
        self.allow_write = allow_write
        self.limits = limits
        self._pool = pool
        self._catalog = MySQLCatalog(
            self._fetch, default_schema=pool.info.database, mariadb=pool.info.mariadb
        )
        self._writer = MySQLWriter(pool, allow_write=allow_write, limits=limits)

    @classmethod
    async def open(
        cls, name: str, url: str, *, allow_write: bool, statement_timeout_s: float, limits: ResultLimits
    ) -> MySQLDatabase:
        pool = await MySQLPool.open(parse_mysql_url(url), statement_timeout_s=statement_timeout_s)
        return cls(name, pool, allow_write=allow_write, limits=limits)

    @property
    def max_rows(self) -> int:
        return self.limits.max_rows

    @property
    def safety_notes(self) -> list[str]:
        return self._pool.safety_notes

    @property
    def mariadb(self) -> bool:
        return self._pool.info.mariadb

    async def close(self) -> None:
        await self._pool.close()

    # -- query ----------------------------------------------------------------------------------
    async def query(
        self, sql: str, params: list[Any] | dict[str, Any] | None = None, *, limit: int, offset: int = 0
    ) -> QueryResult:
        return (await self.query_page(sql, params, limit=limit, offset=offset)).result

    async def query_page(
        self, sql: str, params: list[Any] | dict[str, Any] | None = None, *, limit: int, offset: int = 0
    ) -> Page:
        limit, offset = page_bounds(limit, offset, self.limits.max_rows)
        statement = check_mysql_read(sql)
        text = bind(statement.sql, params)
        async with self._pool.call(read_only=True) as call:
            try:
                cursor = call.conn.cursor(SSCursor)
                await cursor.execute(text)
                columns = result_columns(cursor)
                exhausted = await _skip(cursor, offset)
                page = PageBuilder(
                    columns.names, columns.types, limit=limit, offset=offset, limits=self.limits
                )
                while not page.done and not exhausted:
                    wanted = page.wanted()
                    rows = await cursor.fetchmany(wanted)
                    exhausted = len(rows) < wanted
                    page.add(columns.convert(rows), exhausted=exhausted)
                if not page.done:
                    page.add([], exhausted=True)
                call.unfinished = not exhausted
            except DRIVER_ERRORS as exc:
                raise self._pool.map_error(exc, text, call) from exc
        return page.finish()

    async def execute(
        self, statements: list[str], params: list[Any] | dict[str, Any] | None = None, *, transaction: bool
    ) -> ExecuteResult:
        return await self._writer.execute(statements, params, transaction=transaction)

    async def explain(self, sql: str, *, analyze: bool = False) -> str:
        check_analyze_allowed(analyze, allow_write=self.allow_write)
        explain_target(sql)
        inner = check_mysql_explain_target(sql, allow_write=self.allow_write)
        if analyze:
            return await self._writer.explain_analyze(inner, mariadb=self.mariadb)
        async with self._pool.call(read_only=True) as call:
            try:
                cursor = call.conn.cursor()
                await cursor.execute(f"EXPLAIN {inner}")
                columns = result_columns(cursor)
                rows = columns.convert(await cursor.fetchall())
            except DRIVER_ERRORS as exc:
                raise self._pool.map_error(exc, inner, call) from exc
        return present.plan_text(columns.names, rows)

    # -- catalog (queries in mysql_catalog.py) ----------------------------------------------------
    async def _fetch(self, queries: Sequence[tuple[str, Sequence[Any]]]) -> list[list[tuple[Any, ...]]]:
        """Several catalog queries in one call (one connection, one read-only transaction)."""
        out: list[list[tuple[Any, ...]]] = []
        async with self._pool.call(read_only=True) as call:
            text = ""
            try:
                cursor = call.conn.cursor()
                for sql, params in queries:
                    text = bind(sql, list(params))
                    await cursor.execute(text)
                    out.append([tuple(r) for r in await cursor.fetchall()])
            except DRIVER_ERRORS as exc:
                raise self._pool.map_error(exc, text, call) from exc
        return out


async def _skip(cursor: Any, offset: int) -> bool:
    """Read past the first `offset` rows, in chunks sized by the rows seen; True if none were left."""
    skipped = 0
    chunk = 1
    while skipped < offset:
        want = min(chunk, offset - skipped)
        rows = await cursor.fetchmany(want)
        skipped += len(rows)
        if len(rows) < want:
            return True
        chunk = next_chunk_size(rows)
    return False
