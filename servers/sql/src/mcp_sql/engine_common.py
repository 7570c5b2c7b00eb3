"""What both engines do the same way: paging arguments, building results, shared refusals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from mcp_batteries.errors import AccessDenied, BatteriesError, InvalidInput, UpstreamError
from mcp_batteries.server import MAX_SAFE_INTEGER

from mcp_sql.guard import strip_statement
from mcp_sql.models import ColumnMeta, SchemaInfo, StatementResult, TableDescription, TableInfo, TablePage
from mcp_sql.results import ResultLimits, json_safe_rows

EXECUTE_DISABLED = (
    "execute is disabled: the server is read-only; start it with --allow-write to run "
    "INSERT/UPDATE/DELETE/DDL"
)


def page_bounds(limit: int, offset: int, max_rows: int) -> tuple[int, int]:
    """Validated (limit, offset) of a `query` page; limit is clamped to max_rows."""
    if limit < 1:
        raise InvalidInput("limit must be at least 1")
    if not 0 <= offset <= MAX_SAFE_INTEGER:
        raise InvalidInput(f"offset must be from 0 to {MAX_SAFE_INTEGER:,} (got {offset})")
    return min(limit, max_rows), offset


def with_returned_rows(
    result: StatementResult,
    columns: list[ColumnMeta],
    rows: Sequence[Sequence[Any]],
    limits: ResultLimits,
) -> StatementResult:
    """`result` with the rows its statement returned (RETURNING, ...): at most max_rows, values cut."""
    safe, cuts = json_safe_rows(rows[: limits.max_rows], limits.max_value_bytes)
    notes = []
    if len(rows) > limits.max_rows:
        notes.append(f"{len(rows)} rows returned, the first {limits.max_rows} shown")
    if cuts:
        notes.append(
            f"{len(cuts)} values longer than {limits.max_value_bytes:,} bytes were cut; read them "
            "with query (substr) after the change"
        )
    return result.model_copy(
        update={
            "columns": columns,
            "rows": safe,
            "rows_truncated": len(rows) > limits.max_rows,
            "note": "; ".join(notes) or None,
        }
    )


def batch_failed(err: BatteriesError, index: int, total: int, *, rolled_back: bool) -> BatteriesError:
    """The error of statement `index` of a batch, saying truly what became of the others."""
    if rolled_back:
        if total == 1:
            return err
        return type(err)(
            f"statement {index + 1} of {total} failed, so the transaction was rolled back and none of "
            f"the {total} statements was kept: {err}"
        )
    return type(err)(
        f"statement {index + 1} of {total} failed and the connection was lost before the transaction "
        f"ended; the database discards an unfinished transaction, so none of the statements was kept: {err}"
    )


def commit_failed(err: BatteriesError, total: int, *, outcome_known: bool) -> BatteriesError:
    """The error of the COMMIT that ends a batch."""
    noun = "the statement" if total == 1 else f"the {total} statements"
    if outcome_known:
        return type(err)(
            f"{noun} ran, but COMMIT failed and the transaction was rolled back, so nothing was kept: {err}"
        )
    return type(err)(
        f"{noun} ran, but the connection was lost while committing: whether the transaction was "
        f"committed is unknown. Check the data (with query) before you run the statements again: {err}"
    )


def transaction_ended(index: int, total: int) -> BatteriesError:
    """A statement ended the batch's transaction although the guard refused transaction control."""
    return UpstreamError(
        f"statement {index + 1} of {total} ended the batch's transaction, so statements 1 to "
        f"{index + 1} may already be committed and the rest was not run. Check the data with query: "
        "execute refuses transaction control, so please report the statement that did this"
    )


class StatementError(Exception):
    """Statement `index` of an `execute` batch failed with `error` (raised inside a writer's batch,
    turned into the batch's outcome message by `batch_failed` outside it)."""

    def __init__(self, index: int, error: BatteriesError) -> None:
        super().__init__(str(error))
        self.index = index
        self.error = error


def check_analyze_allowed(analyze: bool, *, allow_write: bool) -> None:
    """EXPLAIN ANALYZE runs the statement, so it is a write: refused on a read-only server."""
    if analyze and not allow_write:
        raise AccessDenied(
            "explain with analyze executes the statement, so it needs a server started with "
            "--allow-write; call explain without analyze for the estimated plan"
        )


def explain_target(sql: str) -> str:
    """The statement to explain, refused when it already starts with EXPLAIN."""
    text = strip_statement(sql)
    if text.upper().startswith("EXPLAIN"):
        raise InvalidInput("give the statement to explain without the EXPLAIN keyword")
    return text


class Catalog(Protocol):
    """The introspection half of an engine (sqlite_catalog.py, postgres_catalog.py)."""

    async def list_schemas(self) -> list[SchemaInfo]: ...
    async def list_tables(self, schema: str | None) -> list[TableInfo]: ...
    async def with_row_counts(self, tables: list[TableInfo]) -> tuple[list[TableInfo], str | None]: ...
    async def table_page(self, schema: str | None, offset: int, limit: int) -> TablePage: ...
    async def describe_table(self, table: str, schema: str | None) -> TableDescription: ...
    async def table_fingerprints(self) -> dict[str, str]: ...
    async def schema_fingerprint(self) -> str: ...


class CatalogMethods:
    """The `Database` catalog methods of an engine, answered by its `_catalog`."""

    _catalog: Catalog

    async def list_schemas(self) -> list[SchemaInfo]:
        return await self._catalog.list_schemas()

    async def list_tables(self, schema: str | None = None) -> list[TableInfo]:
        return await self._catalog.list_tables(schema)

    async def with_row_counts(self, tables: list[TableInfo]) -> tuple[list[TableInfo], str | None]:
        return await self._catalog.with_row_counts(tables)

    async def table_page(self, schema: str | None, offset: int, limit: int) -> TablePage:
        return await self._catalog.table_page(schema, offset, limit)

    async def describe_table(self, table: str, schema: str | None = None) -> TableDescription:
        return await self._catalog.describe_table(table, schema)

    async def table_fingerprints(self) -> dict[str, str]:
        return await self._catalog.table_fingerprints()

    async def schema_fingerprint(self) -> str:
        return await self._catalog.schema_fingerprint()
