"""What both engines do the same way: paging arguments, building results, shared refusals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from mcp_batteries.errors import InvalidInput

from mcp_sql.guard import strip_statement
from mcp_sql.models import ColumnMeta, QueryResult, SchemaInfo, StatementResult, TableDescription, TableInfo
from mcp_sql.values import rows_to_json

EXECUTE_DISABLED = (
    "execute is disabled: the server is read-only; start it with --allow-write to run "
    "INSERT/UPDATE/DELETE/DDL"
)

_E = TypeVar("_E", bound=Exception)


def page_bounds(limit: int, offset: int, max_rows: int) -> tuple[int, int]:
    """Validated (limit, offset) of a `query` page; limit is clamped to max_rows."""
    if limit < 1:
        raise InvalidInput("limit must be at least 1")
    if offset < 0:
        raise InvalidInput("offset must be 0 or more")
    return min(limit, max_rows), offset


def split_page(rows: Sequence[Any], limit: int) -> tuple[Sequence[Any], bool]:
    """The page's rows and whether more follow: engines fetch limit+1 rows to find out."""
    return rows[:limit], len(rows) > limit


def page_result(
    columns: list[ColumnMeta], rows: Sequence[Sequence[Any]], *, offset: int, truncated: bool
) -> QueryResult:
    # model_construct: the rows were just made JSON-safe here; re-validating them costs a copy.
    return QueryResult.model_construct(
        columns=columns,
        rows=rows_to_json(rows),
        row_count=len(rows),
        offset=offset,
        truncated=truncated,
        next_offset=offset + len(rows) if truncated else None,
    )


def with_returned_rows(
    result: StatementResult, columns: list[ColumnMeta], rows: Sequence[Sequence[Any]], max_rows: int
) -> StatementResult:
    """`result` with the rows its statement returned (RETURNING, ...), capped at max_rows."""
    return result.model_copy(
        update={
            "columns": columns,
            "rows": rows_to_json(rows[:max_rows]),
            "rows_truncated": len(rows) > max_rows,
        }
    )


def statement_failed(err: _E, index: int, *, many: bool) -> _E:
    """The error of statement `index`; in a batch it says which one failed and that all rolled back."""
    if many:
        return type(err)(f"statement {index + 1} failed, the transaction was rolled back: {err}")
    return err


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

    async def describe_table(self, table: str, schema: str | None = None) -> TableDescription:
        return await self._catalog.describe_table(table, schema)

    async def table_fingerprints(self) -> dict[str, str]:
        return await self._catalog.table_fingerprints()

    async def schema_fingerprint(self) -> str:
        return await self._catalog.schema_fingerprint()
