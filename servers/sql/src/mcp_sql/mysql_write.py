"""MySQL/MariaDB write mode: `execute`, and `explain` with analyze.

Only for a server started with --allow-write. Statements run as the connecting user with the
session's read-only default lifted, one per protocol call (multi-statements stay off), under the
statement timeout (MariaDB stops any statement; MySQL's max_execution_time covers SELECT only, and
the pool's watchdog kills the rest). The checks refuse what reaches the server's files
(mysql_guard.check_mysql_write) and transaction control (batch_guard.py).

MySQL commits DDL implicitly (CREATE, ALTER, DROP, RENAME, TRUNCATE, GRANT, ...), so a batch of
several statements cannot hold one: it is refused before anything runs; such a statement runs
alone. After each statement of a batch the server's "in transaction" flag is checked, so a
statement that ended the transaction anyway is reported as such. The session is reset after the
call, which rolls back anything left open.
"""

from __future__ import annotations

import contextlib
from typing import Any

from mcp_batteries.errors import AccessDenied, InvalidInput

from mcp_sql import present
from mcp_sql.batch_guard import check_batch
from mcp_sql.engine_common import (
    EXECUTE_DISABLED,
    StatementError,
    batch_failed,
    commit_failed,
    transaction_ended,
    with_returned_rows,
)
from mcp_sql.guard import strip_statement
from mcp_sql.models import ColumnMeta, ExecuteResult, StatementResult
from mcp_sql.mysql_errors import DRIVER_ERRORS, connection_lost
from mcp_sql.mysql_guard import check_mysql_write, implicit_commit, leading_words
from mcp_sql.mysql_params import bind
from mcp_sql.mysql_pool import Call, MySQLPool
from mcp_sql.mysql_values import result_columns
from mcp_sql.params import split_statement_params
from mcp_sql.results import ResultLimits

_SERVER_STATUS_IN_TRANS = 1


class MySQLWriter:
    """Runs `execute` batches and ANALYZE / EXPLAIN ANALYZE on the connections of a `MySQLPool`."""

    def __init__(self, pool: MySQLPool, *, allow_write: bool, limits: ResultLimits) -> None:
        self._pool = pool
        self._allow_write = allow_write
        self._limits = limits

    async def execute(
        self, statements: list[str], params: list[Any] | dict[str, Any] | None = None, *, transaction: bool
    ) -> ExecuteResult:
        if not self._allow_write:
            raise AccessDenied(EXECUTE_DISABLED)
        per_statement = split_statement_params(statements, params, transaction=transaction)
        check_batch(statements, "mysql", transaction=transaction)
        for sql in statements:
            check_mysql_write(sql)
        committing = [i for i, sql in enumerate(statements) if implicit_commit(sql)]
        if committing and len(statements) > 1:
            words = " ".join(leading_words(statements[committing[0]]))
            raise InvalidInput(
                f"statement {committing[0] + 1} ({words}) is committed by MySQL on its own (it ends any "
                "transaction around it), so it cannot be part of an all-or-nothing batch: send it in a "
                "call of its own"
            )
        texts = [bind(strip_statement(sql), p) for sql, p in zip(statements, per_statement, strict=True)]
        async with self._pool.call(read_only=False) as call:
            if transaction and not committing:
                results = await self._batch(call, texts)
            else:
                results = [await self._alone(call, texts[0])]
        return ExecuteResult(statements=results, transaction=transaction and not committing, committed=True)

    async def _alone(self, call: Call, text: str) -> StatementResult:
        try:
            return await self._run(call, 0, text)
        except StatementError as failure:
            raise failure.error from failure

    async def _batch(self, call: Call, texts: list[str]) -> list[StatementResult]:
        conn = call.conn
        total = len(texts)
        try:
            await conn.query("START TRANSACTION")
        except DRIVER_ERRORS as exc:
            raise self._pool.map_error(exc, None, call) from exc
        results: list[StatementResult] = []
        try:
            for index, text in enumerate(texts):
                results.append(await self._run(call, index, text))
                if not conn.server_status & _SERVER_STATUS_IN_TRANS:
                    raise transaction_ended(index, total)
        except StatementError as failure:
            lost = connection_lost(failure.__cause__) if failure.__cause__ else False
            if not lost:
                await _rollback(conn)
            raise batch_failed(failure.error, failure.index, total, rolled_back=not lost) from failure
        try:
            await conn.query("COMMIT")
        except DRIVER_ERRORS as exc:
            lost = connection_lost(exc)
            if not lost:
                await _rollback(conn)
            raise commit_failed(self._pool.map_error(exc, None, call), total, outcome_known=not lost) from exc
        return results

    async def _run(self, call: Call, index: int, text: str) -> StatementResult:
        try:
            cursor = call.conn.cursor()
            affected = await cursor.execute(text)
            rows = await cursor.fetchall() if cursor.description else None
            columns = result_columns(cursor) if cursor.description else None
        except DRIVER_ERRORS as exc:
            raise StatementError(index, self._pool.map_error(exc, text, call)) from exc
        words = leading_words(text)
        command = (
            " ".join(words[:2])
            if words[:1] and words[0] in {"CREATE", "ALTER", "DROP"}
            else (words[0] if words else "")
        )
        counted = command in {"INSERT", "UPDATE", "DELETE", "REPLACE"}
        result = StatementResult(
            index=index, command=command, rows_affected=int(affected) if counted else None
        )
        if columns is not None and rows is not None:
            metas = [ColumnMeta(name=n, type=t) for n, t in zip(columns.names, columns.types, strict=True)]
            result = with_returned_rows(result, metas, list(columns.convert(rows)), self._limits)
        return result

    async def explain_analyze(self, inner: str, *, mariadb: bool) -> str:
        """ANALYZE (MariaDB) / EXPLAIN ANALYZE (MySQL) of an accepted statement, rolled back."""
        text = f"ANALYZE {inner}" if mariadb else f"EXPLAIN ANALYZE {inner}"
        async with self._pool.call(read_only=False) as call:
            try:
                await call.conn.query("START TRANSACTION")
                cursor = call.conn.cursor()
                await cursor.execute(text)
                columns = result_columns(cursor)
                rows = columns.convert(await cursor.fetchall())
            except DRIVER_ERRORS as exc:
                raise self._pool.map_error(exc, text, call) from exc
            finally:
                # The statement really ran; its changes are always rolled back.
                await _rollback(call.conn)
        return (
            present.plan_text(columns.names, rows)
            + "\n(the statement was executed for ANALYZE and its changes rolled back)"
        )


async def _rollback(conn: Any) -> None:
    # If this fails, the pool's reset (or closing the connection) ends the transaction anyway.
    with contextlib.suppress(*DRIVER_ERRORS):
        await conn.query("ROLLBACK")
