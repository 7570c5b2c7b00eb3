"""PostgreSQL write mode: `execute`, and `explain` with analyze.

Only for a server started with --allow-write. The read-only walls of postgres_pool.py do not apply:
statements run as the connecting role (no reader role, no READ ONLY transaction), under the statement
timeout, one by one through the extended protocol (PostgreSQL itself refuses a second statement in
one call), and the parser refuses only the server-file/program escapes it can see
(guard.check_postgres_write) and transaction control inside a batch (batch_guard.py). Whatever the
connecting role may do, `execute` may do: give write access only through a role whose privileges you
are willing to hand over. EXPLAIN ANALYZE really runs its statement, in a transaction that is always
rolled back.

A batch (transaction=true) runs in one transaction block. Its outcome is reported as it is: every
statement committed; or a statement failed and the transaction was rolled back (or died with its
connection, which PostgreSQL also rolls back); or the connection was lost during COMMIT, when the
outcome is unknown and the error says so.
"""

from __future__ import annotations

from typing import Any

import asyncpg
from mcp_batteries.errors import AccessDenied, BatteriesError

from mcp_sql.batch_guard import check_batch
from mcp_sql.engine_common import (
    EXECUTE_DISABLED,
    StatementError,
    batch_failed,
    commit_failed,
    transaction_ended,
    with_returned_rows,
)
from mcp_sql.guard import check_postgres_write, strip_statement
from mcp_sql.models import ColumnMeta, ExecuteResult, StatementResult
from mcp_sql.params import split_statement_params
from mcp_sql.pg_errors import connection_lost
from mcp_sql.pg_params import coerce_params, positional_params
from mcp_sql.postgres_pool import DRIVER_ERRORS, PgPool, connection_alive
from mcp_sql.results import ResultLimits
from mcp_sql.values import pg_type_name

_ROW_COUNT_COMMANDS = {"INSERT", "UPDATE", "DELETE", "MERGE", "SELECT", "COPY", "MOVE", "FETCH"}


class PostgresWriter:
    """Runs `execute` batches and EXPLAIN ANALYZE on the connections of a `PgPool`."""

    def __init__(self, pool: PgPool, *, allow_write: bool, limits: ResultLimits) -> None:
        self._pool = pool
        self._allow_write = allow_write
        self._limits = limits

    async def execute(
        self, statements: list[str], params: list[Any] | dict[str, Any] | None = None, *, transaction: bool
    ) -> ExecuteResult:
        if not self._allow_write:
            raise AccessDenied(EXECUTE_DISABLED)
        per_statement = split_statement_params(statements, params, transaction=transaction)
        check_batch(statements, "postgres", transaction=transaction)
        for sql in statements:
            check_postgres_write(sql)
        async with self._pool.connection() as conn:
            if transaction:
                results = await self._batch(conn, statements, per_statement)
            else:
                results = [await self._alone(conn, statements[0], per_statement[0])]
        return ExecuteResult(statements=results, transaction=transaction, committed=True)

    async def _batch(
        self, conn: asyncpg.Connection, statements: list[str], per_statement: list[Any]
    ) -> list[StatementResult]:
        total = len(statements)
        tx = conn.transaction()
        try:
            await tx.start()
            await conn.execute(self._pool.local_settings(reader=False))
        except DRIVER_ERRORS as exc:
            await self._pool.discard(conn, tx)
            raise self._pool.map_error(exc, None) from exc
        results: list[StatementResult] = []
        try:
            for index, (sql, p) in enumerate(zip(statements, per_statement, strict=True)):
                results.append(await self._run(conn, index, sql, p))
                if not conn.is_in_transaction():
                    raise transaction_ended(index, total)
        except StatementError as failure:
            rolled_back = await self._pool.discard(conn, tx)
            raise batch_failed(failure.error, failure.index, total, rolled_back=rolled_back) from failure
        except BaseException:
            await self._pool.discard(conn, tx)
            raise
        try:
            await tx.commit()
        except DRIVER_ERRORS as exc:
            lost = connection_lost(exc) or not connection_alive(conn)
            if not lost:
                await self._pool.discard(conn, tx)
            raise commit_failed(self._pool.map_error(exc, None), total, outcome_known=not lost) from exc
        return results

    async def _alone(self, conn: asyncpg.Connection, sql: str, params: Any) -> StatementResult:
        # No transaction block: statements like VACUUM or CREATE INDEX CONCURRENTLY need that.
        try:
            await conn.execute(f"SET statement_timeout = {self._pool.statement_timeout_ms}")
        except DRIVER_ERRORS as exc:
            raise self._pool.map_error(exc, None) from exc
        try:
            return await self._run(conn, 0, sql, params)
        except StatementError as failure:
            raise failure.error from failure
        finally:
            if connection_alive(conn):
                try:
                    await conn.execute("RESET statement_timeout")
                except DRIVER_ERRORS:
                    conn.terminate()

    async def _run(self, conn: asyncpg.Connection, index: int, sql: str, params: Any) -> StatementResult:
        text = strip_statement(sql)
        timeout = self._pool.client_timeout
        try:
            prepared = await conn.prepare(text, timeout=timeout)
            bound = coerce_params(prepared.get_parameters(), positional_params(params))
            rows = await prepared.fetch(*bound, timeout=timeout)
            status = prepared.get_statusmsg() or ""
            attributes = prepared.get_attributes()
        except DRIVER_ERRORS as exc:
            raise StatementError(index, self._pool.map_error(exc, text)) from exc
        except BatteriesError as exc:  # a parameter that does not convert
            raise StatementError(index, exc) from exc
        words = status.split()
        affected = (
            int(words[-1]) if words and words[-1].isdigit() and words[0] in _ROW_COUNT_COMMANDS else None
        )
        command = " ".join(w for w in words if not w.isdigit()) or text.split(None, 1)[0].upper()
        result = StatementResult(index=index, command=command, rows_affected=affected)
        if attributes:
            columns = [ColumnMeta(name=a.name, type=pg_type_name(a.type)) for a in attributes]
            result = with_returned_rows(result, columns, [tuple(r) for r in rows], self._limits)
        return result

    async def explain_analyze(self, inner: str) -> str:
        """EXPLAIN ANALYZE of a statement the guard already accepted (`inner`), as the connecting role."""
        text = f"EXPLAIN (ANALYZE, BUFFERS) {inner}"
        async with self._pool.connection() as conn:
            tx = conn.transaction()
            try:
                await tx.start()
                await conn.execute(self._pool.local_settings(reader=False))
                rows = list(await conn.fetch(text, timeout=self._pool.client_timeout))
            except DRIVER_ERRORS as exc:
                raise self._pool.map_error(exc, text) from exc
            finally:
                # EXPLAIN ANALYZE really runs the statement; its changes are always rolled back.
                await self._pool.discard(conn, tx)
        plan = "\n".join(str(r[0]) for r in rows)
        return plan + "\n(the statement was executed for ANALYZE and its changes rolled back)"
