"""PostgreSQL engine (asyncpg pool): connection set-up, the read-only walls and reads.

Connections, the reader role and the per-call transaction settings are in postgres_pool.py; the
catalog queries (list/describe, fingerprints) in postgres_catalog.py, run through the pool's read
transaction; write mode in postgres_write.py.

What holds in read mode (query, list/describe, explain without analyze, fingerprints):
  1. guard.py: one statement of SELECT/VALUES/TABLE/SHOW/EXPLAIN; no writable CTEs, SELECT INTO,
     FOR UPDATE; no call of functions that touch server files, other sessions/servers, sequences,
     session settings (set_config) or run SQL from a string (query_to_xml, ...); unparseable input
     is refused.
  2. Every call runs in `BEGIN READ ONLY` with `SET LOCAL statement_timeout`, sends the statement
     through the extended protocol (PostgreSQL itself refuses a second statement, so `COMMIT; DROP`
     cannot escape the transaction) and always ends with ROLLBACK.
  3. The role wall: inside that transaction `SET LOCAL ROLE <reader>`, a NOLOGIN role holding only
     pg_read_all_data (PostgreSQL 14+). It is created at start-up when the connecting role is a
     superuser or has CREATEROLE; an existing role is used only if it is not a superuser and is a
     member of nothing but pg_read_all_data. Under it pg_read_file, lo_import/lo_export, COPY TO/FROM
     a file or PROGRAM, pg_terminate_backend, ALTER SYSTEM, ... fail on privileges.

Connected as a SUPERUSER: walls 1-3 all apply. The role wall is reversible from inside the session
(`SET ROLE NONE`/`RESET ROLE`, `set_config('role', ...)`, and since the session user is a superuser
also `SET SESSION AUTHORIZATION`), which is why the parser refuses every statement other than a query
and refuses set_config and SQL-from-string functions. A superuser-owned SECURITY DEFINER function or a
custom operator that changes settings could still undo it, and so could a disagreement between
sqlglot's and PostgreSQL's lexers; the READ ONLY transaction still blocks ordinary writes then.
Connected as a PLAIN ROLE: the role's own privileges are a wall no statement can lift; add the READ
ONLY transaction and the parser on top. RECOMMENDED: connect with a dedicated role that has only
pg_read_all_data (or SELECT grants), e.g.
    CREATE ROLE mcp_ro LOGIN PASSWORD '...'; GRANT pg_read_all_data TO mcp_ro;
and give write access (--allow-write) only through a role whose privileges you are willing to hand over.

Write mode (`execute`, explain with analyze; postgres_write.py) runs as the connecting role, statement
by statement through the extended protocol, refusing only server-file/program escapes the parser can
see and transaction control inside a batch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from mcp_sql.engine_common import CatalogMethods, check_analyze_allowed, explain_target, page_bounds
from mcp_sql.guard import check_postgres_explain_target, check_postgres_read
from mcp_sql.models import ExecuteResult, QueryResult
from mcp_sql.pg_params import coerce_params, positional_params
from mcp_sql.postgres_caps import capped_select
from mcp_sql.postgres_catalog import PostgresCatalog
from mcp_sql.postgres_pool import DRIVER_ERRORS, PgPool
from mcp_sql.postgres_write import PostgresWriter
from mcp_sql.results import Page, PageBuilder, ResultLimits
from mcp_sql.values import pg_type_name

#: The largest count PostgreSQL's MOVE/FETCH accepts (a 32-bit integer; a larger one is a syntax error).
_MAX_MOVE = 2**31 - 1


class PostgresDatabase(CatalogMethods):
    dialect: Literal["postgresql"] = "postgresql"
    sqlite_path: Path | None = None

    def __init__(self, name: str, pool: PgPool, *, allow_write: bool, limits: ResultLimits) -> None:
        self.name = name
        self.url_redacted = pool.url_redacted
        self.allow_write = allow_write
        self.limits = limits
        self._pool = pool
        self._catalog = PostgresCatalog(pool.fetch)
        self._writer = PostgresWriter(pool, allow_write=allow_write, limits=limits)

    @classmethod
    async def open(
        cls,
        name: str,
        dsn: str,
        *,
        url_redacted: str,
        allow_write: bool,
        statement_timeout_s: float,
        limits: ResultLimits,
        reader_role: str | None = "mcp_sql_reader",
    ) -> PostgresDatabase:
        pool = await PgPool.open(
            dsn, url_redacted=url_redacted, statement_timeout_s=statement_timeout_s, reader_role=reader_role
        )
        return cls(name, pool, allow_write=allow_write, limits=limits)

    @property
    def max_rows(self) -> int:
        return self.limits.max_rows

    @property
    def reader_role(self) -> str | None:
        return self._pool.reader_role

    @property
    def safety_notes(self) -> list[str]:
        return self._pool.safety_notes

    async def close(self) -> None:
        await self._pool.close()

    # -- query / explain (execute and explain with analyze: postgres_write.py) ------------------

    async def query(
        self, sql: str, params: list[Any] | dict[str, Any] | None = None, *, limit: int, offset: int = 0
    ) -> QueryResult:
        return (await self.query_page(sql, params, limit=limit, offset=offset)).result

    async def query_page(
        self, sql: str, params: list[Any] | dict[str, Any] | None = None, *, limit: int, offset: int = 0
    ) -> Page:
        limit, offset = page_bounds(limit, offset, self.limits.max_rows)
        statement = check_postgres_read(sql)
        args = positional_params(params)
        timeout = self._pool.client_timeout
        async with self._pool.read_transaction() as conn:
            try:
                prepared = await conn.prepare(statement.sql, timeout=timeout)
                bound = coerce_params(prepared.get_parameters(), args)
                attributes = prepared.get_attributes()
                types = [pg_type_name(a.type) for a in attributes]
                capped = (
                    capped_select(statement.sql, types, self.limits.max_value_bytes)
                    if statement.kind == "select"
                    else None
                )
                if capped is not None:  # long text and bytea values are cut on the server
                    prepared = await conn.prepare(capped.sql, timeout=timeout)
                # A portal-backed cursor: the server produces rows on demand, so only the rows of
                # this page (and one more) cross the wire; skipped rows stay on the server.
                cursor = await prepared.cursor(*bound, timeout=timeout)
                skip = offset
                while skip:  # MOVE takes a 32-bit count: larger offsets move in steps
                    step = min(skip, _MAX_MOVE)
                    moved = await cursor.forward(step, timeout=timeout)
                    skip = skip - step if moved == step else 0
                page = PageBuilder(
                    [a.name for a in attributes], types, limit=limit, offset=offset, limits=self.limits
                )
                while not page.done:
                    wanted = page.wanted()
                    records = await cursor.fetch(wanted, timeout=timeout)
                    rows = capped.restore(records) if capped is not None else list(map(tuple, records))
                    page.add(rows, exhausted=len(records) < wanted)
            except DRIVER_ERRORS as exc:
                raise self._pool.map_error(exc, statement.sql) from exc
        return page.finish()

    async def execute(
        self, statements: list[str], params: list[Any] | dict[str, Any] | None = None, *, transaction: bool
    ) -> ExecuteResult:
        return await self._writer.execute(statements, params, transaction=transaction)

    async def explain(self, sql: str, *, analyze: bool = False) -> str:
        check_analyze_allowed(analyze, allow_write=self.allow_write)
        explain_target(sql)
        inner = check_postgres_explain_target(sql, allow_write=self.allow_write)
        if not analyze:
            rows = await self._pool.fetch(f"EXPLAIN {inner}")
            return "\n".join(str(r[0]) for r in rows)
        return await self._writer.explain_analyze(inner)
