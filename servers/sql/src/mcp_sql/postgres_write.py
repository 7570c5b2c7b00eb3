"""PostgreSQL write mode of PostgresDatabase: `execute`, and `explain` with analyze.

Only for a server started with --allow-write. The read-only walls of postgres_engine.py do not apply:
statements run as the connecting role (no reader role, no READ ONLY transaction), under the statement
timeout, one by one through the extended protocol (PostgreSQL itself refuses a second statement in
one call), and the parser refuses only the server-file/program escapes it can see
(guard.check_postgres_write). Whatever the connecting role may do, `execute` may do: give write
access only through a role whose privileges you are willing to hand over. EXPLAIN ANALYZE really
runs its statement, in a transaction that is always rolled back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import asyncpg
from mcp_batteries.errors import AccessDenied

from mcp_sql.engine_common import EXECUTE_DISABLED, statement_failed, with_returned_rows
from mcp_sql.guard import check_postgres_write, strip_statement
from mcp_sql.models import ColumnMeta, ExecuteResult, StatementResult
from mcp_sql.params import split_statement_params
from mcp_sql.pg_params import coerce_params, positional_params
from mcp_sql.values import pg_type_name

if TYPE_CHECKING:
    from mcp_sql.postgres_engine import PostgresDatabase

_ROW_COUNT_COMMANDS = {"INSERT", "UPDATE", "DELETE", "MERGE", "SELECT", "COPY", "MOVE", "FETCH"}


async def execute(
    db: PostgresDatabase,
    statements: list[str],
    params: list[Any] | dict[str, Any] | None = None,
    *,
    transaction: bool,
) -> ExecuteResult:
    if not db.allow_write:
        raise AccessDenied(EXECUTE_DISABLED)
    per_statement = split_statement_params(statements, params, transaction=transaction)
    for sql in statements:
        check_postgres_write(sql)
    results: list[StatementResult] = []
    async with db._pool.acquire() as conn:
        if transaction:
            tx = conn.transaction()
            await tx.start()
            try:
                await conn.execute(db._local_settings(reader=False))
                for index, (sql, p) in enumerate(zip(statements, per_statement, strict=True)):
                    results.append(await _run_write(db, conn, index, sql, p, many=len(statements) > 1))
            except BaseException:
                with anyio.CancelScope(shield=True):
                    if not conn.is_closed():
                        await tx.rollback()
                raise
            await tx.commit()
        else:
            # No transaction block: statements like VACUUM or CREATE INDEX CONCURRENTLY need that.
            await conn.execute(f"SET statement_timeout = {max(int(db.timeout_s * 1000), 1)}")
            try:
                results.append(await _run_write(db, conn, 0, statements[0], per_statement[0], many=False))
            finally:
                with anyio.CancelScope(shield=True):
                    if not conn.is_closed():
                        await conn.execute("RESET statement_timeout")
    return ExecuteResult(statements=results, transaction=transaction, committed=True)


async def _run_write(
    db: PostgresDatabase, conn: asyncpg.Connection, index: int, sql: str, params: Any, *, many: bool
) -> StatementResult:
    text = strip_statement(sql)
    try:
        prepared = await conn.prepare(text, timeout=db._client_timeout())
        bound = coerce_params(prepared.get_parameters(), positional_params(params))
        rows = await prepared.fetch(*bound, timeout=db._client_timeout())
        status = prepared.get_statusmsg() or ""
        attributes = prepared.get_attributes()
    except (asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError, OSError) as exc:
        raise statement_failed(db._map(exc, text), index, many=many) from exc
    words = status.split()
    affected = int(words[-1]) if words and words[-1].isdigit() and words[0] in _ROW_COUNT_COMMANDS else None
    command = " ".join(w for w in words if not w.isdigit()) or text.split(None, 1)[0].upper()
    result = StatementResult(index=index, command=command, rows_affected=affected)
    if attributes:
        columns = [ColumnMeta(name=a.name, type=pg_type_name(a.type)) for a in attributes]
        result = with_returned_rows(result, columns, rows, db.max_rows)
    return result


async def explain_analyze(db: PostgresDatabase, inner: str) -> str:
    """EXPLAIN ANALYZE of a statement the guard already accepted (`inner`), as the connecting role."""
    text = f"EXPLAIN (ANALYZE, BUFFERS) {inner}"
    async with db._pool.acquire() as conn:
        tx = conn.transaction()
        await tx.start()
        try:
            await conn.execute(db._local_settings(reader=False))
            rows = list(await conn.fetch(text, timeout=db._client_timeout()))
        except (asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError, OSError) as exc:
            raise db._map(exc, text) from exc
        finally:
            # EXPLAIN ANALYZE really runs the statement; its changes are always rolled back.
            with anyio.CancelScope(shield=True):
                if not conn.is_closed():
                    await tx.rollback()
    plan = "\n".join(str(r[0]) for r in rows)
    return plan + "\n(the statement was executed for ANALYZE and its changes rolled back)"
